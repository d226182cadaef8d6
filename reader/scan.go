package reader

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// A column scan (Reader.Scan) reads the rows of a time range column by
// column, a block of up to BlockRows rows at a time: the caller names the
// columns it wants and receives, block after block, one vector per column
// (and, if asked, the rows' sequence numbers), instead of one row view at a
// time. It is the whole-table read path (aggregates over every row, bars
// over every symbol, the as-of join): over compressed segments it decodes
// only the named columns' frames and skips the blocks whose time range
// misses the window; over raw segments it gathers the named columns from
// the rows, checking each row's check word; and it can decode on several
// goroutines ahead of the caller, in order.
//
// Rows come from every kind of segment: raw durable files (and their hot
// copies), compressed segments of both format versions, and the segments
// still in live slots or being written, which are read row by row (each a
// checked copy, as Iter.NextInto makes) on the caller's goroutine. A
// segment whose rows are of an earlier layout (columns added since) gives
// the missing value for a column it lacks (NaN, 0, false, store.NoSym),
// as store.Row's getters do.

// BlockRows is the most rows a Scan's Block holds.
const BlockRows = 4096

// ScanOrder is the order of a Scan's rows.
type ScanOrder uint8

const (
	// OrderSeq hands out the rows in ascending sequence number, block
	// after block. For a range without late rows (Scan.Late false) that is
	// Range's order; with late rows, the rows are Range's but in arrival
	// order (Range puts the late ones in ts order).
	OrderSeq ScanOrder = iota
	// OrderAny hands out each block's rows in ascending sequence number,
	// and the blocks segment by segment in segment order, but within a
	// segment compressed in the clustered format (cseg version 2, what
	// compaction writes for a table with a sym column) symbol by symbol:
	// the order the file stores them in, which spares the merge into
	// sequence order and, when Seqs is not asked for, the decoding of the
	// sequence numbers. For sums, counts, extremes, filters: anything that
	// does not depend on the order of rows across symbols.
	OrderAny
)

// ScanSpec is what a Scan reads.
type ScanSpec struct {
	// Cols are the columns to read, as indexes into the table's schema
	// (Reader.Schema().Cols; columns keep their index when others are
	// added). Block's vector i is column Cols[i]'s. None is allowed (a
	// count, or Seqs alone).
	Cols []int
	// From and To bound the rows' ts: From <= ts < To, or ts >= From when
	// To is ToEnd (as Range).
	From, To int64
	// Order is the order of the rows: OrderSeq (the default) or OrderAny.
	Order ScanOrder
	// Seqs asks for each row's sequence number (Block.Seqs). It costs the
	// decoding of a compressed segment's seq column in OrderAny (OrderSeq
	// has it anyway).
	Seqs bool
	// Workers is how many goroutines decode blocks: 1 decodes them in
	// Next, on the caller's goroutine, and starts none; N > 1 starts N
	// goroutines that decode up to a few blocks each ahead of the caller,
	// handed out in order (they stop when the scan ends or is closed). 0
	// is GOMAXPROCS, at most 4. A scan of a few blocks decodes in Next
	// whatever the count.
	Workers int
	// OneSym keeps only the rows of symbol Sym (an id of the table's sym
	// column: Reader.SymbolID), in the same order: the rows RangeSym
	// returns for a range without late rows. A compressed segment then
	// decodes only that symbol's blocks, and a raw one is read through
	// its postings (its hot copy, clustered by symbol, when the writer
	// keeps one). An id the table has not seen is ErrUnknownSymbol, as
	// is OneSym on a table without a sym column.
	OneSym bool
	Sym    uint32
}

// Block is one block of a Scan's rows, column by column: row i's value
// of column ScanSpec.Cols[j] is element i of vector j. The vectors are the
// Scan's: valid until its next Next, Close or repositioning; copy what you
// keep. The typed accessors return nil for a column of another type.
type Block struct {
	n       int
	seqs    []uint64
	hasSeqs bool
	vecs    []vec

	// Input of the sequence-order merge of a clustered compressed
	// segment (one data block: scan_merge.go): every row's offset in the
	// segment, which rows are in the window (empty: all), the symbol.
	offs  []uint32
	keep  []bool
	id    uint32
	ts    []int64 // the ts of a filtered block, when ts is not a column of the scan
	class int     // size class of its buffers (merge input)
}

