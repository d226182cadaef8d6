package ingest

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/loadgen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
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

	// Lines with their own timestamps (the time rule's checks): restamped
	// forward from the clock on every run, so that every row is stored.
	data3, err := loadgen.Ticks("ticks", 4096, 50, 3, true)
	if err != nil {
		t.Fatal(err)
	}
	lp.cur.reset()
	lp.lines(c, data3, false)
	next := time.Now().UnixNano()
	stamped := func() {
		next = restamp(b, next)
		apply()
	}
	stamped()
	before := s.tables["ticks"].w.Len()
	if n := minAllocs(stamped); n != 0 {
		t.Errorf("writer, timestamped lines: %v allocations per 4096-line batch", n)
	}
	if got := s.tables["ticks"].w.Len() - before; got%4096 != 0 || got < 4096*60 {
		t.Fatalf("%d timestamped rows stored, want a multiple of 4096 ≥ %d", got, 4096*60)
	}
}

// restamp gives b's records the timestamps from, from+1, ... and returns
// the next one.
func restamp(b *batch, from int64) int64 {
	for p := 0; p < len(b.buf); p += recordLen(b.buf[p:]) {
		binary.LittleEndian.PutUint64(b.buf[p+16:], uint64(from))
		from++
	}
	return from
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
