package reader

import (
	"math"
	"slices"
	"sync"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// A scan's work is a queue of items in the order their rows come out:
// tasks, each one block of rows decoded (on a goroutine of the scan's, or
// in Next), and the items Next works through itself: the merge of a
// clustered compressed segment into sequence order (scan_merge.go), and
// the rows of a segment that is not sealed (a live slot, a durable file
// still written), read one checked copy at a time. The planner walks the
// range's segments and queues items up to a few blocks ahead.

type itemKind uint8

const (
	itemTask  itemKind = iota // a task: one block of rows
	itemMerge                 // a clustered compressed segment, merged into seq order
	itemLocal                 // rows [lo, hi) read one by one (Iter)
)

type item struct {
	kind   itemKind
	t      *task
	z      *cseg.Segment // itemMerge
	base   uint64        // itemMerge: the segment's first seq
	lo, hi uint64        // itemLocal
}

type taskKind uint8

const (
	taskRaw  taskKind = iota // rows [lo, hi) of a raw segment → a block
	taskZ                    // data block k of a compressed segment → a block
	taskZSym                 // data block k of a clustered segment → merge input
)

// task is one block's decoding. The consumer fills it, a worker (or
// Next) runs it; its done channel orders the two.
type task struct {
	kind   taskKind
	p      *scanParams
	z      *cseg.Segment
	k      int
	rows   []byte // taskRaw: the segment's rows (a mapping that lives until the Reader's Close)
	rs     int
	path   string
	base   uint64 // the segment's first seq
	lo, hi int    // taskRaw: row indices in the segment
	filter bool   // taskRaw: keep only the rows in the window
	out    *Block // where the rows go: own, or a merge buffer
	own    *Block
	err    error
	busy   bool // submitted to the workers, not yet waited for
	done   chan struct{}
}

// worker is a decoding goroutine's scratch (or Next's, without them).
type worker struct {
	cr  cseg.ColReader
	idx []int32
}

func (t *task) run(w *worker) error {
	if t.kind == taskRaw {
		return t.runRaw(w)
	}
	return t.runZ(w)
}

// runRaw gathers the scan's columns of rows [lo, hi) of a raw segment,
// checking each row's check word first.
func (t *task) runRaw(w *worker) error {
	p, out, rs, rows := t.p, t.out, t.rs, t.rows
	n := t.hi - t.lo
	out.reserve(n, p.seqs)
	// The rows' check words (and the window, for a range with late rows):
	// idx lists the rows kept when some are not.
	idx := w.idx[:0]
	for i := t.lo; i < t.hi; i++ {
		o := i * rs
		row := rows[o : o+rs : o+rs]
		seq := t.base + uint64(i)
		if rs == 32 {
			w3 := le.Uint64(row[24:])
			if uint32(w3>>32) != format.Check32(seq, le.Uint64(row[0:]), le.Uint64(row[8:]), le.Uint64(row[16:]), uint32(w3)) {
				return format.Corruptf(t.path, int64(format.BlockSize+o), "row %d fails its check", seq)
			}
		} else if !format.Valid(seq, row) {
			return format.Corruptf(t.path, int64(format.BlockSize+o), "row %d fails its check", seq)
		}
		if t.filter {
			if p.inWindow(int64(le.Uint64(row))) {
				idx = append(idx, int32(i))
			}
		}
	}
	w.idx = idx
	m := n
	if t.filter {
		m = len(idx)
	}
	out.setLen(m, p.seqs)
	if m == 0 {
		return nil
	}
	for j, c := range p.cols {
		if !store.Has(store.Row(rows[:rs]), c.col) {
			out.setMissing(j, 0, m)
			continue
		}
		gather(&out.vecs[j], c, rows, rs, t.lo, t.hi, idx, t.filter)
	}
	if p.seqs {
		if t.filter {
			for j, i := range idx {
				out.seqs[j] = t.base + uint64(i)
			}
		} else {
			for j := range out.seqs {
				out.seqs[j] = t.base + uint64(t.lo+j)
			}
		}
	}
	return nil
}

// gather copies column c of rows [lo, hi) of rows (rs bytes each), or of
// the rows idx lists when filter is set, into v.
func gather(v *vec, c scanCol, rows []byte, rs, lo, hi int, idx []int32, filter bool) {
	off := c.col.Off
	switch c.typ {
	case store.TypeTs, store.TypeI64:
		d := v.i64
		if filter {
			for j, i := range idx {
				d[j] = int64(le.Uint64(rows[int(i)*rs+off:]))
			}
			return
		}
		d = d[:hi-lo]
		for j, o := 0, lo*rs+off; j < len(d); j, o = j+1, o+rs {
			d[j] = int64(le.Uint64(rows[o:]))
		}
	case store.TypeF64:
		d := v.f64
		if filter {
			for j, i := range idx {
				d[j] = math.Float64frombits(le.Uint64(rows[int(i)*rs+off:]))
			}
			return
		}
		d = d[:hi-lo]
		for j, o := 0, lo*rs+off; j < len(d); j, o = j+1, o+rs {
			d[j] = math.Float64frombits(le.Uint64(rows[o:]))
		}
	case store.TypeSym:
		d := v.u32
		if filter {
			for j, i := range idx {
				d[j] = le.Uint32(rows[int(i)*rs+off:])
			}
			return
		}
		d = d[:hi-lo]
		for j, o := 0, lo*rs+off; j < len(d); j, o = j+1, o+rs {
			d[j] = le.Uint32(rows[o:])
		}
	case store.TypeBool:
		d := v.b
		if filter {
			for j, i := range idx {
				d[j] = rows[int(i)*rs+off] != 0
			}
			return
		}
		d = d[:hi-lo]
		for j, o := 0, lo*rs+off; j < len(d); j, o = j+1, o+rs {
			d[j] = rows[o] != 0
		}
	}
}

// runZ decodes the scan's columns of data block k of a compressed
// segment: for taskZ the rows in the window, in a block of their own; for
// taskZSym every row, with each row's offset in the segment and whether
// it is in the window, for the merge.
func (t *task) runZ(w *worker) error {
	p, out, cr, z := t.p, t.out, &w.cr, t.z
	n, err := cr.Open(z, t.k)
	if err != nil {
		return err
	}
	sym := t.kind == taskZSym
	out.reserve(n, p.seqs && !sym)
	lo, hi := z.DataBlockTs(t.k)
	filter := lo < p.from || hi > p.hi
	var ts []int64
	if p.tsVec >= 0 || filter {
		buf := out.ts
		if p.tsVec >= 0 {
			buf = out.vecs[p.tsVec].i64
		}
		if ts, err = cr.Ts(buf); err != nil {
			return err
		}
		if p.tsVec >= 0 {
			out.vecs[p.tsVec].i64 = ts
		} else {
			out.ts = ts
		}
	}
	kept := n
	out.keep = out.keep[:0]
	if filter {
		keep := slices.Grow(out.keep, n)[:n]
		kept = 0
		for i, x := range ts {
			k := p.inWindow(x)
			keep[i] = k
			if k {
				kept++
			}
		}
		out.keep = keep
	}
	var offs []int64
	if sym || (p.seqs && kept > 0) {
		if offs, err = cr.Offsets(); err != nil {
			return err
		}
	}
	if sym {
		out.offs = slices.Grow(out.offs[:0], n)[:n]
		for i, o := range offs {
			out.offs[i] = uint32(o) // < Rows, which version 2 holds below 2^32
		}
		out.id, _ = z.DataBlockSym(t.k)
	}
	if kept == 0 {
		out.setLen(0, false)
		if sym {
			out.n = n // every row is the merge's (its offset), none kept
		}
		return nil
	}
	zs := z.Schema()
	for i, c := range p.cols {
		if i == p.tsVec || c.idx >= len(zs.Cols) {
			continue // decoded above; a column the segment lacks: below
		}
		v := &out.vecs[i]
		switch c.typ {
		case store.TypeI64:
			v.i64, err = cr.I64(c.idx, v.i64)
		case store.TypeF64:
			v.f64, err = cr.F64(c.idx, v.f64)
		case store.TypeSym:
			if sym && c.idx == zs.SymCol {
				continue // the block's symbol: the merge writes it
			}
			v.u32, err = cr.Sym(c.idx, v.u32)
		case store.TypeBool:
			v.b, err = cr.Bool(c.idx, v.b)
		}
		if err != nil {
			return err
		}
	}
	if sym {
		out.n = n
		return nil
	}
	if p.seqs {
		out.seqs = out.seqs[:n]
		for i, o := range offs {
			out.seqs[i] = t.base + uint64(o)
		}
	}
	if filter {
		for i, c := range p.cols {
			if c.idx >= len(zs.Cols) {
				continue
			}
			v := &out.vecs[i]
			switch c.typ {
			case store.TypeTs, store.TypeI64:
				v.i64 = compactKeep(v.i64, out.keep)
			case store.TypeF64:
				v.f64 = compactKeep(v.f64, out.keep)
			case store.TypeSym:
				v.u32 = compactKeep(v.u32, out.keep)
			case store.TypeBool:
				v.b = compactKeep(v.b, out.keep)
			}
		}
		if p.seqs {
			out.seqs = compactKeep(out.seqs, out.keep)
		}
	}
	out.setLen(kept, p.seqs)
	for i, c := range p.cols {
		if c.idx >= len(zs.Cols) {
			out.setMissing(i, 0, kept)
		}
	}
	return nil
}

// compactKeep moves the elements of s that keep marks to its front, in
// order, and returns them.
func compactKeep[T any](s []T, keep []bool) []T {
	j := 0
	for i, k := range keep {
		if k {
			s[j] = s[i]
			j++
		}
	}
	return s[:j]
}

// pipeline is a scan's task objects, its queue of items, and its
// decoding goroutines, if any.
type pipeline struct {
	sc      *Scan
	workers int // decoding goroutines (1: none, tasks run in Next)
	ahead   int // items queued at most
	jobs    chan *task
	wg      sync.WaitGroup
	running int  // goroutines started: they outlive a scan, parked on jobs, until quit
	active  bool // a scan handed them tasks (listed in its Reader's scans)
	tasks   []*task
	free    []*task
	queue   []item // a ring of n items from head
	head, n int
	held    *task // the task whose block Next handed out
	ws      []worker
}

// reset prepares the pipeline for a scan with the given number of
// decoding goroutines (started at the first task).
func (pl *pipeline) reset(sc *Scan, workers int) {
	if pl.running > 0 && (pl.running != workers || pl.sc.r != sc.r) {
		pl.quit()
	}
	pl.sc, pl.workers = sc, workers
	pl.ahead = 1
	if workers > 1 {
		pl.ahead = 4 * workers
	}
	if len(pl.ws) < max(workers, 1) {
		pl.ws = append(pl.ws, make([]worker, max(workers, 1)-len(pl.ws))...)
	}
	for len(pl.tasks) < pl.ahead+2 {
		pl.tasks = append(pl.tasks, &task{done: make(chan struct{}, 1)})
	}
	pl.free = pl.free[:0]
	for _, t := range pl.tasks[:pl.ahead+2] {
		if t.own == nil || !sameCols(t.own, sc.p.cols) {
			t.own = newBlock(sc.p.cols, 0, false) // its buffers come with its first rows
		}
		pl.free = append(pl.free, t)
	}
	clear(pl.queue)
	pl.head, pl.n, pl.held = 0, 0, nil
}

// sameCols reports whether b's vectors are of the types of cols.
func sameCols(b *Block, cols []scanCol) bool {
	if len(b.vecs) != len(cols) {
		return false
	}
	for i, c := range cols {
		if b.vecs[i].typ != c.typ {
			return false
		}
	}
	return true
}

// task returns a free task (nil if none) set up for the scan.
func (pl *pipeline) task(kind taskKind) *task {
	if len(pl.free) == 0 {
		return nil
	}
	t := pl.free[len(pl.free)-1]
	pl.free = pl.free[:len(pl.free)-1]
	*t = task{kind: kind, p: &pl.sc.p, own: t.own, out: t.own, done: t.done}
	return t
}

// submit runs t: on a decoding goroutine, or at once without them.
func (pl *pipeline) submit(t *task) {
	if pl.workers <= 1 {
		t.err = t.run(&pl.ws[0])
		return
	}
	if pl.running == 0 {
		// Started once and kept, parked, for the next scans of the
		// Reader that reuse these buffers: a goroutine started per
		// scan would cost an allocation a query.
		if pl.jobs == nil {
			pl.jobs = make(chan *task, 64)
		}
		for i := range pl.workers {
			pl.wg.Add(1)
			go runWorker(pl.jobs, &pl.ws[i], &pl.wg)
		}
		pl.running = pl.workers
		r := pl.sc.r
		r.pipes = append(r.pipes, pl)
	}
	if !pl.active {
		pl.active = true
		pl.sc.r.scans = append(pl.sc.r.scans, pl.sc)
	}
	t.busy = true
	pl.jobs <- t
}

// runWorker runs tasks until it receives nil.
func runWorker(jobs <-chan *task, w *worker, wg *sync.WaitGroup) {
	defer wg.Done()
	for t := range jobs {
		if t == nil {
			return
		}
		t.err = t.run(w)
		t.done <- struct{}{}
	}
}

// wait waits for t to be done and returns its error.
func (pl *pipeline) wait(t *task) error {
	if t.busy {
		<-t.done
		t.busy = false
	}
	return t.err
}

// take waits for task t and returns its block.
func (pl *pipeline) take(t *task) (*Block, error) {
	if err := pl.wait(t); err != nil {
		pl.free = append(pl.free, t)
		return nil, err
	}
	return t.out, nil
}

func (pl *pipeline) freeTask(t *task) { pl.free = append(pl.free, t) }

// release gives back the task whose block Next handed out last.
func (pl *pipeline) release() {
	if pl.held != nil {
		pl.free = append(pl.free, pl.held)
		pl.held = nil
	}
}

// push queues it (the queue is a ring: queued items are
// queue[(head+i) % len(queue)] for i < n).
func (pl *pipeline) push(it item) {
	if pl.n == len(pl.queue) {
		q := make([]item, max(2*len(pl.queue), 8))
		for i := range pl.n {
			q[i] = pl.queue[(pl.head+i)%len(pl.queue)]
		}
		pl.queue, pl.head = q, 0
	}
	pl.queue[(pl.head+pl.n)%len(pl.queue)] = it
	pl.n++
}

func (pl *pipeline) queued() int { return pl.n }

// last is the item queued last; ok is false when none is.
func (pl *pipeline) last() (it item, ok bool) {
	if pl.n == 0 {
		return item{}, false
	}
	return pl.queue[(pl.head+pl.n-1)%len(pl.queue)], true
}

// pop takes the next item off the queue.
func (pl *pipeline) pop() (item, bool) {
	if pl.n == 0 {
		return item{}, false
	}
	it := pl.queue[pl.head]
	pl.queue[pl.head] = item{}
	pl.head = (pl.head + 1) % len(pl.queue)
	pl.n--
	return it, true
}

// stop waits for every task in flight; the goroutines stay, parked
// (quit stops them).
func (pl *pipeline) stop() {
	for _, t := range pl.tasks {
		if t.busy {
			<-t.done
			t.busy = false
		}
	}
	if pl.active {
		pl.active = false
		r := pl.sc.r
		if i := slices.Index(r.scans, pl.sc); i >= 0 {
			r.scans = slices.Delete(r.scans, i, i+1)
		}
	}
	clear(pl.queue)
	pl.head, pl.n, pl.held = 0, 0, nil
	pl.free = pl.free[:0]
	if pl.sc != nil {
		pl.free = append(pl.free, pl.tasks[:min(len(pl.tasks), pl.ahead+2)]...)
	}
}

// quit stops the goroutines (after stop: none is running a task). Their
// Reader's Close quits every pipeline's, and so does a scan that drops
// its buffers rather than lend them to the Reader's next scan.
func (pl *pipeline) quit() {
	if pl.running == 0 {
		return
	}
	for range pl.running {
		pl.jobs <- nil
	}
	pl.wg.Wait()
	pl.running = 0
	r := pl.sc.r
	if i := slices.Index(r.pipes, pl); i >= 0 {
		r.pipes = slices.Delete(r.pipes, i, i+1)
	}
}

// planState is where the planner is: the next segment, or the segment
// whose tasks it is queueing.
type planState struct {
	seg  uint64 // the next segment to plan
	kind planKind
	base uint64
	z    *cseg.Segment
	rows []byte
	rs   int
	path string
	i, n int // next row (raw) or data block (compressed), and the end
}

type planKind uint8

const (
	planNone planKind = iota
	planRaw
	planZ
)

// fill queues items up to the pipeline's lookahead. It stops after an
// item Next works through itself (a merge or rows read one by one), and
// goes on once that is done.
func (sc *Scan) fill() error {
	pl, ps, r := &sc.pipe, &sc.plan, sc.r
	for pl.queued() < pl.ahead {
		if it, ok := pl.last(); ok && it.kind != itemTask {
			return nil
		}
		if ps.kind == planNone {
			if ps.seg<<r.shift >= sc.end {
				return nil
			}
			if err := sc.planSeg(); err != nil {
				return err
			}
			continue
		}
		t := pl.task(taskRaw)
		if t == nil {
			return nil
		}
		t.base = ps.base
		switch ps.kind {
		case planRaw:
			t.rows, t.rs, t.path, t.filter = ps.rows, ps.rs, ps.path, sc.late
			t.lo, t.hi = ps.i, min(ps.i+BlockRows, ps.n)
			if ps.i = t.hi; ps.i >= ps.n {
				ps.kind = planNone
			}
		case planZ:
			t.kind, t.z, t.k = taskZ, ps.z, ps.i
			ps.i++
			for ps.i < ps.n && !sc.wanted(ps.z, ps.i) {
				ps.i++
			}
			if ps.i >= ps.n {
				ps.kind = planNone
			}
		}
		pl.push(item{kind: itemTask, t: t})
		pl.submit(t)
	}
	return nil
}

// wanted reports whether data block k of z may hold rows of the window.
func (sc *Scan) wanted(z *cseg.Segment, k int) bool {
	lo, hi := z.DataBlockTs(k)
	return hi >= sc.p.from && lo <= sc.p.hi
}

// mergeMaxSyms is the most symbols of a clustered segment the merge into
// seq order takes on: it holds a decoded data block per symbol. A segment
// of more is read row by row (Get, which holds a block per symbol too,
// of rows).
const mergeMaxSyms = 4096

// planSeg sets the planner on segment ps.seg: tasks over its rows, or an
// item for Next.
func (sc *Scan) planSeg() error {
	pl, ps, r := &sc.pipe, &sc.plan, sc.r
	n := ps.seg
	ps.seg++
	base := n << r.shift
	lo, hi := max(sc.a, base), min(sc.end, base+r.mask+1)
	v, err := r.view(n)
	if err != nil {
		return err
	}
	switch v.kind {
	case viewCompressed:
		z := v.z
		if sc.p.oneSym {
			if z.Version() != cseg.VersionClustered || base+z.Rows() > sc.vis || sc.late {
				pl.push(item{kind: itemLocal, lo: lo, hi: hi})
				return nil
			}
			// The symbol's blocks that reach the window: in seq order
			// (a symbol's rows are, within the segment), read in one go.
			k, end := z.SymSeek(sc.p.sym, sc.p.from)
			e := k
			for e < end {
				if lo, _ := z.DataBlockTs(e); lo > sc.p.hi {
					break
				}
				e++
			}
			if k < e {
				z.WillNeed(k, e)
				*ps = planState{seg: ps.seg, kind: planZ, base: base, z: z, i: k, n: e}
			}
			return nil
		}
		if base+z.Rows() > sc.vis || (z.Version() == cseg.VersionClustered && sc.p.order == OrderSeq && z.SymCount() > mergeMaxSyms) {
			pl.push(item{kind: itemLocal, lo: lo, hi: hi})
			return nil
		}
		if z.Version() == cseg.VersionClustered && sc.p.order == OrderSeq {
			pl.push(item{kind: itemMerge, z: z, base: base})
			return nil
		}
		// The blocks that meet the window, each run of them read ahead
		// in one go.
		k, nb := 0, z.DataBlocks()
		for k < nb && !sc.wanted(z, k) {
			k++
		}
		for j := k; j < nb; {
			for j < nb && !sc.wanted(z, j) {
				j++
			}
			e := j
			for e < nb && sc.wanted(z, e) {
				e++
			}
			z.WillNeed(j, e)
			j = e
		}
		if k < nb {
			*ps = planState{seg: ps.seg, kind: planZ, base: base, z: z, i: k, n: nb}
		}
	case viewDurable, viewPartial:
		// The rows of a durable file are final up to the durable count
		// (all of a sealed segment's); a scan's goroutines read them
		// from its mapping, which the Reader keeps until Close while
		// they may (mapDurable). Rows past the durable count of a
		// segment no live slot holds are Get's to report.
		if v.kind == viewPartial && hi > r.ctl.Durable() {
			pl.push(item{kind: itemLocal, lo: lo, hi: hi})
			return nil
		}
		if sc.p.oneSym {
			if lo < hi {
				pl.push(item{kind: itemLocal, lo: lo, hi: hi})
			}
			return nil
		}
		if lo < hi {
			*ps = planState{seg: ps.seg, kind: planRaw, base: base, rows: v.rows, rs: int(v.rs), path: v.path,
				i: int(lo - base), n: int(hi - base)}
		}
	default:
		if lo < hi {
			pl.push(item{kind: itemLocal, lo: lo, hi: hi})
		}
	}
	return nil
}

// localRows reads rows one at a time, each a checked copy (Iter.NextInto),
// for the segments a task cannot read: a live slot (the writer may
// recycle it under the read), a durable file still being written (its
// mapping changes when it is sealed), a compressed segment the merge does
// not take; and, for a one-symbol scan, every segment but the compressed,
// clustered ones (through the postings, as RangeSym reads them).
type localRows struct {
	active bool
	// filterSym: a one-symbol scan reading every row of the range (the
	// table has late rows), keeping the symbol's.
	filterSym bool
	it        Iter
	row       store.Row
	blk       *Block
}

func (l *localRows) start(sc *Scan, lo, hi uint64) error {
	if rs := sc.r.schema.RowSize; len(l.row) != rs {
		l.row = make(store.Row, rs)
	}
	if l.blk == nil || !sameCols(l.blk, sc.p.cols) {
		l.blk = newBlock(sc.p.cols, BlockRows, sc.p.seqs)
	}
	l.blk.reserve(BlockRows, sc.p.seqs)
	l.active = true
	l.filterSym = false
	if p := &sc.p; p.oneSym {
		if !sc.anyLate {
			return sc.r.rangeSym(p.from, p.to, p.sym, lo, hi, &l.it)
		}
		l.filterSym = true
	}
	return sc.r.RangeSeq(lo, hi, &l.it)
}

// next returns the next block of rows, or nil at the end.
func (l *localRows) next(sc *Scan) (*Block, error) {
	p, b := &sc.p, l.blk
	b.setLen(BlockRows, p.seqs)
	n := 0
	for n < BlockRows && l.it.NextInto(l.row) {
		row := l.row
		if sc.late && !p.inWindow(row.Ts()) || l.filterSym && row.Sym(p.symCol) != p.sym {
			continue
		}
		for j, c := range p.cols {
			v := &b.vecs[j]
			switch c.typ {
			case store.TypeTs, store.TypeI64:
				v.i64[n] = row.I64(c.col)
			case store.TypeF64:
				v.f64[n] = row.F64(c.col)
			case store.TypeSym:
				v.u32[n] = row.Sym(c.col)
			case store.TypeBool:
				v.b[n] = row.Bool(c.col)
			}
		}
		if p.seqs {
			b.seqs[n] = l.it.Seq()
		}
		n++
	}
	if err := l.it.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	b.setLen(n, p.seqs)
	return b, nil
}
