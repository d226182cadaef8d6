package reader

import (
	"fmt"
	"math"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/store"
)

// SeekTime returns the sequence number of the first row with ts >= t among the
// published rows (Len() if there is none). O(log n): a binary search of
// the sparse time index, then of at most one stride of rows.
//
// With late rows (writer.Options.LateWindow) it is the first row at or
// after which every row arrived with ts >= t or late, behind a newer one
// with ts >= t: every row before it has ts < t, and a late row after it
// may have ts < t too (Range and RangeSym return them in ts order).
func (r *Reader) SeekTime(t int64) (uint64, error) {
	snap, err := r.snapshot()
	if err != nil {
		return 0, err
	}
	r.visible = snap.Visible
	if err := r.lateFor(snap.Late); err != nil {
		return 0, err
	}
	return r.seek(t, snap.FirstSeq, snap.Visible, snap.Late)
}

// seek is the first row in [first, vis) whose time key (keyAt) is >= t.
func (r *Reader) seek(t int64, first, vis, nlate uint64) (uint64, error) {
	if vis <= first {
		return vis, nil
	}
	a, b, err := r.coarse(t, first, vis)
	if err != nil {
		return 0, err
	}
	lo := r.tsEntry(t, first, vis)
	for a < b {
		m := a + (b-a)/2
		ts, err := r.tsOf(m)
		if err != nil {
			return 0, err
		}
		if r.keyAt(m, ts, nlate) < t {
			a = m + 1
		} else {
			b = m
		}
	}
	// The time index is not checksummed; it only steered the search. The
	// rows around the answer prove it: if they disagree, the index entry
	// the search trusted last is damaged (entry lo said ts >= t, or entry
	// lo-1 said ts < t, for its row).
	if a > first {
		ts, err := r.tsOf(a - 1)
		if err != nil {
			return 0, err
		}
		if k := r.keyAt(a-1, ts, nlate); k >= t {
			return 0, r.badTimeEntry(lo-1, k)
		}
	}
	if a < vis {
		ts, err := r.tsOf(a)
		if err != nil {
			return 0, err
		}
		if k := r.keyAt(a, ts, nlate); k < t {
			return 0, r.badTimeEntry(lo, k)
		}
	}
	return a, nil
}

// tsOf is row seq's ts. Read from a live slot, it is taken only if the
// slot was not recycled meanwhile (the writer moves the generation on
// before it writes another segment's rows there); else it is read again,
// from where the segment is now (its durable file).
func (r *Reader) tsOf(seq uint64) (int64, error) {
	for {
		row, err := r.Get(seq)
		if err != nil {
			return 0, err
		}
		if ts := row.Ts(); !r.recycled(seq) {
			return ts, nil
		}
	}
}

// coarse returns the bounds [a, b] of the answer of seek(t) from the time
// index alone (at most one stride of rows apart), or vis, vis.
func (r *Reader) coarse(t int64, first, vis uint64) (a, b uint64, err error) {
	if vis <= first {
		return vis, vis, nil
	}
	// Index entries 0..kmax cover rows k<<sshift below vis.
	kmax := (vis - 1) >> r.sshift
	if !r.ts.Covers(kmax + 1) {
		return 0, 0, format.Corruptf(r.ts.Path(), int64(format.BlockSize+8*(kmax+1)), "time index shorter than the %d published rows", vis)
	}
	lo := r.tsEntry(t, first, vis)
	// The answer lies in ((lo-1)<<sshift, lo<<sshift], within [first, vis].
	a, b = first, vis
	if lo > 0 {
		a = max(a, (lo-1)<<r.sshift+1)
	}
	if lo <= kmax {
		b = min(b, lo<<r.sshift)
	}
	return a, b, nil
}

