package writer

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
)

// Hot copies (docs/FORMAT.md §16, DESIGN.md "Lifecycle"): the flusher
// writes each segment it flushes, chunk by chunk, into the live directory
// as seg-N.hot (its durable file, byte for byte) too, in place as the
// segment turns durable; then the checkpointer, while the segment is
// still in its live slot, writes seg-N.clu for a table with a sym column
// (FORMAT §13: its rows grouped by symbol, so a one-symbol query over hot
// data reads one contiguous run per segment instead of a row per page).
// Readers in any process read a hot segment from its copies, never from
// disk. The newest Options.HotBytes of segments keep their copies; older
// ones, and those compacted or below the first row, lose them.
//
// The copies are written with pwrite, not through a mapping: on this kind
// of (nested, paravirtualised) machine the first store of a process to a
// fresh page of shared memory costs about 8 µs, the kernel's copy into one
// about 1.5 µs. So the writer appends into a few recycled live slots,
// whose pages it has touched before, and never into fresh memory: the hot
// budget costs its copies, made off the append path.
//
// Who touches what: the flusher makes hot copies (flusher.hot); the
// checkpointer makes the clustered ones, and hot ones the flusher did not
// make (makeHot, its buffers, liveSlot.copied), and removes them
// (trimHot); both record them in the hot set; the open and close paths
// remove leftovers. Each create and remove is followed by a bump of
// the ctl change counter (CluGen), which readers compare before looking
// for a copy they found missing or checking one they hold.

// cluBuilder holds the checkpointer's reused buffers: counts and next
// positions per symbol id, the index array and the rows in clustered
// order (a segment's rows: the copy is written with three pwrites, no
// mapping of the new file, whose first touches would each fault). They
// stay allocated (a segment's rows plus 4 bytes a row) once the first copy
// is made, until the writer closes: allocating them again for each
// segment would fault them in again.
type cluBuilder struct {
	mem   []byte // idx and rows: one anonymous mapping (grow)
	chunk []byte // rows read from the hot copy
	count []uint64
	pos   []uint64
	hdr   []byte
	idx   []byte
	rows  []byte
}

// grow sizes the index and row buffers to idx and rows bytes. They are
// anonymous mappings with huge pages, not heap: 72 MiB of 4 KiB pages
// cost about 0.35 s of first touches here (a nested VM), in the
// checkpointer, and the kernel's first reads of them as much again; huge
// pages a tenth of that.
func (b *cluBuilder) grow(idx, rows int) error {
	if len(b.mem) < idx+rows {
		b.release()
		m, err := mmap.MapAnon(idx + rows)
		if err != nil {
			return err
		}
		_ = mmap.AdviseHuge(m) // advice: without it, 4 KiB pages
		b.mem = m
	}
	b.idx, b.rows = b.mem[:idx:idx], b.mem[idx:idx+rows]
	return nil
}

// release unmaps the buffers (the writer's Close).
func (b *cluBuilder) release() {
	mmap.Unmap(b.mem)
	b.mem, b.idx, b.rows = nil, nil, nil
}

// hotSet is the segments that have hot copies, in increasing order, and
// whether each has its clustered copy yet: written by the checkpointer
// (and the open path before it starts), read by Stats.
type hotSet struct {
	mu   sync.Mutex
	segs []hotSeg
}

type hotSeg struct {
	n   uint64
	clu bool
}

// add records segment n's hot copy (clu: with its clustered copy).
func (h *hotSet) add(n uint64, clu bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i, _ := slices.BinarySearchFunc(h.segs, n, func(s hotSeg, n uint64) int { return cmp.Compare(s.n, n) })
	h.segs = slices.Insert(h.segs, i, hotSeg{n: n, clu: clu})
}

// list returns the segments with hot copies.
func (h *hotSet) list() []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := make([]uint64, len(h.segs))
	for i, s := range h.segs {
		l[i] = s.n
	}
	return l
}

// needClu returns the newest segment whose clustered copy is still to be
// made.
func (h *hotSet) needClu() (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.segs) - 1; i >= 0; i-- {
		if !h.segs[i].clu {
			return h.segs[i].n, true
		}
	}
	return 0, false
}

// has reports whether segment n has a hot copy.
func (h *hotSet) has(n uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.segs {
		if s.n == n {
			return true
		}
	}
	return false
}

// remove forgets segment n's copies, reporting whether it had them.
func (h *hotSet) remove(n uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, s := range h.segs {
		if s.n == n {
			h.segs = slices.Delete(h.segs, i, i+1)
			return true
		}
	}
	return false
}

// setClu marks segment n's clustered copy made (or given up on).
func (h *hotSet) setClu(n uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.segs {
		if h.segs[i].n == n {
			h.segs[i].clu = true
		}
	}
}

