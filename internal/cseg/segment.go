package cseg

import (
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/store"
)

// Segment is an open compressed segment file, mapped read-only.
//
// A Segment is used by one goroutine at a time: Block decodes through
// scratch buffers it owns (see the package doc's Concurrency section). The
// rows Block returns live in the caller's dst, not in the mapping, so they
// stay valid after Close.
type Segment struct {
	layout
	schema *store.Schema // the layout's schema (Open's, or an earlier layout of it)
	path   string
	data   []byte // the mapping; nil once closed
	size   int64
	h      Header
	// The block index is read in place, from the mapping (Open checked
	// it): nblocks entries of es bytes at indexOff (entry). A segment's
	// open then allocates nothing per block, which a fresh process would
	// pay for in page faults, segment after segment.
	nblocks  int
	indexOff int64
	es       int
	colSum   []int64 // per column: bytes in all blocks, length prefixes included

	late      bool // FlagLate: rows may go back in ts
	version   int
	clustered // version 2 only

	*Scratch // Block's scratch: the segment's own, or shared (OpenShared)

	fetch Fetcher // nil: every byte of the file is there (OpenFetched)
}

// Fetcher fills byte ranges of a compressed segment file that is not all
// there yet: a sparse copy of the segment kept elsewhere (an object in an
// archive), whose bytes are written into the file on demand. A Segment
// opened with one (OpenFetched) calls Fetch(off, n) before it first reads
// bytes [off, off+n) of the file: the header and the tables at its end at
// open, then a block's bytes or a rank frame's as it decodes them (and a
// symbol's run of blocks at once for WillNeed). Fetch returns once the
// bytes are in the file (a range already there costs it a lookup), and
// an error when they cannot be had: the read that asked fails with it.
// It is called from any goroutine reading the Segment (ColReaders run
// concurrently), so it must be safe for concurrent use.
type Fetcher interface {
	Fetch(off, n int64) error
}

// Scratch is the buffers a Segment's block reads decode through (nothing
// in them outlives a call). A caller that opens many segments and reads
// them from one goroutine at a time can share one among them
// (OpenShared): opening a segment then allocates no decode buffers of its
// own (about 160 KiB for blocks of 4,096 rows), which a fresh process
// pays for in page faults. The zero value is ready to use.
type Scratch struct {
	frames []frame
	raw    []byte
	ts     []int64
	keys   []uint32
	u32    []uint32
	f64    []float64
	i64    []int64
	bools  []bool
	offs   []int64 // a version 2 data block's seq offsets
	state  codec.State
}

// frame locates one column's zstd frame in the file.
type frame struct {
	off int64
	len int
}

// Open maps the compressed segment at path and checks its header against
// want (magic, version, table id, segment number, row size, rows per
// segment, and the row count unless want.Rows is 0) and against the schema
// s (the table's, from ctl: column count and types), the header's CRC32C,
// and the block index (its CRC32C, and that its blocks tile the file, have
// the row counts the header implies and do not go back in time). It does
// not read the blocks: Block checks each one when it decodes it.
//
// An error opening the file is returned as is (os.ErrNotExist included);
// a file that fails a check gives a *store.CorruptError naming path and the
// byte offset of the field at fault. A schema whose row size is not
// want.RowSize gives an error wrapping ErrArgs.
//
// A table whose rows had several layouts (store.Schema.AddColumn) passes
// its newest schema and want.RowSize 0: the segment is read in the layout
// its header's row size names (s.Prefix), which Schema returns.
func Open(path string, s *store.Schema, want Header) (*Segment, error) {
	return OpenShared(path, s, want, nil)
}

// OpenShared is Open with the block reads' buffers in sc, shared with the
// other segments opened with it: the caller reads them from one goroutine
// at a time. A nil sc is Open's own scratch.
func OpenShared(path string, s *store.Schema, want Header, sc *Scratch) (*Segment, error) {
	return OpenFetched(path, s, want, sc, nil)
}

