package writer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tickdb/tickdb/store"
)

// Clustered hot copies (docs/FORMAT.md §13, DESIGN.md "Lifecycle"): for
// each sealed, durable segment still in its live slot, the checkpointer
// writes seg-N.clu into the live directory: the segment's rows grouped by
// symbol, so a one-symbol query over hot data reads one contiguous run
// per segment instead of a row per page. They are built only when the
// writer runs with hot slots (Options.HotBytes > 0, the default) and the
// table has a sym column.
//
// Who touches what: the checkpointer builds (cluBuild, its buffers and
// liveSlot.clu); the preparer removes segment n's copy before it recycles
// n's slot; the open and close paths remove leftovers. Each create and
// remove is followed by a bump of the ctl change counter (CluGen), which
// readers compare before looking for a copy they found missing.

// cluBuilder holds the checkpointer's reused buffers: counts and next
// positions per symbol id, the index array and the rows in clustered
// order (a segment's rows: the copy is written with three pwrites, no
// mapping of the new file, whose first touches would each fault). They
// stay allocated (a segment's rows plus 4 bytes a row) once the first copy
// is made: allocating them again for each segment would fault them in
// again.
type cluBuilder struct {
	count []uint64
	pos   []uint64
	hdr   []byte
	idx   []byte
	rows  []byte
}

// cluEnabled reports whether this writer builds clustered copies.
func (w *Writer) cluEnabled() bool { return w.opts.HotBytes > 0 && w.symOff >= 0 }

// buildClus writes the clustered copy of every sealed, durable, not
// compressed segment still in its slot that has none yet.
func (w *Writer) buildClus() error {
	if !w.cluEnabled() {
		return nil
	}
	for _, s := range w.slots {
		gen, seg := w.ctl.Slot(s.i)
		// ready first: the preparer maps the slot (s.b, s.rows) before it
		// stores ready, so the load orders the reads of both after it.
		if gen == 0 || s.ready.Load() != seg+1 || s.clu == seg+1 {
			continue
		}
		if seg >= w.ctl.DurableSegs() || seg < w.ctl.CmpSegs() || (seg+1)<<w.shift <= w.ctl.FirstSeq() {
			continue
		}
		if store.LoadAcquire64(s.b, store.LiveFromOff) != 0 {
			continue // the slot lacks the segment's first rows (a reopened writer's)
		}
		if err := w.buildClu(s, gen, seg); err != nil {
			return err
		}
	}
	return nil
}

// buildClu writes segment seg's clustered copy from slot s (generation
// gen): a counting sort by symbol into the reused buffers, written under
// a temporary name, renamed into place. If the slot was recycled while
// its rows were read the copy is discarded (its rows could be a mix);
// if it was recycled after, the copy is right but no longer wanted, and
// removed again (the preparer may have looked for it before the rename).
func (w *Writer) buildClu(s *liveSlot, gen, seg uint64) error {
	b := &w.clu
	rs := w.rowSize
	rows := s.rows[:w.rps*rs]
	clear(b.count)
	for i := uint64(0); i < w.rps; i++ {
		id := binary.LittleEndian.Uint32(rows[i*rs+uint64(w.symOff):])
		if int(id) >= len(b.count) {
			b.count = append(b.count, make([]uint64, int(id)+1-len(b.count))...)
		}
		b.count[id]++
	}
	if len(b.pos) < len(b.count) {
		b.pos = make([]uint64, len(b.count))
	}
	nsym := 0
	for _, c := range b.count {
		if c > 0 {
			nsym++
		}
	}
	h := store.CluHeader{TableID: w.ctl.TableID, RowSize: int(rs), SegNo: seg, RowsPerSeg: w.rps, Rows: w.rps, NSym: nsym}
	h.CluLayout()
	if n := int(h.IdxOff); cap(b.hdr) < n {
		b.hdr = make([]byte, n)
	}
	b.hdr = b.hdr[:h.IdxOff]
	clear(b.hdr)
	dir := b.hdr[h.DirOff : h.DirOff+uint64(nsym)*store.CluDirEntry]
	k, next := 0, uint64(0)
	for id, c := range b.count {
		b.pos[id] = next
		if c > 0 {
			store.PutCluDirEntry(dir, k, uint32(id), next, c)
			k++
			next += c
		}
	}
	h.Marshal(b.hdr, dir)
	if n := int(h.RowsOff - h.IdxOff); cap(b.idx) < n {
		b.idx = make([]byte, n)
	}
	b.idx = b.idx[:h.RowsOff-h.IdxOff]
	if n := int(w.rps * rs); cap(b.rows) < n {
		b.rows = make([]byte, n)
	}
	b.rows = b.rows[:w.rps*rs]
	// Scatter: the slot read in order, each row to its symbol's next
	// place (a write stream per symbol: few pages touched at a time).
	for i := uint64(0); i < w.rps; i++ {
		row := rows[i*rs : (i+1)*rs]
		id := binary.LittleEndian.Uint32(row[w.symOff:])
		if int(id) >= len(b.pos) || b.pos[id] >= w.rps {
			return nil // the rows changed since they were counted: the slot was recycled
		}
		p := b.pos[id]
		b.pos[id] = p + 1
		binary.LittleEndian.PutUint32(b.idx[4*p:], uint32(i))
		copy(b.rows[p*rs:], row)
	}
	if w.ctl.SlotGen(s.i) != gen {
		return nil // recycled while read: the rows may be a newer segment's
	}
	final := store.CluPath(w.liveDir, seg)
	tmp := final + store.CluTmpSuffix
	if err := writeClu(tmp, b.hdr, b.idx, b.rows, h); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writer: clustered copy of segment %d: %w", seg, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writer: clustered copy of segment %d: %w", seg, err)
	}
	w.ctl.BumpCluGen()
	s.clu = seg + 1
	if w.ctl.SlotGen(s.i) != gen {
		w.removeClu(seg)
	}
	return nil
}

func writeClu(path string, hdr, idx, rows []byte, h store.CluHeader) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(hdr, 0)
	if err == nil {
		_, err = f.WriteAt(idx, int64(h.IdxOff))
	}
	if err == nil {
		_, err = f.WriteAt(rows, int64(h.RowsOff))
	}
	if e := f.Close(); err == nil {
		err = e
	}
	return err
}

// removeClu removes segment seg's clustered copy, if any, and bumps the
// change counter when there was one.
func (w *Writer) removeClu(seg uint64) {
	if err := os.Remove(store.CluPath(w.liveDir, seg)); err == nil {
		w.ctl.BumpCluGen()
	}
}

// cleanClus removes the clustered copies (and their temporary files) in
// the live directory, but for those of segments still hot in an attached
// slot when keepHot: a copy is immutable and stays right as long as its
// segment's rows do. The open path (keepHot) and Close (not).
func (w *Writer) cleanClus(keepHot bool) error {
	ents, err := os.ReadDir(w.liveDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writer: live dir: %w", err)
	}
	removed := false
	for _, e := range ents {
		n, tmp, ok := store.ParseCluName(e.Name())
		if !ok {
			continue
		}
		if !tmp && keepHot && n < w.ctl.DurableSegs() && n >= w.ctl.CmpSegs() {
			s := w.slots[n%uint64(len(w.slots))]
			if gen, seg := w.ctl.Slot(s.i); gen != 0 && seg == n && s.ready.Load() == n+1 {
				s.clu = n + 1
				continue
			}
		}
		if err := os.Remove(filepath.Join(w.liveDir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("writer: remove clustered copy: %w", err)
		}
		removed = true
	}
	if removed {
		w.ctl.BumpCluGen()
	}
	return nil
}
