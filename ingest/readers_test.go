package ingest

import (
	"errors"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// TestReaderPool: a reader given back after a good request is given out
// again, and sees rows written since; one given back after a failed
// request, or past its age, is closed, not given out; at most readerIdle
// wait per table; close closes the idle ones; a missing table is
// store.ErrNoTable.
func TestReaderPool(t *testing.T) {
	db, live := testutil.DB(t)
	w, err := writer.Open(db, "t", &writer.Options{Schema: store.TickSchema(), LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sym, _ := w.SymbolString("A")
	row := store.TickSchema().NewRow()
	add := func(n int) {
		for range n {
			row.SetTs(int64(w.Len()))
			row.SetSym(store.TickSchema().ColAt(1), sym)
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
		}
		w.Publish()
	}
	add(10)
	p := newReaderPool(db)
	a, err := p.get("t")
	if err != nil {
		t.Fatal(err)
	}
	if a.r.Len() != 10 {
		t.Fatalf("Len %d, want 10", a.r.Len())
	}
	p.put("t", a, true)
	add(5)
	b, _ := p.get("t")
	if b != a || b.r.Len() != 15 {
		t.Fatalf("second get: same reader %v, Len %d; want the same, 15", b == a, b.r.Len())
	}
	c, _ := p.get("t") // none idle: a new one
	if c == a {
		t.Fatal("a reader given out twice")
	}
	d, _ := p.get("t")
	p.put("t", b, true)
	p.put("t", c, true)
	p.put("t", d, true) // a third idle one: closed
	if _, err := d.r.Get(0); !errors.Is(err, reader.ErrClosed) {
		t.Fatalf("reader past readerIdle: Get %v, want closed", err)
	}
	e, _ := p.get("t")
	p.put("t", e, false) // failed request
	if _, err := e.r.Get(0); !errors.Is(err, reader.ErrClosed) {
		t.Fatalf("reader of a failed request: Get %v, want closed", err)
	}
	p.maxAge = time.Nanosecond
	f, _ := p.get("t") // the idle one is too old: closed, a new one
	if f == b || f == c {
		t.Fatal("an expired reader given out")
	}
	for _, old := range []*pooledReader{b, c} {
		if _, err := old.r.Get(0); !errors.Is(err, reader.ErrClosed) {
			t.Fatalf("expired idle reader: Get %v, want closed", err)
		}
	}
	p.put("t", f, true) // too old when it comes back: closed
	if _, err := f.r.Get(0); !errors.Is(err, reader.ErrClosed) {
		t.Fatalf("expired reader given back: Get %v, want closed", err)
	}
	p.maxAge = time.Hour
	g, _ := p.get("t")
	p.put("t", g, true)
	p.close()
	if _, err := g.r.Get(0); !errors.Is(err, reader.ErrClosed) {
		t.Fatalf("idle reader after close: Get %v, want closed", err)
	}
	h, _ := p.get("t")
	p.put("t", h, true) // after close: closed, not kept
	if _, err := h.r.Get(0); !errors.Is(err, reader.ErrClosed) {
		t.Fatalf("reader given back after close: Get %v, want closed", err)
	}
	if _, err := p.get("nope"); !errors.Is(err, store.ErrNoTable) {
		t.Fatalf("get of a missing table: %v", err)
	}
}
