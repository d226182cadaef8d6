package reader_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// The first golden table (format v1-base; formats_test.go has one per
// format version), committed under testdata and never rewritten, so every
// later build must keep reading it. It was written by TestWriteGolden at
// 02a91e9 (the current writer would write a later version: write a new
// version's table with formats_test.go's -update-golden).
const goldenDB = "testdata/formats/v1-base"

func goldenSchema() *store.Schema {
	return store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "venue", Type: store.TypeSym},
		store.Column{Name: "buy", Type: store.TypeBool},
	)
}

var goldenSyms = []string{"AAPL", "MSFT", "BRK A", "x,y=z"}

// goldenRow is the content of row i.
func goldenRow(i int) (ts int64, sym string, price float64, size int64, venue string, buy bool) {
	return 1_700_000_000_000_000_000 + int64(i)*1000, goldenSyms[i%4], 100 + float64(i)/4, int64(i) * 100, goldenSyms[(i/3)%4], i%3 == 0
}

const goldenRows = 1000

func TestGoldenV1StillReads(t *testing.T) {
	if _, err := os.Stat(filepath.Join(goldenDB, "trades", format.CtlName)); err != nil {
		t.Fatalf("golden table missing: %v", err)
	}
	if _, err := reader.Verify(goldenDB, "trades", nil); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(goldenDB, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := r.Schema()
	if !s.Equal(goldenSchema()) {
		t.Fatalf("schema %s", s)
	}
	if r.Len() != goldenRows {
		t.Fatalf("count %d", r.Len())
	}
	for i := 0; i < goldenRows; i++ {
		row, err := r.Get(uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		ts, sym, price, size, venue, buy := goldenRow(i)
		gs, _ := r.SymbolName(row.Sym(s.ColAt(1)))
		gv, _ := r.SymbolName(row.Sym(s.ColAt(4)))
		if row.Ts() != ts || gs != sym || row.F64(s.ColAt(2)) != price || row.I64(s.ColAt(3)) != size || gv != venue || row.Bool(s.ColAt(5)) != buy {
			t.Fatalf("row %d differs", i)
		}
	}
	id, ok := r.SymbolID([]byte("BRK A"))
	if !ok {
		t.Fatal("symbol BRK A missing")
	}
	var it reader.Iter
	if err := r.RangeSym(math.MinInt64, math.MaxInt64, id, &it); err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		n++
	}
	if it.Err() != nil || n != goldenRows/4 {
		t.Fatalf("BRK A rows %d, err %v", n, it.Err())
	}
}
