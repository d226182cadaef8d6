package reader

import (
	"fmt"
	"path/filepath"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/store"
)

// VerifyReport says what Verify checked.
type VerifyReport struct {
	Rows        uint64 // published rows checked
	Unpublished uint64 // rows published but neither live nor durable (a crash tail; not damage)
	Segments    uint64
	// Symbols is the table's symbols: the distinct values of its key sym
	// column (the schema's first sym column, which the postings index)
	// among the rows checked, as latest lists them; 0 without a sym
	// column.
	Symbols int
	// Dictionary is the entries of the table's one dictionary, which
	// every sym column shares: the values of the other sym columns (other
	// tags, string fields) too, and of rows retention deleted.
	Dictionary int
	// SymColumns is, for each sym column in schema order (the key column
	// first), its distinct values among the rows checked.
	SymColumns  []SymColumnValues
	TimeEntries uint64
	Postings    uint64
	// Compacted is the rows below the postings floor: in clustered
	// compressed segments, whose postings entries were dropped (their
	// segments' directories are checked with their rows instead).
	Compacted uint64
	Clustered uint64 // clustered hot copies (seg-N.clu) checked
	Late      uint64 // late rows checked against their late.idx entries
}

// SymColumnValues is one sym column's distinct values (VerifyReport).
type SymColumnValues struct {
	Name   string
	Values int
}

// symSet is a set of symbol ids, a bit each, and whether NoSym (a row
// without the column) is in it while the dictionary has no "".
type symSet struct {
	bits  []uint64
	n     int
	noSym bool
}

// len is the distinct values in the set.
func (s *symSet) len() int {
	if s.noSym {
		return s.n + 1
	}
	return s.n
}

func (s *symSet) add(id uint32) {
	w := int(id >> 6)
	if w >= len(s.bits) {
		s.bits = append(s.bits, make([]uint64, w+1-len(s.bits))...)
	}
	if b := uint64(1) << (id & 63); s.bits[w]&b == 0 {
		s.bits[w] |= b
		s.n++
	}
}

