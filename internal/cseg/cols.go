package cseg

import (
	"fmt"
	"math"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// ColReader decodes chosen columns of one data block at a time into the
// caller's slices, without building rows: a column scan pays for the
// columns it reads (their zstd frames and codecs) and nothing else. The
// block's CRC32C is still checked whole, and every frame a call decodes is
// checked as Block checks it (its length, its values' count, no bytes
// after them, ts within the index's range), so a damaged file is an
// error, never wrong values.
//
// Data blocks are Block's blocks in a version 1 file, the symbols' blocks
// in a version 2 file (DataBlocks, DataBlockTs, DataBlockRows,
// DataBlockSym).
//
// # Concurrency
//
// A ColReader holds its own buffers and is used by one goroutine at a
// time. It reads only what Open checked (the mapping and the index), so
// any number of ColReaders may read one Segment at once, beside the
// Segment's own Block, RowInto and SymBlock calls on another goroutine;
// none may run during or after the Segment's Close.
type ColReader struct {
	g      *Segment
	k      int
	e      blockEntry
	frames []frame
	raw    []byte
	state  codec.State
	// Per block, decoded once: v2 seq offsets, v1 sym keys.
	offs    []int64
	hasOffs bool
	keys    []uint32
	hasKeys bool
}

// Open makes data block k of g the ColReader's block: it checks the
// block's CRC32C and its column frames' lengths against the index, and
// returns its row count. Nothing is decoded yet.
func (cr *ColReader) Open(g *Segment, k int) (rows int, err error) {
	cr.g = nil
	if g.data == nil {
		return 0, ErrClosed
	}
	if k < 0 || k >= g.nblocks {
		return 0, fmt.Errorf("%w: data block %d of %d", ErrArgs, k, g.nblocks)
	}
	e := g.entry(k)
	if g.fetch != nil {
		if err := g.fetch.Fetch(e.off, int64(e.len)); err != nil {
			return 0, fetchErr(g.path, e.off, e.off+int64(e.len), err)
		}
	}
	body := g.data[e.off : e.off+int64(e.len)]
	if got := format.CRC32C(body); got != e.crc {
		return 0, format.Corruptf(g.path, e.off, "block %d check %08x, computed %08x (index)", k, got, e.crc)
	}
	if len(cr.frames) < len(g.cols) {
		cr.frames = make([]frame, len(g.cols))
	}
	p := 0
	for c := range g.cols {
		l := le.Uint32(body[p:])
		if want := g.colLen(k, c); l != want {
			return 0, format.Corruptf(g.path, e.off+int64(p), "block %d column %q: frame length %d, the index says %d", k, g.names[c], l, want)
		}
		cr.frames[c] = frame{off: e.off + int64(p+frameLenSize), len: int(l)}
		p += frameLenSize + int(l)
	}
	cr.g, cr.k, cr.e, cr.hasOffs, cr.hasKeys = g, k, e, false, false
	return e.rows, nil
}

// frameBytes decompresses column c's frame of the open block.
func (cr *ColReader) frameBytes(c int) ([]byte, error) {
	g, fr := cr.g, cr.frames[c]
	raw, err := codec.Decompress(cr.raw[:0], g.data[fr.off:fr.off+int64(fr.len)], maxColumnBlock(cr.e.rows)+8)
	if err != nil {
		return nil, format.Corruptf(g.path, fr.off, "block %d column %q: %v", cr.k, g.names[c], err)
	}
	if cap(raw) > cap(cr.raw) {
		cr.raw = raw
	}
	return raw, nil
}

// decoded turns the outcome of decoding column c from raw into an error.
func (cr *ColReader) decoded(c int, raw []byte, used int, err error) error {
	g := cr.g
	if err != nil {
		return format.Corruptf(g.path, cr.frames[c].off, "block %d column %q: %v", cr.k, g.names[c], err)
	}
	if used != len(raw) {
		return format.Corruptf(g.path, cr.frames[c].off, "block %d column %q: %d bytes after the column's values", cr.k, g.names[c], len(raw)-used)
	}
	return nil
}

// Offsets returns each row's index in the segment (its seq less the
// segment's first: Header.SegNo*RowsPerSeg), ascending: in a version 2
// file the decoded seq column (checked to ascend and to lie below Rows),
// in a version 1 file k*BlockRows + i. The slice is the ColReader's,
// valid until its next Open.
func (cr *ColReader) Offsets() ([]int64, error) {
	if cr.g == nil {
		return nil, fmt.Errorf("%w: no block open", ErrArgs)
	}
	if cr.hasOffs {
		return cr.offs, nil
	}
	g, n := cr.g, cr.e.rows
	if g.version != VersionClustered {
		cr.offs = growInt64(cr.offs, n)
		base := int64(cr.k) * BlockRows
		for i := range cr.offs {
			cr.offs[i] = base + int64(i)
		}
		cr.hasOffs = true
		return cr.offs, nil
	}
	c := g.symCol
	raw, err := cr.frameBytes(c)
	if err != nil {
		return nil, err
	}
	var used int
	cr.offs, used, err = codec.DecodeI64(cr.offs[:0], raw, n, nil, &cr.state)
	if err = cr.decoded(c, raw, used, err); err != nil {
		return nil, err
	}
	prev := uint64(0)
	for i, q := range cr.offs {
		o := zigzag(q)
		if i > 0 {
			o += prev + 1
		}
		if o >= g.h.Rows || (i > 0 && o <= prev) {
			return nil, format.Corruptf(g.path, cr.frames[c].off, "block %d row %d: seq offset %d after %d in a segment of %d rows", cr.k, i, o, prev, g.h.Rows)
		}
		cr.offs[i], prev = int64(o), o
	}
	cr.hasOffs = true
	return cr.offs, nil
}

// Ts appends the block's ts to dst[:0] and returns it, checked: within
// the index's min and max (which some row reaches), never going back in a
// file without late rows. In a version 2 file it decodes the offsets
// first (the ts are stored against them).
func (cr *ColReader) Ts(dst []int64) ([]int64, error) {
	if cr.g == nil {
		return dst, fmt.Errorf("%w: no block open", ErrArgs)
	}
	g, n := cr.g, cr.e.rows
	var offs []int64
	if g.version == VersionClustered {
		var err error
		if offs, err = cr.Offsets(); err != nil {
			return dst, err
		}
	}
	raw, err := cr.frameBytes(0)
	if err != nil {
		return dst, err
	}
	var rate int64
	if offs != nil {
		if len(raw) < 8 {
			return dst, format.Corruptf(g.path, cr.frames[0].off, "block %d column %q: %d bytes, no room for the rate", cr.k, g.names[0], len(raw))
		}
		rate, raw = int64(le.Uint64(raw)), raw[8:]
	}
	var used int
	dst, used, err = codec.DecodeTs(dst[:0], raw, n)
	if err = cr.decoded(0, raw, used, err); err != nil {
		return dst, err
	}
	if offs != nil && rate != 0 {
		o0 := offs[0]
		for i, o := range offs[:len(dst)] {
			dst[i] += rate * (o - o0)
		}
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, t := range dst {
		if t < hi && !g.late {
			return dst, format.Corruptf(g.path, cr.frames[0].off, "block %d row %d: ts %d below %d", cr.k, i, t, hi)
		}
		lo, hi = min(lo, t), max(hi, t)
	}
	if n > 0 && (lo != cr.e.minTs || hi != cr.e.maxTs) {
		return dst, format.Corruptf(g.path, cr.frames[0].off, "block %d: ts from %d to %d, the index says %d to %d", cr.k, lo, hi, cr.e.minTs, cr.e.maxTs)
	}
	return dst, nil
}

// key returns the keys of the f64 and i64 columns: the sym column's ids
// in a version 1 file (decoded once a block), nil in a version 2 file or
// without a sym column.
func (cr *ColReader) key() ([]uint32, error) {
	g := cr.g
	if g.version == VersionClustered || g.symCol < 0 {
		return nil, nil
	}
	if cr.hasKeys {
		return cr.keys, nil
	}
	raw, err := cr.frameBytes(g.symCol)
	if err != nil {
		return nil, err
	}
	var used int
	cr.keys, used, err = codec.DecodeU32(cr.keys[:0], raw, cr.e.rows)
	if err = cr.decoded(g.symCol, raw, used, err); err != nil {
		return nil, err
	}
	cr.hasKeys = true
	return cr.keys, nil
}

// column checks that column c of the open block is of type t.
func (cr *ColReader) column(c int, t store.ColType) error {
	if cr.g == nil {
		return fmt.Errorf("%w: no block open", ErrArgs)
	}
	if c <= 0 || c >= len(cr.g.cols) || cr.g.cols[c].Type != t {
		return fmt.Errorf("%w: column %d is not a %v column of the segment", ErrArgs, c, t)
	}
	return nil
}

// I64 appends i64 column c of the block to dst[:0] and returns it.
func (cr *ColReader) I64(c int, dst []int64) ([]int64, error) {
	if err := cr.column(c, store.TypeI64); err != nil {
		return dst, err
	}
	key, err := cr.key()
	if err != nil {
		return dst, err
	}
	raw, err := cr.frameBytes(c)
	if err != nil {
		return dst, err
	}
	var used int
	dst, used, err = codec.DecodeI64(dst[:0], raw, cr.e.rows, key, &cr.state)
	return dst, cr.decoded(c, raw, used, err)
}

// F64 appends f64 column c of the block to dst[:0] and returns it.
func (cr *ColReader) F64(c int, dst []float64) ([]float64, error) {
	if err := cr.column(c, store.TypeF64); err != nil {
		return dst, err
	}
	key, err := cr.key()
	if err != nil {
		return dst, err
	}
	raw, err := cr.frameBytes(c)
	if err != nil {
		return dst, err
	}
	var used int
	dst, used, err = codec.DecodeF64(dst[:0], raw, cr.e.rows, key, &cr.state)
	return dst, cr.decoded(c, raw, used, err)
}

// Sym appends sym column c of the block to dst[:0] and returns it. In a
// version 2 file the clustering column is not stored: every row has the
// block's symbol (DataBlockSym).
func (cr *ColReader) Sym(c int, dst []uint32) ([]uint32, error) {
	if err := cr.column(c, store.TypeSym); err != nil {
		return dst, err
	}
	g := cr.g
	if g.version == VersionClustered && c == g.symCol {
		id := g.dir[cr.e.slot].id
		dst = growU32(dst, cr.e.rows)
		for i := range dst {
			dst[i] = id
		}
		return dst, nil
	}
	if c == g.symCol && cr.hasKeys {
		return append(dst[:0], cr.keys...), nil
	}
	raw, err := cr.frameBytes(c)
	if err != nil {
		return dst, err
	}
	var used int
	dst, used, err = codec.DecodeU32(dst[:0], raw, cr.e.rows)
	return dst, cr.decoded(c, raw, used, err)
}

// Bool appends bool column c of the block to dst[:0] and returns it.
func (cr *ColReader) Bool(c int, dst []bool) ([]bool, error) {
	if err := cr.column(c, store.TypeBool); err != nil {
		return dst, err
	}
	raw, err := cr.frameBytes(c)
	if err != nil {
		return dst, err
	}
	var used int
	dst, used, err = codec.DecodeBool(dst[:0], raw, cr.e.rows)
	return dst, cr.decoded(c, raw, used, err)
}

// DataBlockRows is data block k's row count, from the index.
func (g *Segment) DataBlockRows(k int) int { return g.entry(k).rows }

// DataBlockSym returns the symbol of data block k of a version 2 file
// (its directory slot's id); ok is false in a version 1 file.
func (g *Segment) DataBlockSym(k int) (id uint32, ok bool) {
	if g.version != VersionClustered {
		return 0, false
	}
	return g.dir[g.entry(k).slot].id, true
}

// SymCount is the number of symbols in the directory of a version 2 file
// (0 in a version 1 file).
func (g *Segment) SymCount() int { return len(g.dir) }

// SymAt returns directory slot j of a version 2 file: symbol id's rows
// are data blocks [first, first+nblocks), in seq order.
func (g *Segment) SymAt(j int) (id uint32, first, nblocks int) {
	d := &g.dir[j]
	return d.id, d.first, d.nblocks
}

func growInt64(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n, max(n, BlockRows))
	}
	return s[:n]
}

func growU32(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n, max(n, BlockRows))
	}
	return s[:n]
}
