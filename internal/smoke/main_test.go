package smoke

import (
	"testing"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

func TestSmoke(t *testing.T) {
	db := t.TempDir()
	s := store.TickSchema()
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: s, SegmentSize: 64 << 10, LiveDir: "/dev/shm/tickdb-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	symc, _ := s.Col("sym")
	row := s.NewRow()
	ids := []uint32{}
	for _, n := range []string{"AAPL", "MSFT", "GOOG"} {
		id, err := w.SymbolString(n)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	const N = 20000
	for i := 0; i < N; i++ {
		row.SetTs(int64(1000 + i))
		row.SetSym(symc, ids[i%3])
		row.SetF64(price, float64(i)*0.5)
		row.SetI64(size, int64(i))
		if _, err := w.Append(row); err != nil {
			t.Fatal(i, err)
		}
		if i%100 == 0 {
			w.Publish()
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, "ticks", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Count() != N {
		t.Fatal("count", r.Count())
	}
	for i := uint64(0); i < N; i++ {
		row, err := r.Get(i)
		if err != nil {
			t.Fatal(i, err)
		}
		if row.Ts() != int64(1000+i) || row.I64(size) != int64(i) {
			t.Fatal("mismatch", i)
		}
	}
	seq, err := r.SeekTime(1500)
	if err != nil || seq != 500 {
		t.Fatal("seek", seq, err)
	}
	var it reader.Iter
	if err := r.RangeSym(2000, 3000, ids[1], &it); err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		if it.Row().Sym(symc) != ids[1] {
			t.Fatal("sym")
		}
		n++
	}
	if it.Err() != nil || n != 334 {
		t.Fatal("rangesym", n, it.Err())
	}
	t.Logf("stats %+v", w.Stats())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// reader after close
	for i := uint64(0); i < N; i += 997 {
		row, err := r.Get(i)
		if err != nil || row.I64(size) != int64(i) {
			t.Fatal("after close", i, err)
		}
	}
	r.Close()
	// reopen
	w, err = writer.Open(db, "ticks", &writer.Options{LiveDir: "/dev/shm/tickdb-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Len() != N {
		t.Fatal("reopen len", w.Len())
	}
	row.SetTs(1000 + N)
	if _, err := w.Append(row); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, _ = reader.Open(db, "ticks", nil)
	if r.Count() != N+1 {
		t.Fatal(r.Count())
	}
	if err := r.RangeSym(0, 1<<62, ids[0], &it); err != nil {
		t.Fatal(err)
	}
	n = 0
	for it.Next() {
		n++
	}
	t.Log("sym0 rows", n, it.Err())
	r.Close()
}
