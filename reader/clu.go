package reader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/store"
)

// Clustered hot copies (docs/FORMAT.md §13): the writer keeps, beside a
// hot segment's copy (seg-N.hot), seg-N.clu: the segment's rows grouped
// by symbol. RangeSym reads a sealed, not compressed segment through it when
// it exists: one contiguous run of the symbol's rows, read in one pread,
// instead of a row per page of the slot.

type cluState uint8

const (
	cluUnknown cluState = iota
	cluOpen             // fd is open on the file: immutable, kept until Close
	cluMissing          // not there when the change counter was at
)

// cluView is the reader's cache entry for segment n's clustered copy: the
// file open (an unlinked copy stays readable through it), its header and
// directory read and checked. Its index array and rows are read with
// pread into the iterator's buffers, never mapped: on this kind of
// (nested, paravirtualised) machine every page a process maps costs
// several µs on its first touch, more than copying the 64 KiB a
// one-symbol window needs.
type cluView struct {
	state   cluState
	at      uint64 // cluMissing: the ctl change counter when looked for
	path    string
	fd      mmap.FD
	dir     []byte
	nsym    int
	rowsOff uint64
	idxOff  uint64
	word    [4]byte // idxAt's buffer
	serial  uint64  // which open of the reader's (an iterator checks it)
	rs      uint64  // row size (the schema's when the writer made the copy)
}

const (
	// cluChunk is how many rows an iterator reads at a time (64 KiB of
	// 32-byte rows): its rows stay valid until the next chunk.
	cluChunk = 2048
	// cluIdxMax is the most index words an iterator reads at a time
	// (64 KiB): a run at most this long is read in one go and searched
	// in memory; a longer one is narrowed a word at a time first.
	cluIdxMax = 16384
	// cluHeadRead is what the first read of a copy takes: the header and
	// a directory of up to 170 symbols.
	cluHeadRead = 2 * format.BlockSize
)

// cluFor returns segment n's clustered copy, open and checked, or nil when
// there is none. A copy found missing is looked for again only after the
// writer's change counter in ctl moved (no open per query).
func (r *Reader) cluFor(n uint64) (*cluView, error) {
	for uint64(len(r.clus)) <= n {
		r.clus = append(r.clus, cluView{})
	}
	c := &r.clus[n]
	switch c.state {
	case cluOpen:
		return c, nil
	case cluMissing:
		if r.ctl.CluGen() == c.at {
			return nil, nil
		}
	}
	// The counter first: a copy made after this load bumps it again.
	at := r.ctl.CluGen()
	// No writer, no live directory: a clean close removed it (copies
	// included), so no open per segment to find that out.
	dir := r.liveDirPath()
	if dir == "" || r.ctl.State() == index.StateClosed {
		c.state, c.at = cluMissing, at
		return nil, nil
	}
	path := filepath.Join(dir, format.CluName(n))
	fd, err := mmap.OpenFD(path)
	if errors.Is(err, os.ErrNotExist) {
		c.state, c.at = cluMissing, at
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reader: clustered copy of segment %d: %w", n, err)
	}
	h := format.CluHeader{TableID: r.ctl.TableID, RowSize: int(r.rowSize), SegNo: n, RowsPerSeg: r.mask + 1, Rows: r.mask + 1}
	d, err := readCluHead(fd, path, h, &r.cluHead)
	if err != nil && errors.Is(err, store.ErrCorrupt) && r.reloadSchema() {
		// Made after a column was added that this reader did not know.
		h.RowSize = int(r.rowSize)
		d, err = readCluHead(fd, path, h, &r.cluHead)
	}
	if err != nil {
		mmap.CloseFD(fd)
		return nil, fmt.Errorf("reader: clustered copy of segment %d: %w", n, err)
	}
	h.NSym = len(d) / format.CluDirEntry
	h.CluLayout()
	r.cluSerial++
	*c = cluView{state: cluOpen, path: path, fd: fd, dir: d, nsym: h.NSym, rowsOff: h.RowsOff, idxOff: h.IdxOff, serial: r.cluSerial, rs: uint64(h.RowSize)}
	return c, nil
}

