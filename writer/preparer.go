package writer

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
)

// preparer keeps the writer's way clear, a growing distance ahead of it.
// It makes the current and (once the writer is within that distance of
// its end) the next segment ready: it waits until the slot's previous
// segment is durable (then nobody needs its live copy), points the slot
// at the new segment under a new generation and creates the segment's
// durable file. It pre-faults the live slots (MADV_POPULATE_WRITE) from
// the writer's position to that distance ahead, and grows the index files
// ahead of the writer by as much. The distance starts at popStart and
// doubles each time the writer has used half of it, up to a whole
// segment: a table of a few rows touches a few pages, a firehose writer
// finds every page resident. Recycled slots are already resident, so
// after the first LiveSlots segments a roll costs the writer nothing.
//
// What it populates and allocates is the room reserved for the writer's
// next rows (room.go): it allocates the durable files' blocks over the
// same distance, and publishes how far every part of a row's room goes.
// A step that cannot reserve for lack of space records why and is tried
// again on the next tick.
//
// Only the preparer goroutine touches ahead, last, dfd and the slots'
// popLo and popHi.
type preparer struct {
	w     *Writer
	kickc chan struct{}
	stopc chan struct{}
	donec chan struct{}
	// pausec holds the goroutine between steps until the channel it
	// receives is closed (reserve.go: the writer maps index files again).
	pausec chan chan struct{}
	ahead  uint64 // rows kept populated ahead of the writer
	last   uint64 // writer position when ahead last doubled
	// dfd is the durable file of segment dfdSeg-1 (0: none), open for
	// allocating ahead.
	dfd    *vfs.File
	dfdSeg uint64
	// noAlloc is set where the durable files' file system has no
	// fallocate: their writes allocate for themselves.
	noAlloc bool
	// job is the preparer as its writer's Group runs it (nil: its own
	// goroutine, run); dead is set once a step failed (it runs no more).
	job  *job
	dead bool
}

// popStart is the distance, in bytes of rows, the preparer first keeps
// populated ahead of the writer (and the open path pre-faults): what a
// table of a few rows holds of shared memory (a thousand tables, 32 MiB).
// It doubles as the writer uses it, so a busy table reaches a segment
// within a few MiB of rows.
const popStart = 32 << 10

func newPreparer(w *Writer) *preparer {
	p := &preparer{w: w, kickc: make(chan struct{}, 1), stopc: make(chan struct{}), donec: make(chan struct{}), pausec: make(chan chan struct{})}
	p.ahead = max(min(popStart/w.rowSize, w.rps), 2<<w.strideShft)
	p.last = w.seq
	w.sh.kickEvery.Store(p.ahead / 2)
	return p
}

func (p *preparer) wake() {
	if p.job != nil {
		p.job.kick(0)
		return
	}
	select {
	case p.kickc <- struct{}{}:
	default:
	}
}

func (p *preparer) stop() {
	close(p.stopc) // a step in progress stops populating (stopping)
	if p.job != nil {
		p.job.stop()
		p.closeDurable()
		close(p.donec)
		return
	}
	<-p.donec
}

// prepTick is how often the preparer looks again without being woken:
// its own goroutine always, a Group's job while a slot it needs is not
// free yet (group_jobs.go).
const prepTick = 10 * time.Millisecond

func (p *preparer) run() {
	defer close(p.donec)
	defer p.closeDurable()
	t := time.NewTicker(prepTick)
	defer t.Stop()
	for {
		if !p.once() {
			return
		}
		select {
		case <-p.stopc:
			return
		case <-p.kickc:
		case <-t.C:
		case r := <-p.pausec:
			<-r
		}
	}
}

// once runs a step; on an error it fails the writer and reports false.
func (p *preparer) once() bool {
	if err := p.step(); err != nil {
		p.w.fail.set(fmt.Errorf("writer: preparer: %w", err))
		p.w.log.Error("writer: preparer failed", "table", p.w.name, "err", err)
		return false
	}
	p.populateIndexes()
	p.w.sh.prepSteps.Add(1)
	return true
}

