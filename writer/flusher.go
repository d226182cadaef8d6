package writer

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
)

// flusher makes published rows durable. It copies rows out of the live
// slot, from the block holding the first non-durable row, into an aligned
// anonymous buffer, zero-pads the partial tail block and writes it with one
// pwrite to the durable segment file opened O_DIRECT|O_DSYNC; then it
// publishes the durable count. The tail block is rewritten by the next
// flush, which is safe because nothing maps the durable file writable. The
// live file itself is never written with O_DIRECT.
//
// A flush that keeps up is small (what one interval published). With a
// backlog (the writer outran the disk) each pwrite carries up to
// Options.FlushBytes (8 MiB by default): with one write in flight at a time, every O_DSYNC write
// ends in a device cache flush, so fewer, larger writes reach more of the
// disk's bandwidth (1 MiB → 8 MiB: about +20 % on the reference disk).
// durable is published after every write, so Sync waiters and the lag
// figures move on while a backlog drains. At a segment seal the index
// checkpoint is handed to the checkpointer and the flusher goes on to the
// next segment.
//
// Durable files are created sparse. The preparer allocates their blocks
// ahead of the writer, with the rest of the room for rows (room.go), so
// the flusher's writes land in allocated (unwritten) extents and cannot
// fail for lack of space. Rows it finds no allocation for (a file system
// without fallocate, a table an older version wrote) it allocates itself
// before the write, from there to a step past the write's end; the step
// starts at allocFirst and doubles up to allocMax.
//
// A write that fails with an error that can clear (EIO; ENOSPC where the
// writes allocate for themselves) is not the writer's end: the flusher
// records it (shared.ioCond: new rows are refused meanwhile), waits a
// backoff (retryFirst doubling to retryMax) and writes again from the
// first row not durable, copied afresh from the live slot, which holds
// every row until it is durable. With O_DIRECT nothing of a failed write
// stays in the page cache, so the rewrite is the whole repair; without
// O_DIRECT (O_DSYNC alone) the rewrite dirties the pages a failed
// writeback left clean, so they are written again. A failed msync of the
// dictionary is repaired the same way (Symbols.Rewrite before the next
// msync): a retried msync alone would find those pages clean and report
// success.
type flusher struct {
	w       *Writer
	buf     []byte // anonymous mapping: page-aligned, off the Go heap
	kickc   chan struct{}
	stopc   chan struct{}
	donec   chan struct{}
	mu      sync.Mutex
	cond    *sync.Cond
	durable uint64 // flusher's own copy of the durable count
	fd      *vfs.File
	fdSeg   uint64 // segment of fd, +1 (0: none)
	// hot is the hot copy being written beside fd's segment (clu.go),
	// nil when there is none: no hot budget, a segment this flusher did
	// not start at its first row, or a failed write.
	hot     *os.File
	symSync uint64 // dictionary bytes known durable
	warned  bool
	// allocEnd is the file offset up to which fd's file is known to be
	// allocated from this flusher's first write to it on (0: none yet);
	// allocStep the next allocation's size past the write, kept across
	// segments; noAlloc is set where the file system has no fallocate.
	allocEnd  int64
	allocStep int64
	noAlloc   bool
	// retry is the backoff after a failed flush (0: the last one
	// succeeded), retryAt when the next attempt may run; symBad is set
	// when a dictionary msync failed: the next one rewrites first.
	retry   time.Duration
	retryAt time.Time
	symBad  bool
	// job is the flusher as its writer's Group runs it (nil: its own
	// goroutine, run). hotPark is the path of the hot copy being written
	// while the job, idle, has closed its files (group_jobs.go: park).
	job     *job
	hotPark string
}

// The durable files' allocation steps (flusher.allocate), and the
// backoff between attempts after a failed flush.
const (
	allocFirst = 64 << 10
	allocMax   = 8 << 20
	retryFirst = 10 * time.Millisecond
	retryMax   = 250 * time.Millisecond
)