// hotEnabled reports whether this writer keeps hot copies: a budget of a
// segment or more.
func (w *Writer) hotEnabled() bool { return w.hotBudget() > 0 }

// cluEnabled reports whether this writer builds clustered copies: not
// with the default background compaction (CompactAge 0), which
// compresses a segment, clustered, as soon as the next one has durable
// rows; a copy would cost a pass over the segment for that moment.
func (w *Writer) cluEnabled() bool {
	return w.hotEnabled() && w.symOff >= 0 && w.opts.CompactAge != 0
}

// hotBudget is how many segments keep hot copies.
func (w *Writer) hotBudget() int {
	n := int(w.opts.HotBytes / w.segSize)
	if w.opts.hotDefault && w.opts.CompactAge >= 0 {
		n = min(n, compactHotSegs) // Options.HotBytes
	}
	return n
}

// compactHotSegs is the default hot budget in segments with the
// background compaction on: the newest sealed segment, raw until the
// next one's first rows are durable and checkpointed, and the one being
// compressed.
const compactHotSegs = 2

// makeHot copies every sealed, durable, not compressed segment still in
// its slot that has no copies yet (the preparer waits for that before it
// recycles the slot), makes the clustered copies hot copies lack (those a
// killed writer left), and trims the copies to the budget.
func (w *Writer) makeHot() error {
	if !w.hotEnabled() {
		return nil
	}
	if err := w.copySlots(); err != nil {
		return err
	}
	for w.cluEnabled() && !w.ck.stopping() {
		n, ok := w.hot.needClu()
		if !ok {
			break
		}
		err := w.buildClu(n, nil)
		w.hot.setClu(n) // made, or given up on (a failure is not tried again)
		if err != nil {
			return err
		}
	}
	return w.trimHot()
}

// copySlots makes the hot copy of every sealed, durable segment in a slot
// that the checkpointer has not been through yet.
func (w *Writer) copySlots() error {
	for _, s := range w.slots {
		gen, seg := w.ctl.Slot(s.i)
		// ready first: the preparer maps the slot (s.b, s.rows) before it
		// stores ready, so the load orders the reads of both after it.
		if gen == 0 || s.ready.Load() != seg+1 || s.copied.Load() == seg+1 || seg >= w.ctl.DurableSegs() {
			continue
		}
		if w.ck.stopping() || w.sh.closing.Load() {
			return nil // Close: the copies are removed anyway
		}
		err := w.copySlot(s, gen, seg)
		// Done with it, copied or not (a failed copy is not tried again):
		// the preparer may recycle the slot.
		s.copied.Store(seg + 1)
		if err != nil {
			return err
		}
	}
	return nil
}

// copySlot makes the hot copy of segment seg, sealed and durable in slot
// s (generation gen), unless it is compacted, deleted, or the slot lacks
// its first rows.
func (w *Writer) copySlot(s *liveSlot, gen, seg uint64) error {
	if seg < w.ctl.CmpSegs() || (seg+1)<<w.shift <= w.ctl.FirstSeq() {
		return nil
	}
	if mmap.LoadAcquire64(s.b, format.LiveFromOff) != 0 {
		return nil // the slot lacks the segment's first rows (a reopened writer's)
	}
	if !w.hot.has(seg) {
		// Not written by the flusher as it flushed (it took the segment
		// up in its middle, or its copy failed): from the slot.
		if ok, err := w.copyHot(s, gen, seg); err != nil || !ok {
			return err
		}
	}
	if w.cluEnabled() {
		if err := w.buildClu(seg, s.rows); err != nil {
			w.removeCopies(seg)
			return err
		}
	}
	w.hot.setClu(seg)
	return nil
}

// copyHot writes seg-N.hot from slot s (generation gen), for a segment
// the flusher did not copy as it flushed it. The rows go through a chunk
// buffer rather than straight from the slot: here the kernel's first read
// of a page a process mapped costs about 10 µs (a nested, paravirtualised
// VM), a copy in user space and a pwrite from a buffer it has read before
// about 1 µs a page. It reports false, writing nothing, when the slot was
// recycled while its rows were copied (they could be a mix).
func (w *Writer) copyHot(s *liveSlot, gen, seg uint64) (bool, error) {
	if cap(w.hotChunk) < hotChunk {
		w.hotChunk = make([]byte, hotChunk)
	}
	f, err := w.createHot(seg)
	rows := s.rows[:w.rps*w.rowSize]
	for off := 0; err == nil && off < len(rows); off += hotChunk {
		n := copy(w.hotChunk[:hotChunk], rows[off:])
		_, err = f.WriteAt(w.hotChunk[:n], int64(format.BlockSize+off))
	}
	if err == nil && w.ctl.SlotGen(s.i) != gen {
		dropHot(f)
		return false, nil
	}
	if err == nil {
		err = w.sealHot(f, seg)
	} else if f != nil {
		dropHot(f)
	}
	if err != nil {
		return false, fmt.Errorf("writer: hot copy of segment %d: %w", seg, err)
	}
	return true, nil
}

