package writer

import (
	"fmt"
	"time"

	"github.com/tickdb/tickdb/internal/index"
)

// Address space: the writer maps its index files with reservations that
// follow their sizes (internal/index/reserve.go), so a process holds a
// thousand small tables, and maps one again, larger, once it has grown
// to a quarter of its reservation or to within idxMargin of its end. It
// does so on its own goroutine where no index operation is half done (at
// a segment roll, before the first row of the next segment, and before a
// new symbol), with the preparer and the checkpointer held (their work
// grows and writes back the same mappings; the flusher touches only the
// dictionary, which is not remapped). A file outgrows its reservation
// between two of these moments only by more than idxMargin: a few
// segments' worth of index entries, or about a hundred thousand new
// symbols.

// idxMargin is the room, in bytes, the writer keeps in each index
// mapping at a roll or a new symbol.
func (w *Writer) idxMargin() int64 { return 4 * w.segSize }

// idxTight reports whether an index file needs a larger mapping.
func (w *Writer) idxTight() bool {
	m := w.idxMargin()
	return w.ts.Tight(m) || w.post.Tight(m) || w.late.Tight(m)
}

// remapIndexes maps the index files that idxTight finds tight again,
// larger. Writer goroutine, at a roll or before a new symbol. It holds
// the preparer and the checkpointer for it; while one of them is in the
// middle of its work (a checkpoint's msync takes tens of ms) it leaves
// the remap to the next roll or symbol, unless a file is urgent (half
// its reservation used: a quarter is still free), when it waits.
func (w *Writer) remapIndexes() error {
	t0 := time.Now()
	m := w.idxMargin()
	urgent := w.ts.Urgent(m) || w.post.Urgent(m) || w.late.Urgent(m)
	resume, ok := w.holdBackground(!urgent)
	if !ok {
		w.sh.remapsPut.Add(1)
		return nil
	}
	defer resume()
	for _, x := range []struct {
		name  string
		tight func(int64) bool
		remap func(int) error
	}{
		{"ts.idx", w.ts.Tight, w.ts.Remap},
		{"post.idx", w.post.Tight, w.post.Remap},
		{"late.idx", w.late.Tight, w.late.Remap},
	} {
		for x.tight(m) {
			if err := x.remap(0); err != nil {
				return fmt.Errorf("writer: table %s: %s: %w", w.name, x.name, err)
			}
			if w.pw != nil {
				w.pw.Rebind()
			}
			w.sh.remaps.Add(1)
		}
	}
	// The room grown ahead is not faulted in the new mappings: the
	// preparer does that on its next step (populateIndexes), off this
	// goroutine (the roll waits for nothing).
	w.sh.repopulate.Store(true)
	w.log.Info("writer: index files mapped again", "table", w.name, "reserved", w.reserved(), "took", time.Since(t0))
	return nil
}

// reserved is the address space the writer's index mappings take.
func (w *Writer) reserved() int64 {
	return index.Reserved(w.ts, w.post, w.late, w.syms)
}

// holdBackground holds the preparer and the checkpointer and returns
// what lets them go on. A step or pass in progress finishes first; with
// try, it holds neither and reports false instead of waiting for one.
func (w *Writer) holdBackground(try bool) (resume func(), ok bool) {
	rp, ok := w.prep.pause(try)
	if !ok {
		return nil, false
	}
	rc, ok := w.ck.pause(try)
	if !ok {
		rp()
		return nil, false
	}
	return func() { rc(); rp() }, true
}

// pause holds the preparer between steps until resume is called (with
// try, only if it is between steps now).
func (p *preparer) pause(try bool) (resume func(), ok bool) {
	if p.job != nil {
		if !p.job.pause(try) {
			return nil, false
		}
		return p.job.resume, true
	}
	return pauseLoop(p.pausec, p.donec, try)
}

// pause holds the checkpointer between passes, as preparer.pause.
func (c *checkpointer) pause(try bool) (resume func(), ok bool) {
	if c.job != nil {
		if !c.job.pause(try) {
			return nil, false
		}
		return c.job.resume, true
	}
	return pauseLoop(c.pausec, c.donec, try)
}

// pauseLoop holds a background goroutine between its runs through its
// pause channel: it takes the channel sent and waits for its close.
func pauseLoop(pausec chan chan struct{}, donec chan struct{}, try bool) (resume func(), ok bool) {
	r := make(chan struct{})
	if try {
		select {
		case pausec <- r:
			return func() { close(r) }, true
		case <-donec:
			return func() {}, true // ended (a failed step): nothing runs
		default:
			return nil, false
		}
	}
	select {
	case pausec <- r:
		return func() { close(r) }, true
	case <-donec:
		return func() {}, true
	}
}

// populateIndexes pre-faults, in the index files' new mappings, the room
// grown ahead of the writer's published position (the preparer, after a
// remap).
func (p *preparer) populateIndexes() {
	w := p.w
	if !w.sh.repopulate.Swap(false) {
		return
	}
	snap, err := w.ctl.Snapshot()
	if err != nil {
		w.sh.repopulate.Store(true) // writer mid-publish: the next step
		return
	}
	w.ts.PopulateFrom(snap.Visible >> w.strideShft)
	w.post.PopulateFrom(snap.NextChunk)
	w.late.PopulateFrom(snap.Late)
}