func newFlusher(w *Writer) *flusher {
	f := &flusher{w: w, kickc: make(chan struct{}, 1), stopc: make(chan struct{}), donec: make(chan struct{})}
	f.cond = sync.NewCond(&f.mu)
	f.allocStep = allocFirst
	f.durable = w.ctl.Durable()
	f.symSync = w.ctl.SymBytes()
	if w.opts.Group != nil {
		return f // the group's workers lend their buffers
	}
	buf, err := mmap.MapAnon(w.opts.FlushBytes)
	if err != nil {
		w.fail.set(err)
	}
	f.buf = buf
	return f
}

func (f *flusher) wake() {
	if f.job != nil {
		f.job.kick(0)
		return
	}
	select {
	case f.kickc <- struct{}{}:
	default:
	}
}

func (f *flusher) stop() {
	if f.job != nil {
		f.job.stop()
		f.closeFd()
		close(f.donec)
		f.broadcast() // waiters see donec closed
		return
	}
	close(f.stopc)
	<-f.donec
}

func (f *flusher) run() {
	defer close(f.donec)
	defer mmap.Unmap(f.buf)
	defer f.closeFd()
	// The flusher owns an OS thread while it runs so its syscalls never
	// share one with the writer.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	period := f.w.opts.FlushInterval
	if f.w.opts.Flush != FlushInterval {
		period = 5 * time.Millisecond // sealed segments only, unless a Sync asks
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-f.stopc:
			return
		case <-f.kickc:
		case <-t.C:
		}
		f.round(math.MaxUint64)
	}
}

// round is one pass of the flusher: it writes the rows published (under
// FlushOnSync and FlushNone, unless a Sync waits, the sealed segments)
// below most, unless waiting out the backoff of a failed flush, and
// wakes the waiters.
func (f *flusher) round(most uint64) {
	if f.w.fail.get() != nil {
		f.broadcast()
		return
	}
	if f.retry != 0 && time.Now().Before(f.retryAt) {
		f.broadcast() // waiters with a deadline look at the clock
		return
	}
	v := f.w.ctl.Visible()
	limit := v
	if f.w.opts.Flush != FlushInterval && f.w.sh.syncWant.Load() <= f.durable {
		limit = v >> f.w.shift << f.w.shift
	}
	f.settle(f.flushTo(min(limit, most)))
	f.broadcast()
}

// settle records how a flush ended: a failure that can clear sets the
// writer's I/O condition and the backoff, any other failure stops the
// writer; success clears the condition.
func (f *flusher) settle(err error) {
	w := f.w
	if err == nil {
		if f.retry != 0 {
			f.retry = 0
			w.sh.flushRetryAt.Store(0)
			if w.sh.ioCond.clear() {
				w.log.Info("writer: flusher writes again", "table", w.name, "durable", f.durable)
			}
		}
		return
	}
	if classify(err) == CondFailed {
		w.fail.set(fmt.Errorf("writer: flusher: %w", err))
		w.log.Error("writer: flusher failed", "table", w.name, "err", err)
		return
	}
	// Reopen the file for the next attempt: nothing of this one's state
	// is trusted.
	f.closeFd()
	if f.retry == 0 {
		w.log.Warn("writer: flush failed; retrying, new rows refused meanwhile", "table", w.name, "durable", f.durable, "err", err)
		f.retry = retryFirst
	} else {
		f.retry = min(2*f.retry, retryMax)
	}
	f.retryAt = time.Now().Add(f.retry)
	w.sh.flushRetryAt.Store(f.retryAt.UnixNano())
	w.sh.ioCond.set(w.condErr(fmt.Errorf("writer: flusher: %w", err)))
}

func (f *flusher) broadcast() {
	f.mu.Lock()
	f.cond.Broadcast()
	f.mu.Unlock()
}

