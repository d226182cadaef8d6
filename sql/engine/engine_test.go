package engine

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// tick is one row of a test table.
type tick struct {
	ts    int64
	sym   string
	price float64
	size  int64
}

// writeTicks makes table name in db with ticks, published and closed.
func writeTicks(t testing.TB, db, name string, ticks []tick) {
	t.Helper()
	schema := store.TickSchema()
	w, err := writer.Open(db, name, &writer.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	sym, _ := schema.Col("sym")
	price, _ := schema.Col("price")
	size, _ := schema.Col("size")
	row := w.NewRow()
	for _, k := range ticks {
		id, err := w.SymbolString(k.sym)
		if err != nil {
			t.Fatal(err)
		}
		row.SetTs(k.ts)
		row.SetSym(sym, id)
		row.SetF64(price, k.price)
		row.SetI64(size, k.size)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	w.Publish()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// openSession opens an engine over db and a session of it, closed when
// the test ends.
func openSession(t *testing.T, db string, opts *Options) *Session {
	t.Helper()
	e, err := Open(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s, err := e.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSelectAll(t *testing.T) {
	db := t.TempDir()
	base := time.Date(2024, 1, 2, 14, 30, 0, 0, time.UTC).UnixNano()
	ticks := []tick{
		{base + 1, "AAPL", 189.25, 100},
		{base + 2, "MSFT", 370.5, 7},
		{base + 3, "A_VERY_LONG_SYMBOL_NAME", math.NaN(), 3},
	}
	writeTicks(t, db, "trades", ticks)
	s := openSession(t, db, nil)
	rows, err := s.Query(context.Background(), "SELECT epoch_ns(ts), ts, sym, price, size FROM trades")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var ns int64
		var ts time.Time
		var sym string
		var price *float64
		var size int64
		if err := rows.Scan(&ns, &ts, &sym, &price, &size); err != nil {
			t.Fatal(err)
		}
		k := ticks[i]
		if ns != k.ts || ts.UnixNano() != k.ts || sym != k.sym || size != k.size {
			t.Errorf("row %d: %d %v %q %v %d, want %+v", i, ns, ts, sym, price, size, k)
		}
		if math.IsNaN(k.price) != (price == nil) || (price != nil && *price != k.price) {
			t.Errorf("row %d: price %v, want %v", i, price, k.price)
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(ticks) {
		t.Fatalf("%d rows, want %d", i, len(ticks))
	}
}