// vec is one column of a Block; the member of its type is used.
type vec struct {
	typ store.ColType
	i64 []int64 // ts, i64
	f64 []float64
	u32 []uint32 // sym
	b   []bool
}

// Len is the number of rows in the block (at least 1).
func (b *Block) Len() int { return b.n }

// Seqs returns the rows' sequence numbers (ascending), or nil when the
// scan was not asked for them (ScanSpec.Seqs).
func (b *Block) Seqs() []uint64 {
	if !b.hasSeqs {
		return nil
	}
	return b.seqs
}

// I64 returns vector i: a ts or i64 column's values.
func (b *Block) I64(i int) []int64 { return b.vecs[i].i64 }

// F64 returns vector i: an f64 column's values.
func (b *Block) F64(i int) []float64 { return b.vecs[i].f64 }

// Sym returns vector i: a sym column's ids.
func (b *Block) Sym(i int) []uint32 { return b.vecs[i].u32 }

// Bool returns vector i: a bool column's values.
func (b *Block) Bool(i int) []bool { return b.vecs[i].b }

// newBlock returns a block for the columns cols with room for exactly n
// rows (and seqs when seqs is set).
func newBlock(cols []scanCol, n int, seqs bool) *Block {
	b := &Block{vecs: make([]vec, len(cols))}
	for i, c := range cols {
		b.vecs[i].typ = c.typ
	}
	b.grow(n, seqs)
	return b
}

// reserve gives every vector (and seqs, when wanted) capacity for n rows:
// room for BlockRows at least when it grows (the next blocks of a scan
// are full ones).
func (b *Block) reserve(n int, seqs bool) {
	short := seqs && cap(b.seqs) < n
	for i := range b.vecs {
		short = short || b.vecs[i].capacity() < n
	}
	if short {
		b.grow(max(n, BlockRows), seqs)
	}
}

// grow gives every vector (and seqs, when wanted) capacity for n rows.
func (b *Block) grow(n int, seqs bool) {
	for i := range b.vecs {
		v := &b.vecs[i]
		switch v.typ {
		case store.TypeTs, store.TypeI64:
			if cap(v.i64) < n {
				v.i64 = make([]int64, 0, n)
			}
		case store.TypeF64:
			if cap(v.f64) < n {
				v.f64 = make([]float64, 0, n)
			}
		case store.TypeSym:
			if cap(v.u32) < n {
				v.u32 = make([]uint32, 0, n)
			}
		case store.TypeBool:
			if cap(v.b) < n {
				v.b = make([]bool, 0, n)
			}
		}
	}
	if seqs && cap(b.seqs) < n {
		b.seqs = make([]uint64, 0, n)
	}
}

// capacity is the rows v has room for.
func (v *vec) capacity() int {
	switch v.typ {
	case store.TypeTs, store.TypeI64:
		return cap(v.i64)
	case store.TypeF64:
		return cap(v.f64)
	case store.TypeSym:
		return cap(v.u32)
	default:
		return cap(v.b)
	}
}

// setLen sets every vector's length (and seqs', when wanted) to n.
func (b *Block) setLen(n int, seqs bool) {
	b.n = n
	for i := range b.vecs {
		v := &b.vecs[i]
		switch v.typ {
		case store.TypeTs, store.TypeI64:
			v.i64 = v.i64[:n]
		case store.TypeF64:
			v.f64 = v.f64[:n]
		case store.TypeSym:
			v.u32 = v.u32[:n]
		case store.TypeBool:
			v.b = v.b[:n]
		}
	}
	if b.hasSeqs = seqs; seqs {
		b.seqs = b.seqs[:n]
	}
}

// setMissing fills vector i's rows [lo, hi) with its column's missing
// value (a segment written before the column was added).
func (b *Block) setMissing(i, lo, hi int) {
	v := &b.vecs[i]
	switch v.typ {
	case store.TypeTs, store.TypeI64:
		clear(v.i64[lo:hi])
	case store.TypeF64:
		nan := math.NaN()
		for j := lo; j < hi; j++ {
			v.f64[j] = nan
		}
	case store.TypeSym:
		for j := lo; j < hi; j++ {
			v.u32[j] = store.NoSym
		}
	case store.TypeBool:
		clear(v.b[lo:hi])
	}
}