// waitDurable asks for a flush and waits until target rows are durable.
// While the flusher fails with a condition that can clear it waits on,
// unless past deadline (not zero): then it returns the condition.
func (f *flusher) waitDurable(target uint64, deadline time.Time) error {
	for {
		want := f.w.sh.syncWant.Load()
		if want >= target || f.w.sh.syncWant.CompareAndSwap(want, target) {
			break
		}
	}
	f.wake()
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.w.ctl.Durable() < target {
		if err := f.w.fail.get(); err != nil {
			return err
		}
		if e := f.w.sh.ioCond.get(); e != nil && !deadline.IsZero() && time.Now().After(deadline) {
			return e
		}
		select {
		case <-f.donec:
			return ErrClosed
		default:
		}
		f.wake()
		f.cond.Wait()
	}
	return nil
}

// flushTo writes rows [durable, limit) and publishes them durable, one
// segment piece at a time.
func (f *flusher) flushTo(limit uint64) error {
	w := f.w
	for f.durable < limit {
		d := f.durable
		n := d >> w.shift
		base := n << w.shift
		end := min(limit, base+w.rps)
		s := w.slots[n%uint64(len(w.slots))]
		if s.ready.Load() != n+1 {
			return fmt.Errorf("live slot for segment %d not available", n)
		}
		fd, err := f.file(n)
		if err != nil {
			return err
		}
		start := ((d - base) * w.rowSize) &^ (format.BlockSize - 1)
		stop := (end - base) * w.rowSize
		for off := start; off < stop; {
			m := min(uint64(len(f.buf)), stop-off)
			copy(f.buf, s.rows[off:off+m])
			padded := (m + format.BlockSize - 1) &^ (format.BlockSize - 1)
			clear(f.buf[m:padded])
			if err := f.allocate(fd, s, int64(format.BlockSize+off), int64(padded)); err != nil {
				return err
			}
			if w.opts.flushFault != nil {
				if err := w.opts.flushFault(); err != nil {
					return fmt.Errorf("pwrite %s at %d: %w", fd.Name(), format.BlockSize+off, err)
				}
			}
			t0 := time.Now()
			if _, err := fd.WriteAt(f.buf[:padded], int64(format.BlockSize+off)); err != nil {
				return fmt.Errorf("pwrite %s at %d: %w", fd.Name(), format.BlockSize+off, err)
			}
			f.writeHot(n, start, off, padded)
			if w.opts.OnFlush != nil {
				w.opts.OnFlush(int(padded), time.Since(t0))
			}
			w.sh.flushes.Add(1)
			w.sh.flushBytes.Add(padded)
			off += m
			// Rows [d, done) are on disk (a row cut by the end of this
			// write is not: it is counted after the next one).
			done := base + off/w.rowSize
			if off == stop {
				done = end
			}
			if err := f.publishDurable(done); err != nil {
				return err
			}
		}
		if d == base && n > 0 && w.cmp != nil && w.opts.CompactAge == 0 {
			// The segment before has a durable row after it now: it
			// qualifies for compaction at the next checkpoint (compactLimit).
			w.ck.wake()
		}
		if end == base+w.rps {
			f.sealHot(n)
			f.closeFd()
			w.ctl.SetDurableSegs(n + 1)
			w.ck.wake()
			if w.cmp != nil && w.opts.CompactAge == 0 {
				w.cmp.kick() // its file is complete: the encoding can start (compactNext)
			}
			w.prep.wake()
			f.broadcast()
		}
	}
	return nil
}

// publishDurable declares rows below done durable; their bytes are on disk.
// Rows may name symbols added just before them: the dictionary entries
// are written back first (symBytes is loaded after the rows were written,
// and every row's symbol was published before the row).
func (f *flusher) publishDurable(done uint64) error {
	w := f.w
	if se := w.ctl.SymBytes(); se > f.symSync {
		if f.symBad {
			// The last msync failed: its pages may be clean now without
			// being on disk. Dirty them again (their bytes are
			// published, so they do not change under the copy).
			if err := w.syms.Rewrite(f.symSync, se); err != nil {
				return err
			}
		}
		if err := w.syms.SyncTo(se); err != nil {
			f.symBad = true
			return err
		}
		f.symSync, f.symBad = se, false
	}
	if done > f.durable {
		f.durable = done
		w.ctl.SetFlushes(w.sh.flushes.Load())
		w.ctl.SetDurable(done)
		f.broadcast()
	}
	return nil
}

