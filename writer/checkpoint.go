package writer

import (
	"time"

	"errors"
	"fmt"
	"runtime"

	"github.com/tickdb/tickdb/internal/index"
)

// checkpointer runs the index checkpoint (Writer.checkpoint: msync of
// sym.dat, ts.idx and post.idx, then the checkpoint words in ctl and an
// msync of ctl) on its own goroutine, so the flusher goes on writing rows
// while it runs. The flusher wakes it after sealing a segment; wakes that
// arrive while a checkpoint runs collapse into one more run.
//
// The checkpoint words keep their meaning (docs/FORMAT.md §9): a
// checkpoint reads the published snapshot first, writes the index files
// back up to it, and only then records ckSeq (at most the durable count it
// started from), ckNextChunk and ckSymCount, so they never describe more
// than is on disk. Running late costs only recovery work: a cold open
// re-indexes the rows past the last checkpoint from the durable files,
// however many segments that spans. Close stops the checkpointer (letting
// a running checkpoint finish) and then checkpoints synchronously after
// the final flush.
//
// A full disk or an I/O error in its work does not stop the writer: rows
// are made durable by the flusher, not here. A failed retention or
// compaction pass is logged and tried again at the next wake. A failed
// checkpoint is different: after a failed msync the kernel may have
// marked the index pages it could not write clean, and a later msync
// would not write them, so no checkpoint is recorded again in this run
// (shared.ckCond; the condition shows io_error without refusing rows),
// and Close leaves the table for the next Open to re-index from the last
// checkpoint recorded (Writer.Close).
type checkpointer struct {
	w     *Writer
	kickc chan struct{}
	stopc chan struct{}
	donec chan struct{}
	// pausec holds the goroutine between passes until the channel it
	// receives is closed (reserve.go: the writer maps index files again).
	pausec chan chan struct{}
	// mark is the compaction mark as the previous pass left it: the
	// postings floor follows it one pass behind.
	mark uint64
	// job is the checkpointer as its writer's Group runs it (nil: its
	// own goroutine, run).
	job *job
}

func newCheckpointer(w *Writer) *checkpointer {
	return &checkpointer{w: w, kickc: make(chan struct{}, 1), stopc: make(chan struct{}), donec: make(chan struct{}), pausec: make(chan chan struct{}), mark: w.ctl.CmpSegs()}
}

// wake asks for a checkpoint; it never blocks (in a Group, it takes the
// group's lock).
func (c *checkpointer) wake() {
	if c.job != nil {
		c.job.kick(0)
		return
	}
	select {
	case c.kickc <- struct{}{}:
	default:
	}
}

// stopping reports whether Close has begun to stop the checkpointer: a
// pass then skips what Close undoes (hot and clustered copies) and what
// it need not wait for (compaction).
func (c *checkpointer) stopping() bool {
	select {
	case <-c.stopc:
		return true
	default:
		return false
	}
}

// wakeAfter asks for a pass d from now: work a pass had to leave (a
// busy snapshot, a full disk) is not left until the next segment seals,
// which on an idle table may be never.
func (c *checkpointer) wakeAfter(d time.Duration) {
	if c.job != nil {
		c.job.kick(d)
		return
	}
	time.AfterFunc(d, c.wake) // after stop, a kick nobody reads
}

// retryDelay is how long a pass that had to leave work waits to try again.
const retryDelay = 50 * time.Millisecond

// stop ends the goroutine after the checkpoint in progress, if any.
func (c *checkpointer) stop() {
	close(c.stopc)
	if c.job != nil {
		c.job.stop()
		close(c.donec)
		return
	}
	<-c.donec
}

func (c *checkpointer) run() {
	defer close(c.donec)
	// Its msyncs block for tens of milliseconds: keep them off threads
	// the writer or the flusher might run on.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		select {
		case <-c.stopc:
			return
		case <-c.kickc:
		case r := <-c.pausec:
			<-r
			continue
		}
		c.pass()
	}
}

// pass is one wake's work: hot copies, the checkpoint, then retention,
// compaction and the postings of compacted rows.
func (c *checkpointer) pass() {
	w := c.w
	if w.fail.get() != nil {
		return
	}
	// Hot copies of the segments sealed since (clu.go), first: the
	// preparer recycles their slots once the writer needs them. A
	// failure (tmpfs full) costs readers only the faster path:
	// logged, not fatal.
	if err := w.makeHot(); err != nil {
		w.log.Warn("writer: hot copy failed", "table", w.name, "err", err)
	}
	if w.sh.ckCond.get() != nil {
		return // no checkpoint is recorded again in this run (above)
	}
	if err := w.checkpoint(w.ctl.Durable()); errors.Is(err, index.ErrBusy) {
		// The writer goroutine was preempted mid-publish for longer
		// than a snapshot waits (a loaded machine): a pass a moment
		// later checkpoints; running late costs only recovery work.
		c.wakeAfter(retryDelay)
		return
	} else if err != nil {
		if classify(err) == CondFailed {
			w.fail.set(fmt.Errorf("writer: checkpoint: %w", err))
			w.log.Error("writer: checkpoint failed", "table", w.name, "err", err)
			return
		}
		w.sh.ckCond.set(w.condErr(fmt.Errorf("writer: checkpoint: %w", err)))
		w.log.Error("writer: checkpoint failed; none is recorded again until the table is reopened, which re-indexes from the last one", "table", w.name, "err", err)
		return
	}
	// Segments automatic retention (at a roll) moved below the first
	// row: the writer goroutine does not wait for the unlinks.
	if _, _, err := w.dropSegments(); err != nil {
		c.failed("retention", err)
		return
	}
	// Options.CompactAge: the segments old enough go to the compactor
	// (compactor.go), off this goroutine and the writer's and the
	// flusher's.
	if c.stopping() {
		return
	}
	w.kickCompaction()
	// The postings of rows compacted before the previous pass: a
	// reader that saw the mark before it moved has had a checkpoint's
	// time to finish with them.
	mark := w.ctl.CmpSegs()
	if err := w.dropPostings(c.mark, false); err != nil {
		c.failed("dropping compacted postings", err)
		return
	}
	if mark > c.mark && w.schema.SymCol >= 0 {
		// The postings of what was compacted since go at the next
		// pass: on a table that goes idle, a moment from now.
		c.wakeAfter(retryDelay)
	}
	c.mark = mark
}

// failed handles the error of background maintenance (what): a full
// disk or an I/O error is logged and the work tried again at the next
// wake; anything else stops the writer.
func (c *checkpointer) failed(what string, err error) {
	w := c.w
	if classify(err) == CondFailed {
		w.fail.set(err)
		w.log.Error("writer: "+what+" failed", "table", w.name, "err", err)
		return
	}
	w.log.Warn("writer: "+what+" failed; tried again later", "table", w.name, "err", err)
	c.wakeAfter(time.Second)
}

// closeUncheckpointed ends Close after a failed index checkpoint (every
// row durable): the live slots go, the state says recovering, so the next
// Open takes the cold path and re-indexes the rows past the last
// checkpoint recorded from the durable files.
func (w *Writer) closeUncheckpointed() error {
	err := w.removeLive()
	if err == nil {
		w.ctl.SetWriter(0, index.StateRecovering)
		err = w.ctl.Sync()
	}
	w.final = w.stats()
	if e := w.closeFiles(); err == nil {
		err = e
	}
	w.reap.start()
	w.log.Warn("writer: closed without a checkpoint; the next open re-indexes", "table", w.name, "rows", w.seq)
	return err
}