// sweepCopies, once the writer's change counter moved (checked at each
// load of the published count and each one-symbol query), lets go of the
// copies the writer has removed (past the hot budget): an open clustered
// copy is closed (an iterator reading one finds it closed at its next
// read and goes on through the postings), and over a mapped hot copy the
// segment's durable file is mapped in place (mmap.Replace): rows handed
// out from it read the same bytes, now from the page cache or the disk.
// Either way the copy's shared memory is freed rather than held for as
// long as the reader lives. A segment whose durable file is gone too
// (retention) keeps its hot copy's pages until Close.
func (r *Reader) sweepCopies() {
	g := r.ctl.CluGen()
	if g == r.copiesSwept {
		return
	}
	r.copiesSwept = g
	gone := func(path string) bool {
		_, err := os.Stat(path)
		return err != nil
	}
	for n := range r.clus {
		if c := &r.clus[n]; c.state == cluOpen && gone(c.path) {
			mmap.CloseFD(c.fd)
			*c = cluView{state: cluMissing, at: g}
		}
	}
	for n := range r.segs {
		v := &r.segs[n]
		if !v.hot || !gone(v.path) {
			continue
		}
		f, err := os.Open(format.SegPath(r.dir, uint64(n)))
		if err != nil {
			continue
		}
		if mmap.Replace(v.file, f) == nil {
			v.hot, v.path = false, f.Name()
		}
		f.Close()
	}
}

// readCluHead reads and checks the header and directory of the clustered
// copy open on fd (CheckCluHead) into *buf, the reader's buffer, and
// returns a copy of the directory.
func readCluHead(fd mmap.FD, path string, want format.CluHeader, buf *[]byte) ([]byte, error) {
	if cap(*buf) < cluHeadRead {
		*buf = make([]byte, cluHeadRead)
	}
	b := (*buf)[:cluHeadRead]
	if err := mmap.PreadFull(fd, b, 0); err != nil {
		return nil, format.Corruptf(path, 0, "read header: %v", err)
	}
	// Its symbol count says how much directory there is (bounded by the
	// rows: every entry holds one); CheckCluHead checks the rest.
	nsym := uint64(le.Uint32(b[56:]))
	if nsym > want.Rows {
		return nil, format.Corruptf(path, 56, "%d symbols in a segment of %d rows", nsym, want.Rows)
	}
	want.NSym = int(nsym)
	want.CluLayout()
	if want.IdxOff > uint64(len(b)) {
		b = append(b, make([]byte, want.IdxOff-uint64(len(b)))...)
		*buf = b
		if err := mmap.PreadFull(fd, b[cluHeadRead:], cluHeadRead); err != nil {
			return nil, format.Corruptf(path, cluHeadRead, "read directory: %v", err)
		}
	}
	// The size is the header's: a truncated copy fails the read of its
	// missing bytes (an error, never rows).
	d, err := format.CheckCluHead(path, b, want, want.Size)
	if err != nil {
		return nil, err
	}
	return slices.Clone(d), nil
}

// run is the clustered positions [first, end) of symbol id's rows, or
// ok false when the segment has none.
func (c *cluView) run(id uint32) (first, end uint64, ok bool) {
	lo, hi := 0, c.nsym
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x, _, _ := format.CluDirEntryAt(c.dir, m); x < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == c.nsym {
		return 0, 0, false
	}
	x, f, n := format.CluDirEntryAt(c.dir, lo)
	return f, f + n, x == id
}

// idxAt reads the row index at clustered position p.
func (c *cluView) idxAt(p uint64) (uint32, error) {
	if err := mmap.PreadFull(c.fd, c.word[:], int64(c.idxOff+4*p)); err != nil {
		return 0, fmt.Errorf("reader: read %s: %w", c.path, err)
	}
	return le.Uint32(c.word[:]), nil
}

// loadIdx reads the index words of positions [p, q) into it.cidx.
func (it *Iter) loadIdx(p, q uint64) error {
	c := it.c
	it.cidx = it.cidx[:4*(q-p)]
	if err := mmap.PreadFull(c.fd, it.cidx, int64(c.idxOff+4*p)); err != nil {
		it.ilo, it.ihi = 0, 0
		return fmt.Errorf("reader: read %s: %w", c.path, err)
	}
	it.ilo, it.ihi = p, q
	return nil
}

