package reader_test

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Golden tables, one per format version (docs/FORMAT.md §12), under
// testdata/formats/<name>/trades. They are committed once and never
// rewritten: every later build must read them as they are. -update-golden
// writes the tables of versions the current writer makes whose directory
// is missing (never an existing one); the others were written by the
// build that introduced their version (testdata/formats/README.md).
var updateGolden = flag.Bool("update-golden", false, "write the missing golden tables under testdata/formats")

const formatsDir = "testdata/formats"

// A goldenFormat is one format version's golden table and its model.
type goldenFormat struct {
	name     string
	features uint64 // the ctl features word the table has
	post     uint32 // its post.idx version (0: 1)
	// gen writes the table (nil: written by an older build, see README).
	gen func(t *testing.T, db string)
	// want is column name's value in row seq, read through the current
	// schema: a float64 (NaN: missing), int64, bool or string (symbols).
	want func(name string, seq uint64) any
	rows uint64
	// ts is row seq's ts (tsOrder checks the rows in (ts, seq) order).
	ts func(seq uint64) int64
}

func goldenWant(name string, seq uint64) any {
	ts, sym, price, size, venue, buy := goldenRow(int(seq))
	switch name {
	case "ts":
		return ts
	case "sym":
		return sym
	case "price":
		return price
	case "size":
		return size
	case "venue":
		return venue
	case "buy":
		return buy
	}
	panic("no column " + name)
}

func goldenTs(seq uint64) int64 { ts, _, _, _, _, _ := goldenRow(int(seq)); return ts }

// Late rows: every 10th row, from row 5, is 25 µs behind the newest.
const lateWindow = 100_000

func lateTs(seq uint64) int64 {
	ts := goldenTs(seq)
	if seq%10 == 5 {
		ts -= 25_000
	}
	return ts
}

// Columns added: fee f64 and desk sym before row 400, qty i64 before 700.
var deskSyms = []string{"D1", "D2", "D3 x"}

func columnsWant(name string, seq uint64) any {
	switch name {
	case "fee":
		if seq < 400 {
			return math.NaN()
		}
		return float64(seq) / 8
	case "desk":
		if seq < 400 {
			return ""
		}
		return deskSyms[seq%3]
	case "qty":
		if seq < 700 {
			return int64(0)
		}
		return int64(seq) * 3
	}
	return goldenWant(name, seq)
}

func goldenFormats() []goldenFormat {
	return []goldenFormat{
		{name: "v1-base", want: goldenWant, rows: goldenRows, ts: goldenTs},
		{name: "v1-compressed", want: goldenWant, rows: goldenRows, ts: goldenTs},
		{name: "v1-clustered", features: index.FeatClustered | index.FeatPostFloor, gen: genClustered, want: goldenWant, rows: goldenRows, ts: goldenTs},
		{name: "v1-late", features: index.FeatLate | index.FeatClustered | index.FeatPostFloor, gen: genLate, want: goldenWant, rows: goldenRows, ts: lateTs},
		{name: "v1-columns", features: index.FeatColumns | index.FeatClustered | index.FeatPostFloor, gen: genColumns, want: columnsWant, rows: goldenRows, ts: goldenTs},
		{name: "v1-postings3", post: format.PostVersion2, gen: genPostings3, want: goldenWant, rows: goldenRows, ts: goldenTs},
		{name: "v1-postings-small", features: index.FeatClustered | index.FeatPostFloor, post: format.PostVersion3, gen: genPostingsSmall, want: goldenWant, rows: smallRows, ts: goldenTs},
	}
}

