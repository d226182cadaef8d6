// Command oldgen writes a golden table with an OLDER tickdb build, for a
// format version the current writer no longer produces (see README.md in
// the directory above). It lives under testdata, so the go tool ignores it
// in this tree; copy it into the old tree and run it there:
//
//	git archive f166bae | tar -x -C /tmp/old
//	mkdir /tmp/old/cmd/oldgen && cp main.go /tmp/old/cmd/oldgen/
//	(cd /tmp/old && go run ./cmd/oldgen v1-compressed /path/to/reader/testdata/formats/v1-compressed)
//
// The rows are goldenRow's (reader/golden_test.go), 1000 of them.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

var syms = []string{"AAPL", "MSFT", "BRK A", "x,y=z"}

func row(i int) (ts int64, sym string, price float64, size int64, venue string, buy bool) {
	return 1_700_000_000_000_000_000 + int64(i)*1000, syms[i%4], 100 + float64(i)/4, int64(i) * 100, syms[(i/3)%4], i%3 == 0
}

func main() {
	if len(os.Args) != 3 || os.Args[1] != "v1-compressed" {
		fmt.Fprintln(os.Stderr, "usage: oldgen v1-compressed DIR")
		os.Exit(2)
	}
	db := os.Args[2]
	if err := run(db); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(db string) error {
	if _, err := os.Stat(db); err == nil {
		return fmt.Errorf("%s exists: golden tables are never rewritten", db)
	}
	live, err := os.MkdirTemp("", "oldgen-live-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(live)
	s := store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "venue", Type: store.TypeSym},
		store.Column{Name: "buy", Type: store.TypeBool},
	)
	w, err := writer.Open(db, "trades", &writer.Options{Schema: s, SegmentSize: 4096, LiveDir: live})
	if err != nil {
		return err
	}
	r := s.NewRow()
	for i := 0; i < 1000; i++ {
		ts, sym, price, size, venue, buy := row(i)
		a, _ := w.SymbolString(sym)
		b, _ := w.SymbolString(venue)
		r.SetTs(ts)
		r.SetSym(s.ColAt(1), a)
		r.SetF64(s.ColAt(2), price)
		r.SetI64(s.ColAt(3), size)
		r.SetSym(s.ColAt(4), b)
		r.SetBool(s.ColAt(5), buy)
		if _, err := w.Append(r); err != nil {
			return err
		}
	}
	// Rows older than 300 µs before the last: the first segments compressed
	// (format version 1, rows in seq order), the newest ones left raw.
	if _, err := w.CloseCompacted(300_000); err != nil {
		return err
	}
	return os.Remove(filepath.Join(db, "trades", format.LockName))
}
