package query_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// qtTable is a table under test in a temporary database whose live slots
// testutil removes from /dev/shm when the test ends.
type qtTable struct {
	db, live, name string
	s              *store.Schema
	w              *writer.Writer
	row            store.Row
	segRows        int // rows a segment (scanTable's; 0: tiny)
}

// newTable creates table "ticks" with schema s and tiny (4 KiB)
// segments, and opens its writer (closed by the cleanup if the test does
// not close it).
func newTable(t testing.TB, s *store.Schema) *qtTable {
	t.Helper()
	return newTableWith(t, s, nil)
}

// newTableWith is newTable with the writer's options changed by mod.
func newTableWith(t testing.TB, s *store.Schema, mod func(*writer.Options)) *qtTable {
	t.Helper()
	db, live := testutil.DB(t)
	tb := &qtTable{db: db, live: live, name: "ticks", s: s, row: s.NewRow()}
	o := &writer.Options{Schema: s, LiveDir: live, SegmentSize: 4096}
	if mod != nil {
		mod(o)
	}
	w, err := writer.Open(db, tb.name, o)
	if err != nil {
		t.Fatalf("writer.Open: %v", err)
	}
	tb.w = w
	t.Cleanup(func() { w.Close() })
	return tb
}

// add appends one row: ts, then one value per column after ts (string
// for sym, float64, int64, bool).
func (tb *qtTable) add(t testing.TB, ts int64, vals ...any) {
	t.Helper()
	if len(vals) != len(tb.s.Cols)-1 {
		t.Fatalf("add: %d values for %d columns", len(vals), len(tb.s.Cols)-1)
	}
	clear(tb.row)
	tb.row.SetTs(ts)
	for i, v := range vals {
		c := tb.s.ColAt(i + 1)
		switch v := v.(type) {
		case string:
			id, err := tb.w.SymbolString(v)
			if err != nil {
				t.Fatal(err)
			}
			tb.row.SetSym(c, id)
		case float64:
			tb.row.SetF64(c, v)
		case int64:
			tb.row.SetI64(c, v)
		case int:
			tb.row.SetI64(c, int64(v))
		case bool:
			tb.row.SetBool(c, v)
		default:
			t.Fatalf("add: value %v of type %T", v, v)
		}
	}
	if _, err := tb.w.Append(tb.row); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// publish publishes the rows appended so far.
func (tb *qtTable) publish() { tb.w.Publish() }

// close closes the writer (the rows stay readable).
func (tb *qtTable) close(t *testing.T) {
	t.Helper()
	if err := tb.w.Close(); err != nil {
		t.Fatal(err)
	}
}

func (tb *qtTable) reader(t testing.TB) *reader.Reader {
	t.Helper()
	r, err := reader.Open(tb.db, tb.name, nil)
	if err != nil {
		t.Fatalf("reader.Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// run runs q over r and returns the output and the row count.
func run(t *testing.T, r *reader.Reader, q query.Query, f query.Format, tsf query.TsFormat) (string, int64) {
	t.Helper()
	var buf bytes.Buffer
	enc := query.NewEncoder(&buf, f, tsf, r.Schema(), "ticks", r.SymbolName)
	n, err := query.Run(context.Background(), r, q, enc)
	if err != nil {
		t.Fatalf("Run(%+v): %v", q, err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if enc.Rows() != n {
		t.Fatalf("Run returned %d, encoder saw %d rows", n, enc.Rows())
	}
	return buf.String(), n
}

// allTypes is a schema with every column type and two sym columns.
func allTypes() *store.Schema {
	return store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "hot", Type: store.TypeBool},
		store.Column{Name: "venue", Type: store.TypeSym},
	)
}

// T0 is 2023-11-14T22:13:20Z.
const T0 = int64(1_700_000_000_000_000_000)

// goldenTable writes the four rows the golden outputs show: a symbol with
// a comma and quotes, a venue with a space and an equals sign, another
// with a backslash, a NaN, a tiny and a large float, int64 extremes.
func goldenTable(t *testing.T) *qtTable {
	t.Helper()
	tb := newTable(t, allTypes())
	tb.add(t, T0, "AAPL", 1.5, 100, true, "XNAS")
	tb.add(t, T0+1500, `A,B "C"`, math.NaN(), -7, false, "X N=A")
	tb.add(t, T0+2_000_000_000, "MSFT", 1234567.25, 0, true, `back\slash`)
	tb.add(t, T0+2_000_000_000, "AAPL", 1e-7, int64(math.MaxInt64), false, "XNAS")
	tb.publish()
	return tb
}

func fmtQuery(q query.Query) string { return fmt.Sprintf("%+v", q) }

// leastAllocs is the least of three testing.AllocsPerRun(runs, f): the
// count is the process's, and a column scan's decoding goroutines of
// one run may still be exiting when the next starts its own (which then
// allocates a goroutine where it would reuse one). An allocation of f's
// own shows in every try.
func leastAllocs(runs int, f func()) float64 {
	n := testing.AllocsPerRun(runs, f)
	for try := 0; try < 2; try++ {
		n = min(n, testing.AllocsPerRun(runs, f))
	}
	return n
}