// goldenOpen creates the golden table at db with the writer the test uses.
// Its segments stay raw until goldenClose (no background compaction): the
// tables' layouts are as their generators describe them.
func goldenOpen(t *testing.T, db string, late int64) *writer.Writer {
	t.Helper()
	w, err := writer.Open(db, "trades", &writer.Options{Schema: goldenSchema(), SegmentSize: 4096, LiveDir: testutil.LiveDir(t), LateWindow: time.Duration(late), CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// goldenAppend appends rows [from, to) with the values want gives.
func goldenAppend(t *testing.T, w *writer.Writer, want func(string, uint64) any, ts func(uint64) int64, from, to uint64) {
	t.Helper()
	s := w.Schema()
	row := s.NewRow()
	for seq := from; seq < to; seq++ {
		clear(row)
		for i, c := range s.Cols {
			col := s.ColAt(i)
			switch c.Type {
			case store.TypeTs:
				row.SetTs(ts(seq))
			case store.TypeF64:
				row.SetF64(col, want(c.Name, seq).(float64))
			case store.TypeI64:
				row.SetI64(col, want(c.Name, seq).(int64))
			case store.TypeBool:
				row.SetBool(col, want(c.Name, seq).(bool))
			case store.TypeSym:
				id, err := w.SymbolString(want(c.Name, seq).(string))
				if err != nil {
					t.Fatal(err)
				}
				row.SetSym(col, id)
			}
		}
		got, err := w.Append(row)
		if err != nil || got != seq {
			t.Fatalf("append %d: seq %d, %v", seq, got, err)
		}
	}
}

// goldenClose compresses the rows older than 300 µs before the last (the
// newest segments stay raw) and closes the table.
func goldenClose(t *testing.T, w *writer.Writer, db string) {
	t.Helper()
	if _, err := w.CloseCompacted(300 * time.Microsecond); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(db, "trades", format.LockName))
}

// genClustered: compressed segments in format version 2 (clustered by
// symbol) and their postings punched below the postings floor.
func genClustered(t *testing.T, db string) {
	w := goldenOpen(t, db, 0)
	goldenAppend(t, w, goldenWant, goldenTs, 0, goldenRows)
	goldenClose(t, w, db)
}

// genLate: late rows, in raw segments and in compressed ones (FlagLate).
func genLate(t *testing.T, db string) {
	w := goldenOpen(t, db, lateWindow)
	goldenAppend(t, w, goldenWant, lateTs, 0, goldenRows)
	goldenClose(t, w, db)
}

// genPostings3: post.idx version 2 (3-byte entries), every segment raw
// (a plain Close: every row is read through the postings). Its symbols'
// rows are never 2^24 apart, so no chunk closes early: that is tested
// with a lowered bound the writer's tests can set (writer
// TestPostingsEarlyClose), which a golden table's writer cannot.
func genPostings3(t *testing.T, db string) {
	w := goldenOpen(t, db, 0)
	goldenAppend(t, w, goldenWant, goldenTs, 0, goldenRows)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(db, "trades", format.LockName))
}

// smallRows is the rows of the v1-postings-small golden table: 3,000 a
// symbol, past the 2,646 of a version 3 post.idx's first directory (its
// growing blocks and a 4 KiB one) into a second directory.
const smallRows = 12000

// genPostingsSmall: post.idx version 3 (a symbol's first blocks small and
// growing), compacted as genClustered (in segments of 1,024 rows, not 64,
// for fewer files): the 4 KiB blocks below the postings floor punched,
// the smaller ones kept.
func genPostingsSmall(t *testing.T, db string) {
	w, err := writer.Open(db, "trades", &writer.Options{Schema: goldenSchema(), SegmentSize: 1024 * 32, LiveDir: testutil.LiveDir(t), CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	goldenAppend(t, w, goldenWant, goldenTs, 0, smallRows)
	goldenClose(t, w, db)
}

// genColumns: columns added mid-segment (an f64 and a sym, then an i64):
// segments of three row sizes, raw and compressed.
func genColumns(t *testing.T, db string) {
	w := goldenOpen(t, db, 0)
	goldenAppend(t, w, columnsWant, goldenTs, 0, 400)
	if err := w.AddColumns(store.Column{Name: "fee", Type: store.TypeF64}, store.Column{Name: "desk", Type: store.TypeSym}); err != nil {
		t.Fatal(err)
	}
	goldenAppend(t, w, columnsWant, goldenTs, 400, 700)
	if err := w.AddColumn(store.Column{Name: "qty", Type: store.TypeI64}); err != nil {
		t.Fatal(err)
	}
	goldenAppend(t, w, columnsWant, goldenTs, 700, goldenRows)
	goldenClose(t, w, db)
}

// checkGoldenRow compares every column of row seq in r's schema now with
// the model.
func checkGoldenRow(r *reader.Reader, f goldenFormat, seq uint64, row store.Row) error {
	s := r.Schema()
	for i, c := range s.Cols {
		col := s.ColAt(i)
		var got any
		switch c.Type {
		case store.TypeTs:
			got = row.Ts()
		case store.TypeF64:
			got = row.F64(col)
		case store.TypeI64:
			got = row.I64(col)
		case store.TypeBool:
			got = row.Bool(col)
		case store.TypeSym:
			name, err := r.SymbolName(row.Sym(col))
			if err != nil {
				return fmt.Errorf("row %d column %s: %w", seq, c.Name, err)
			}
			got = name
		}
		want := f.want(c.Name, seq)
		if c.Type == store.TypeTs {
			want = f.ts(seq)
		}
		if w, ok := want.(float64); ok && math.IsNaN(w) {
			if g, ok := got.(float64); ok && math.IsNaN(g) {
				continue
			}
		}
		if got != want {
			return fmt.Errorf("row %d column %s: got %v, want %v", seq, c.Name, got, want)
		}
	}
	return nil
}

func TestGoldenFormats(t *testing.T) {
	for _, f := range goldenFormats() {
		t.Run(f.name, func(t *testing.T) {
			db := filepath.Join(formatsDir, f.name)
			ctlPath := filepath.Join(db, "trades", format.CtlName)
			if _, err := os.Stat(ctlPath); errors.Is(err, os.ErrNotExist) && *updateGolden && f.gen != nil {
				f.gen(t, db)
				t.Logf("wrote %s", db)
			}
			ctl, err := os.ReadFile(ctlPath)
			if err != nil {
				t.Fatalf("golden table missing: %v", err)
			}
			// docs/FORMAT.md §12: the flags that mark the version.
			if got := binary.LittleEndian.Uint64(ctl[4312:]); got != f.features {
				t.Errorf("features %#x, want %#x", got, f.features)
			}
			if got, want := postVersion(t, db), max(f.post, format.PostVersion1); got != want {
				t.Errorf("post.idx version %d, want %d", got, want)
			}
			r := verifiedGolden(t, db)
			if r.Len() != f.rows {
				t.Fatalf("count %d, want %d", r.Len(), f.rows)
			}
			for seq := range f.rows {
				row, err := r.Get(seq)
				if err != nil {
					t.Fatal(err)
				}
				if err := checkGoldenRow(r, f, seq, row); err != nil {
					t.Fatal(err)
				}
			}
			// Time order: every row once, by (ts, seq).
			order := make([]uint64, f.rows)
			for i := range order {
				order[i] = uint64(i)
			}
			slices.SortStableFunc(order, func(a, b uint64) int { return cmpInt64(f.ts(a), f.ts(b)) })
			var it reader.Iter
			if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
				t.Fatal(err)
			}
			n := 0
			for it.Next() {
				if n >= len(order) || it.Seq() != order[n] {
					t.Fatalf("range: row %d at %d", it.Seq(), n)
				}
				if err := checkGoldenRow(r, f, it.Seq(), it.Row()); err != nil {
					t.Fatalf("range: %v", err)
				}
				n++
			}
			if it.Err() != nil || n != len(order) {
				t.Fatalf("range: %d rows, err %v", n, it.Err())
			}
			// One symbol through the postings or the clustered directories.
			id, ok := r.SymbolID([]byte("BRK A"))
			if !ok {
				t.Fatal("symbol BRK A missing")
			}
			if err := r.RangeSym(math.MinInt64, math.MaxInt64, id, &it); err != nil {
				t.Fatal(err)
			}
			var want []uint64
			for _, seq := range order {
				if f.want("sym", seq) == "BRK A" {
					want = append(want, seq)
				}
			}
			n = 0
			for it.Next() {
				if n >= len(want) || it.Seq() != want[n] {
					t.Fatalf("range sym: row %d at %d", it.Seq(), n)
				}
				if err := checkGoldenRow(r, f, it.Seq(), it.Row()); err != nil {
					t.Fatalf("range sym: %v", err)
				}
				n++
			}
			if it.Err() != nil || n != len(want) {
				t.Fatalf("range sym: %d rows, err %v; want %d", n, it.Err(), len(want))
			}
		})
	}
}

// postVersion is the version word of db's trades/post.idx header.
func postVersion(t *testing.T, db string) uint32 {
	t.Helper()
	f, err := os.Open(filepath.Join(db, "trades", format.PostName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [12]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint32(b[8:])
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestGoldenFormatsUnknownFeature: a copy of each golden table with a
// features bit no build knows yet is refused by the reader (naming ctl and
// the offset) and by the writer, and opens again once the bit is cleared.
func TestGoldenFormatsUnknownFeature(t *testing.T) {
	for _, f := range goldenFormats() {
		t.Run(f.name, func(t *testing.T) {
			db := t.TempDir()
			copyDir(t, filepath.Join(formatsDir, f.name, "trades"), filepath.Join(db, "trades"))
			ctlPath := filepath.Join(db, "trades", format.CtlName)
			b, err := os.ReadFile(ctlPath)
			if err != nil {
				t.Fatal(err)
			}
			const unknown = 1 << 40
			binary.LittleEndian.PutUint64(b[4312:], f.features|unknown)
			if err := os.WriteFile(ctlPath, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var ce *store.CorruptError
			if _, err := reader.Open(db, "trades", nil); !errors.As(err, &ce) || ce.Offset != 4312 {
				t.Fatalf("reader open: %v, want a refusal at ctl offset 4312", err)
			}
			if _, err := writer.Open(db, "trades", &writer.Options{LiveDir: testutil.LiveDir(t)}); err == nil {
				t.Fatal("writer opened a table with an unknown feature")
			}
			binary.LittleEndian.PutUint64(b[4312:], f.features)
			if err := os.WriteFile(ctlPath, b, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := reader.Open(db, "trades", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
		})
	}
}

// TestGoldenFormatsReopen: a writer reopens a copy of each golden table
// and appends to it: its post.idx keeps its version (a version 1 file
// takes version 1 entries, docs/FORMAT.md §7), the table verifies, and a
// symbol query gives the symbol's rows, old and new, in time order.
func TestGoldenFormatsReopen(t *testing.T) {
	for _, f := range goldenFormats() {
		t.Run(f.name, func(t *testing.T) {
			db := t.TempDir()
			copyDir(t, filepath.Join(formatsDir, f.name, "trades"), filepath.Join(db, "trades"))
			before := postVersion(t, db)
			w, err := writer.Open(db, "trades", &writer.Options{LiveDir: testutil.LiveDir(t)})
			if err != nil {
				t.Fatal(err)
			}
			var last int64
			for seq := range f.rows {
				last = max(last, f.ts(seq))
			}
			const more = 1500 // past a version 1 chunk of a symbol's rows
			ts := func(seq uint64) int64 { return last + int64(seq-f.rows+1)*1000 }
			goldenAppend(t, w, f.want, ts, f.rows, f.rows+more)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := postVersion(t, db); got != before {
				t.Errorf("post.idx version %d after a writer reopened it, was %d", got, before)
			}
			r := verifiedGolden(t, db)
			id, ok := r.SymbolID([]byte("BRK A"))
			if !ok {
				t.Fatal("symbol BRK A missing")
			}
			type tseq struct {
				ts  int64
				seq uint64
			}
			var want []tseq
			for seq := range f.rows + more {
				if f.want("sym", seq) == "BRK A" {
					tt := f.ts(seq)
					if seq >= f.rows {
						tt = ts(seq)
					}
					want = append(want, tseq{tt, seq})
				}
			}
			slices.SortStableFunc(want, func(a, b tseq) int { return cmpInt64(a.ts, b.ts) })
			var it reader.Iter
			if err := r.RangeSym(math.MinInt64, math.MaxInt64, id, &it); err != nil {
				t.Fatal(err)
			}
			n := 0
			for it.Next() {
				if n >= len(want) || it.Seq() != want[n].seq {
					t.Fatalf("range sym: row %d at %d", it.Seq(), n)
				}
				n++
			}
			if it.Err() != nil || n != len(want) {
				t.Fatalf("range sym: %d rows, err %v; want %d", n, it.Err(), len(want))
			}
			// The symbol's latest row at times through the table: the last
			// of its rows by (ts, seq) with ts at or before the time.
			var l reader.Latest
			row := r.Schema().NewRow()
			for _, at := range []int64{want[0].ts - 1, want[0].ts, want[len(want)/3].ts, f.ts(f.rows - 1), ts(f.rows + more/2), math.MaxInt64} {
				if err := r.Latest(at, &l); err != nil {
					t.Fatal(err)
				}
				seq, ok, err := l.Sym(id, row)
				wseq, wok := uint64(0), false
				for _, x := range want {
					if x.ts <= at {
						wseq, wok = x.seq, true
					}
				}
				if err != nil || ok != wok || seq != wseq {
					t.Fatalf("Latest(%d): %d %v %v, want %d %v", at, seq, ok, err, wseq, wok)
				}
			}
		})
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// verifiedGolden verifies the golden table copied into db and opens a
// reader on it, closed with the test.
func verifiedGolden(t *testing.T, db string) *reader.Reader {
	t.Helper()
	if _, err := reader.Verify(db, "trades", nil); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