// Verify checks table name read-only, without any lock, so it is safe while
// a writer runs: file headers, the dictionary, every published row's check
// word and ts order (in the live slot and, where durable, in the durable
// file too), every time-index entry against its row, and every postings
// entry against its row (each row in exactly one symbol's postings). It
// returns the first damage as a *store.CorruptError (file and offset). A
// tail left unpublished by a crash is not damage. progress, if not nil, is
// called with rows checked so far.
func Verify(db, name string, progress func(done, total uint64)) (VerifyReport, error) {
	var rep VerifyReport
	r, err := Open(db, name, nil)
	if err != nil {
		return rep, err
	}
	defer r.Close()
	snap, err := r.ctl.Snapshot()
	if err != nil {
		return rep, err
	}
	rep.Dictionary = r.syms.Len()
	if err := r.checkCtl(snap); err != nil {
		return rep, err
	}
	if err := r.lateFor(snap.Late); err != nil {
		return rep, err
	}
	r.verifyLate = snap.Late
	vis := snap.Visible
	if d := r.ctl.Durable(); !r.liveAvailable(vis) && d < vis {
		rep.Unpublished = vis - d
		vis = d
	}
	if err := r.verifyRows(snap.FirstSeq, vis, &rep, progress); err != nil {
		return rep, err
	}
	if err := r.verifyTimeIndex(snap.FirstSeq, vis, snap.Late, &rep); err != nil {
		return rep, err
	}
	if err := r.verifyPostings(snap, vis, &rep); err != nil {
		return rep, err
	}
	if err := r.verifyClus(snap.FirstSeq, vis, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// verifyClus checks the clustered hot copies of the sealed, not
// compressed segments below vis: header and directory (on open), then
// every position: its row index ascends within its symbol's run and names
// each row of the segment once, and its row is the table's row of that
// seq, byte for byte, with the run's symbol.
func (r *Reader) verifyClus(first, vis uint64, rep *VerifyReport) error {
	if r.symOff < 0 {
		return nil
	}
	R := r.mask + 1
	seen := make([]uint64, (R+63)/64)
	var want []byte
	var it Iter
	it.r = r
	for n := max(first>>r.shift, r.ctl.CmpSegs()); n < r.ctl.DurableSegs() && (n+1)<<r.shift <= vis; n++ {
		if n<<r.shift < first {
			continue
		}
		c, err := r.cluFor(n)
		if err != nil {
			return err
		}
		if c == nil {
			continue
		}
		rs := c.rs
		want = make([]byte, rs)
		clear(seen)
		for k := range c.nsym {
			id, pos, count := format.CluDirEntryAt(c.dir, k)
			it.id, it.c, it.ilo, it.ihi, it.symSeg, it.cserial = id, c, 0, 0, n, c.serial
			if cap(it.cidx) < 4*cluIdxMax {
				it.cidx = make([]byte, 4*cluIdxMax)
			}
			it.cp, it.cend, it.cbuf, it.cbufEnd, it.cprev = pos, pos+count, pos, pos, -1
			for p := pos; p < pos+count; p++ {
				if p >= it.cbufEnd {
					it.cp = p
					if err := it.fillC(); err != nil {
						return err
					}
				}
				i := le.Uint32(it.cidx[4*(p-it.ilo):])
				if uint64(i) >= R || int64(i) <= it.cprev || seen[i/64]&(1<<(i%64)) != 0 {
					return format.Corruptf(c.path, int64(c.idxOff+4*p), "clustered position %d names row %d (after row %d; named before: %v)", p, i, it.cprev, uint64(i) < R && seen[i/64]&(1<<(i%64)) != 0)
				}
				seen[i/64] |= 1 << (i % 64)
				it.cprev = int64(i)
				seq := n<<r.shift + uint64(i)
				j := p - it.cbuf
				row := it.crows[j*rs : (j+1)*rs]
				// A copy, checked against recycling (the row's slot can be
				// recycled while this runs).
				if err := r.ReadRow(seq, want); err != nil {
					return err
				}
				if string(row) != string(want) || le.Uint32(row[r.symOff:]) != id {
					return format.Corruptf(c.path, int64(c.rowsOff+p*rs), "row at clustered position %d differs from row %d of the table (symbol %d)", p, seq, id)
				}
			}
		}
		rep.Clustered++
	}
	return nil
}

func (r *Reader) checkCtl(s index.Snap) error {
	d, ds := r.ctl.Durable(), r.ctl.DurableSegs()
	switch {
	case s.FirstSeq > s.Visible:
		return format.Corruptf(r.ctl.Path, 4120, "first row %d is past the published count %d", s.FirstSeq, s.Visible)
	case d > s.Visible:
		return format.Corruptf(r.ctl.Path, 4224, "durable count %d is past the published count %d", d, s.Visible)
	case ds<<r.shift > d:
		return format.Corruptf(r.ctl.Path, 4232, "%d durable segments hold more rows than the durable count %d", ds, d)
	case !r.post.Covers(s.NextChunk):
		return format.Corruptf(r.post.Path(), r.post.WordOff(s.NextChunk, 0), "published chunk count %d is past the end of the file", s.NextChunk)
	}
	return nil
}

// liveAvailable reports whether the segment holding the last published row
// has a live copy (otherwise rows past Durable cannot be read).
func (r *Reader) liveAvailable(vis uint64) bool {
	if vis == 0 {
		return true
	}
	n := (vis - 1) >> r.shift
	if n < r.ctl.DurableSegs() {
		return true
	}
	gen, seg := r.ctl.Slot(int(n % uint64(len(r.slots))))
	if gen == 0 || seg != n {
		return false
	}
	_, _, err := r.attachSlot(int(n%uint64(len(r.slots))), gen, n)
	return err == nil
}

func (r *Reader) rowPlace(seq uint64) (string, int64) {
	n := seq >> r.shift
	rs := r.rowSize
	if n < uint64(len(r.segs)) && r.segs[n].rs != 0 {
		rs = r.segs[n].rs
	}
	off := int64(format.BlockSize + (seq&r.mask)*rs)
	if n < uint64(len(r.segs)) && r.segs[n].kind == viewLive && seq&r.mask >= r.segs[n].from {
		return filepath.Join(r.liveDirPath(), format.SlotName(r.segs[n].slot)), off
	}
	if n < uint64(len(r.segs)) && r.segs[n].kind == viewCompressed {
		return format.ZSegPath(r.dir, n), 0 // a decoded row has no byte offset of its own
	}
	return format.SegPath(r.dir, n), off
}

func (r *Reader) verifyRows(first, vis uint64, rep *VerifyReport, progress func(done, total uint64)) error {
	buf := make([]byte, r.rowSize)
	// prev is the newest ts so far (known: from row 0; after retention
	// deleted the first rows, a lower bound until a late entry says).
	prev := int64(-1 << 63)
	known := first == 0
	nlate := r.verifyLate
	win := r.ctl.LateWindow()
	var j uint64
	if nlate > 0 {
		j = r.late.SearchSeq(nlate, first)
	}
	nsym := uint32(r.syms.Len())
	// The distinct values of each sym column, the key column first; a
	// column a row's layout lacks reads NoSym, the empty symbol, counted
	// as the dictionary's "" when it has one.
	var symCols []int
	if r.schema.SymCol >= 0 {
		symCols = append(symCols, r.schema.SymCol)
	}
	for i, c := range r.schema.Cols {
		if c.Type == store.TypeSym && i != r.schema.SymCol {
			symCols = append(symCols, i)
		}
	}
	sets := make([]symSet, len(symCols))
	noSym := store.NoSym
	if id, ok := r.syms.Lookup(nil); ok {
		noSym = id
	}
	defer func() {
		for i, c := range symCols {
			rep.SymColumns = append(rep.SymColumns, SymColumnValues{Name: r.schema.Cols[c].Name, Values: sets[i].len()})
		}
		if len(sets) > 0 {
			rep.Symbols = sets[0].len()
		}
		rep.Dictionary = max(rep.Dictionary, r.syms.Len())
	}()
	lastSeg := ^uint64(0)
	var lastRS uint64
	// Checked copies: a sealed segment read from its live slot (hot) can
	// have its slot recycled while it is checked, and a row of the next
	// segment must not be taken for damage of this one.
	row := r.schema.NewRow()
	for seq := first; seq < vis; seq++ {
		if err := r.ReadRow(seq, row); err != nil {
			return fmt.Errorf("row %d: %w", seq, err)
		}
		if n := seq >> r.shift; n != lastSeg {
			lastSeg = n
			rep.Segments++
			// Layouts only grow with the seq (docs/FORMAT.md §15).
			rs := r.segs[n].rs
			if rs < lastRS {
				path, _ := r.rowPlace(seq)
				return format.Corruptf(path, 12, "segment %d has %d-byte rows, an earlier one %d: a table's rows never shrink", n, rs, lastRS)
			}
			lastRS = rs
			if err := r.verifyDurableCopy(n, vis); err != nil {
				return err
			}
		}
		if !format.Valid(seq, row) {
			// A live slot recycled under the view (a writer ahead of a slow
			// verify by its hot slots): the row is in its durable file now.
			// ReadRow copies and re-checks the generation.
			if err := r.ReadRow(seq, buf); err != nil || !format.Valid(seq, buf) {
				path, off := r.rowPlace(seq)
				return format.Corruptf(path, off, "row %d fails its check", seq)
			}
			row = buf
		}
		ts := row.Ts()
		if j < nlate && r.late.Seq(j) == seq {
			// A late row: its entry must describe it.
			e, err := r.late.Check(j)
			if err != nil {
				return err
			}
			var sym uint32
			if r.symOff >= 0 {
				sym = le.Uint32(row[r.symOff:])
			}
			if e.Ts != ts || e.Sym != sym || ts >= e.Prev || e.Prev < prev || (known && e.Prev != prev) || uint64(e.Prev)-uint64(ts) > uint64(win) {
				return format.Corruptf(r.late.Path(), format.BlockSize+int64(j)*index.LateEntrySize,
					"late entry %d (row %d, ts %d, newest before %d, symbol %d) does not match the row (ts %d, symbol %d, newest before %d, window %d)",
					j, seq, e.Ts, e.Prev, e.Sym, ts, sym, prev, win)
			}
			prev, known = e.Prev, true
			j++
			rep.Late++
		} else if ts < prev {
			path, off := r.rowPlace(seq)
			return format.Corruptf(path, off, "row %d has ts %d, before the previous row's %d, and is not a late row", seq, ts, prev)
		} else {
			if j < nlate && r.late.Seq(j) < seq {
				return format.Corruptf(r.late.Path(), format.BlockSize+int64(j)*index.LateEntrySize, "late entry %d names row %d, out of order", j, r.late.Seq(j))
			}
			prev = ts
		}
		if r.symOff >= 0 {
			if id := le.Uint32(row[r.symOff:]); id >= nsym {
				if r.refreshSymbols(); id >= uint32(r.syms.Len()) {
					path, off := r.rowPlace(seq)
					return format.Corruptf(path, off+int64(r.symOff), "row %d names symbol %d, the dictionary has %d", seq, id, r.syms.Len())
				}
				nsym = uint32(r.syms.Len())
			}
		}
		for i, c := range symCols {
			col := r.schema.ColAt(c)
			id := row.Sym(col)
			if id == store.NoSym {
				if id = noSym; id == store.NoSym {
					sets[i].noSym = true
					continue
				}
			}
			if id >= nsym {
				if r.refreshSymbols(); id >= uint32(r.syms.Len()) {
					path, off := r.rowPlace(seq)
					return format.Corruptf(path, off+int64(col.Off), "row %d names symbol %d in column %s, the dictionary has %d", seq, id, r.schema.Cols[c].Name, r.syms.Len())
				}
				nsym = uint32(r.syms.Len())
			}
			sets[i].add(id)
		}
		rep.Rows++
		if progress != nil && rep.Rows&(1<<20-1) == 0 {
			progress(rep.Rows, vis-first)
		}
	}
	if j < nlate && r.late.Seq(j) < vis {
		return format.Corruptf(r.late.Path(), format.BlockSize+int64(j)*index.LateEntrySize, "late entry %d names row %d, which is not late", j, r.late.Seq(j))
	}
	if progress != nil {
		progress(rep.Rows, vis-first)
	}
	return nil
}

// verifyDurableCopy checks the durable file of a segment that is read from
// its live slot: every row below the durable count must check out there
// too, since that copy is what survives a machine restart.
func (r *Reader) verifyDurableCopy(n, vis uint64) error {
	v := &r.segs[n]
	if v.kind != viewLive {
		return nil
	}
	base := n << r.shift
	d := min(r.ctl.Durable(), vis, base+r.mask+1)
	if d <= base {
		return nil
	}
	var dv segView
	if err := r.mapDurable(&dv, n, viewPartial); err != nil {
		return err
	}
	defer dv.release()
	if dv.kind != viewPartial {
		// Sealed and compacted since: the raw file is gone, and the
		// compaction checked every row's check word before it encoded
		// them.
		return nil
	}
	for seq := base; seq < d; seq++ {
		off := (seq - base) * dv.rs
		if !format.Valid(seq, dv.rows[off:off+dv.rs]) {
			return format.Corruptf(dv.path, int64(format.BlockSize+off), "row %d fails its check", seq)
		}
	}
	return nil
}

func (r *Reader) verifyTimeIndex(first, vis, nlate uint64, rep *VerifyReport) error {
	if vis == 0 {
		return nil
	}
	kmax := (vis - 1) >> r.sshift
	if !r.ts.Covers(kmax + 1) {
		return format.Corruptf(r.ts.Path(), int64(format.BlockSize+8*(kmax+1)), "time index shorter than the %d published rows", vis)
	}
	row := store.Row(make([]byte, r.rowSize))
	for k := (first + 1<<r.sshift - 1) >> r.sshift; k <= kmax; k++ {
		seq := k << r.sshift
		// ReadRow: a copy checked against a slot recycled meanwhile.
		if err := r.ReadRow(seq, row); err != nil {
			return fmt.Errorf("row %d: %w", seq, err)
		}
		if got, want := r.ts.At(k), r.keyAt(seq, row.Ts(), nlate); got != want {
			return format.Corruptf(r.ts.Path(), int64(format.BlockSize+8*k), "entry %d is %d, row %d has time key %d", k, got, seq, want)
		}
		rep.TimeEntries++
	}
	return nil
}

func (r *Reader) verifyPostings(s index.Snap, vis uint64, rep *VerifyReport) error {
	if r.symOff < 0 {
		return nil
	}
	// A running writer's checkpointer may raise the postings floor and
	// punch the chunks below it while this reads them: their entries then
	// read as zeros mid-walk. A check that failed while the floor moved is
	// run again from the new floor: the floor moves once a compacted
	// segment at most, but the background compaction (a writer's
	// default) compacts a backlog segment after segment.
	for try := 0; ; try++ {
		floor := r.ctl.PostFloor()
		err := r.verifyPostingsFrom(s, vis, rep)
		if err == nil || try == 20 || r.ctl.PostFloor() == floor {
			return err
		}
	}
}

func (r *Reader) verifyPostingsFrom(s index.Snap, vis uint64, rep *VerifyReport) error {
	// Every entry must name a row of its symbol, entries must go up, and
	// there must be one per row. Checked segment by segment: the rows'
	// symbols are read in order into syms (a compressed segment is then
	// decoded once, not once per symbol), and each symbol's entries that
	// fall in the segment are checked against them.
	curs := make([]postCursor, r.syms.Len())
	for id := range curs {
		c := &curs[id]
		var err error
		if c.chunks, err = r.post.DataChunks(nil, r.syms.Dir(uint32(id)), s.NextChunk); err != nil {
			return err
		}
		// Blocks punched out after their rows were compacted (below the
		// postings floor) read as zeros. They lead the chain's punchable
		// blocks (all of it but for a version 3 file's first, smaller
		// ones, which stay): the walk skips them.
		c.skip(r.post)
	}
	// Rows below the floor are checked in their compressed segments; their
	// entries that remain are taken in order but not counted.
	floor := max(s.FirstSeq, min(r.ctl.PostFloor(), vis))
	var total uint64
	var syms []uint32
	row := make([]byte, r.rowSize)
	for base := s.FirstSeq &^ r.mask; base < vis; base += r.mask + 1 {
		end := min(base+r.mask+1, vis)
		syms = syms[:0]
		for seq := max(base, s.FirstSeq); seq < end; seq++ {
			// ReadRow: a copy checked against a slot recycled meanwhile.
			if err := r.ReadRow(seq, row); err != nil {
				return fmt.Errorf("row %d: %w", seq, err)
			}
			syms = append(syms, le.Uint32(row[r.symOff:]))
		}
		first := max(base, s.FirstSeq)
		for id := range curs {
			c := &curs[id]
			for {
				e, off := c.peek(r.post)
				if e == 0 && c.resync(r.post) {
					continue // blocks punched since skip, below the floor
				}
				if e == 0 || e-1 >= vis || e-1 >= end {
					break
				}
				if e <= c.prev {
					if e == c.prev && c.closedEarly(r.post, e) {
						// A repeat closing a chunk early: each is
						// checked (one that differs is taken as a row,
						// and the last repeat then fails).
						c.advance(r.post)
						continue
					}
					return format.Corruptf(r.post.Path(), off, "symbol %d: entry for row %d after row %d", id, e-1, c.prev-1)
				}
				c.prev = e
				c.advance(r.post)
				if e-1 < first || e-1 < floor {
					continue // deleted by retention, or below the postings floor
				}
				if got := syms[e-1-first]; got != uint32(id) {
					return format.Corruptf(r.post.Path(), off, "symbol %d lists row %d, which has symbol %d", id, e-1, got)
				}
				total++
			}
		}
	}
	rep.Postings, rep.Compacted = total, floor-s.FirstSeq
	if want := vis - floor; total != want {
		return format.Corruptf(r.post.Path(), 0, "postings list %d rows, %d are published", total, want)
	}
	return nil
}

// postCursor walks one symbol's postings entries in order.
type postCursor struct {
	chunks []uint64
	ci, k  int    // next entry: entry k of block chunks[ci]
	prev   uint64 // the last entry taken
	// The punched blocks [from, to), skipped.
	from, to int
}

// skip finds the run of punched blocks: from the chain's first punchable
// one, every block but the last whose last entry reads 0.
func (c *postCursor) skip(p *index.Postings) {
	j := 0
	for j < len(c.chunks) && !p.Punchable(uint64(j)) {
		j++
	}
	c.from, c.to = j, j
	for c.to < len(c.chunks)-1 && p.Entry(c.chunks[c.to], p.BlockLen(uint64(c.to))-1) == 0 {
		c.to++
	}
	if c.ci == c.from {
		c.ci = c.to
	}
}

// resync moves the cursor past the blocks from the current one on that
// were punched out whole (their last entry reads zero; never the chain's
// last block, whose tail is unfilled) after skip ran: a running writer's
// checkpointer dropped them meanwhile. It reports whether it moved.
func (c *postCursor) resync(p *index.Postings) bool {
	moved := false
	for c.ci < len(c.chunks)-1 && p.Punchable(uint64(c.ci)) && p.Entry(c.chunks[c.ci], p.BlockLen(uint64(c.ci))-1) == 0 {
		c.ci, c.k, moved = c.ci+1, 0, true
	}
	return moved
}

// peek is the next entry (row+1; 0 past the end) and its file offset.
func (c *postCursor) peek(p *index.Postings) (uint64, int64) {
	if c.ci >= len(c.chunks) {
		return 0, 0
	}
	ch := c.chunks[c.ci]
	return p.Entry(ch, c.k), p.EntryOff(ch, c.k)
}

func (c *postCursor) advance(p *index.Postings) {
	if c.k++; c.k == p.BlockLen(uint64(c.ci)) {
		c.ci, c.k = c.ci+1, 0
		if c.ci == c.from {
			c.ci = c.to
		}
	}
}

// closedEarly reports whether the next entry, e, equal to the one before
// it, repeats it to close a version 2 or 3 block early: not its block's
// first and equal to its block's last (entries never decrease, so every
// one between is too).
func (c *postCursor) closedEarly(p *index.Postings, e uint64) bool {
	return p.ClosedEarly(uint64(c.ci), c.chunks[c.ci], c.k, e)
}
