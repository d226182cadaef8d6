package writer

import (
	"os"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
)

// A writer's flusher, preparer and checkpointer as jobs of a Group
// (group.go): the same work as their goroutines do (flusher.round,
// preparer.once, checkpointer.pass), started by the events that wake
// those goroutines instead of by tickers.
//
// Who owns what: the group's workers run the jobs and own the flush
// buffers (a flush job borrows its worker's for a run); the writer owns
// its jobs, and its Close stops them one by one (a run in progress
// finishes first: the preparer's, then after the last flush the
// flusher's, then the checkpointer's) before the final checkpoint,
// leaving the group running for its other writers.
//
// Files: between runs a flush job with nothing left to write closes the
// durable segment file and the hot copy it writes (park); the next run
// opens them again (unpark), so an idle table holds no descriptor but
// its lock.

// startJobs makes w's background work jobs of group g.
func (w *Writer) startJobs(g *Group) {
	f, p, c := w.fl, w.prep, w.ck
	f.job = g.newJob(flushJob, f.groupRun, f.due)
	p.job = g.newJob(prepJob, p.groupRun, nil)
	c.job = g.newJob(ckJob, c.groupRun, nil)
	w.grouped = f
}

// groupRun is one run of the flush job with the worker's buffer: at most
// one buffer of rows (other tables wait meanwhile), then when to run
// again.
func (f *flusher) groupRun(buf []byte) time.Duration {
	f.buf = buf
	f.w.sh.flushRun.Store(time.Now().UnixNano())
	f.round(f.most())
	f.buf = nil
	next := f.due()
	if next < 0 {
		f.park()
	}
	return next
}

// most is the row count a run writes up to at most: what one buffer
// holds from the block of the first row not durable, within its segment.
func (f *flusher) most() uint64 {
	w := f.w
	d := f.durable
	base := d >> w.shift << w.shift
	start := (d - base) * w.rowSize &^ (format.BlockSize - 1)
	return min(base+(start+uint64(len(f.buf)))/w.rowSize, base+w.rps)
}

// due says when the flush job has work: < 0 none, 0 now, > 0 after that
// long. A Sync waiting, or a sealed segment under FlushOnSync and
// FlushNone, is now; published rows under FlushInterval are
// FlushInterval after the job's last run began (now when that is past).
// It loads only atomic words (Group.settle calls it under the group's
// lock, the writer's Publish through published).
func (f *flusher) due() time.Duration {
	w := f.w
	if w.fail.get() != nil {
		return -1
	}
	d := w.ctl.Durable()
	if w.sh.syncWant.Load() > d {
		return f.retryWait(0)
	}
	v := w.ctl.Visible()
	if w.opts.Flush != FlushInterval {
		if v>>w.shift<<w.shift <= d {
			return -1
		}
		return f.retryWait(0)
	}
	if v <= d {
		return -1
	}
	return f.retryWait(max(time.Until(time.Unix(0, w.sh.flushRun.Load()).Add(w.opts.FlushInterval)), 0))
}

// retryWait is delay, or longer while a failed flush waits out its
// backoff (the flusher's own goroutine polls for it every tick; a job
// is run when it is over).
func (f *flusher) retryWait(delay time.Duration) time.Duration {
	if at := f.w.sh.flushRetryAt.Load(); at != 0 {
		return max(delay, time.Until(time.Unix(0, at)), 0)
	}
	return delay
}

// published is the writer's Publish telling a Group's flush job that
// rows were published: one atomic load while the job is queued or
// running already (a busy table), else it queues the job for when due.
func (f *flusher) published() {
	if f.job.busy.Load() {
		return
	}
	if d := f.due(); d >= 0 {
		f.job.kick(d)
	}
}

// park closes the durable segment file and the hot copy while the job is
// idle, keeping what file() and writeHot need to go on with them: the
// segment (fdSeg), its allocation (allocEnd) and the hot copy's path.
func (f *flusher) park() {
	if f.fd != nil {
		f.fd.Close()
		f.fd = nil
	}
	if f.hot != nil {
		f.hotPark = f.hot.Name()
		f.hot.Close()
		f.hot = nil
	}
}

// unpark opens segment n's file again (and its hot copy) for file().
func (f *flusher) unpark(n uint64) (*vfs.File, error) {
	fd, err := f.w.openDirect(n, &f.warned)
	if err != nil {
		f.closeFd()
		return nil, err
	}
	f.fd = fd
	if f.hotPark != "" {
		path := f.hotPark
		f.hotPark = ""
		if hf, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.hot = hf
		} else {
			os.Remove(path)
			f.w.log.Warn("writer: hot copy failed", "table", f.w.name, "segment", n, "err", err)
		}
	}
	return fd, nil
}

// groupRun is one preparer step; while it leaves something to try again
// (a slot it needs not free yet, room it could not reserve) it runs again
// after prepTick, as its own goroutine's ticker would. It closes the
// durable file it allocated in (an idle table holds no descriptor but
// its lock).
func (p *preparer) groupRun([]byte) time.Duration {
	if p.dead {
		return -1
	}
	ok := p.once()
	p.closeDurable()
	if !ok {
		p.dead = true
		return -1
	}
	if p.settled() || p.stopping() {
		return -1
	}
	return prepTick
}

// settled reports whether the step left nothing to try again: the slots
// the writer needs are ready (its current segment's, and the next one's
// once the writer is within the distance of it: what step prepares), the
// room it asked for is reserved, and no condition (no space; the
// flusher's I/O error, which holds the reservation back) waits to clear.
func (p *preparer) settled() bool {
	w := p.w
	if w.sh.resCond.get() != nil || w.sh.ioCond.get() != nil || w.sh.want.Load() > w.sh.reserved.Load() {
		return false
	}
	cur := w.sh.curSeg.Load()
	pos := max(w.sh.pos.Load(), w.ctl.Visible(), cur<<w.shift)
	last := min(cur+1, (pos+p.ahead-1)>>w.shift)
	for seg := cur; seg <= last; seg++ {
		if w.slots[seg%uint64(len(w.slots))].ready.Load() != seg+1 {
			return false
		}
	}
	return true
}

// groupRun is one checkpointer pass.
func (c *checkpointer) groupRun([]byte) time.Duration {
	c.pass()
	return -1
}
