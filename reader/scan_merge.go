package reader

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// The merge of a clustered compressed segment (cseg version 2: each
// symbol's rows a run of data blocks of their own) into sequence order,
// for OrderSeq, without its seq-order index: every row's offset in the
// segment is in its data block's seq column, which the ts column needs
// anyway. The data blocks meeting the window are decoded (the scan's
// columns and the offsets) by the scan's tasks, in the order the merge
// will want them (a symbol's first block first, then each next block by
// the last ts of the block before it) and a few ahead; Next then fills
// each window of mergeWin rows of the segment from the decoded blocks: a
// heap of symbols by their next row's offset gives the symbols with rows
// in the window, and each such run of rows is scattered to its offsets;
// the window's rows then go out BlockRows at a time. (A window of four
// blocks rather than one: a symbol's run in it is four times longer, and
// it is read back from memory, where a longer run streams.) One
// decoded block per symbol is held (at most about the segment's rows,
// like Get's cache), plus the ones decoded ahead.
//
// Checks: a bitmap of the window's offsets catches two rows at one offset;
// when no block of the segment was skipped (a window that takes the whole
// segment), every offset must be filled; a symbol's blocks must follow
// each other. With the checks of every decoded block (CRC32C, frames,
// offsets ascending within the segment), a damaged file is an error.

type merger struct {
	sc     *Scan
	z      *cseg.Segment
	base   uint64
	rows   int64
	active bool
	zcols  int // the segment's columns (an earlier layout may have fewer)
	symCol int // its clustering column

	// Per directory slot: the decoded block being merged and the next
	// row in it, the next data block of the symbol to look at and the
	// end of its run, and the offset of its last row merged.
	cur   []*Block
	pos   []int
	nextK []int
	endK  []int
	last  []int64
	heap  []mergeEnt

	// Per data block: its state, and its task or decoded block.
	state  []blkState
	taskOf []*task
	ready  []*Block

	order    []mergeNeed // the wanted blocks in the order the merge needs them
	sched    int         // the next of order to submit
	subq     []int       // blocks submitted, oldest first (from subHead)
	subHead  int
	inflight int
	skipped  bool // a block was skipped (outside the window): the offsets cannot all be filled

	// mark is the window's offsets: 0 not filled, markKept filled with a
	// row in the time window, markDropped filled with one outside it.
	mark     [mergeWin]byte
	idx      []int32
	win      *Block       // the window's rows, then the kept ones (wn of them)
	wn, wpos int          // rows of win, and the first not handed out
	out      Block        // the block handed out: a view of win
	pool     [13][]*Block // decoded-block buffers by size class (1 << class rows)
}

// mergeWin is the rows of a segment the merge fills at a time.
const mergeWin = 4 * BlockRows

type blkState uint8

const (
	blkSkip      blkState = iota // outside the window
	blkWant                      // to decode
	blkSubmitted                 // its task is in flight (taskOf)
	blkReady                     // decoded, waiting (ready)
	blkTaken                     // in the merge, or done
)

type mergeEnt struct {
	off  int64 // the offset of the slot's next row
	slot int
}

type mergeNeed struct {
	key int64 // when the merge needs it: MinInt64 for a symbol's first block, else the last ts of the block before
	k   int
}

