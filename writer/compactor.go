package writer

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/store"
)

// compactor is the background compaction (Options.CompactAge): a
// goroutine of its own per writer, so that a segment's encoding (tenths
// of a second) holds up neither the checkpointer's hot copies, which the
// preparer waits for before it recycles a live slot (and a roll waits
// for that), nor its checkpoints.
//
// Who decides what: the checkpointer, after each checkpoint, works out
// the segments that qualify (kick: the time index is read there, where
// remapIndexes holds it) and stores the first that does not in upTo; the
// compactor compresses the segments below it one at a time, in order,
// and wakes the checkpointer after each, which then trims the copies and
// drops the postings of what was compacted before its previous pass.
// Compactions of all the writers in a process take turns (compactSem):
// each uses up to CompactWorkers cores already.
type compactor struct {
	w     *Writer
	upTo  atomic.Uint64 // segments below it qualify (the checkpointer's)
	kickc chan struct{}
	stopc chan struct{} // stop: the encoding in progress gives up
	// haltc closes with stopc or with finish: no wait (to qualify, for
	// compactSem) goes on, and no next segment is taken.
	haltc   chan struct{}
	haltOne sync.Once
	donec   chan struct{}
}

// compactSem lets one segment's compaction run at a time in a process
// (its encoding and swap; not its wait to qualify, compactNext).
var compactSem = make(chan struct{}, 1)

// semAcquire takes compactSem, or reports false once stop closes.
func semAcquire(stop <-chan struct{}) bool {
	select {
	case compactSem <- struct{}{}:
		return true
	case <-stop:
		return false
	}
}

func newCompactor(w *Writer) *compactor {
	return &compactor{w: w, kickc: make(chan struct{}, 1), stopc: make(chan struct{}), haltc: make(chan struct{}), donec: make(chan struct{})}
}

// kick has the compactor look for work; it never blocks.
func (c *compactor) kick() {
	select {
	case c.kickc <- struct{}{}:
	default:
	}
}

// stop ends the compactor: an encoding in progress gives up within a
// block (cseg.ErrStopped), its segment stays raw.
func (c *compactor) stop() {
	close(c.stopc)
	c.halt()
	<-c.donec
}

// finish ends the compactor once the segment in progress, if any, is
// compressed, provided it qualifies now: Close, after its final
// checkpoint, when nothing more can make a segment qualify. (Stopping
// instead threw away an encoding that was most of the way through, which
// Close then did again whole: a segment's tens of milliseconds.) A
// segment that does not qualify stays raw, as with stop.
func (c *compactor) finish() {
	c.halt()
	<-c.donec
}

func (c *compactor) halt() { c.haltOne.Do(func() { close(c.haltc) }) }

func (c *compactor) halted() bool {
	select {
	case <-c.haltc:
		return true
	default:
		return false
	}
}

func (c *compactor) stopping() bool {
	select {
	case <-c.stopc:
		return true
	default:
		return false
	}
}

func (c *compactor) run() {
	defer close(c.donec)
	for {
		select {
		case <-c.haltc:
			return
		case <-c.kickc:
		}
		for c.next() {
			c.w.ck.wake() // copies to trim, postings to drop
			if c.halted() {
				return
			}
		}
	}
}

// next compresses the next qualifying segment and reports whether it
// did (false: nothing to do, stopped, or an error it dealt with).
func (c *compactor) next() bool {
	w := c.w
	t0 := time.Now()
	n, err := w.compactNext(c.upTo.Load(), c.stopc, c.haltc)
	if errors.Is(err, errSegDropped) {
		return true // nothing compressed, nothing failed: the next one
	}
	w.sh.cmpFailing.Store(err != nil && !errors.Is(err, cseg.ErrStopped))
	switch {
	case err == nil:
		if n > 0 {
			w.sh.cmpRows.Add(uint64(n) * w.rps)
			w.sh.cmpNanos.Add(uint64(time.Since(t0)))
		}
		return n > 0
	case errors.Is(err, cseg.ErrStopped):
		return false // Close: the segment stays raw, for the next writer
	case errors.Is(err, store.ErrCorrupt):
		// Damage on disk: not compressed; the writer goes on taking
		// rows (verify names the damage; tickdb compact fails on it).
		w.compactOff.Store(true)
		w.log.Error("writer: background compaction stopped: a segment's rows fail their checks", "table", w.name, "err", err)
	case classify(err) == CondFailed:
		w.fail.set(err)
		w.log.Error("writer: compaction failed", "table", w.name, "err", err)
	default:
		// A full disk or an I/O error: tried again later.
		w.log.Warn("writer: compaction failed; tried again later", "table", w.name, "err", err)
		time.AfterFunc(time.Second, c.kick)
	}
	return false
}

// kickCompaction sets the compactor's upTo from the table's state and
// kicks it. Checkpointer only (it reads the time index for CompactAge).
func (w *Writer) kickCompaction() {
	if w.cmp == nil || w.compactOff.Load() {
		return
	}
	snap, err := w.ctl.Snapshot()
	if errors.Is(err, index.ErrBusy) {
		w.ck.wakeAfter(retryDelay) // the writer is mid-publish: a moment later
		return
	}
	if err != nil {
		return // the checkpoint that just passed read the same ctl
	}
	limit := w.compactLimit(snap.Visible)
	n := max(w.ctl.CmpSegs(), snap.FirstSeq>>w.shift)
	for n < limit && w.olderThan(n, w.opts.CompactAge, snap.Visible, snap.LastTs) {
		n++
	}
	if n > w.cmp.upTo.Load() {
		w.cmp.upTo.Store(n)
	}
	w.cmp.kick()
}