// scanCol is one column of a scan.
type scanCol struct {
	idx int // index in the schema
	typ store.ColType
	col store.Col // its offset in a row (the same in every layout that has it)
}

// scanParams is what a scan's tasks read: set at positioning, not changed
// while the scan's goroutines run.
type scanParams struct {
	cols  []scanCol
	from  int64 // the window's first ts
	hi    int64 // its last (inclusive)
	seqs  bool
	order ScanOrder
	tsVec int // the vector holding ts, or -1
	// One symbol's rows (ScanSpec.OneSym): its id, the sym column's
	// place in a row, and the range's To (RangeSym's bound).
	oneSym bool
	sym    uint32
	symCol store.Col
	to     int64
}

// inWindow reports whether ts is in the scan's window.
func (p *scanParams) inWindow(ts int64) bool { return ts >= p.from && ts <= p.hi }

// Scan is a column scan of a table (Reader.Scan). Use it from the
// Reader's goroutine; reuse one across scans: once its buffers have grown,
// Next allocates nothing. A Scan with decoding goroutines running (see
// ScanSpec.Workers) holds them until it reaches its end, is closed or is
// positioned again, or its Reader is closed: a scan left before its end
// should be closed.
//
// A Scan that ends lends its buffers to its Reader, which keeps those of
// its last few scans for the next ones until it is closed: a few blocks
// of the scan's columns, and after a seq-order scan of a clustered
// segment a decoded data block per symbol (up to 4,096 rows of each
// column read: 32 KiB a column and symbol).
type Scan struct {
	r    *Reader
	p    scanParams
	a    uint64 // first seq of the range
	end  uint64 // seq past the range
	late bool   // late rows in [a, end): filter raw rows by ts
	// anyLate: the table has late rows (anywhere); a one-symbol scan
	// then reads raw rows in seq order and filters them, not through the
	// postings (RangeSym merges late rows in ts order).
	anyLate bool
	// compressed: [a, end) starts below the compaction mark.
	compressed bool
	vis        uint64 // the published rows at positioning
	err        error
	done       bool
	cur        *Block

	plan planState
	// The buffers and goroutines' state, the Reader's when the Scan is
	// not positioned or has ended: the Reader lends them to its next
	// scan, so that scans one after another (a query each, with a Scan
	// of its own) reuse their buffers.
	*scanMem

	// RowInto's: the row size of the schema at positioning, and the
	// vector of each of its columns (empty: not every column is read).
	rowSize int
	rowVec  []int
}

// scanMem is what a scan reuses from one run to the next.
type scanMem struct {
	pipe  pipeline
	m     merger
	local localRows
}

// takeScanMem lends a scan buffers: ones a scan gave back, or new ones.
func (r *Reader) takeScanMem() *scanMem {
	if n := len(r.scanMem); n > 0 {
		m := r.scanMem[n-1]
		r.scanMem = r.scanMem[:n-1]
		return m
	}
	return new(scanMem)
}