// allocate makes sure bytes [off, off+n) of fd's file (the segment in
// slot s) are allocated before an O_DIRECT write to them: the preparer
// has normally done it (slot.dAlloc); otherwise it allocates, a step
// further while at it. The allocation is not fsynced: the O_DSYNC write
// that lands in it makes the blocks it wrote, and the extent records
// that map them, durable before it returns (docs/DESIGN.md, "Durable
// files"). Where the file system has no fallocate the write allocates
// for itself.
func (f *flusher) allocate(fd *vfs.File, s *liveSlot, off, n int64) error {
	if f.noAlloc || off+n <= f.allocEnd || uint64(off+n) <= format.BlockSize+s.dAlloc.Load() {
		return nil
	}
	from := max(off, f.allocEnd)
	end := min(off+n+f.allocStep, f.w.segSize)
	if err := mmap.Allocate(fd.File, from, end-from); err != nil {
		if errors.Is(err, mmap.ErrNoAllocate) {
			f.noAlloc = true
			return nil
		}
		return err
	}
	f.allocEnd = end
	f.allocStep = min(2*f.allocStep, allocMax)
	return nil
}

func (f *flusher) file(n uint64) (*vfs.File, error) {
	if f.fdSeg == n+1 {
		if f.fd == nil {
			return f.unpark(n) // closed while idle (group_jobs.go)
		}
		return f.fd, nil
	}
	f.closeFd()
	fd, err := f.w.openDirect(n, &f.warned)
	if err != nil {
		return nil, err
	}
	f.fd, f.fdSeg, f.allocEnd = fd, n+1, 0
	return fd, nil
}

func (f *flusher) closeFd() {
	if f.fd != nil {
		f.fd.Close()
	}
	f.fd, f.fdSeg = nil, 0
	f.dropHot()
}

// writeHot writes the chunk just flushed, f.buf[:n] at row-area offset
// off of segment seg (flushTo's loop began at start), to the segment's
// hot copy too: the same bytes at the same place of seg-N.hot.tmp, a
// kernel copy into tmpfs. The copy is begun with the segment's first
// write (start 0); a segment this flusher took up in its middle (a
// reopened writer's) gets its copy from the checkpointer, from the slot.
// A failed write drops the copy (logged): it only costs readers the
// faster path.
func (f *flusher) writeHot(seg, start, off, n uint64) {
	w := f.w
	if !w.hotEnabled() {
		return
	}
	if w.sh.closing.Load() {
		f.dropHot() // Close removes the copies: no reader needs this one
		return
	}
	if f.hot == nil {
		if start != 0 || off != 0 {
			return
		}
		hf, err := w.createHot(seg)
		if err != nil {
			w.log.Warn("writer: hot copy failed", "table", w.name, "segment", seg, "err", err)
			return
		}
		f.hot = hf
	}
	if _, err := f.hot.WriteAt(f.buf[:n], int64(format.BlockSize+off)); err != nil {
		w.log.Warn("writer: hot copy failed", "table", w.name, "segment", seg, "err", err)
		f.dropHot()
	}
}

// sealHot puts segment seg's hot copy in place once its last rows are
// written, before the segment is declared durable (the checkpointer then
// finds it and builds the clustered copy from the slot).
func (f *flusher) sealHot(seg uint64) {
	if f.hot == nil {
		return
	}
	hf := f.hot
	f.hot = nil
	if err := f.w.sealHot(hf, seg); err != nil {
		f.w.log.Warn("writer: hot copy failed", "table", f.w.name, "segment", seg, "err", err)
	}
}

// dropHot abandons the hot copy being written, if any.
func (f *flusher) dropHot() {
	if f.hot != nil {
		dropHot(f.hot)
		f.hot = nil
	}
	if f.hotPark != "" {
		os.Remove(f.hotPark)
		f.hotPark = ""
	}
}