// tsEntry is the first time index entry k with ts >= t, searching only
// entries at or after the first live row's stride (kmax+1 if none).
//
// While the range is wide it probes where t falls between the range's
// end entries (interpolation): ticks come close to evenly spaced in time,
// so the probe lands near the answer, and a seek touches two or three
// pages of the index where bisection touches one per halving until the
// range fits a page (each a page fault when the index was not mapped yet:
// ~40 µs here). A probe that does not halve the range is followed by a
// bisection step, so uneven times cost at most twice bisection's probes.
func (r *Reader) tsEntry(t int64, first, vis uint64) uint64 {
	kmax := (vis - 1) >> r.sshift
	lo, hi := first>>r.sshift, kmax+1
	for hi-lo > interpMin {
		a, b := r.ts.At(lo), r.ts.At(hi-1)
		if t <= a {
			return lo
		}
		if t > b {
			return hi
		}
		// a < t <= b: the answer is in [lo+1, hi-1].
		n := hi - lo
		f := (float64(t) - float64(a)) / (float64(b) - float64(a))
		if !(f >= 0 && f <= 1) { // rounding of huge values, or NaN
			f = 0.5
		}
		m := min(lo+1+uint64(f*float64(n-2)), hi-1)
		if r.ts.At(m) < t {
			lo = m + 1
		} else {
			hi = m
		}
		if hi-lo > n/2 {
			m = lo + (hi-lo)/2
			if r.ts.At(m) < t {
				lo = m + 1
			} else {
				hi = m
			}
		}
	}
	for lo < hi {
		m := lo + (hi-lo)/2
		if r.ts.At(m) < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// interpMin is the range of time index entries below which tsEntry
// bisects: 512 entries are one 4 KiB page.
const interpMin = 512

func (r *Reader) badTimeEntry(k uint64, key int64) error {
	return format.Corruptf(r.ts.Path(), int64(format.BlockSize+8*k), "time index entry %d is %d, its row %d has time key %d",
		k, r.ts.At(k), k<<r.sshift, key)
}

// Iter walks rows in time order (Range, RangeSym: by ts, then seq; late
// rows merged in) or sequence order (RangeSeq). Reuse one Iter across
// queries: after its buffers have grown, Next allocates nothing. Row is a
// view into the mapping (see Reader for how long it stays valid).
type Iter struct {
	r      *Reader
	seq    uint64 // next row (all-rows mode) or next postings position
	end    uint64 // first seq past the range
	sym    bool
	id     uint32
	chunks []uint64
	npos   uint64 // postings positions known
	nextCk uint64
	row    store.Row
	cur    uint64
	err    error
	// All-rows mode: rows [runSeq, runEnd) are final (see finalRun) and lie
	// in run, rs bytes each, so Next hands them out without a Get.
	run    []byte
	runSeq uint64
	runEnd uint64
	rs     uint64
	// Symbol mode, segment by segment: the window [from, to) (hi is its
	// last ts: to-1, or MaxInt64 for a range to the end), its first
	// seq a and end (bounds from the time index until exact, see
	// exactBounds), the snapshot's first row and published count, the
	// segment walked and the first seq past it (or past the range) when
	// read through the postings, whether the postings are set up, and
	// done.
	from, to, hi          int64
	a, first, vis         uint64
	symSeg, segEnd        uint64
	exact, postInit, done bool
	seqLo, seqHi          uint64 // the seqs it may return (rangeSym)
	// Symbol mode in a version 2 compressed segment (z non-nil): its data
	// blocks [zk, zend) are still to decode; the current one's rows and
	// seqs are in zrows and zseqs (the iterator's own buffers), from zi;
	// zpast: it has a row past the window after them.
	z        *cseg.Segment
	zk, zend int
	zi       int
	zpast    bool
	zrows    []byte
	zseqs    []uint64
	// Symbol mode in a clustered hot copy (c non-nil, clu.go): clustered
	// positions [cp, cend) of the symbol's run are still to read; row
	// index i of the segment is seq cbase+i. The index words of positions
	// [ilo, ihi) are in cidx, the rows of [cbuf, cbufEnd) in crows (the
	// iterator's own buffers); cprev is the last row index read (-1:
	// none yet).
	c               *cluView
	cp, cend, cbase uint64
	ilo, ihi        uint64
	cbuf, cbufEnd   uint64
	cprev           int64
	cserial         uint64 // the copy's open (cluView.serial): closed since if it differs
	crs             uint64 // the copy's row size (crows' stride)
	// resume is the first seq not yet read when a copy closed under the
	// iterator (the rest of its segment is read through the postings).
	resume      uint64
	cidx, crows []byte
	// lt merges the late rows in (late.go); lt.n is the published late
	// rows at positioning (0: none, no merge).
	lt lateIter
}

// reset positions it afresh, keeping its buffers.
func (it *Iter) reset(x Iter) {
	x.chunks, x.zrows, x.zseqs, x.cidx, x.crows = it.chunks[:0], it.zrows, it.zseqs[:0], it.cidx, it.crows
	x.lt = lateIter{heap: it.lt.heap[:0], row: it.lt.row, irow: it.lt.irow}
	*it = x
}

// ToEnd as a range's to (Range, RangeSym) means to the end of the table:
// the rows with ts >= from, those stamped math.MaxInt64 included (a range
// [from, to) cannot hold them otherwise).
const ToEnd = math.MaxInt64

// lastTs is the last ts of a range that ends before to: to-1, or every ts
// for ToEnd.
func lastTs(to int64) int64 {
	if to == ToEnd {
		return math.MaxInt64
	}
	return to - 1
}

// Range positions it over rows with from <= ts < to (all symbols), or
// with ts >= from when to is ToEnd.
func (r *Reader) Range(from, to int64, it *Iter) error {
	snap, err := r.snapshot()
	if err != nil {
		return err
	}
	if err := r.lateFor(snap.Late); err != nil {
		return err
	}
	a, b, err := r.bounds(from, to, snap)
	if err != nil {
		return err
	}
	it.reset(Iter{r: r, seq: a, end: b, from: from, to: to, hi: lastTs(to)})
	return it.initLate(from, to, a, snap)
}

// RangeSeq positions it over rows [a, b) by sequence number: arrival
// order, late rows where they arrived. Its error is ErrClosed, like
// Range's (a row out of reach is Next's: see Err).
func (r *Reader) RangeSeq(a, b uint64, it *Iter) error {
	if r.closed {
		return ErrClosed
	}
	it.reset(Iter{r: r, seq: a, end: b})
	return nil
}

// RangeSym positions it over the rows of symbol id with from <= ts < to
// (ts >= from when to is ToEnd).
// Its cost is proportional to that symbol's rows in the range (plus one
// walk of the symbol's postings directory), not to the table's rows.
//
// In a segment compacted into format version 2 (clustered by symbol) it
// does not use the postings: it reads the segment's directory and decodes
// only the symbol's blocks whose ts range meets the window, into the
// iterator's own buffers. Such a row stays valid until the iterator
// decodes its next block (or is repositioned); copy what you keep.
//
// In a hot segment (sealed, durable, still in shared memory) that has a
// clustered copy (docs/FORMAT.md §13) it does not use the postings
// either: it reads the symbol's rows of the window from the copy, where
// they are contiguous, into the iterator's own buffers, 2,048 rows at a
// time, each checked against its seq. Such a row stays valid until the
// iterator reads its next 2,048 rows (or is repositioned).
func (r *Reader) RangeSym(from, to int64, id uint32, it *Iter) error {
	return r.rangeSym(from, to, id, 0, math.MaxUint64, it)
}

// rangeSym is RangeSym over the rows with seq in [lo, hi) alone.
func (r *Reader) rangeSym(from, to int64, id uint32, lo, hi uint64, it *Iter) error {
	if r.closed {
		return ErrClosed
	}
	if r.symOff < 0 {
		return fmt.Errorf("reader: table has no sym column")
	}
	if int(id) >= r.syms.Len() {
		if err := r.refreshSymbols(); err != nil {
			return err
		}
		if int(id) >= r.syms.Len() {
			return fmt.Errorf("%w: id %d", ErrUnknownSymbol, id)
		}
	}
	snap, err := r.snapshot()
	if err != nil {
		return err
	}
	if err := r.lateFor(snap.Late); err != nil {
		return err
	}
	// The seq bounds from the time index alone: a seek's row probes in a
	// clustered segment each decode a data block, and its rows are
	// filtered by ts, so the exact bounds are found (exactBounds) only
	// when a segment is read through the postings.
	a, b, err := r.coarseBounds(from, to, snap)
	if err != nil {
		return err
	}
	r.sweepCopies()
	a = max(a, lo)
	if e := min(max(a, b), hi); a < e {
		r.prefetchTables(a>>r.shift, (e-1)>>r.shift+1)
	}
	it.reset(Iter{r: r, end: min(max(a, b), hi), sym: true, id: id, nextCk: snap.NextChunk,
		from: from, to: to, hi: lastTs(to), a: a, first: snap.FirstSeq, vis: snap.Visible, seqLo: lo, seqHi: hi})
	if err := it.initLate(from, to, a, snap); err != nil {
		return err
	}
	return it.enterSeg(a >> r.shift)
}

// exactBounds replaces the iterator's seq bounds from the time index by
// the exact ones (a seek each), once.
func (it *Iter) exactBounds() error {
	if it.exact {
		return nil
	}
	a, err := it.r.seek(it.from, it.first, it.vis, it.lt.n)
	if err != nil {
		return err
	}
	b, err := it.r.seek(it.to, it.first, it.vis, it.lt.n)
	if err != nil {
		return err
	}
	if it.to == ToEnd {
		b = it.vis
	}
	a = max(a, it.seqLo)
	it.a, it.end, it.exact = a, min(max(a, b), it.seqHi), true
	return nil
}

// enterSeg moves a symbol iterator to segment n, or the first one after it
// that may hold rows of the range: a version 2 compressed segment is read
// through its directory (the symbol's blocks from the first that reaches
// the window's start), any other through the postings, set up at the
// first segment that needs them.
func (it *Iter) enterSeg(n uint64) error {
	r := it.r
	for {
		lo := max(it.a, n<<r.shift, it.resume)
		if lo >= it.end {
			it.done = true
			return nil
		}
		it.symSeg = n
		it.z, it.c = nil, nil
		if n < r.ctl.CmpSegs() {
			v, err := r.view(n)
			if err != nil {
				return err
			}
			if v.kind == viewDurable && n<<r.shift < r.ctl.PostFloor() {
				// Mapped raw before it was compacted, and its postings are
				// gone since: read it compressed from now on.
				if v, err = r.remapCompressed(n); err != nil {
					return err
				}
			}
			if v.kind == viewCompressed && v.z.Version() == cseg.VersionClustered {
				k, end := v.z.SymSeek(it.id, it.from)
				if k == end {
					n++ // no row of the symbol in the window here
					continue
				}
				// The blocks that reach the window, read in one go.
				last := k
				for last < end {
					if lo, _ := v.z.DataBlockTs(last); lo > it.hi {
						break
					}
					last++
				}
				v.z.WillNeed(k, last)
				it.z, it.zk, it.zend, it.zi, it.zseqs, it.zpast = v.z, k, end, 0, it.zseqs[:0], false
				return nil
			}
		}
		// A sealed segment, not compressed: through its clustered hot
		// copy, if the writer made one (the symbol's rows in one run).
		if n >= r.ctl.CmpSegs() && n < r.ctl.DurableSegs() {
			c, err := r.cluFor(n)
			if err != nil {
				return err
			}
			if c != nil {
				ok, err := it.enterClu(c, n, lo, min(it.end, (n+1)<<r.shift))
				if err != nil {
					return err
				}
				if !ok {
					n++
					continue
				}
				return nil
			}
		}
		if err := it.exactBounds(); err != nil {
			return err
		}
		if lo = max(it.a, n<<r.shift, it.resume); lo >= it.end {
			it.done = true
			return nil
		}
		it.segEnd = min(it.end, (n+1)<<r.shift)
		if !it.postInit {
			if err := it.initPost(); err != nil {
				return err
			}
		}
		// First position at or after the current one whose seq >= lo:
		// the current one when it is (the walk went past the previous
		// segment's end; Next checks each entry against the one before),
		// else a binary search (the walk starts, or comes back from
		// segments read through their directory).
		if it.seq < it.npos && it.at(it.seq) >= lo {
			return nil
		}
		p, hi := it.seq, it.npos
		for p < hi {
			m := p + (hi-p)/2
			if it.at(m) < lo {
				p = m + 1
			} else {
				hi = m
			}
		}
		if n<<r.shift < r.ctl.PostFloor() {
			// The segment was compacted and its postings dropped while
			// the search read them: a dropped entry reads as row 0, so
			// the search went past them, and the walk would skip the
			// segment's rows. (The writer raises the floor before it
			// punches the entries out: a floor still at or below the
			// segment here means the search read them all.) Again, now
			// through the compressed segment's directory.
			continue
		}
		it.seq = p
		return nil
	}
}

// initPost collects the symbol's postings chunks and counts its published
// positions.
func (it *Iter) initPost() error {
	r, id := it.r, it.id
	chunks, err := r.post.DataChunks(it.chunks[:0], r.syms.Dir(id), it.nextCk)
	if err != nil {
		return err
	}
	if int(id) >= len(r.symRead) {
		r.symRead = append(r.symRead, make([]bool, int(id)+1-len(r.symRead))...)
	}
	if !r.symRead[id] {
		// The first query of this symbol: its chunks lie all over the
		// file, and the binary search below reads one per step; on a cold
		// table that is a random read per step unless they are already
		// on their way. (Up to symReadAhead chunks: past that the
		// read-ahead would cost more than the search it saves.)
		if len(chunks) <= symReadAhead {
			r.post.WillNeed(chunks)
		}
		r.symRead[id] = true
	}
	it.chunks, it.postInit, it.seq = chunks, true, 0
	// Positions: every block but the last is full; count the last one's
	// entries below the published count.
	if len(chunks) > 0 {
		j := uint64(len(chunks) - 1)
		it.npos = r.post.BlockStart(j) + uint64(chunkFill(r.post, chunks[j], j, it.vis))
	}
	return nil
}

// symReadAhead is the most postings chunks (16 MiB) RangeSym asks the
// kernel to read ahead for a symbol's first query.
const symReadAhead = 4096

// entryOff is the file offset of postings position p.
func (it *Iter) entryOff(p uint64) int64 {
	j, k := it.r.post.Locate(p)
	return it.r.post.EntryOff(it.chunks[j], k)
}

// entry is the entry at postings position p: seq+1, or 0 for an entry
// dropped after its rows were compacted (its chunk punched out, below the
// postings floor).
func (it *Iter) entry(p uint64) uint64 {
	j, k := it.r.post.Locate(p)
	return it.r.post.Entry(it.chunks[j], k)
}

// at is the seq at postings position p. A dropped entry (0) reads as row
// 0, before every row a search looks for; Next never takes one.
func (it *Iter) at(p uint64) uint64 {
	if e := it.entry(p); e != 0 {
		return e - 1
	}
	return 0
}

// closedEarly reports whether position p, whose entry equals the one
// before it, is one of the repeats that close a version 2 or 3 block
// early: its block's last entry is the same (entries never decrease, so
// every one between is too). Anything else equal is damage.
func (it *Iter) closedEarly(p, e uint64) bool {
	j, k := it.r.post.Locate(p)
	return it.r.post.ClosedEarly(j, it.chunks[j], k, e)
}

// coarseBounds is bounds from the time index alone (coarse): seqs
// [a, b) hold every row of [from, to), and some rows around them.
func (r *Reader) coarseBounds(from, to int64, snap index.Snap) (a, b uint64, err error) {
	if a, _, err = r.coarse(from, snap.FirstSeq, snap.Visible); err != nil {
		return 0, 0, err
	}
	if _, b, err = r.coarse(to, snap.FirstSeq, snap.Visible); err != nil {
		return 0, 0, err
	}
	if to == ToEnd {
		b = snap.Visible
	}
	return a, max(a, b), nil
}

func (r *Reader) bounds(from, to int64, snap index.Snap) (uint64, uint64, error) {
	a, err := r.seek(from, snap.FirstSeq, snap.Visible, snap.Late)
	if err != nil {
		return 0, 0, err
	}
	b, err := r.seek(to, snap.FirstSeq, snap.Visible, snap.Late)
	if err != nil {
		return 0, 0, err
	}
	if to == ToEnd {
		b = snap.Visible
	}
	return a, max(a, b), nil
}

// Next advances to the next row; false at the end or on error (see Err).
func (it *Iter) Next() bool {
	// Fast path as in nextInner, with no call in between: a range
	// without late rows (lt.n 0) is the walk itself.
	if s := it.seq; s < it.runEnd && it.lt.n == 0 && !it.r.closed {
		off := (s - it.runSeq) * it.rs
		it.row, it.cur, it.seq = it.run[off:off+it.rs], s, s+1
		return true
	}
	if it.lt.n != 0 {
		return it.nextLate()
	}
	return it.next()
}

// nextInner is Next without the late rows' merge: the walk in seq order.
func (it *Iter) nextInner() bool {
	// Fast path: the next row of a run of final rows (runEnd is 0 outside
	// all-rows mode, and never past end).
	if s := it.seq; s < it.runEnd && !it.r.closed {
		off := (s - it.runSeq) * it.rs
		it.row, it.cur, it.seq = it.run[off:off+it.rs], s, s+1
		return true
	}
	return it.next()
}

func (it *Iter) next() bool {
	if it.err != nil {
		return false
	}
	var seq uint64
	if it.sym {
		for {
			if it.done {
				return false
			}
			if it.c != nil {
				if it.nextC() {
					return true
				}
				if it.err != nil {
					return false
				}
				continue
			}
			if it.z != nil {
				if it.nextZ() {
					return true
				}
				if it.err != nil {
					return false
				}
				continue
			}
			if it.seq >= it.npos {
				return false
			}
			e := it.entry(it.seq)
			if e == 0 {
				if it.reenter() {
					continue
				}
				if it.err != nil {
					return false // reenter's
				}
				it.err = fmt.Errorf("%w: symbol %d, postings entry %d (at %s offset %d)", ErrCompacted, it.id, it.seq, it.r.post.Path(), it.entryOff(it.seq))
				return false
			}
			seq = e - 1
			// Entries only go up: one that does not is damage (a flipped
			// word would otherwise skip rows or end the range early
			// unnoticed), but for the repeats that end a chunk closed
			// early, which are skipped.
			if it.seq > 0 {
				if prev := it.at(it.seq - 1); seq <= prev {
					if seq == prev && it.closedEarly(it.seq, e) {
						j, _ := it.r.post.Locate(it.seq)
						it.seq = it.r.post.BlockStart(j + 1)
						continue
					}
					// The block punched out since e was read (its last
					// entry reads 0): the segment's postings are being
					// dropped, not damaged.
					if it.reenter() {
						continue
					}
					if it.err != nil {
						return false
					}
					it.err = format.Corruptf(it.r.post.Path(), it.entryOff(it.seq), "postings of symbol %d: entry %d names row %d, not after row %d", it.id, it.seq, seq, prev)
					return false
				}
			}
			if seq < it.segEnd {
				break
			}
			// Past this segment: the next one may be read otherwise.
			if err := it.enterSeg(it.symSeg + 1); err != nil {
				it.err = err
				return false
			}
		}
	} else {
		if it.seq >= it.end {
			return false
		}
		seq = it.seq
	}
	row, err := it.r.Get(seq)
	if err != nil {
		it.err = err
		return false
	}
	if !it.sym {
		it.run, it.runSeq, it.runEnd, it.rs = it.r.finalRun(seq, it.end)
	}
	for it.sym {
		// The postings and the row must agree: a mismatch is damage,
		// unless the row was read from a live slot that the writer
		// recycled after Get checked it (the segment is durable by then):
		// read again, from where the segment is now.
		id := le.Uint32(row[it.r.symOff:])
		if id == it.id {
			break
		}
		if !it.r.recycled(seq) {
			it.err = format.Corruptf(it.r.post.Path(), it.entryOff(it.seq), "postings of symbol %d name row %d, which has symbol %d", it.id, seq, id)
			return false
		}
		if row, err = it.r.Get(seq); err != nil {
			it.err = err
			return false
		}
	}
	it.seq++
	it.row, it.cur = row, seq
	return true
}

// nextZ is next for a symbol iterator in a version 2 compressed segment:
// the next row of the symbol's current block, decoding the next block (or
// moving to the next segment) when it is used up. False with it.err nil
// means: continue with whatever segment enterSeg chose.
func (it *Iter) nextZ() bool {
	for {
		if i := it.zi; i < len(it.zseqs) {
			rs := uint64(it.z.RowSize())
			it.row, it.cur, it.zi = it.zrows[uint64(i)*rs:uint64(i+1)*rs], it.zseqs[i], i+1
			return true
		}
		if it.zpast {
			it.done = true
			return false
		}
		if it.r.closed {
			it.err = ErrClosed
			return false
		}
		if it.zk >= it.zend {
			if err := it.enterSeg(it.symSeg + 1); err != nil {
				it.err = err
			}
			return false
		}
		// Only the block's rows in the window: from <= ts <= hi, up to
		// its first row past hi, where the window ends (zpast).
		rows, seqs, past, err := it.z.SymBlockIn(it.zk, it.from, it.hi, it.zrows, it.zseqs)
		it.zrows, it.zseqs, it.zpast = rows, seqs, past
		if err != nil {
			it.err = err
			return false
		}
		it.zk++
		it.zi = 0
		for it.zi < len(it.zseqs) && it.zseqs[it.zi] < it.resume {
			it.zi++ // returned through the postings before the segment was compacted (reenter)
		}
	}
}

// reenter moves a symbol iterator that found the postings entries ahead
// of it dropped (its segment was compacted while it read it through the
// postings, and a checkpointer pass has gone by) onto the segment's
// compressed file, past the rows it has returned: the segment's
// directory holds the same rows. It reports whether it did; not for a
// range that merges late rows (its walk's position is the merge's), nor
// for a segment not compacted (an entry zeroed otherwise is damage).
func (it *Iter) reenter() bool {
	r, n := it.r, it.symSeg
	if it.lt.n != 0 || n >= r.ctl.CmpSegs() || n<<r.shift >= r.ctl.PostFloor() {
		return false
	}
	if it.row != nil && it.cur >= n<<r.shift {
		it.resume = max(it.resume, it.cur+1)
	}
	if err := it.enterSeg(n); err != nil {
		it.err = err
		return false
	}
	// On the compressed file, or past the segment: not back on the same
	// dropped entries.
	return it.z != nil || it.done || it.symSeg != n
}

// finalRun returns the rows after seq, up to end, that are final: the
// rest of the rows that start in seq's 4 KiB block, when seq's segment is
// sealed and read from its durable file and that block has passed its
// check (Get has just validated it or found it validated). Neither those
// bytes nor their mapping change until Close, so a scan can skip Get for
// them. Rows of a live slot are left to Get, which checks the slot's
// generation for each one, and so are rows of an unsealed segment's
// durable file, whose mapping Get replaces when the segment is sealed. The
// run is empty otherwise.
func (r *Reader) finalRun(seq, end uint64) (run []byte, first, stop, rs uint64) {
	n := seq >> r.shift
	if n >= uint64(len(r.segs)) {
		return nil, 0, 0, 0
	}
	v := &r.segs[n]
	if v.kind != viewDurable {
		return nil, 0, 0, 0
	}
	rs = v.rs
	i := seq & r.mask
	blk := i * rs >> 12
	if v.valid[blk>>6]&(1<<(blk&63)) == 0 {
		return nil, 0, 0, 0
	}
	// The rows that start in the block: the ones its check covered.
	last := min(((blk+1)*format.BlockSize+rs-1)/rs, r.mask+1)
	first = seq + 1
	stop = min(n<<r.shift+last, end)
	if first >= stop {
		return nil, 0, 0, 0
	}
	return v.rows[(i+1)*rs : last*rs], first, stop, rs
}

// Row is the current row: a view (see Reader), in its own layout.
func (it *Iter) Row() store.Row { return it.row }

// ReadRow copies the current row into dst, checked: a copy that fails
// its check word (the view's live slot recycled while it was copied) is
// read again through Reader.ReadRow, and a row that still fails is
// ErrCorrupt. dst is Schema().RowSize bytes, or the size of any of the
// table's layouts: a row of another layout is copied into dst's
// (Reader.CopyRow). Use it for a row kept past the next Next, or read
// while the writer may recycle the slot under it.
func (it *Iter) ReadRow(dst []byte) error { return it.r.copyView(it.cur, it.row, dst) }

// copyView copies view, row seq as Get returned it, into dst, checked: a
// copy that fails its check word (the view's live slot recycled while it
// was copied) is read again through ReadRow, and a row that still fails
// is ErrCorrupt. A view of another layout than dst's is read again
// (ReadRow copies it into dst's layout).
func (r *Reader) copyView(seq uint64, view store.Row, dst []byte) error {
	if len(view) == len(dst) {
		copy(dst, view)
		if format.Valid(seq, dst) {
			return nil
		}
	}
	if err := r.ReadRow(seq, dst); err != nil {
		return err
	}
	if !format.Valid(seq, dst) {
		return fmt.Errorf("%w: row %d fails its check word", store.ErrCorrupt, seq)
	}
	return nil
}

// NextInto is Next and ReadRow in one call: it advances to the next row
// and copies it into dst, checked (a copy that fails its check word, the
// view's live slot recycled under it, is read again). false at the end or
// on error (see Err); Row stays the view the copy was taken from. It is
// the loop of a consumer that keeps a copy of each row, for one call a
// row: the common 32-byte row of a run of final rows is copied through
// registers and checked there.
func (it *Iter) NextInto(dst []byte) bool {
	// Next's body, with no call in between on its fast path.
	if s := it.seq; s < it.runEnd && it.lt.n == 0 && !it.r.closed {
		off := (s - it.runSeq) * it.rs
		it.row, it.cur, it.seq = it.run[off:off+it.rs], s, s+1
	} else if it.lt.n != 0 {
		if !it.nextLate() {
			return false
		}
	} else if !it.next() {
		return false
	}
	v := it.row
	if len(v) == 32 && len(dst) == 32 {
		w0, w1, w2, w3 := le.Uint64(v[0:]), le.Uint64(v[8:]), le.Uint64(v[16:]), le.Uint64(v[24:])
		le.PutUint64(dst[0:], w0)
		le.PutUint64(dst[8:], w1)
		le.PutUint64(dst[16:], w2)
		le.PutUint64(dst[24:], w3)
		if uint32(w3>>32) == format.Check32(it.cur, w0, w1, w2, uint32(w3)) {
			return true
		}
	}
	if err := it.ReadRow(dst); err != nil {
		it.err, it.runEnd = err, 0 // and Next's fast path ends
		return false
	}
	return true
}

// Seq is the current row's sequence number.
func (it *Iter) Seq() uint64 { return it.cur }

// Err is the error that ended the iteration, if any.
func (it *Iter) Err() error { return it.err }