// Scan positions sc over the rows of the table with spec.From <= ts <
// spec.To (ts >= spec.From with ToEnd), the rows Range returns, published
// when it is called, and reads spec.Cols of them. Next hands out the
// blocks.
func (r *Reader) Scan(spec ScanSpec, sc *Scan) error {
	sc.stop()
	if sc.r != r {
		sc.giveBack() // another Reader's
	}
	sc.r, sc.err, sc.done, sc.cur = r, nil, false, nil
	if r.closed {
		sc.done = true
		return ErrClosed
	}
	if sc.scanMem == nil {
		sc.scanMem = r.takeScanMem()
	}
	s := r.schema
	for _, c := range spec.Cols {
		if c < 0 || c >= len(s.Cols) {
			if r.reloadSchema() {
				s = r.schema
			}
			if c < 0 || c >= len(s.Cols) {
				sc.done = true
				return fmt.Errorf("reader: scan of column %d: the table has %d", c, len(s.Cols))
			}
		}
	}
	p := &sc.p
	p.cols = p.cols[:0]
	p.tsVec = -1
	for i, c := range spec.Cols {
		p.cols = append(p.cols, scanCol{idx: c, typ: s.Cols[c].Type, col: s.ColAt(c)})
		if c == 0 && p.tsVec < 0 {
			p.tsVec = i
		}
	}
	p.from, p.hi, p.seqs, p.order = spec.From, lastTs(spec.To), spec.Seqs, spec.Order
	p.oneSym, p.sym, p.to = spec.OneSym, spec.Sym, spec.To
	if spec.OneSym {
		if s.SymCol < 0 {
			sc.done = true
			return fmt.Errorf("%w: scan of symbol %d: the table has no sym column", ErrUnknownSymbol, spec.Sym)
		}
		p.symCol = s.ColAt(s.SymCol)
		if int(spec.Sym) >= r.syms.Len() {
			if err := r.refreshSymbols(); err != nil {
				sc.done = true
				return err
			}
			if int(spec.Sym) >= r.syms.Len() {
				sc.done = true
				return fmt.Errorf("%w: id %d", ErrUnknownSymbol, spec.Sym)
			}
		}
	}
	sc.rowSize, sc.rowVec = s.RowSize, sc.rowVec[:0]
	if spec.Seqs {
		for c := range s.Cols {
			i := slices.Index(spec.Cols, c)
			if i < 0 {
				sc.rowVec = sc.rowVec[:0]
				break
			}
			sc.rowVec = append(sc.rowVec, i)
		}
	}
	snap, err := r.snapshot()
	if err != nil {
		sc.done = true
		return err
	}
	if err := r.lateFor(snap.Late); err != nil {
		sc.done = true
		return err
	}
	var a, b uint64
	if spec.OneSym && snap.Late == 0 {
		// The seq bounds from the time index alone, as RangeSym's: a
		// seek's row probes in a clustered segment each decode a data
		// block, and one symbol's rows are filtered by ts anyway (a
		// compressed block's by the scan, the others' by their iterator).
		a, b, err = r.coarseBounds(spec.From, spec.To, snap)
	} else {
		a, b, err = r.bounds(spec.From, spec.To, snap)
	}
	if err != nil {
		sc.done = true
		return err
	}
	late := false
	if snap.Late > 0 && p.from <= p.hi {
		// A late row with ts < To has its time key below To + the
		// late window: the rows from b up to there may hold some.
		b2 := snap.Visible
		if t := saturatingAdd(spec.To, r.ctl.LateWindow()); spec.To != ToEnd && t != math.MaxInt64 {
			if b2, err = r.seek(t, snap.FirstSeq, snap.Visible, snap.Late); err != nil {
				sc.done = true
				return err
			}
		}
		if b2 = max(b2, b); r.hasLate(a, b2, snap.Late) {
			late, b = true, b2
		}
	}
	if p.from > p.hi {
		b = a
	}
	sc.a, sc.end, sc.late, sc.vis, sc.anyLate = a, b, late, snap.Visible, snap.Late > 0
	sc.compressed = a < b && a>>r.shift < r.ctl.CmpSegs()
	if sc.compressed {
		r.prefetchTables(a>>r.shift, (b-1)>>r.shift+1)
	}
	workers := spec.Workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	if b-a < 4*BlockRows {
		workers = 1 // a few blocks: not worth a goroutine
	}
	sc.pipe.reset(sc, workers)
	sc.plan = planState{seg: a >> r.shift}
	sc.m.active, sc.local.active = false, false
	return nil
}

// Compressed reports whether some of the scan's rows lie in compressed
// segments (compacted: decoded, a few ns a row and column, rather than
// read in place). A caller with a row-at-a-time path of its own that is
// as fast over raw rows may keep it for a range without any.
func (sc *Scan) Compressed() bool { return sc.compressed }

// Late reports whether the scan's range holds late rows (stored behind
// a newer row: writer.Options.LateWindow). Its rows are still Range's,
// but in OrderSeq they come in arrival order, where Range puts the late
// ones in ts order.
func (sc *Scan) Late() bool { return sc.late }