// hotChunk is the bytes of rows copyHot and buildClu move at a time.
const hotChunk = 1 << 20

// createHot begins segment seg's hot copy: seg-N.hot.tmp, holding the
// durable file's header; the rows are written at their durable offsets.
func (w *Writer) createHot(seg uint64) (*os.File, error) {
	f, err := os.OpenFile(format.HotPath(w.liveDir, seg)+format.CluTmpSuffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	var hdr [format.BlockSize]byte
	format.SegHeader{TableID: w.ctl.TableID, RowSize: int(w.rowSize), SegNo: seg, RowsPerSeg: w.rps}.Marshal(hdr[:])
	if _, err := f.WriteAt(hdr[:], 0); err != nil {
		dropHot(f)
		return nil, err
	}
	return f, nil
}

// sealHot completes segment seg's hot copy f, its rows all written: sized
// as its durable file, renamed into place, the change counter bumped, and
// recorded in the hot set. On an error the temporary file is removed.
func (w *Writer) sealHot(f *os.File, seg uint64) error {
	tmp := f.Name()
	err := f.Truncate(w.segSize)
	if e := f.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = os.Rename(tmp, format.HotPath(w.liveDir, seg))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	w.ctl.BumpCluGen()
	w.hot.add(seg, false)
	return nil
}

// dropHot abandons hot copy f, being written.
func dropHot(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}

// trimHot removes the copies of the oldest segments past the budget, and
// of segments compacted or deleted since they were made.
func (w *Writer) trimHot() error {
	w.hot.mu.Lock()
	var drop []uint64
	budget := w.hotBudget()
	for len(w.hot.segs) > 0 {
		n := w.hot.segs[0].n
		if len(w.hot.segs) <= budget && n >= w.ctl.CmpSegs() && (n+1)<<w.shift > w.ctl.FirstSeq() {
			break
		}
		drop = append(drop, n)
		w.hot.segs = w.hot.segs[1:]
	}
	w.hot.mu.Unlock()
	for _, n := range drop {
		w.removeCopies(n)
	}
	return nil
}

// buildClu writes segment seg's clustered copy from slot, the live slot
// holding it, or (nil) from its hot copy (an immutable file: for copies a
// killed writer left): a counting sort by symbol into the reused buffers
// (the rows read twice), written under a temporary name, renamed into
// place. Damaged rows leave no clustered copy.
func (w *Writer) buildClu(seg uint64, slot []byte) error {
	b := &w.clu
	rs := w.rowSize
	// each calls fn with the rows [i, i+len(rows)/rs) of the segment: from
	// the slot (the preparer does not recycle it before the checkpointer
	// is done with it), or read from the hot copy a chunk at a time.
	var each func(fn func(i uint64, rows []byte) bool) error
	if slot != nil {
		each = func(fn func(i uint64, rows []byte) bool) error {
			if !fn(0, slot[:w.rps*rs]) {
				return fmt.Errorf("segment %d's rows changed while read", seg)
			}
			return nil
		}
	} else {
		if cap(b.chunk) < hotChunk {
			b.chunk = make([]byte, hotChunk)
		}
		f, err := os.Open(format.HotPath(w.liveDir, seg))
		if err != nil {
			return fmt.Errorf("writer: clustered copy of segment %d: %w", seg, err)
		}
		defer f.Close()
		per := uint64(hotChunk) / rs // rows per chunk read
		each = func(fn func(i uint64, rows []byte) bool) error {
			for i := uint64(0); i < w.rps; i += per {
				n := min(per, w.rps-i) * rs
				if _, err := f.ReadAt(b.chunk[:n], int64(format.BlockSize+i*rs)); err != nil {
					return err
				}
				if !fn(i, b.chunk[:n]) {
					return format.Corruptf(f.Name(), int64(format.BlockSize+i*rs), "rows changed while read")
				}
			}
			return nil
		}
	}
	clear(b.count)
	err := each(func(_ uint64, rows []byte) bool {
		for o := uint64(0); o < uint64(len(rows)); o += rs {
			id := binary.LittleEndian.Uint32(rows[o+uint64(w.symOff):])
			if int(id) >= len(b.count) {
				b.count = append(b.count, make([]uint64, int(id)+1-len(b.count))...)
			}
			b.count[id]++
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("writer: clustered copy of segment %d: %w", seg, err)
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
	h := format.CluHeader{TableID: w.ctl.TableID, RowSize: int(rs), SegNo: seg, RowsPerSeg: w.rps, Rows: w.rps, NSym: nsym}
	h.CluLayout()
	if n := int(h.IdxOff); cap(b.hdr) < n {
		b.hdr = make([]byte, n)
	}
	b.hdr = b.hdr[:h.IdxOff]
	clear(b.hdr)
	dir := b.hdr[h.DirOff : h.DirOff+uint64(nsym)*format.CluDirEntry]
	k, next := 0, uint64(0)
	for id, c := range b.count {
		b.pos[id] = next
		if c > 0 {
			format.PutCluDirEntry(dir, k, uint32(id), next, c)
			k++
			next += c
		}
	}
	h.Marshal(b.hdr, dir)
	if err := b.grow(int(h.RowsOff-h.IdxOff), int(w.rps*rs)); err != nil {
		return fmt.Errorf("writer: clustered copy of segment %d: %w", seg, err)
	}
	// Scatter: the rows read in order, each to its symbol's next place (a
	// write stream per symbol: few pages touched at a time).
	err = each(func(i uint64, rows []byte) bool {
		for o := uint64(0); o < uint64(len(rows)); o, i = o+rs, i+1 {
			row := rows[o : o+rs]
			id := binary.LittleEndian.Uint32(row[w.symOff:])
			if int(id) >= len(b.pos) || b.pos[id] >= w.rps {
				return false
			}
			p := b.pos[id]
			b.pos[id] = p + 1
			binary.LittleEndian.PutUint32(b.idx[4*p:], uint32(i))
			copy(b.rows[p*rs:], row)
		}
		return true
	})
	final := format.CluPath(w.liveDir, seg)
	tmp := final + format.CluTmpSuffix
	if err == nil {
		err = writeFile(tmp, b.hdr, b.idx, b.rows)
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writer: clustered copy of segment %d: %w", seg, err)
	}
	w.ctl.BumpCluGen()
	return nil
}

// writeFile writes parts end to end into a new file at path.
func writeFile(path string, parts ...[]byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	var off int64
	for _, p := range parts {
		if err != nil {
			break
		}
		_, err = f.WriteAt(p, off)
		off += int64(len(p))
	}
	if e := f.Close(); err == nil {
		err = e
	}
	return err
}

// removeCopies removes segment seg's hot and clustered copies, if any,
// and bumps the change counter when there was one.
func (w *Writer) removeCopies(seg uint64) {
	w.hot.remove(seg)
	removed := false
	for _, p := range []string{format.HotPath(w.liveDir, seg), format.CluPath(w.liveDir, seg)} {
		if os.Remove(p) == nil {
			removed = true
		}
	}
	if removed {
		w.ctl.BumpCluGen()
	}
}

// cleanCopies removes the hot and clustered copies (and their temporary
// files) in the live directory, but for those of segments still sealed,
// durable, not compressed and not deleted when keep: a copy is immutable
// and stays right as long as its segment's rows do. The open path (keep)
// and Close (not).
func (w *Writer) cleanCopies(keep bool) error {
	ents, err := os.ReadDir(w.liveDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writer: live dir: %w", err)
	}
	keeps := func(n uint64, tmp bool) bool {
		return keep && !tmp && w.hotEnabled() && n < w.ctl.DurableSegs() && n >= w.ctl.CmpSegs() && (n+1)<<w.shift > w.ctl.FirstSeq()
	}
	// A segment keeps its hot copy, and its clustered one if made (else
	// the checkpointer makes it from the hot copy).
	hot, clu := map[uint64]bool{}, map[uint64]bool{}
	for _, e := range ents {
		if n, tmp, ok := format.ParseHotName(e.Name()); ok && keeps(n, tmp) {
			hot[n] = true
		} else if n, tmp, ok := format.ParseCluName(e.Name()); ok && keeps(n, tmp) {
			clu[n] = true
		}
	}
	removed := false
	for _, e := range ents {
		n, tmp, ok := format.ParseHotName(e.Name())
		if !ok {
			// A clustered copy stays with its segment's hot copy.
			if n, tmp, ok = format.ParseCluName(e.Name()); !ok {
				continue
			}
		}
		if keeps(n, tmp) && hot[n] {
			continue
		}
		path := filepath.Join(w.liveDir, e.Name())
		if !keep {
			w.reap.hold(path) // Close: freed after it returns
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("writer: remove hot copy: %w", err)
		}
		removed = true
	}
	if removed {
		w.ctl.BumpCluGen()
	}
	w.hot.mu.Lock()
	w.hot.segs = w.hot.segs[:0]
	w.hot.mu.Unlock()
	for n := range hot {
		w.hot.add(n, clu[n] || !w.cluEnabled())
		if s := w.slots[n%uint64(len(w.slots))]; s.ready.Load() == n+1 {
			s.copied.Store(n + 1)
		}
	}
	return w.trimHot()
}
