package reader_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tickdb/tickdb/internal/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The golden table: one per format version, committed under testdata and
// never rewritten, so every later build must keep reading it. Regenerate a
// NEW version's table (never an old one) with TICKDB_WRITE_GOLDEN=1.
const goldenDB = "testdata/golden-v1"

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

func TestWriteGolden(t *testing.T) {
	if os.Getenv("TICKDB_WRITE_GOLDEN") == "" {
		t.Skip("writes the golden table only with TICKDB_WRITE_GOLDEN=1")
	}
	os.RemoveAll(goldenDB)
	s := goldenSchema()
	w, err := writer.Open(goldenDB, "trades", &writer.Options{Schema: s, SegmentSize: 4096, LiveDir: testutil.LiveDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	row := s.NewRow()
	for i := 0; i < goldenRows; i++ {
		ts, sym, price, size, venue, buy := goldenRow(i)
		a, _ := w.SymbolString(sym)
		b, _ := w.SymbolString(venue)
		row.SetTs(ts)
		row.SetSym(s.ColAt(1), a)
		row.SetF64(s.ColAt(2), price)
		row.SetI64(s.ColAt(3), size)
		row.SetSym(s.ColAt(4), b)
		row.SetBool(s.ColAt(5), buy)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(goldenDB, "trades", store.LockName))
}

func TestGoldenV1StillReads(t *testing.T) {
	if _, err := os.Stat(filepath.Join(goldenDB, "trades", store.CtlName)); err != nil {
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
	if r.Count() != goldenRows {
		t.Fatalf("count %d", r.Count())
	}
	for i := 0; i < goldenRows; i++ {
		row, err := r.Get(uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		ts, sym, price, size, venue, buy := goldenRow(i)
		gs, _ := r.Symbol(row.Sym(s.ColAt(1)))
		gv, _ := r.Symbol(row.Sym(s.ColAt(4)))
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