func (p *preparer) step() error {
	w := p.w
	cur := w.sh.curSeg.Load()
	pos := max(w.sh.pos.Load(), w.ctl.Visible(), cur<<w.shift)
	if pos-p.last >= p.ahead/2 {
		// The writer used half the distance (once per half since the
		// last step): double it, up to a segment.
		for gone := pos - p.last; gone >= p.ahead/2 && p.ahead < w.rps; {
			gone -= p.ahead / 2
			p.ahead = min(2*p.ahead, w.rps)
		}
		w.sh.kickEvery.Store(p.ahead / 2)
		p.last = pos
	}
	target := pos + p.ahead
	if want := w.sh.want.Load(); want > target {
		// Reserve asked for more (never past the segment after the
		// current one: Writer.Reserve).
		target = min(want, (cur+2)<<w.shift)
	}
	// cond is the first failure of this step that can clear (no space, an
	// I/O error): the step goes on with what it can do, the room reserved
	// stops where it does, and the next tick tries again.
	var cond error
	soft := func(err error) error {
		if classify(err) == CondFailed {
			return err
		}
		if cond == nil {
			cond = err
		}
		return nil
	}
	// The current segment, and the next one only once the writer is
	// within the distance of it: at most one segment ahead, so a table
	// holds live slots and durable files only for segments it reaches.
	last := min(cur+1, (target-1)>>w.shift)
	ready := cur // segments below it are ready
	for seg := cur; seg <= last; seg++ {
		if seg > cur && p.stopping() {
			return nil // closing: the segment ahead will not be written
		}
		ok, err := p.prepare(seg)
		if err != nil {
			if err := soft(err); err != nil {
				return err
			}
			break
		}
		if !ok {
			// Its slot still holds a segment that is not durable. Go on:
			// the index files must grow ahead of the writer even then
			// (when the writer outruns the flusher, that is always).
			break
		}
		ready = seg + 1
	}
	// Populate after preparing: a roll must not wait for page faults.
	for seg := cur; seg < ready; seg++ {
		s := w.slots[seg%uint64(len(w.slots))]
		if err := p.populate(s, seg, target); err != nil {
			if err := soft(err); err != nil {
				return err
			}
		}
		if err := p.allocate(s, seg, pos, target); err != nil {
			if err := soft(err); err != nil {
				return err
			}
		}
	}
	indexed, err := p.growIndexes(pos, target)
	if err != nil {
		if err := soft(err); err != nil {
			return err
		}
	}
	p.publishRoom(cur, ready, indexed && cond == nil)
	p.setCondition(cond)
	return nil
}

// growIndexes keeps the index files grown ahead of the writer: the time
// index for the rows up to twice the distance ahead, and room for the
// postings chunks, dictionary entries and late rows those rows may take.
// It reports false, with no error, when it could not look (the writer was
// mid-publish; the next tick does).
func (p *preparer) growIndexes(pos, target uint64) (bool, error) {
	w := p.w
	// Room for the rows up to twice the distance ahead (the writer kicks
	// the preparer when it has gone half of it), or to the target Reserve
	// asked for when that is further: the room published stops at the
	// time index's capacity. Growth is proportional (a quarter more), so
	// small tables stay small and large ones grow rarely.
	ahead := max(2*p.ahead, target-min(target, pos))
	need := (pos+ahead)>>w.strideShft + 2
	if w.ts.Capacity() < need {
		if err := w.ts.Grow(need + need/4); err != nil {
			return false, err
		}
	}
	snap, err := w.ctl.Snapshot()
	if err != nil {
		return false, nil // writer mid-publish; next tick
	}
	// Postings: room for those rows' entries and a quarter more symbols
	// (Postings.AheadChunks). Allocation past this grows the file itself.
	chunks := w.post.AheadChunks(snap.NextChunk, ahead, w.ctl.SymCount())
	if w.post.Chunks() < chunks {
		if err := w.post.Grow(chunks + chunks/4); err != nil {
			return false, err
		}
	}
	// Room for a few hundred new symbols and late rows, so that a full
	// file system refuses rows before their symbols, not half way through
	// a group of them.
	if err := w.syms.ReserveTo(w.ctl.SymBytes() + symHeadroom); err != nil {
		return false, err
	}
	if n := snap.Late + lateHeadroom; w.late.Capacity() < n && (w.lateWin > 0 || snap.Late > 0) {
		if err := w.late.Grow(n + n/4); err != nil {
			return false, err
		}
	}
	return true, nil
}