// OpenFetched is OpenShared on a file whose bytes f brings in as they
// are read (see Fetcher); a nil f is OpenShared. The file has its full
// size from the start (a sparse file: the bytes not fetched yet read as
// zeros, which no check would pass).
func OpenFetched(path string, s *store.Schema, want Header, sc *Scratch, f Fetcher) (*Segment, error) {
	anyLayout := want.RowSize == 0 && s != nil
	if anyLayout {
		want.RowSize = s.RowSize
	}
	if err := checkHeader(s, want); err != nil {
		return nil, err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < headerSize+4 {
		return nil, format.Corruptf(path, size, "compressed segment is %d bytes, shorter than a header and an index (%d)", size, headerSize+4)
	}
	if f != nil {
		if err := f.Fetch(0, headerSize); err != nil {
			return nil, fetchErr(path, 0, headerSize, err)
		}
	}
	b, err := mmap.MapShared(file, int(size), false)
	if err != nil {
		return nil, err
	}
	// Reads are explicit: Open reads the header and the tables at the end,
	// a block read asks for exactly its bytes (WillNeed), and a page fault
	// reads its page only, not the device's read-ahead window.
	_ = mmap.AdviseRandom(b)
	if rs := int(le.Uint32(b[hRowSize:])); anyLayout && rs != s.RowSize {
		if n := s.Layout(rs); n >= 0 {
			s, want.RowSize = s.Prefix(n), rs
		}
	}
	g := &Segment{layout: newLayout(s), schema: s, path: path, data: b, size: size, Scratch: sc, fetch: f}
	if g.Scratch == nil {
		g.Scratch = new(Scratch)
	}
	if err := g.parse(s, want); err != nil {
		mmap.Unmap(b)
		return nil, err
	}
	g.grow(min(int(g.h.Rows), BlockRows))
	return g, nil
}

// Schema is the schema of the segment's rows: Open's, or the earlier
// layout of it the segment was written in.
func (g *Segment) Schema() *store.Schema { return g.schema }

// RowSize is the size of the segment's rows.
func (g *Segment) RowSize() int { return g.rs }

// grow allocates Block's scratch for blocks of n rows: only the typed
// buffers the schema's columns need, so opening a segment to read one block
// stays cheap.
func (g *Segment) grow(n int) { g.Scratch.grow(&g.layout, n) }

func (sc *Scratch) grow(l *layout, n int) {
	if len(sc.frames) < len(l.cols) {
		sc.frames = make([]frame, len(l.cols))
	}
	if cap(sc.raw) < maxColumnBlock(n) {
		sc.raw = make([]byte, 0, maxColumnBlock(n))
	}
	if cap(sc.ts) < n {
		sc.ts = make([]int64, 0, n)
	}
	if l.symCol >= 0 && cap(sc.keys) < n {
		sc.keys = make([]uint32, 0, n)
	}
	for c, col := range l.cols {
		switch {
		case col.Type == store.TypeSym && c != l.symCol && cap(sc.u32) < n:
			sc.u32 = make([]uint32, 0, n)
		case col.Type == store.TypeF64 && cap(sc.f64) < n:
			sc.f64 = make([]float64, 0, n)
		case col.Type == store.TypeI64 && cap(sc.i64) < n:
			sc.i64 = make([]int64, 0, n)
		case col.Type == store.TypeBool && cap(sc.bools) < n:
			sc.bools = make([]bool, 0, n)
		}
	}
}

// Prepare readies sc for reading blocks of schema s: it allocates the
// buffers a version 2 block's decode uses (the codec's work buffers
// included) and writes every page of them once, so that the first block a
// process decodes takes no page faults on them (about 60 faults for the
// tick schema; a fresh page costs ~14 µs on the reference VM). A reader
// runs it in the background when it opens a table with compressed
// segments.
func (sc *Scratch) Prepare(s *store.Schema) {
	l := newLayout(s)
	sc.grow(&l, BlockRows)
	if cap(sc.offs) < BlockRows {
		sc.offs = make([]int64, 0, BlockRows)
	}
	sc.state.Reserve(BlockRows)
	clear(sc.raw[:cap(sc.raw)])
	clear(sc.ts[:cap(sc.ts)])
	clear(sc.offs[:cap(sc.offs)])
	clear(sc.keys[:cap(sc.keys)])
	clear(sc.u32[:cap(sc.u32)])
	clear(sc.f64[:cap(sc.f64)])
	clear(sc.i64[:cap(sc.i64)])
	clear(sc.bools[:cap(sc.bools)])
}

// parse checks the header and the index of g.data and fills g.h, the
// index's place and g.colSum.
func (g *Segment) parse(s *store.Schema, want Header) error {
	b, path := g.data, g.path
	size := int64(len(b))
	if string(b[hMagic:hMagic+8]) != Magic {
		return format.Corruptf(path, hMagic, "bad compressed segment magic %q, want %q", b[hMagic:hMagic+8], Magic)
	}
	version := le.Uint32(b[hVersion:])
	check, end := hCheck, hEnd
	switch version {
	case VersionSeqOrder:
	case VersionClustered:
		check, end = h2Check, h2End
	default:
		return format.Corruptf(path, hVersion, "compressed segment format version %d, this build reads %d to %d", version, VersionSeqOrder, Version)
	}
	if got, want := le.Uint32(b[check:]), format.CRC32C(b[:check]); got != want {
		return format.Corruptf(path, int64(check), "header check %08x, computed %08x", got, want)
	}
	flags := le.Uint32(b[hFlags:])
	if flags&^knownFlags != 0 {
		return format.Corruptf(path, hFlags, "feature flags %#x: this build knows %#x (written by a newer version?)", flags, knownFlags)
	}
	for i := end; i < headerSize; i++ {
		if b[i] != 0 {
			return format.Corruptf(path, int64(i), "nonzero byte %#02x in the header's zero area", b[i])
		}
	}
	var h Header
	copy(h.TableID[:], b[hTableID:hTableID+16])
	h.SegNo = le.Uint64(b[hSegNo:])
	h.RowsPerSeg = le.Uint64(b[hRowsPerSeg:])
	h.Rows = le.Uint64(b[hRows:])
	h.RowSize = int(le.Uint32(b[hRowSize:]))
	switch {
	case h.TableID != want.TableID:
		return format.Corruptf(path, hTableID, "table id %x, want %x", h.TableID, want.TableID)
	case h.SegNo != want.SegNo:
		return format.Corruptf(path, hSegNo, "segment %d, want %d", h.SegNo, want.SegNo)
	case h.RowsPerSeg != want.RowsPerSeg:
		return format.Corruptf(path, hRowsPerSeg, "%d rows per segment, want %d", h.RowsPerSeg, want.RowsPerSeg)
	case h.Rows > h.RowsPerSeg || (want.Rows != 0 && h.Rows != want.Rows):
		return format.Corruptf(path, hRows, "%d rows, want %d (at most %d)", h.Rows, want.Rows, h.RowsPerSeg)
	case h.RowSize != want.RowSize:
		return format.Corruptf(path, hRowSize, "%d-byte rows, want %d", h.RowSize, want.RowSize)
	}
	if v := le.Uint32(b[hBlockRows:]); v != BlockRows {
		return format.Corruptf(path, hBlockRows, "%d rows per block, want %d", v, BlockRows)
	}
	nblocks := numBlocks(h.Rows)
	if version == VersionClustered {
		// One symbol's rows a block: as many blocks as the directory
		// says, checked against it below.
		nblocks = uint64(le.Uint32(b[hBlocks:]))
		if nblocks < numBlocks(h.Rows) || nblocks > h.Rows {
			return format.Corruptf(path, hBlocks, "%d blocks for %d rows", nblocks, h.Rows)
		}
	} else if v := le.Uint32(b[hBlocks:]); uint64(v) != nblocks {
		return format.Corruptf(path, hBlocks, "%d blocks for %d rows, want %d", v, h.Rows, nblocks)
	}
	ncols := len(s.Cols)
	if v := le.Uint32(b[hCols:]); v != uint32(ncols) {
		return format.Corruptf(path, hCols, "%d columns, the schema has %d", v, ncols)
	}
	for i := range colTypesBytes {
		var t byte
		if i < ncols {
			t = byte(s.Cols[i].Type)
		}
		if b[hColTypes+i] != t {
			return format.Corruptf(path, int64(hColTypes+i), "column %d has type code %d, the schema's is %d", i, b[hColTypes+i], t)
		}
	}
	es := int64(entrySize(ncols))
	indexOff, indexLen := le.Uint64(b[hIndexOff:]), le.Uint64(b[hIndexLen:])
	if indexOff < uint64(size) {
		_ = mmap.WillNeed(b[indexOff&^(format.BlockSize-1):]) // the tables, in one read
	}
	if indexOff < headerSize || indexOff%8 != 0 || indexOff > uint64(size) {
		return format.Corruptf(path, hIndexOff, "index offset %d in a %d-byte file", indexOff, size)
	}
	if g.fetch != nil {
		// The tables to the end, and the zero padding before them.
		from := max(int64(indexOff)-8, headerSize)
		if err := g.fetch.Fetch(from, size-from); err != nil {
			return fetchErr(path, from, size, err)
		}
	}
	fileEnd := uint64(size)
	if version == VersionClustered {
		fileEnd = indexOff + indexLen // checked against the tables after it
	}
	if indexLen != fileEnd-indexOff || indexLen != nblocks*uint64(es)+4 || indexLen > uint64(size)-indexOff {
		return format.Corruptf(path, hIndexLen, "index of %d bytes at %d in a %d-byte file, want %d for %d blocks",
			indexLen, indexOff, size, nblocks*uint64(es)+4, nblocks)
	}
	g.h = h
	g.version = int(version)
	g.late = flags&FlagLate != 0
	if version == VersionClustered {
		return g.parseClustered(int64(indexOff), int(nblocks), int(es))
	}
	next, err := g.parseIndex(int64(indexOff), int(nblocks), int(es))
	if err != nil {
		return err
	}
	return g.zeroTo(next, int64(indexOff))
}

// zeroTo checks that the blocks (or rank frames) ending at next are
// followed by the zero padding up to the 8-aligned index at off.
func (g *Segment) zeroTo(next, off int64) error {
	if (next+7)&^7 != off {
		return format.Corruptf(g.path, next, "blocks end at %d, want the index at %d just after them (8-aligned)", next, off)
	}
	for i := next; i < off; i++ {
		if g.data[i] != 0 {
			return format.Corruptf(g.path, i, "nonzero byte %#02x before the index", g.data[i])
		}
	}
	return nil
}

// parseIndex checks the block index at off, notes its place and fills
// g.colSum, and returns the file offset where the blocks end. In a
// version 2 file it checks the entries against the directory g.dir.
func (g *Segment) parseIndex(off int64, nblocks, es int) (int64, error) {
	b, path, ncols := g.data, g.path, len(g.cols)
	index := b[off:]
	n := nblocks * es
	if got, want := le.Uint32(index[n:]), format.CRC32C(index[:n]); got != want {
		return 0, format.Corruptf(path, off+int64(n), "block index check %08x, computed %08x", got, want)
	}
	g.nblocks, g.indexOff, g.es = nblocks, off, es
	g.colSum = make([]int64, ncols)
	next := int64(headerSize)
	prevMax := int64(math.MinInt64)
	for i := range nblocks {
		e := index[i*es : (i+1)*es]
		eo := off + int64(i*es) // the entry's file offset, for errors
		wantRows, slot := g.wantBlock(i)
		if slot >= 0 && g.dir[slot].first == i {
			prevMax = math.MinInt64 // a symbol's run starts: ts start over
		}
		ent := readEntry(e)
		switch {
		case ent.off != next:
			return 0, format.Corruptf(path, eo+eOff, "block %d at offset %d, want %d", i, ent.off, next)
		case int64(ent.len) > off-next:
			return 0, format.Corruptf(path, eo+eLen, "block %d of %d bytes at %d runs past the index at %d", i, ent.len, ent.off, off)
		case ent.rows != wantRows:
			return 0, format.Corruptf(path, eo+eRows, "block %d holds %d rows, want %d", i, ent.rows, wantRows)
		case ent.minTs > ent.maxTs:
			return 0, format.Corruptf(path, eo+eMinTs, "block %d: min ts %d above max ts %d", i, ent.minTs, ent.maxTs)
		case ent.minTs < prevMax && !g.late:
			return 0, format.Corruptf(path, eo+eMinTs, "block %d: min ts %d below the previous block's max %d", i, ent.minTs, prevMax)
		case slot < 0 && le.Uint32(e[eReserved:]) != 0:
			return 0, format.Corruptf(path, eo+eReserved, "block %d: reserved word is %#x, want 0", i, le.Uint32(e[eReserved:]))
		case slot >= 0 && le.Uint32(e[eSlot:]) != uint32(slot):
			return 0, format.Corruptf(path, eo+eSlot, "block %d: directory slot %d, want %d", i, le.Uint32(e[eSlot:]), slot)
		}
		for j := eColLen + 4*ncols; j < es; j++ {
			if e[j] != 0 {
				return 0, format.Corruptf(path, eo+int64(j), "block %d: nonzero entry padding", i)
			}
		}
		sum := int64(frameLenSize * ncols)
		for c := range ncols {
			l := le.Uint32(e[eColLen+4*c:])
			g.colSum[c] += int64(frameLenSize) + int64(l)
			sum += int64(l)
		}
		if sum != int64(ent.len) {
			return 0, format.Corruptf(path, eo+eColLen, "block %d: column frames and their lengths take %d bytes, the block %d", i, sum, ent.len)
		}
		next += int64(ent.len)
		prevMax = ent.maxTs
	}
	return next, nil
}

// Rows is the number of rows the segment stores.
func (g *Segment) Rows() uint64 { return g.h.Rows }

// Blocks is the number of blocks in seq order (Block's): ceil(Rows /
// BlockRows), whatever the format version.
func (g *Segment) Blocks() int {
	if g.version == VersionClustered {
		return g.nranks
	}
	return g.nblocks
}

// Size is the file's size in bytes.
func (g *Segment) Size() int64 { return g.size }

// ColBytes returns the compressed bytes of each schema column (schema
// order), summed over the blocks, each column frame's 4-byte length
// prefix included, as recorded in the index (no block is read). In a
// version 2 file the sym column's are the seq-order index's (OrderBytes),
// which carries it; the seq column's are SeqBytes. The
// returned slice is the caller's.
func (g *Segment) ColBytes() []int64 { return slices.Clone(g.colSum) }

// BlockTs returns the ts of block b's first and last rows, from the index.
// b must be in [0, Blocks()).
func (g *Segment) BlockTs(b int) (min, max int64) {
	if g.version == VersionClustered {
		r := g.rank(b)
		return r.minTs, r.maxTs
	}
	e := g.entry(b)
	return e.minTs, e.maxTs
}

// Close unmaps the file. Rows already returned by Block stay valid (they
// are in the caller's buffer); Block fails with ErrClosed afterwards. The
// index is read from the mapping, so its accessors (BlockTs, DataBlockTs,
// SymSeek, WillNeed) must not be called after Close. Closing twice is a
// no-op.
func (g *Segment) Close() error {
	b := g.data
	g.data = nil
	return mmap.Unmap(b)
}

// Block decodes block b into dst[:n*RowSize], where n is the block's row
// count (BlockRows, or fewer for the last block), and returns that slice;
// dst is replaced by a new buffer when its capacity is short. Each row is
// the raw segment's row: every column at its schema offset, padding zero,
// and the check word recomputed (format.Seal) for sequence number
// SegNo*RowsPerSeg + b*BlockRows + i.
//
// Before decoding, Block checks the block's CRC32C and that each column
// frame has the length the index gives; while decoding, that every frame
// decompresses and decodes to exactly n values with no bytes left over, and
// that ts never goes back and starts and ends at the index's min and max.
// A failure is a *store.CorruptError naming the file and the offset of the
// block or the column frame at fault; dst's contents are then undefined.
//
// With a dst of capacity BlockRows*RowSize and the Segment's scratch warm
// (after its first Block), Block allocates nothing, unless the block's sym
// ids reach 65536 (see the package doc's Caveats). b out of range is an
// error wrapping ErrArgs.
func (g *Segment) Block(b int, dst []byte) ([]byte, error) {
	if g.data == nil {
		return dst, ErrClosed
	}
	if b < 0 || b >= g.Blocks() {
		return dst, fmt.Errorf("%w: block %d of %d", ErrArgs, b, g.Blocks())
	}
	if g.version == VersionClustered {
		return g.blockClustered(b, dst)
	}
	e, err := g.checkBlock(b)
	if err != nil {
		return dst, err
	}

	n, rs := e.rows, g.rs
	if cap(dst) < n*rs {
		dst = make([]byte, n*rs)
	}
	dst = dst[:n*rs]
	var key []uint32
	if g.symCol >= 0 {
		raw, err := g.frameBytes(b, g.symCol, n)
		if err != nil {
			return dst, err
		}
		keys, used, err := codec.DecodeU32(g.keys[:0], raw, n)
		if err = g.decoded(b, g.symCol, raw, used, err); err != nil {
			return dst, err
		}
		key, g.keys = keys, keys
		scatterU32(dst, rs, g.cols[g.symCol].Off, key)
	}
	for c, col := range g.cols {
		if c == g.symCol {
			continue
		}
		raw, err := g.frameBytes(b, c, n)
		if err != nil {
			return dst, err
		}
		var used int
		switch col.Type {
		case store.TypeTs:
			g.ts, used, err = codec.DecodeTs(g.ts[:0], raw, n)
			if err = g.decoded(b, c, raw, used, err); err != nil {
				return dst, err
			}
			if err = g.scatterTs(b, dst, e); err != nil {
				return dst, err
			}
		case store.TypeSym:
			g.u32, used, err = codec.DecodeU32(g.u32[:0], raw, n)
			if err = g.decoded(b, c, raw, used, err); err != nil {
				return dst, err
			}
			scatterU32(dst, rs, col.Off, g.u32)
		case store.TypeF64:
			g.f64, used, err = codec.DecodeF64(g.f64[:0], raw, n, key, &g.state)
			if err = g.decoded(b, c, raw, used, err); err != nil {
				return dst, err
			}
			for i, o := 0, col.Off; i < n; i, o = i+1, o+rs {
				le.PutUint64(dst[o:], math.Float64bits(g.f64[i]))
			}
		case store.TypeI64:
			g.i64, used, err = codec.DecodeI64(g.i64[:0], raw, n, key, &g.state)
			if err = g.decoded(b, c, raw, used, err); err != nil {
				return dst, err
			}
			for i, o := 0, col.Off; i < n; i, o = i+1, o+rs {
				le.PutUint64(dst[o:], uint64(g.i64[i]))
			}
		case store.TypeBool:
			g.bools, used, err = codec.DecodeBool(g.bools[:0], raw, n)
			if err = g.decoded(b, c, raw, used, err); err != nil {
				return dst, err
			}
			for i, o := 0, col.Off; i < n; i, o = i+1, o+rs {
				var x byte
				if g.bools[i] {
					x = 1
				}
				dst[o] = x
			}
		}
	}
	seal(dst, rs, &g.layout, g.h.baseSeq()+uint64(b)*BlockRows)
	return dst, nil
}

// checkBlock checks data block b's CRC32C and its column frames' length
// prefixes against the index, and points g.frames at its frames.
func (g *Segment) checkBlock(b int) (blockEntry, error) {
	e := g.entry(b)
	if err := g.need(e.off, e.off+int64(e.len)); err != nil {
		return e, err
	}
	body := g.data[e.off : e.off+int64(e.len)]
	if got := format.CRC32C(body); got != e.crc {
		return e, format.Corruptf(g.path, e.off, "block %d check %08x, computed %08x (index)", b, got, e.crc)
	}
	ncols := len(g.cols)
	p := 0
	for c := range ncols {
		// The index's lengths tile the block (Open checked), so the
		// prefixes are in bounds; they must agree with the index.
		l := le.Uint32(body[p:])
		if want := g.colLen(b, c); l != want {
			return e, format.Corruptf(g.path, e.off+int64(p), "block %d column %q: frame length %d, the index says %d", b, g.names[c], l, want)
		}
		g.frames[c] = frame{off: e.off + int64(p+frameLenSize), len: int(l)}
		p += frameLenSize + int(l)
	}
	return e, nil
}

// seal zeroes the padding [padLo, padHi) of each rs-byte row of dst and
// writes its check word, the first row's for sequence number seq. 32-byte
// rows (the tick schema) have no padding and take format.Check32 inline, as
// the writer's append loop does; the result is format.Seal's.
func seal(dst []byte, rs int, l *layout, seq uint64) {
	padLo, padHi := l.padLo, l.padHi
	if rs == 32 && padLo == 28 && len(l.gaps) == 0 {
		for o := 0; o+32 <= len(dst); o += 32 {
			row := dst[o : o+32 : o+32]
			le.PutUint32(row[28:], format.Check32(seq, le.Uint64(row[0:]), le.Uint64(row[8:]), le.Uint64(row[16:]), le.Uint32(row[24:])))
			seq++
		}
		return
	}
	for o := 0; o+rs <= len(dst); o += rs {
		row := dst[o : o+rs]
		clear(row[padLo:padHi])
		for k := 0; k < len(l.gaps); k += 2 {
			clear(row[l.gaps[k]:l.gaps[k+1]])
		}
		format.Seal(seq, row)
		seq++
	}
}

// frameBytes decompresses column c's frame of block b (n rows) into g.raw
// and returns it.
func (g *Segment) frameBytes(b, c, n int) ([]byte, error) {
	fr := g.frames[c]
	// (+8: a version 2 ts frame starts with its rate.)
	raw, err := codec.Decompress(g.raw[:0], g.data[fr.off:fr.off+int64(fr.len)], maxColumnBlock(n)+8)
	if err != nil {
		return nil, format.Corruptf(g.path, fr.off, "block %d column %q: %v", b, g.names[c], err)
	}
	g.keepRaw(raw)
	return raw, nil
}

// keepRaw keeps raw, what Decompress returned into g.raw[:0], as g.raw if
// it had to grow: Decompress caps its result at the call's limit, which
// for a short block is below the buffer's capacity, and keeping that
// would make the next longer block grow it again.
func (g *Segment) keepRaw(raw []byte) {
	if cap(raw) > cap(g.raw) {
		g.raw = raw
	}
}

// decoded turns the outcome of decoding column c of block b from raw (used
// bytes of it, or err) into a corrupt error, or nil.
func (g *Segment) decoded(b, c int, raw []byte, used int, err error) error {
	if err != nil {
		return format.Corruptf(g.path, g.frames[c].off, "block %d column %q: %v", b, g.names[c], err)
	}
	if used != len(raw) {
		return format.Corruptf(g.path, g.frames[c].off, "block %d column %q: %d bytes after the column's values", b, g.names[c], len(raw)-used)
	}
	return nil
}

// scatterTs writes the decoded ts into the rows of dst after checkTs.
func (g *Segment) scatterTs(b int, dst []byte, e blockEntry) error {
	if _, err := g.checkTs(b, e); err != nil {
		return err
	}
	for i, o := 0, 0; i < len(g.ts); i, o = i+1, o+g.rs {
		le.PutUint64(dst[o:], uint64(g.ts[i]))
	}
	return nil
}

// checkTs checks that the decoded ts of block e never go back (unless the
// file has late rows) and span exactly the index's [min, max], and
// reports whether they ascend.
func (g *Segment) checkTs(b int, e blockEntry) (asc bool, err error) {
	ts := g.ts
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	asc = true
	for i, t := range ts {
		if t < hi {
			if !g.late {
				return false, format.Corruptf(g.path, g.frames[0].off, "block %d row %d: ts %d below %d", b, i, t, hi)
			}
			asc = false
		}
		lo, hi = min(lo, t), max(hi, t)
	}
	if len(ts) > 0 && (lo != e.minTs || hi != e.maxTs) {
		return false, format.Corruptf(g.path, g.frames[0].off, "block %d: ts from %d to %d, the index says %d to %d", b, lo, hi, e.minTs, e.maxTs)
	}
	return asc, nil
}

// scatterU32 writes v into the u32 column at offset off of the rows of dst.
func scatterU32(dst []byte, rs, off int, v []uint32) {
	for i, o := 0, off; i < len(v); i, o = i+1, o+rs {
		le.PutUint32(dst[o:], v[i])
	}
}

// need makes sure bytes [from, to) of the file are there (Fetcher) and
// asks for them in one read (willNeed).
func (g *Segment) need(from, to int64) error {
	if g.fetch != nil {
		if err := g.fetch.Fetch(from, to-from); err != nil {
			return fetchErr(g.path, from, to, err)
		}
	}
	g.willNeed(from, to)
	return nil
}

// fetchErr is the error of a Fetcher that failed to bring in bytes
// [from, to) of the file at path.
func fetchErr(path string, from, to int64, err error) error {
	return fmt.Errorf("cseg: %s: fetching bytes [%d, %d): %w", path, from, to, err)
}

// willNeed asks for bytes [from, to) of the file in one read, before the
// page faults that would read them a page at a time.
func (g *Segment) willNeed(from, to int64) {
	from &^= format.BlockSize - 1
	if to = min(to, int64(len(g.data))); from < to {
		_ = mmap.WillNeed(g.data[from:to])
	}
}

// entry is block index entry i, read from the mapping.
func (g *Segment) entry(i int) blockEntry {
	return readEntry(g.data[g.indexOff+int64(i*g.es):])
}

// colLen is the length of column c's frame in block i, from its index
// entry.
func (g *Segment) colLen(i, c int) uint32 {
	return le.Uint32(g.data[g.indexOff+int64(i*g.es+eColLen+4*c):])
}

// rank is rank table entry r of a version 2 file, read from the mapping.
func (g *Segment) rank(r int) rankEnt {
	return readRank(g.data[g.rankOff+int64(r*rankEntry):])
}
