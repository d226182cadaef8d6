package ingest

import (
	"errors"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
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

// A server warms a reader of each table as it starts: the first query
// of each takes it (no open of its own), and the ones no query took are
// closed once readerMaxAge old.
func TestReaderPoolWarm(t *testing.T) {
	db, live := testutil.DB(t)
	for _, name := range []string{"t1", "t2"} {
		w, err := writer.Open(db, name, &writer.Options{Schema: store.TickSchema(), LiveDir: live})
		if err != nil {
			t.Fatal(err)
		}
		sym, _ := w.SymbolString("A")
		row := store.TickSchema().NewRow()
		for i := range 100 {
			row.SetTs(int64(i))
			row.SetSym(store.TickSchema().ColAt(1), sym)
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	p := newReaderPool(db)
	defer p.close()
	p.warm([]string{"t1", "nope", "t2"}) // a table that is not there is skipped
	warmed := map[string]*pooledReader{}
	for _, name := range []string{"t1", "t2"} {
		if n := len(p.idle[name]); n != 1 {
			t.Fatalf("table %s: %d idle readers after warm, want 1", name, n)
		}
		warmed[name] = p.idle[name][0]
	}
	if len(p.idle["nope"]) != 0 {
		t.Fatal("a reader of a table that is not there")
	}
	a, err := p.get("t1")
	if err != nil {
		t.Fatal(err)
	}
	if a != warmed["t1"] || a.r.Len() != 100 {
		t.Fatalf("first get: the warmed reader %v, Len %d; want it, 100", a == warmed["t1"], a.r.Len())
	}
	p.put("t1", a, true)
	p.maxAge = time.Nanosecond
	p.sweep() // both idle readers are now too old
	for name, pr := range warmed {
		if _, err := pr.r.Get(0); !errors.Is(err, reader.ErrClosed) {
			t.Fatalf("table %s: warmed reader after sweep: Get %v, want closed", name, err)
		}
		if n := len(p.idle[name]); n != 0 {
			t.Fatalf("table %s: %d idle readers after sweep", name, n)
		}
	}
}
