package ingest

import (
	"sync"
	"testing"

	"github.com/tickdb/tickdb/internal/loadgen"
	"github.com/tickdb/tickdb/internal/testutil"
	"github.com/tickdb/tickdb/writer"
)

// The per-line path allocates nothing once warm: an event loop splitting,
// parsing and encoding lines into a batch, and the writer goroutine
// appending a batch and publishing.
func TestIngestPathAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("the race detector allocates")
	}
	data, err := loadgen.Ticks("ticks", 4096, 50, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	o := (&Options{}).withDefaults()
	lp := &loop{srv: &Server{opts: o, m: newMetrics()}, m: newMetrics(), ring: newRing(2, 1<<20)}
	c := &conn{}
	lp.cur = lp.ring.claim()
	loopOnce := func() {
		lp.cur.reset()
		lp.lines(c, data, false)
	}
	loopOnce() // warm: parser scratch and batch capacity
	if n := minAllocs(loopOnce); n != 0 {
		t.Errorf("event loop: %v allocations per 4096 lines", n)
	}
	if lp.cur.recs != 4096 {
		t.Fatalf("%d records, want 4096", lp.cur.recs)
	}

	db, live := testutil.DB(t)
	// AllocsPerRun counts the whole process: keep the table's flusher from
	// running (and allocating) while the writer's path is measured.
	so := (&Options{DB: db, LiveRoot: live, Writer: writer.Options{Flush: writer.FlushNone}}).withDefaults()
	var wg sync.WaitGroup
	s := newSink(so, newMetrics(), nil, &wg)
	defer s.closeTables()
	b := lp.cur
	// Rows must keep going forward in time: shift the batch's timestamps
	// on every run.
	apply := func() {
		s.applyBatch(b)
		s.publish()
	}
	apply()                                                  // creates the table and its 50 symbols
	data2, err := loadgen.Ticks("ticks", 4096, 50, 2, false) // server-stamped: always in order
	if err != nil {
		t.Fatal(err)
	}
	lp.cur.reset()
	lp.lines(c, data2, false)
	apply()
	if n := minAllocs(apply); n != 0 {
		t.Errorf("writer: %v allocations per 4096-line batch", n)
	}
	if got := s.tables["ticks"].w.Len(); got%4096 != 0 || got < 4096*23 {
		t.Fatalf("%d rows, want a multiple of 4096 ≥ %d", got, 4096*23)
	}
}

// minAllocs is the fewest allocations per run of f over three
// AllocsPerRun measurements: AllocsPerRun counts the whole process, and a
// table's background goroutines (preparer, checkpointer) may allocate
// during one of them; a path that allocates does so in all three.
func minAllocs(f func()) float64 {
	n := testing.AllocsPerRun(20, f)
	for range 2 {
		n = min(n, testing.AllocsPerRun(20, f))
	}
	return n
}