// The index files' room kept ahead for rows that add to them
// (growIndexes): dictionary bytes, late-row entries.
const (
	symHeadroom  = 16 << 10
	lateHeadroom = 256
)

// publishRoom publishes how far the room for rows goes (shared.reserved):
// up to the first end among the live slot pages populated and the durable
// file blocks allocated, over the ready segments from the current one on,
// and the time-index entries in the file. Without the index files'
// headroom (indexed false) it does not move forward.
func (p *preparer) publishRoom(cur, ready uint64, indexed bool) {
	w := p.w
	end := uint64(0)
	for seg := cur; seg < ready; seg++ {
		s := w.slots[seg%uint64(len(w.slots))]
		base := seg << w.shift
		end = base + min(s.popHi, s.dAlloc.Load())/w.rowSize
		if end < base+w.rps {
			break
		}
	}
	end = min(end, w.ts.Capacity()<<w.strideShft)
	if !indexed || w.sh.ioCond.get() != nil {
		// While the flusher cannot write, rows that could not be made
		// durable are not invited either.
		end = min(end, w.sh.reserved.Load())
	}
	w.sh.reserved.Store(end)
}

// setCondition records this step's failure to reserve (nil: it
// reserved), logging the changes.
func (p *preparer) setCondition(err error) {
	w := p.w
	if err == nil {
		if w.sh.resCond.clear() {
			w.log.Info("writer: room for rows again", "table", w.name)
		}
		return
	}
	was := w.sh.resCond.get()
	w.sh.resCond.set(w.condErr(err))
	if was == nil {
		w.log.Warn("writer: no room for more rows; refusing them until there is", "table", w.name, "err", err)
	}
}

// allocate allocates the blocks of segment seg's durable file (in slot
// s) for the rows from the writer's position pos up to target, so the
// flusher's writes of rows appended there need no allocation and cannot
// fail for lack of space. The allocation is not fsynced, and need not be:
// docs/DESIGN.md, "Durable files".
func (p *preparer) allocate(s *liveSlot, seg, pos, target uint64) error {
	w := p.w
	base := seg << w.shift
	to := min((min(target-base, w.rps)*w.rowSize+format.BlockSize-1)&^(format.BlockSize-1), uint64(len(s.rows)))
	from := s.dAlloc.Load()
	if pos > base {
		// Rows below the writer were appended under an earlier
		// reservation (or recovered from this file).
		from = max(from, min((pos-base)*w.rowSize&^(format.BlockSize-1), to))
	}
	if from >= to {
		return nil
	}
	if p.noAlloc {
		s.dAlloc.Store(to)
		return nil
	}
	if p.dfdSeg != seg+1 {
		p.closeDurable()
		fd, err := w.fs.OpenFile(format.SegPath(w.dir, seg), os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("writer: open segment to allocate: %w", err)
		}
		p.dfd, p.dfdSeg = fd, seg+1
	}
	if err := mmap.Allocate(p.dfd.File, int64(format.BlockSize+from), int64(to-from)); err != nil {
		if !errors.Is(err, mmap.ErrNoAllocate) {
			return err
		}
		p.noAlloc = true
	}
	s.dAlloc.Store(to)
	return nil
}

func (p *preparer) closeDurable() {
	if p.dfd != nil {
		p.dfd.Close()
		p.dfd, p.dfdSeg = nil, 0
	}
}

