package writer

import (
	"fmt"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
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
// Only the preparer goroutine touches ahead, last and the slots' popLo
// and popHi.
type preparer struct {
	w     *Writer
	kickc chan struct{}
	stopc chan struct{}
	donec chan struct{}
	ahead uint64 // rows kept populated ahead of the writer
	last  uint64 // writer position when ahead last doubled
}

// popStart is the distance, in bytes of rows, the preparer first keeps
// populated ahead of the writer (and the open path pre-faults).
const popStart = 256 << 10

func newPreparer(w *Writer) *preparer {
	p := &preparer{w: w, kickc: make(chan struct{}, 1), stopc: make(chan struct{}), donec: make(chan struct{})}
	p.ahead = max(min(popStart/w.rowSize, w.rps), 2<<w.strideShft)
	p.last = w.seq
	w.sh.kickEvery.Store(p.ahead / 2)
	return p
}

func (p *preparer) wake() {
	select {
	case p.kickc <- struct{}{}:
	default:
	}
}

func (p *preparer) stop() {
	close(p.stopc)
	<-p.donec
}

func (p *preparer) run() {
	defer close(p.donec)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if err := p.step(); err != nil {
			p.w.fail.set(fmt.Errorf("writer: preparer: %w", err))
			p.w.log.Error("writer: preparer failed", "table", p.w.name, "err", err)
			return
		}
		p.w.sh.prepSteps.Add(1)
		select {
		case <-p.stopc:
			return
		case <-p.kickc:
		case <-t.C:
		}
	}
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
			return err
		}
		if !ok {
			// Its slot still holds a segment that is not durable. Go on:
			// the index files must grow ahead of the writer even then
			// (when the writer outruns the flusher, that is always),
			// or the writer grows them itself, in the append path.
			break
		}
		ready = seg + 1
	}
	// Populate after preparing: a roll must not wait for page faults.
	for seg := cur; seg < ready; seg++ {
		p.populate(w.slots[seg%uint64(len(w.slots))], seg, target)
	}
	// Index files: room for the rows up to twice the distance ahead (the
	// writer kicks the preparer when it has gone half of it). Growth is
	// proportional (a quarter more), so small tables stay small and large
	// ones grow rarely.
	snap, err := w.ctl.Snapshot()
	if err != nil {
		return nil // writer mid-publish; next tick
	}
	need := (pos+2*p.ahead)>>w.strideShft + 2
	if w.ts.Capacity() < need {
		if err := w.ts.Grow(need + need/4); err != nil {
			return err
		}
	}
	// Postings: room for those rows' entries and a quarter more symbols
	// (Postings.AheadChunks). Allocation past this grows the file itself.
	chunks := w.post.AheadChunks(snap.NextChunk, 2*p.ahead, w.ctl.SymCount())
	if w.post.Chunks() < chunks {
		if err := w.post.Grow(chunks + chunks/4); err != nil {
			return err
		}
	}
	return nil
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
// never takes a first-touch fault there. Between pieces it looks at the
// writer's position again and skips what the writer has passed. It stops
// when the writer is closing (a short-lived writer's Close must not wait
// for page faults it will never use), and on an error: pages left
// unpopulated are faulted in by the writer's first stores to them.
func (p *preparer) populate(s *liveSlot, seg, target uint64) {
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
			return
		}
		end := min(s.popHi+chunk, to)
		if err := mmap.PopulateWrite(s.rows[s.popHi:end]); err != nil {
			return
		}
		s.popHi = end
	}
}
