package writer

import (
	"fmt"
	"time"

	"github.com/tickdb/tickdb/index"
	"github.com/tickdb/tickdb/store"
)

// preparer keeps the next live slot ready before the writer needs it: it
// waits until the slot's previous segment is durable (then nobody needs its
// live copy), points the slot at the new segment under a new generation,
// creates the segment's durable file, pre-faults fresh slots
// (MADV_POPULATE_WRITE) and grows the index files ahead of the writer.
// Recycled slots are already resident, so a roll costs the writer nothing.
type preparer struct {
	w     *Writer
	kickc chan struct{}
	stopc chan struct{}
	donec chan struct{}
}

func newPreparer(w *Writer) *preparer {
	return &preparer{w: w, kickc: make(chan struct{}, 1), stopc: make(chan struct{}), donec: make(chan struct{})}
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
	// The current segment and the next: the next one waits only for its
	// slot's previous segment to be durable. Not more: with hot slots a
	// table has up to index.MaxLiveSlots of them, and a slot made ready
	// early recycles a hot segment early.
	cur := w.sh.curSeg.Load()
	for seg := cur; seg < cur+min(uint64(len(w.slots)), 2); seg++ {
		if seg > cur && p.stopping() {
			return nil // closing: the segments ahead will not be written
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
	}
	// Pre-fault slots that were made on the open path.
	for _, s := range w.slots {
		if s.b != nil && !s.populated && s.ready.Load() != 0 {
			s.populated = p.populate(s.b)
		}
	}
	// Index files: room for two more segments of rows.
	snap, err := w.ctl.Snapshot()
	if err != nil {
		return nil // writer mid-publish; next tick
	}
	// Growth is proportional (a quarter more) so small tables stay small
	// and large ones grow rarely.
	need := ((cur+2)<<w.shift)>>w.strideShft + 1
	if w.ts.Capacity() < need {
		if err := w.ts.Grow(need + need/4 + 4096); err != nil {
			return err
		}
	}
	// A segment of rows needs at most one chunk per 512 rows plus one
	// partial chunk per symbol (and a directory now and then).
	chunks := snap.NextChunk + 2*(w.rps/index.ChunkWords) + 2*uint64(w.ctl.SymCount()) + 64
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
	if s.b == nil {
		if err := w.createSlotFile(s, true); err != nil {
			return false, err
		}
	}
	if err := w.ensureDurableFile(seg); err != nil {
		return false, err
	}
	w.assignSlot(s, seg, 0)
	if !s.populated {
		s.populated = p.populate(s.b)
	}
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

// populate pre-faults b writable a few MiB at a time and reports whether
// it got through: it gives up when the writer is closing, so a short-lived
// writer's Close does not wait for hundreds of MiB of page faults it will
// never use (a slot left unpopulated is faulted in by its first writes).
func (p *preparer) populate(b []byte) bool {
	const chunk = 4 << 20
	for off := 0; off < len(b); off += chunk {
		if p.stopping() {
			return false
		}
		if err := store.PopulateWrite(b[off:min(off+chunk, len(b))]); err != nil {
			return false
		}
	}
	return true
}