// prepare makes seg's slot ready. It reports false when the slot still
// holds a segment that is not durable yet (tried again on the next wake).
func (p *preparer) prepare(seg uint64) (bool, error) {
	w := p.w
	s := w.slots[seg%uint64(len(w.slots))]
	held := s.ready.Load()
	if held == seg+1 {
		return true, nil
	}
	if held > seg+1 {
		return true, nil // already moved on past seg (cannot happen going forward)
	}
	if held != 0 && w.ctl.DurableSegs() < held {
		w.fl.wake()
		return false, nil
	}
	if held != 0 && w.hotEnabled() && s.copied.Load() != held {
		// Its segment is durable but not yet copied for the hot budget
		// (clu.go): the copies are made from the slot.
		w.ck.wake()
		return false, nil
	}
	if s.b == nil {
		if err := w.createSlotFile(s); err != nil {
			return false, err
		}
	} else if held != 0 && s.popLo == 0 {
		// Recycled: the writer filled the old segment from its first row,
		// so every page is resident.
		s.popHi = uint64(len(s.rows))
	} else {
		s.popLo, s.popHi = 0, 0
	}
	if err := w.ensureDurableFile(seg); err != nil {
		return false, err
	}
	s.dAlloc.Store(0)
	w.assignSlot(s, seg, 0)
	s.ready.Store(seg + 1)
	return true, nil
}

// stopping reports whether the writer is closing.
func (p *preparer) stopping() bool {
	select {
	case <-p.stopc:
		return true
	default:
		return false
	}
}

// populate pre-faults the rows of slot s (holding segment seg) from the
// writer's position up to target, a few MiB at a time, so the writer
// never takes a first-touch fault there, and so that their pages are
// allocated before the writer stores into them: a store into a page the
// file system cannot allocate raises SIGBUS, MADV_POPULATE_WRITE returns
// an error instead (populateErr; on a kernel without it, before 5.14, the
// pages are allocated with fallocate). Between pieces it looks at the
// writer's position again and skips what the writer has passed. It stops
// when the writer is closing (a short-lived writer's Close must not wait
// for page faults it will never use), and on an error: the room reserved
// then ends at what is populated (publishRoom).
func (p *preparer) populate(s *liveSlot, seg, target uint64) error {
	w := p.w
	base := seg << w.shift
	to := min(target-base, w.rps) * w.rowSize
	to = min((to+format.BlockSize-1)&^(format.BlockSize-1), uint64(len(s.rows)))
	const chunk = 4 << 20
	for {
		from := uint64(0)
		if pos := max(w.sh.pos.Load(), w.ctl.Visible()); pos > base {
			from = min((pos-base)*w.rowSize&^(format.BlockSize-1), uint64(len(s.rows)))
		}
		if from < s.popLo || from > s.popHi {
			// Not contiguous with what is populated (a slot attached or
			// opened mid-segment, or the writer went past): start a new
			// range here.
			s.popLo, s.popHi = from, from
		}
		if s.popHi >= to || p.stopping() {
			return nil
		}
		end := min(s.popHi+chunk, to)
		if err := mmap.PopulateWrite(s.rows[s.popHi:end]); err != nil {
			if !errors.Is(err, syscall.EINVAL) {
				return populateErr(s.path, err)
			}
			if err := allocateSlot(s, format.BlockSize+s.popHi, end-s.popHi); err != nil {
				return err
			}
		}
		s.popHi = end
	}
}

// allocateSlot allocates n bytes of slot s's file from offset off
// (fallocate), where the kernel has no MADV_POPULATE_WRITE.
func allocateSlot(s *liveSlot, off, n uint64) error {
	f, err := os.OpenFile(s.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := mmap.Allocate(f, int64(off), int64(n)); err != nil && !errors.Is(err, mmap.ErrNoAllocate) {
		return fmt.Errorf("writer: allocate live slot pages in %s: %w", s.path, err)
	}
	return nil
}