// find is the first clustered position in [p, end) whose row index is at
// least i (end if none): the run's indexes ascend. In the words read
// already when they hold the answer; else a word at a time until the
// range fits the buffer, then that range in one read.
func (it *Iter) find(p, end, i uint64) (uint64, error) {
	in := func(q uint64) uint64 { return uint64(le.Uint32(it.cidx[4*(q-it.ilo):])) }
	if !(it.ilo <= p && p < it.ihi && (end <= it.ihi || in(it.ihi-1) >= i)) {
		for end-p > cluIdxMax {
			m := p + (end-p)/2
			x, err := it.c.idxAt(m)
			if err != nil {
				return 0, err
			}
			if uint64(x) < i {
				p = m + 1
			} else {
				end = m
			}
		}
		if p == end {
			return p, nil
		}
		if err := it.loadIdx(p, end); err != nil {
			return 0, err
		}
	}
	end = min(end, it.ihi)
	for p < end {
		m := p + (end-p)/2
		if in(m) < i {
			p = m + 1
		} else {
			end = m
		}
	}
	return p, nil
}

// enterClu sets a symbol iterator on segment n's clustered copy c: the
// symbol's rows of the segment from seq lo up to (not including) seq hi.
// False when there are none.
func (it *Iter) enterClu(c *cluView, n, lo, hi uint64) (bool, error) {
	first, end, ok := c.run(it.id)
	if !ok {
		return false, nil
	}
	if cap(it.cidx) < 4*cluIdxMax {
		it.cidx = make([]byte, 4*cluIdxMax)
	}
	base := n << it.r.shift
	it.c, it.ilo, it.ihi = c, 0, 0
	p0, err := it.find(first, end, lo-base)
	if err != nil {
		return false, err
	}
	p1, err := it.find(p0, end, hi-base)
	if err != nil || p0 == p1 {
		it.c = nil
		return false, err
	}
	it.cp, it.cend, it.cbase = p0, p1, base
	it.cbuf, it.cbufEnd, it.cprev, it.cserial = p0, p0, -1, c.serial
	return true, nil
}

// fillC reads the next chunk of rows, from it.cp, into the iterator's
// buffer (and their index words, unless read already).
func (it *Iter) fillC() error {
	c, rs := it.c, it.c.rs
	it.crs = rs
	if it.cp < it.ilo || it.cp >= it.ihi {
		if err := it.loadIdx(it.cp, min(it.cend, it.cp+cluIdxMax)); err != nil {
			return err
		}
	}
	k := min(it.cend, it.ihi, it.cp+cluChunk) - it.cp
	if uint64(cap(it.crows)) < cluChunk*rs {
		it.crows = make([]byte, cluChunk*rs)
	}
	it.crows = it.crows[:k*rs]
	if err := mmap.PreadFull(c.fd, it.crows, int64(c.rowsOff+it.cp*rs)); err != nil {
		return fmt.Errorf("reader: read %s: %w", c.path, err)
	}
	it.cbuf, it.cbufEnd = it.cp, it.cp+k
	return nil
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
	for it.cp < it.cend {
		p := it.cp
		if p >= it.cbufEnd {
			if v := &r.clus[it.symSeg]; v.state != cluOpen || v.serial != it.cserial {
				// Closed by a sweep (the segment is no longer hot): the
				// rest of the segment through the postings.
				it.c, it.resume = nil, it.cbase+uint64(it.cprev+1)
				if err := it.enterSeg(it.symSeg); err != nil {
					it.err = err
				}
				return false
			}
			if err := it.fillC(); err != nil {
				it.err = err
				return false
			}
		}
		it.cp++
		i := le.Uint32(it.cidx[4*(p-it.ilo):])
		if uint64(i) > r.mask || int64(i) <= it.cprev {
			it.err = format.Corruptf(c.path, int64(c.idxOff+4*p), "clustered position %d names row %d, not after row %d in a segment of %d", p, i, it.cprev, r.mask+1)
			return false
		}
		it.cprev = int64(i)
		seq := it.cbase + uint64(i)
		j := p - it.cbuf
		rs := it.crs
		row := store.Row(it.crows[j*rs : (j+1)*rs])
		if !format.Valid(seq, row) || le.Uint32(row[r.symOff:]) != it.id {
			it.err = format.Corruptf(c.path, int64(c.rowsOff+p*rs), "row at clustered position %d is not row %d of symbol %d", p, seq, it.id)
			return false
		}
		ts := row.Ts()
		if ts < it.from {
			continue
		}
		if ts > it.hi {
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