// Next advances to the next block of rows; false at the end or on error
// (see Err). A block has at least one row.
func (sc *Scan) Next() bool {
	if sc.done {
		return false
	}
	if sc.r.closed {
		return sc.fail(ErrClosed)
	}
	sc.cur = nil
	sc.pipe.release()
	for {
		if sc.m.active {
			b, err := sc.m.next()
			if err != nil {
				return sc.fail(err)
			}
			if b != nil {
				sc.cur = b
				return true
			}
			sc.m.finish()
		}
		if sc.local.active {
			b, err := sc.local.next(sc)
			if err != nil {
				return sc.fail(err)
			}
			if b != nil {
				sc.cur = b
				return true
			}
			sc.local.active = false
		}
		if err := sc.fill(); err != nil {
			return sc.fail(err)
		}
		it, ok := sc.pipe.pop()
		if !ok {
			sc.done = true
			sc.giveBack()
			return false
		}
		switch it.kind {
		case itemTask:
			b, err := sc.pipe.take(it.t)
			if err != nil {
				return sc.fail(err)
			}
			if b.n == 0 {
				sc.pipe.freeTask(it.t)
				continue
			}
			sc.pipe.held = it.t
			sc.cur = b
			return true
		case itemMerge:
			if err := sc.m.start(sc, it); err != nil {
				return sc.fail(err)
			}
		case itemLocal:
			if err := sc.local.start(sc, it.lo, it.hi); err != nil {
				return sc.fail(err)
			}
		}
	}
}

// fail ends the scan with err.
func (sc *Scan) fail(err error) bool {
	sc.err, sc.done, sc.cur = err, true, nil
	sc.giveBack()
	return false
}

// Block is the current block: valid until the next Next, Close or
// repositioning.
func (sc *Scan) Block() *Block { return sc.cur }

// RowInto writes row i of the current block into dst as the table stores
// it: every column at its offset, padding zero, the check word of its
// sequence number; for a caller that hands whole rows on (the as-of
// join). The scan must read every column of the schema it was positioned
// with (in any order) and the seqs, and dst must be that schema's
// RowSize; a row of a segment of an earlier layout comes in this one,
// the missing value in each column it lacks (as Reader.CopyRow).
func (sc *Scan) RowInto(i int, dst store.Row) error {
	b := sc.cur
	if b == nil || len(sc.rowVec) == 0 || len(dst) != sc.rowSize || i < 0 || i >= b.n {
		return fmt.Errorf("reader: RowInto of row %d into %d bytes: needs a block, every column of the %d-byte rows and the seqs", i, len(dst), sc.rowSize)
	}
	clear(dst)
	for _, vi := range sc.rowVec {
		c, v := &sc.p.cols[vi], &b.vecs[vi]
		switch c.typ {
		case store.TypeTs, store.TypeI64:
			le.PutUint64(dst[c.col.Off:], uint64(v.i64[i]))
		case store.TypeF64:
			le.PutUint64(dst[c.col.Off:], math.Float64bits(v.f64[i]))
		case store.TypeSym:
			le.PutUint32(dst[c.col.Off:], v.u32[i])
		case store.TypeBool:
			if v.b[i] {
				dst[c.col.Off] = 1
			}
		}
	}
	format.Seal(b.seqs[i], dst)
	return nil
}

// Err is the error that ended the scan, if any.
func (sc *Scan) Err() error { return sc.err }

// Close ends the scan early: it waits for the blocks its goroutines are
// decoding, and lends them, parked, with its buffers, to the Reader's
// next scan (the Reader's Close stops them); Next then returns false. Closing a scan that
// ended is a no-op, and the Reader's Close closes its scans.
func (sc *Scan) Close() error {
	sc.done, sc.cur = true, nil
	sc.giveBack()
	return nil
}

// stop waits for every block in flight and stops the goroutines; the
// Scan keeps its buffers.
func (sc *Scan) stop() {
	if sc.scanMem == nil {
		return
	}
	sc.pipe.stop()
	sc.m.reset()
	sc.local.active = false
}

// giveBack stops the scan and lends its buffers to its Reader's next
// scan.
func (sc *Scan) giveBack() {
	sc.stop()
	if m := sc.scanMem; m != nil {
		if r := sc.r; r != nil && !r.closed && len(r.scanMem) < 4 {
			r.scanMem = append(r.scanMem, m)
		} else {
			m.pipe.quit()
		}
		sc.scanMem = nil
	}
}
