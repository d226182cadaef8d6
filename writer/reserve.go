package writer

import (
	"fmt"

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
// larger. Writer goroutine, at a roll or before a new symbol.
func (w *Writer) remapIndexes() error {
	resume := w.holdBackground()
	defer resume()
	m := w.idxMargin()
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
	w.log.Info("writer: index files mapped again", "table", w.name, "reserved", w.reserved())
	return nil
}

// reserved is the address space the writer's index mappings take.
func (w *Writer) reserved() int64 {
	return index.Reserved(w.ts, w.post, w.late, w.syms)
}

// holdBackground holds the preparer and the checkpointer (a step or pass
// in progress finishes first) and returns what lets them go on.
func (w *Writer) holdBackground() (resume func()) {
	rp := w.prep.pause()
	rc := w.ck.pause()
	return func() { rc(); rp() }
}

// pause holds the preparer between steps until resume is called.
func (p *preparer) pause() (resume func()) {
	if p.job != nil {
		p.job.pause()
		return p.job.resume
	}
	r := make(chan struct{})
	select {
	case p.pausec <- r:
		return func() { close(r) }
	case <-p.donec:
		return func() {} // ended (a failed step): nothing runs
	}
}

// pause holds the checkpointer between passes until resume is called.
func (c *checkpointer) pause() (resume func()) {
	if c.job != nil {
		c.job.pause()
		return c.job.resume
	}
	r := make(chan struct{})
	select {
	case c.pausec <- r:
		return func() { close(r) }
	case <-c.donec:
		return func() {}
	}
}
