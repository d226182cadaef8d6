package reader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tickdb/tickdb/store"
)

// Clustered hot copies (docs/FORMAT.md §13): the writer keeps, next to a
// hot segment's live slot, seg-N.clu: the segment's rows grouped by
// symbol. RangeSym reads a sealed, not compressed segment through it when
// it exists: one contiguous run of the symbol's rows, instead of a row per
// page of the slot.

type cluState uint8

const (
	cluUnknown cluState = iota
	cluMapped           // b holds the file: immutable, kept until Close
	cluMissing          // not there when the change counter was at
)

// cluView is the reader's cache entry for segment n's clustered copy.
type cluView struct {
	state   cluState
	at      uint64 // cluMissing: the ctl change counter when looked for
	path    string
	b       []byte // the whole file, mapped read-only
	dir     []byte
	idx     []byte // u32 per clustered position: the row's index in the segment
	rows    []byte
	nsym    int
	rowsOff uint64
	idxOff  uint64
}

// cluFor returns segment n's clustered copy, mapped and checked, or nil
// when there is none. A copy found missing is looked for again only after
// the writer's change counter in ctl moved (no open per query).
func (r *Reader) cluFor(n uint64) (*cluView, error) {
	for uint64(len(r.clus)) <= n {
		r.clus = append(r.clus, cluView{})
	}
	c := &r.clus[n]
	switch c.state {
	case cluMapped:
		return c, nil
	case cluMissing:
		if r.ctl.CluGen() == c.at {
			return nil, nil
		}
	}
	// The counter first: a copy made after this load bumps it again.
	at := r.ctl.CluGen()
	dir := r.liveDirPath()
	if dir == "" {
		c.state, c.at = cluMissing, at
		return nil, nil
	}
	path := filepath.Join(dir, store.CluName(n))
	b, err := mapClu(path)
	if errors.Is(err, os.ErrNotExist) {
		c.state, c.at = cluMissing, at
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reader: clustered copy of segment %d: %w", n, err)
	}
	h := store.CluHeader{TableID: r.ctl.TableID, RowSize: int(r.rowSize), SegNo: n, RowsPerSeg: r.mask + 1, Rows: r.mask + 1}
	d, err := store.CheckClu(path, b, h)
	if err != nil {
		store.Unmap(b)
		return nil, fmt.Errorf("reader: clustered copy of segment %d: %w", n, err)
	}
	h.NSym = len(d) / store.CluDirEntry
	h.CluLayout()
	*c = cluView{state: cluMapped, path: path, b: b, dir: d, nsym: h.NSym,
		idx: b[h.IdxOff : h.IdxOff+h.Rows*4], rows: b[h.RowsOff:h.Size], rowsOff: h.RowsOff, idxOff: h.IdxOff}
	return c, nil
}

func mapClu(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < store.BlockSize {
		return nil, store.Corruptf(path, st.Size(), "clustered copy is %d bytes, shorter than its header", st.Size())
	}
	return store.MapShared(f, int(st.Size()), false)
}

// run is the clustered positions [first, end) of symbol id's rows, or
// ok false when the segment has none.
func (c *cluView) run(id uint32) (first, end uint64, ok bool) {
	lo, hi := 0, c.nsym
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x, _, _ := store.CluDirEntryAt(c.dir, m); x < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == c.nsym {
		return 0, 0, false
	}
	x, f, n := store.CluDirEntryAt(c.dir, lo)
	return f, f + n, x == id
}

// search is the first clustered position in [p, end) whose row index is
// at least i (end if none): the run's indexes ascend.
func (c *cluView) search(p, end uint64, i uint64) uint64 {
	for p < end {
		m := p + (end-p)/2
		if uint64(le.Uint32(c.idx[4*m:])) < i {
			p = m + 1
		} else {
			end = m
		}
	}
	return p
}

// populate maps b[from:to] (a part of the copy's mapping) into the page
// tables in one call: a first touch per page would cost a fault each.
func (c *cluView) populate(from, to uint64) {
	if from >= to {
		return
	}
	from &^= store.BlockSize - 1
	_ = store.PopulateRead(c.b[from:to]) // advice: a failure costs only faults
}

// enterClu sets a symbol iterator on segment n's clustered copy c: the
// symbol's rows of the segment from seq lo up to (not including) seq hi.
// False when there are none.
func (it *Iter) enterClu(c *cluView, n, lo, hi uint64) bool {
	first, end, ok := c.run(it.id)
	if !ok {
		return false
	}
	base := n << it.r.shift
	p0 := c.search(first, end, lo-base)
	p1 := c.search(p0, end, hi-base)
	if p0 == p1 {
		return false
	}
	rs := it.r.rowSize
	c.populate(c.idxOff+4*p0, c.idxOff+4*p1)
	c.populate(c.rowsOff+p0*rs, c.rowsOff+p1*rs)
	it.c, it.cfirst, it.cp, it.cend, it.cbase = c, first, p0, p1, base
	return true
}

// nextC is next for a symbol iterator in a clustered copy: the next row
// of the symbol's run, each checked (its index ascends, its check word
// matches its seq, its symbol is the one asked for), filtered by ts. False
// with it.err nil means: continue with whatever segment enterSeg chose.
func (it *Iter) nextC() bool {
	r, c := it.r, it.c
	if r.closed {
		it.err = ErrClosed
		return false
	}
	rs := r.rowSize
	for it.cp < it.cend {
		p := it.cp
		it.cp++
		i := le.Uint32(c.idx[4*p:])
		if uint64(i) > r.mask || (p > it.cfirst && le.Uint32(c.idx[4*(p-1):]) >= i) {
			it.err = store.Corruptf(c.path, int64(c.idxOff+4*p), "clustered position %d names row %d, not after the one before in a segment of %d", p, i, r.mask+1)
			return false
		}
		seq := it.cbase + uint64(i)
		row := store.Row(c.rows[p*rs : (p+1)*rs])
		if !store.Valid(seq, row) || le.Uint32(row[r.symOff:]) != it.id {
			it.err = store.Corruptf(c.path, int64(c.rowsOff+p*rs), "row at clustered position %d is not row %d of symbol %d", p, seq, it.id)
			return false
		}
		ts := row.Ts()
		if ts < it.from {
			continue
		}
		if ts >= it.to {
			it.done = true
			return false
		}
		it.row, it.cur = row, seq
		return true
	}
	if err := it.enterSeg(it.symSeg + 1); err != nil {
		it.err = err
	}
	return false
}