// start sets the merge up on the segment of item it.
func (m *merger) start(sc *Scan, it item) error {
	z := it.z
	m.sc, m.z, m.base, m.rows = sc, z, it.base, int64(z.Rows())
	zs := z.Schema()
	m.zcols, m.symCol = len(zs.Cols), zs.SymCol
	if m.win == nil || !sameCols(m.win, sc.p.cols) {
		m.win = newBlock(sc.p.cols, mergeWin, sc.p.seqs)
		m.out = Block{vecs: make([]vec, len(sc.p.cols))}
		for i, c := range sc.p.cols {
			m.out.vecs[i].typ = c.typ
		}
		m.pool = [13][]*Block{}
	}
	m.win.reserve(mergeWin, sc.p.seqs)
	m.wn, m.wpos = 0, 0
	nsyms, nb := z.SymCount(), z.DataBlocks()
	m.cur = resize(m.cur, nsyms)
	m.pos = resize(m.pos, nsyms)
	m.nextK = resize(m.nextK, nsyms)
	m.endK = resize(m.endK, nsyms)
	m.last = resize(m.last, nsyms)
	m.state = resize(m.state, nb)
	m.taskOf = resize(m.taskOf, nb)
	m.ready = resize(m.ready, nb)
	m.order, m.sched, m.subq, m.subHead, m.inflight, m.skipped = m.order[:0], 0, m.subq[:0], 0, 0, false
	m.heap = m.heap[:0]
	for j := range nsyms {
		_, first, cnt := z.SymAt(j)
		m.nextK[j], m.endK[j], m.last[j], m.pos[j] = first, first+cnt, -1, 0
		key := int64(math.MinInt64)
		for k := first; k < first+cnt; k++ {
			if !sc.wanted(z, k) {
				m.state[k], m.skipped = blkSkip, true
				continue
			}
			m.state[k] = blkWant
			m.order = append(m.order, mergeNeed{key: key, k: k})
			_, key = z.DataBlockTs(k)
		}
	}
	slices.SortFunc(m.order, func(a, b mergeNeed) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	})
	for k := 0; k < nb; {
		for k < nb && m.state[k] == blkSkip {
			k++
		}
		e := k
		for e < nb && m.state[e] != blkSkip {
			e++
		}
		z.WillNeed(k, e)
		k = e
	}
	m.active = true
	m.fill()
	for j := range nsyms {
		b, err := m.advance(j)
		if err != nil {
			return err
		}
		if b != nil {
			m.cur[j] = b
			m.heap = append(m.heap, mergeEnt{off: int64(b.offs[0]), slot: j})
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return nil
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// path is the segment's file, for errors.
func (m *merger) path() string { return format.ZSegPath(m.sc.r.dir, m.base>>m.sc.r.shift) }

// fill submits wanted blocks in need order, up to the lookahead.
func (m *merger) fill() {
	pl := &m.sc.pipe
	if pl.workers <= 1 {
		return // decoded when needed
	}
	for m.inflight < pl.ahead && m.sched < len(m.order) {
		k := m.order[m.sched].k
		if m.state[k] != blkWant {
			m.sched++
			continue
		}
		if !m.submit(k, false) {
			return
		}
		m.sched++
	}
}

// submit starts the decoding of data block k. Without a free task it
// waits for the oldest in flight (keeping its block for later) when
// force is set, and gives up otherwise.
func (m *merger) submit(k int, force bool) bool {
	pl := &m.sc.pipe
	t := pl.task(taskZSym)
	for t == nil {
		if !force || !m.harvestOldest() {
			return false
		}
		t = pl.task(taskZSym)
	}
	t.z, t.k, t.base = m.z, k, m.base
	t.out = m.getBuf(m.z.DataBlockRows(k))
	m.state[k], m.taskOf[k] = blkSubmitted, t
	m.subq = append(m.subq, k)
	m.inflight++
	pl.submit(t)
	return true
}

// harvestOldest waits for the oldest block in flight and keeps it ready.
func (m *merger) harvestOldest() bool {
	for m.subHead < len(m.subq) {
		k := m.subq[m.subHead]
		m.subHead++
		if m.state[k] != blkSubmitted {
			continue
		}
		b, err := m.harvest(k)
		if err != nil {
			// Kept for need(k) to report: put the task's error on the
			// block's slot by leaving it wanted and failing there.
			m.state[k] = blkWant
			return true
		}
		m.ready[k], m.state[k] = b, blkReady
		return true
	}
	return false
}

// harvest waits for block k's task and returns its decoded block.
func (m *merger) harvest(k int) (*Block, error) {
	pl := &m.sc.pipe
	t := m.taskOf[k]
	err := pl.wait(t)
	b := t.out
	pl.freeTask(t)
	m.taskOf[k] = nil
	m.inflight--
	if err != nil {
		m.putBuf(b)
		return nil, err
	}
	return b, nil
}

// need returns data block k decoded, waiting for it (or decoding it).
func (m *merger) need(k int) (*Block, error) {
	switch m.state[k] {
	case blkReady:
		b := m.ready[k]
		m.ready[k], m.state[k] = nil, blkTaken
		m.fill()
		return b, nil
	case blkWant:
		m.submit(k, true)
	}
	b, err := m.harvest(k)
	if err != nil {
		return nil, err
	}
	m.state[k] = blkTaken
	m.fill()
	return b, nil
}

// advance returns the next wanted block of slot j, decoded, or nil when
// the symbol has no more.
func (m *merger) advance(j int) (*Block, error) {
	for m.nextK[j] < m.endK[j] {
		k := m.nextK[j]
		m.nextK[j]++
		if m.state[k] == blkSkip {
			continue
		}
		b, err := m.need(k)
		if err != nil {
			return nil, err
		}
		if b.n == 0 || int64(b.offs[0]) <= m.last[j] {
			m.putBuf(b)
			return nil, format.Corruptf(m.path(), 0, "data block %d: its symbol's rows go back to row %d after row %d", k, b.offs[0], m.last[j])
		}
		return b, nil
	}
	return nil, nil
}

// next returns the next block of the segment's rows (nil at its end).
func (m *merger) next() (*Block, error) {
	for m.wpos >= m.wn {
		if len(m.heap) == 0 {
			return nil, nil
		}
		if err := m.fillWin(); err != nil {
			return nil, err
		}
	}
	a, b := m.wpos, min(m.wpos+BlockRows, m.wn)
	m.wpos = b
	out, win := &m.out, m.win
	out.n, out.hasSeqs = b-a, win.hasSeqs
	if win.hasSeqs {
		out.seqs = win.seqs[a:b]
	}
	for i := range out.vecs {
		v, w := &out.vecs[i], &win.vecs[i]
		switch v.typ {
		case store.TypeTs, store.TypeI64:
			v.i64 = w.i64[a:b]
		case store.TypeF64:
			v.f64 = w.f64[a:b]
		case store.TypeSym:
			v.u32 = w.u32[a:b]
		case store.TypeBool:
			v.b = w.b[a:b]
		}
	}
	return out, nil
}

// fillWin merges the next window of the segment that holds rows into
// win (m.wn of them, from m.wpos 0).
func (m *merger) fillWin() error {
	p, win := &m.sc.p, m.win
	w0 := m.heap[0].off &^ (mergeWin - 1)
	w1 := min(w0+mergeWin, m.rows)
	width := int(w1 - w0)
	win.setLen(width, p.seqs)
	clear(m.mark[:])
	for len(m.heap) > 0 && m.heap[0].off < w1 {
		j := m.heap[0].slot
		b := m.cur[j]
		q, err := m.scatter(b, m.pos[j], w0, w1)
		if err != nil {
			return err
		}
		m.last[j] = int64(b.offs[q-1])
		if q < b.n {
			m.pos[j] = q
			m.heap[0].off = int64(b.offs[q])
			m.down(0)
			continue
		}
		m.putBuf(b)
		m.cur[j] = nil
		nb, err := m.advance(j)
		if err != nil {
			return err
		}
		if nb == nil {
			last := len(m.heap) - 1
			m.heap[0] = m.heap[last]
			m.heap = m.heap[:last]
			m.down(0)
			continue
		}
		m.cur[j], m.pos[j] = nb, 0
		m.heap[0].off = int64(nb.offs[0])
		m.down(0)
	}
	// Count the offsets filled and kept, 8 at a time.
	const ones = 0x0101010101010101
	n, filled := 0, 0
	for i := 0; i < width; i += 8 {
		x := le.Uint64(m.mark[i:])
		n += bits.OnesCount64(x & (markKept * ones))
		filled += bits.OnesCount64((x | x>>1) & ones)
	}
	if !m.skipped && filled != width {
		return format.Corruptf(m.path(), 0, "rows %d to %d of the segment: %d of them in its data blocks", w0, w1-1, filled)
	}
	if n < width {
		m.compact(w0, width)
	} else if p.seqs {
		s := m.base + uint64(w0)
		for i := range win.seqs {
			win.seqs[i] = s + uint64(i)
		}
	}
	win.setLen(n, p.seqs)
	for i, c := range p.cols {
		if c.idx >= m.zcols {
			win.setMissing(i, 0, n)
		}
	}
	m.wn, m.wpos = n, 0
	return nil
}

// Marks of a window's offsets (merger.mark).
const (
	markKept    = 1
	markDropped = 2
)

// scatter puts the rows of decoded block b from row from on, up to the
// first at or past offset w1, at their offsets in the window starting at
// offset w0, and returns where it stopped.
func (m *merger) scatter(b *Block, from int, w0, w1 int64) (int, error) {
	// First the run's end and its offsets' marks: every offset is the
	// block's only (a second one is damage), and a row outside the time
	// window is dropped.
	q := from
	w := uint32(w0)
	offs := b.offs[:b.n]
	mark := &m.mark
	var dup byte
	any := true
	if len(b.keep) == 0 {
		for q < len(offs) && int64(offs[q]) < w1 {
			o := (offs[q] - w) & (mergeWin - 1)
			dup |= mark[o]
			mark[o] = markKept
			q++
		}
	} else {
		any = false
		keep := b.keep[:len(offs)]
		for q < len(offs) && int64(offs[q]) < w1 {
			o := (offs[q] - w) & (mergeWin - 1)
			dup |= mark[o]
			v := byte(markDropped)
			if keep[q] {
				v, any = markKept, true
			}
			mark[o] = v
			q++
		}
	}
	if dup != 0 {
		return q, format.Corruptf(m.path(), 0, "rows %d to %d of the segment: a row in two data blocks", w0, w1-1)
	}
	if !any {
		return q, nil // (the block's vectors may hold no rows then)
	}
	run := offs[from:q]
	win := m.win
	for i, c := range m.sc.p.cols {
		if c.idx >= m.zcols {
			continue
		}
		dv, sv := &win.vecs[i], &b.vecs[i]
		switch c.typ {
		case store.TypeTs, store.TypeI64:
			scatterRun(dv.i64[:mergeWin:mergeWin], sv.i64[from:q], run, w)
		case store.TypeF64:
			scatterRun(dv.f64[:mergeWin:mergeWin], sv.f64[from:q], run, w)
		case store.TypeSym:
			d := dv.u32[:mergeWin:mergeWin]
			if c.idx == m.symCol {
				for _, o := range run {
					d[(o-w)&(mergeWin-1)] = b.id
				}
				continue
			}
			scatterRun(d, sv.u32[from:q], run, w)
		case store.TypeBool:
			scatterRun(dv.b[:mergeWin:mergeWin], sv.b[from:q], run, w)
		}
	}
	return q, nil
}

// scatterRun puts s[i] at d[offs[i]-w] (d is a window's mergeWin values).
func scatterRun[T any](d, s []T, offs []uint32, w uint32) {
	s = s[:len(offs)]
	for i, o := range offs {
		d[(o-w)&(mergeWin-1)] = s[i]
	}
}

// compact moves the kept rows of the window (width offsets from w0) to the
// front of the output's vectors, in order.
func (m *merger) compact(w0 int64, width int) {
	p, out := &m.sc.p, m.win
	idx := m.idx[:0]
	for i, k := range m.mark[:width] {
		if k == markKept {
			idx = append(idx, int32(i))
		}
	}
	m.idx = idx
	for i := range out.vecs {
		v := &out.vecs[i]
		switch v.typ {
		case store.TypeTs, store.TypeI64:
			gatherIdx(v.i64, idx)
		case store.TypeF64:
			gatherIdx(v.f64, idx)
		case store.TypeSym:
			gatherIdx(v.u32, idx)
		case store.TypeBool:
			gatherIdx(v.b, idx)
		}
	}
	if p.seqs {
		s := m.base + uint64(w0)
		for j, i := range idx {
			out.seqs[j] = s + uint64(i)
		}
	}
}

func gatherIdx[T any](s []T, idx []int32) {
	for j, i := range idx {
		s[j] = s[i]
	}
}

// down restores the heap order from position i down.
func (m *merger) down(i int) {
	h := m.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		s := l
		if r := l + 1; r < n && h[r].off < h[l].off {
			s = r
		}
		if h[i].off <= h[s].off {
			return
		}
		h[i], h[s] = h[s], h[i]
		i = s
	}
}

// getBuf returns a decoded-block buffer with room for n rows.
func (m *merger) getBuf(n int) *Block {
	c := 0
	if n > 1 {
		c = bits.Len(uint(n - 1))
	}
	if l := len(m.pool[c]); l > 0 {
		b := m.pool[c][l-1]
		m.pool[c] = m.pool[c][:l-1]
		return b
	}
	size := 1 << c
	b := newBlock(m.sc.p.cols, size, false)
	b.class = c
	b.offs = make([]uint32, 0, size)
	b.keep = make([]bool, 0, size)
	b.ts = make([]int64, 0, size)
	return b
}

func (m *merger) putBuf(b *Block) { m.pool[b.class] = append(m.pool[b.class], b) }

// finish ends the merge of a segment whose rows are all out.
func (m *merger) finish() {
	m.active = false
	m.z = nil
}

// reset drops a merge under way (the scan's tasks are all done: the
// pipeline's stop waited for them), keeping its buffers.
func (m *merger) reset() {
	for j, b := range m.cur {
		if b != nil {
			m.putBuf(b)
			m.cur[j] = nil
		}
	}
	for k, b := range m.ready {
		if b != nil {
			m.putBuf(b)
			m.ready[k] = nil
		}
	}
	for k, t := range m.taskOf {
		if t != nil {
			m.putBuf(t.out)
			m.taskOf[k] = nil
		}
	}
	m.heap = m.heap[:0]
	m.wn, m.wpos = 0, 0
	m.active, m.z = false, nil
}
