package cseg

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// clustered is the part of a Segment that only version 2 files use.
type clustered struct {
	dir        []dirEnt // by slot, ids ascending
	nranks     int      // rank table entries, read in place (rank)
	rankOff    int64    // the rank table's offset
	seqBytes   int64
	orderBytes int64

	// Block's scratch: one rank frame decoded, the next rank of each
	// slot's rows, the generation that set it, and per slot the data
	// block decoded last (a seq-ordered scan takes each symbol's blocks
	// in turn, so each is decoded once).
	rslots  []uint32
	present []uint32
	counts  []int64
	cur     []uint64
	stamp   []uint32
	gen     uint32
	rankCur int      // 1 + the rank block in rslots and rowRank (0: none)
	rowRank []uint64 // each row's rank among its symbol's rows
	one     []byte   // RowInto's block in a version 1 file
	// RowInto's rank frames, decoded (a lone row's symbol slot and rank
	// among its symbol's rows), for up to rankWays blocks: random rows
	// over a few blocks would otherwise decode a rank frame a row.
	ranks [rankWays]rankFrame
	cache []cachedBlock
	free  []cachedBlock // buffers handed over by DropCache
}

// cachedBlock is a decoded data block: its rows without check words, and
// their sequence numbers.
type cachedBlock struct {
	blk  int // -1: none
	rows []byte
	seqs []uint64
}

// rankWays is how many rank frames RowInto keeps decoded (rankFrame),
// blocks b mapped to b%rankWays: 32 KiB each.
const rankWays = 16

// rankFrame is rank block blk-1's symbol slots and ranks, for RowInto
// (blk 0: none).
type rankFrame struct {
	blk   int
	slots []uint32
	ranks []uint32
}

// wantBlock returns the rows data block i must hold and the directory slot
// of its symbol (-1 in a version 1 file).
func (g *Segment) wantBlock(i int) (rows, slot int) {
	if g.version != VersionClustered {
		return min(int(g.h.Rows-uint64(i)*BlockRows), BlockRows), -1
	}
	j := sort.Search(len(g.dir), func(j int) bool { return g.dir[j].first > i }) - 1
	d := &g.dir[j]
	if i < d.first+d.nblocks-1 {
		return BlockRows, j
	}
	return int(d.rows - uint64(d.nblocks-1)*BlockRows), j
}

// parseClustered checks the version 2 fields of the header, the
// directory, the block index and the rank table.
func (g *Segment) parseClustered(indexOff int64, nblocks, es int) error {
	b, path := g.data, g.path
	size := int64(len(b))
	switch {
	case g.symCol < 0 || le.Uint32(b[h2SymCol:]) != uint32(g.symCol):
		return format.Corruptf(path, h2SymCol, "clustered by column %d, the schema's sym column is %d", le.Uint32(b[h2SymCol:]), g.symCol)
	case le.Uint32(b[h2Reserved:]) != 0:
		return format.Corruptf(path, h2Reserved, "reserved header word is %#x, want 0", le.Uint32(b[h2Reserved:]))
	}
	nsyms, nranks := uint64(le.Uint32(b[h2Syms:])), uint64(le.Uint32(b[h2Ranks:]))
	if nranks != numBlocks(g.h.Rows) {
		return format.Corruptf(path, h2Ranks, "%d rank blocks for %d rows, want %d", nranks, g.h.Rows, numBlocks(g.h.Rows))
	}
	if nsyms == 0 || nsyms > uint64(nblocks) {
		return format.Corruptf(path, h2Syms, "%d symbols in %d blocks", nsyms, nblocks)
	}
	indexEnd := indexOff + int64(nblocks*es) + 4
	dirOff, dirLen := int64(le.Uint64(b[h2DirOff:])), int64(le.Uint64(b[h2DirLen:]))
	rankOff, rankLen := int64(le.Uint64(b[h2RankOff:])), int64(le.Uint64(b[h2RankLen:]))
	switch {
	case dirOff != indexEnd+tableGap:
		return format.Corruptf(path, h2DirOff, "directory at %d, want %d", dirOff, indexEnd+tableGap)
	case dirLen != int64(nsyms)*dirEntry+4:
		return format.Corruptf(path, h2DirLen, "directory of %d bytes, want %d", dirLen, int64(nsyms)*dirEntry+4)
	case rankOff != dirOff+dirLen+tableGap:
		return format.Corruptf(path, h2RankOff, "rank table at %d, want %d", rankOff, dirOff+dirLen+tableGap)
	case rankLen != int64(nranks)*rankEntry+4 || rankOff+rankLen != size:
		return format.Corruptf(path, h2RankLen, "rank table of %d bytes at %d in a %d-byte file, want %d", rankLen, rankOff, size, int64(nranks)*rankEntry+4)
	}
	for _, gap := range [][2]int64{{indexEnd, dirOff}, {dirOff + dirLen, rankOff}} {
		for i := gap[0]; i < gap[1]; i++ {
			if b[i] != 0 {
				return format.Corruptf(path, i, "nonzero byte %#02x between tables", b[i])
			}
		}
	}

	// Directory.
	d := b[dirOff : dirOff+dirLen]
	n := int(nsyms) * dirEntry
	if got, want := le.Uint32(d[n:]), format.CRC32C(d[:n]); got != want {
		return format.Corruptf(path, dirOff+int64(n), "directory check %08x, computed %08x", got, want)
	}
	g.dir = make([]dirEnt, nsyms)
	first, rows := 0, uint64(0)
	for j := range g.dir {
		x := d[j*dirEntry:]
		eo := dirOff + int64(j*dirEntry)
		e := dirEnt{
			id:      le.Uint32(x[dId:]),
			first:   int(le.Uint32(x[dFirst:])),
			nblocks: int(le.Uint32(x[dBlocks:])),
			rows:    le.Uint64(x[dRows:]),
			minTs:   int64(le.Uint64(x[dMinTs:])),
			maxTs:   int64(le.Uint64(x[dMaxTs:])),
		}
		switch {
		case j > 0 && e.id <= g.dir[j-1].id:
			return format.Corruptf(path, eo+dId, "directory entry %d: symbol %d after %d", j, e.id, g.dir[j-1].id)
		case e.first != first:
			return format.Corruptf(path, eo+dFirst, "symbol %d: first block %d, want %d", e.id, e.first, first)
		case e.rows == 0 || e.rows > g.h.Rows-rows:
			return format.Corruptf(path, eo+dRows, "symbol %d: %d rows, %d left in the segment", e.id, e.rows, g.h.Rows-rows)
		case uint64(e.nblocks) != numBlocks(e.rows) || e.first+e.nblocks > nblocks:
			return format.Corruptf(path, eo+dBlocks, "symbol %d: %d blocks for %d rows from block %d of %d", e.id, e.nblocks, e.rows, e.first, nblocks)
		case le.Uint32(x[dReserved:]) != 0:
			return format.Corruptf(path, eo+dReserved, "symbol %d: reserved word is %#x, want 0", e.id, le.Uint32(x[dReserved:]))
		}
		g.dir[j] = e
		first += e.nblocks
		rows += e.rows
	}
	if first != nblocks || rows != g.h.Rows {
		return format.Corruptf(path, dirOff, "directory holds %d rows in %d blocks, want %d in %d", rows, first, g.h.Rows, nblocks)
	}

	// Block index (checked against the directory), then the symbols' ts
	// ranges against it.
	next, err := g.parseIndex(indexOff, nblocks, es)
	if err != nil {
		return err
	}
	for j, e := range g.dir {
		eo := dirOff + int64(j*dirEntry)
		lo, hi := g.runTs(e.first, e.first+e.nblocks)
		if e.minTs != lo || e.maxTs != hi {
			return format.Corruptf(path, eo+dMinTs, "symbol %d: ts from %d to %d, its blocks from %d to %d",
				e.id, e.minTs, e.maxTs, lo, hi)
		}
	}
	g.seqBytes = g.colSum[g.symCol]
	g.colSum[g.symCol] = 0
	g.names[g.symCol] = "seq" // its frame's place holds the seq column

	// Rank table: the frames follow the data blocks.
	dataEnd := next
	rt := b[rankOff : rankOff+rankLen]
	n = int(nranks) * rankEntry
	if got, want := le.Uint32(rt[n:]), format.CRC32C(rt[:n]); got != want {
		return format.Corruptf(path, rankOff+int64(n), "rank table check %08x, computed %08x", got, want)
	}
	g.nranks, g.rankOff = int(nranks), rankOff
	prevMax := int64(math.MinInt64)
	for r := range g.nranks {
		x := rt[r*rankEntry:]
		eo := rankOff + int64(r*rankEntry)
		e := readRank(x)
		rows := min(int(g.h.Rows-uint64(r)*BlockRows), BlockRows)
		switch {
		case e.off != next:
			return format.Corruptf(path, eo+rOff, "rank block %d at offset %d, want %d", r, e.off, next)
		case e.len == 0 || int64(e.len) > indexOff-next:
			return format.Corruptf(path, eo+rLen, "rank block %d of %d bytes at %d runs past the index at %d", r, e.len, e.off, indexOff)
		case e.present == 0 || e.present > min(rows, int(nsyms)):
			return format.Corruptf(path, eo+rPresent, "rank block %d: %d symbols in %d rows", r, e.present, rows)
		case le.Uint32(x[rReserved:]) != 0:
			return format.Corruptf(path, eo+rReserved, "rank block %d: reserved word is %#x, want 0", r, le.Uint32(x[rReserved:]))
		case e.minTs > e.maxTs:
			return format.Corruptf(path, eo+rMinTs, "rank block %d: min ts %d above max ts %d", r, e.minTs, e.maxTs)
		case e.minTs < prevMax && !g.late:
			return format.Corruptf(path, eo+rMinTs, "rank block %d: min ts %d below the previous block's max %d", r, e.minTs, prevMax)
		}
		next += int64(e.len)
		prevMax = e.maxTs
	}
	if err := g.zeroTo(next, indexOff); err != nil {
		return err
	}
	g.orderBytes = next - dataEnd + dirLen + rankLen
	g.colSum[g.symCol] = g.orderBytes // the sym column is carried by the seq-order index
	return nil
}

// Version is the file's format version: 1 (seq order) or 2 (clustered).
func (g *Segment) Version() int { return g.version }

// DataBlocks is the number of data blocks: Blocks() in a version 1 file;
// in a version 2 file the symbols' blocks (each symbol's rows take
// ceil(rows/BlockRows) blocks of its own).
func (g *Segment) DataBlocks() int { return g.nblocks }

// DataBlockTs returns the ts of data block k's first and last rows, from
// the index (k in [0, DataBlocks())). In a version 1 file it is BlockTs.
func (g *Segment) DataBlockTs(k int) (min, max int64) {
	e := g.entry(k)
	return e.minTs, e.maxTs
}

// SeqBytes is the bytes of the seq column of a version 2 file (frames and
// their length prefixes); 0 for version 1.
func (g *Segment) SeqBytes() int64 { return g.seqBytes }

// OrderBytes is the bytes of the seq-order index of a version 2 file (the
// rank frames, the directory and the rank table); 0 for version 1.
func (g *Segment) OrderBytes() int64 { return g.orderBytes }

// Sym looks symbol id up in the directory of a version 2 file: its rows
// are data blocks [first, first+nblocks), rows of them, in seq order. ok is
// false when the segment has no row of id, or is version 1 (which has no
// directory: use Block).
func (g *Segment) Sym(id uint32) (first, nblocks int, rows uint64, ok bool) {
	j := sort.Search(len(g.dir), func(j int) bool { return g.dir[j].id >= id })
	if j == len(g.dir) || g.dir[j].id != id {
		return 0, 0, 0, false
	}
	d := &g.dir[j]
	return d.first, d.nblocks, d.rows, true
}

// SymSeek returns the first data block of symbol id in a version 2 file
// that may hold a row with ts >= t (the first whose max ts is >= t), and
// the end of the symbol's blocks: the rows of id with ts >= t are in
// blocks [k, end). k == end when there is none, or the symbol is absent
// (then both are 0). A linear walk of the symbol's block entries (a few
// per segment): with late rows (rows stored behind a newer one, in
// arrival order) the blocks' max ts need not ascend.
func (g *Segment) SymSeek(id uint32, t int64) (k, end int) {
	first, n, _, ok := g.Sym(id)
	if !ok {
		return 0, 0
	}
	k = first
	for k < first+n && g.entry(k).maxTs < t {
		k++
	}
	return k, first + n
}

// WillNeed asks for data blocks [k, end) of the file in one read (they are
// consecutive: a symbol's run), ahead of the SymBlock calls that decode
// them.
func (g *Segment) WillNeed(k, end int) {
	if k < 0 || end > g.nblocks || k >= end {
		return
	}
	last := g.entry(end - 1)
	_ = g.need(g.entry(k).off, last.off+int64(last.len)) // a failure is the block read's to report
}

// SymBlock decodes data block k of a version 2 file into dst (its rows,
// RowSize bytes each, exactly the raw segment's: check words recomputed
// for their sequence numbers) and seqs (the rows' sequence numbers,
// ascending), replacing either when its capacity is short, and returns
// them. The block's rows are all of one symbol (see Sym), in seq order.
//
// It checks the block as Block does, and that the seq column ascends
// within the segment. A failure is a *store.CorruptError naming the file
// and offset. With dst and seqs of a block's capacity and the Segment's
// scratch warm, it allocates nothing. k out of range, or a version 1
// file, is an error wrapping ErrArgs.
func (g *Segment) SymBlock(k int, dst []byte, seqs []uint64) ([]byte, []uint64, error) {
	dst, seqs, _, err := g.symBlock(k, allRows, dst, seqs)
	return dst, seqs, err
}

// SymBlockIn is SymBlock for the rows of data block k in the ts window
// [from, hi] (hi inclusive): from the block's first row with ts >= from
// up to the first after it with ts > hi (with late rows the block's ts
// need not ascend: the rows between, in their order). It checks the whole
// block as SymBlock does but writes only those rows, so a window that
// takes a few rows of a block costs a few rows' memory. past reports that
// the block has a row with ts > hi after them, where a walk of the
// window stops. A window with from > hi is empty.
func (g *Segment) SymBlockIn(k int, from, hi int64, dst []byte, seqs []uint64) (_ []byte, _ []uint64, past bool, err error) {
	return g.symBlock(k, window{from, hi}, dst, seqs)
}

// symBlock is SymBlock and SymBlockIn: the rows of data block k that w
// picks, sealed.
func (g *Segment) symBlock(k int, w window, dst []byte, seqs []uint64) (_ []byte, _ []uint64, past bool, err error) {
	if g.data == nil {
		return dst, seqs, false, ErrClosed
	}
	if g.version != VersionClustered || k < 0 || k >= g.nblocks {
		return dst, seqs, false, fmt.Errorf("%w: data block %d of %d (format version %d)", ErrArgs, k, g.nblocks, g.version)
	}
	dst, seqs, past, err = g.decodeData(k, w, dst, seqs)
	if err != nil {
		return dst, seqs, false, err
	}
	sealSeqs(dst, g.rs, &g.layout, seqs)
	return dst, seqs, past, nil
}

// DropCache forgets the data blocks Block keeps decoded (one per symbol
// of a version 2 file, at most the segment's raw size) and the rank
// frames RowInto keeps, and hands their buffers to Segment to (nil: to
// the garbage collector), whose Block and RowInto reuse them: for a
// reader moving from one segment to another, so that only one segment's
// blocks are held and alternating costs no allocation.
// Block decodes the blocks again as needed. Both segments must be used by
// the caller's goroutine.
func (g *Segment) DropCache(to *Segment) {
	for i := range g.cache {
		c := &g.cache[i]
		if to != nil && to != g && (c.rows != nil || c.seqs != nil) {
			to.free = append(to.free, cachedBlock{rows: c.rows[:0], seqs: c.seqs[:0]})
		}
		g.cache[i] = cachedBlock{blk: -1}
	}
	for i := range g.ranks {
		f := &g.ranks[i]
		switch {
		case to == nil:
			*f = rankFrame{}
		case to != g && f.slots != nil && to.ranks[i].slots == nil:
			to.ranks[i] = rankFrame{slots: f.slots[:0], ranks: f.ranks[:0]}
			*f = rankFrame{}
		}
		f.blk = 0
	}
}

// blockClustered is Block for a version 2 file: rank block b's rows,
// taken from their symbols' data blocks through the seq-order index.
func (g *Segment) blockClustered(b int, dst []byte) ([]byte, error) {
	if err := g.decodeRank(b); err != nil {
		return dst, err
	}
	rk := g.rank(b)
	n, rs := len(g.rslots), g.rs
	if cap(dst) < n*rs {
		dst = make([]byte, n*rs)
	}
	dst = dst[:n*rs]
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range n {
		src, err := g.rankRow(b, i)
		if err != nil {
			return dst, err
		}
		row := dst[i*rs : (i+1)*rs]
		copy(row, src)
		t := int64(le.Uint64(row))
		if t < hi && !g.late {
			return dst, format.Corruptf(g.path, rk.off, "rank block %d row %d: ts %d below %d", b, i, t, hi)
		}
		lo, hi = min(lo, t), max(hi, t)
	}
	if n > 0 && (lo != rk.minTs || hi != rk.maxTs) {
		return dst, format.Corruptf(g.path, rk.off, "rank block %d: ts from %d to %d, the rank table says %d to %d", b, lo, hi, rk.minTs, rk.maxTs)
	}
	seal(dst, rs, &g.layout, g.h.baseSeq()+uint64(b)*BlockRows)
	return dst, nil
}

// RowInto decodes row i of the segment (0 <= i < Rows) into dst (RowSize
// bytes, check word recomputed): in a version 2 file only the rank frame
// of its block and the data block of its symbol, both kept decoded for
// the next call, instead of the whole block; a version 1 file decodes its
// block as Block does (through the Segment's own buffer). Errors are
// Block's.
func (g *Segment) RowInto(i uint64, dst []byte) error {
	if g.data == nil {
		return ErrClosed
	}
	if i >= g.h.Rows || len(dst) != g.rs {
		return fmt.Errorf("%w: row %d of %d into %d bytes", ErrArgs, i, g.h.Rows, len(dst))
	}
	b, r := int(i/BlockRows), int(i%BlockRows)
	if g.version != VersionClustered {
		rows, err := g.Block(b, g.one)
		g.one = rows
		if err != nil {
			return err
		}
		copy(dst, rows[r*g.rs:(r+1)*g.rs])
		return nil
	}
	f := &g.ranks[b%rankWays]
	if f.blk != b+1 {
		if err := g.decodeRank(b); err != nil {
			return err
		}
		n := len(g.rslots)
		if cap(f.slots) < n {
			f.slots, f.ranks = make([]uint32, BlockRows), make([]uint32, BlockRows)
		}
		f.slots, f.ranks = f.slots[:n], f.ranks[:n]
		copy(f.slots, g.rslots)
		for j, k := range g.rowRank {
			f.ranks[j] = uint32(k) // below the segment's rows, under 2^32
		}
		f.blk = b + 1
	}
	src, err := g.dataRow(b, r, f.slots[r], uint64(f.ranks[r]))
	if err != nil {
		return err
	}
	copy(dst, src)
	seal(dst, g.rs, &g.layout, g.h.baseSeq()+i)
	return nil
}

// decodeRank decodes and checks rank frame b into g.rslots and g.rowRank
// (each row's rank among its symbol's rows), unless it is the one decoded
// last.
func (g *Segment) decodeRank(b int) error {
	if g.rankCur == b+1 {
		return nil
	}
	g.rankCur = 0
	rk := g.rank(b)
	if g.fetch != nil {
		if err := g.need(rk.off, rk.off+int64(rk.len)); err != nil {
			return err
		}
	}
	body := g.data[rk.off : rk.off+int64(rk.len)]
	if got := format.CRC32C(body); got != rk.crc {
		return format.Corruptf(g.path, rk.off, "rank block %d check %08x, computed %08x (rank table)", b, got, rk.crc)
	}
	n, m := min(int(g.h.Rows-uint64(b)*BlockRows), BlockRows), rk.present
	raw, err := codec.Decompress(g.raw[:0], body, maxColumnBlock(n)+2*maxColumnBlock(m))
	if err != nil {
		return format.Corruptf(g.path, rk.off, "rank block %d: %v", b, err)
	}
	g.keepRaw(raw)
	var u1, u2, u3 int
	g.rslots, u1, err = decodeSlots(g.rslots[:0], raw, n, len(g.dir))
	if err == nil {
		g.present, u2, err = codec.DecodeU32(g.present[:0], raw[u1:], m)
	}
	if err == nil {
		g.counts, u3, err = codec.DecodeI64(g.counts[:0], raw[u1+u2:], m, nil, &g.state)
	}
	if err == nil && u1+u2+u3 != len(raw) {
		err = fmt.Errorf("%d bytes after the rank block's values", len(raw)-u1-u2-u3)
	}
	if err != nil {
		return format.Corruptf(g.path, rk.off, "rank block %d: %v", b, err)
	}
	nsyms := len(g.dir)
	g.initCache()
	g.gen++
	if g.gen == 0 { // wrapped: no stale stamp may match
		clear(g.stamp)
		g.gen = 1
	}
	for j, sl := range g.present {
		c := g.counts[j]
		if int(sl) >= nsyms || (j > 0 && sl <= g.present[j-1]) || c < 0 || uint64(c) >= g.dir[sl].rows {
			return format.Corruptf(g.path, rk.off, "rank block %d: symbol slot %d (of %d) with %d rows before", b, sl, nsyms, c)
		}
		g.cur[sl], g.stamp[sl] = uint64(c), g.gen
	}
	if cap(g.rowRank) < n {
		g.rowRank = make([]uint64, BlockRows)
	}
	g.rowRank = g.rowRank[:n]
	for i, sl := range g.rslots {
		if int(sl) >= nsyms || g.stamp[sl] != g.gen || g.cur[sl] >= g.dir[sl].rows {
			return format.Corruptf(g.path, rk.off, "rank block %d row %d: symbol slot %d is not listed or has no row left", b, i, sl)
		}
		g.rowRank[i] = g.cur[sl]
		g.cur[sl]++
	}
	g.rankCur = b + 1
	return nil
}

// initCache makes the per-symbol state decodeRank and dataRow keep, once.
func (g *Segment) initCache() {
	if g.cur == nil {
		nsyms := len(g.dir)
		g.cur = make([]uint64, nsyms)
		g.stamp = make([]uint32, nsyms)
		g.cache = make([]cachedBlock, nsyms)
		g.DropCache(nil)
	}
}

// SymRowInto copies the row with sequence number seq, of symbol id, with
// ts ts (what a late row's entry names), into dst as RowInto does, from
// the symbol's data blocks alone: the one whose ts range holds ts and
// whose seq column holds seq, kept decoded for the next call (the
// symbol's block RowInto keeps). It decodes no rank frame: a late row
// read so costs its symbol's block, not the frame of every symbol's rows
// around it (and, from an archive, fetches no other symbol's bytes). ok
// is false when the row is not found so (a version 1 file, dst not the
// file's row size, or no such row of id): RowInto reads it then.
func (g *Segment) SymRowInto(id uint32, seq uint64, ts int64, dst []byte) (ok bool, err error) {
	if g.data == nil {
		return false, ErrClosed
	}
	if g.version != VersionClustered || len(dst) != g.rs {
		return false, nil
	}
	sl := sort.Search(len(g.dir), func(j int) bool { return g.dir[j].id >= id })
	if sl == len(g.dir) || g.dir[sl].id != id {
		return false, nil
	}
	g.initCache()
	d := &g.dir[sl]
	for k := d.first; k < d.first+d.nblocks; k++ {
		if e := g.entry(k); ts < e.minTs || ts > e.maxTs {
			continue
		}
		c, err := g.cached(uint32(sl), k)
		if err != nil {
			return false, err
		}
		if i, found := slices.BinarySearch(c.seqs, seq); found {
			copy(dst, c.rows[i*g.rs:(i+1)*g.rs])
			seal(dst, g.rs, &g.layout, seq)
			return true, nil
		}
	}
	return false, nil
}

// cached is data block blk of the symbol in slot sl, decoded into the
// slot's cache unless it is the one there (its buffers from the free list
// when the slot has none).
func (g *Segment) cached(sl uint32, blk int) (*cachedBlock, error) {
	c := &g.cache[sl]
	if c.blk == blk {
		return c, nil
	}
	if c.rows == nil && len(g.free) > 0 {
		f := g.free[len(g.free)-1]
		g.free = g.free[:len(g.free)-1]
		c.rows, c.seqs = f.rows, f.seqs
	}
	c.blk = -1
	var err error
	if c.rows, c.seqs, _, err = g.decodeData(blk, allRows, c.rows, c.seqs); err != nil {
		return nil, err
	}
	c.blk = blk
	return c, nil
}

// rankRow returns row i of rank block b (decoded last by decodeRank),
// without its check word, from its symbol's data block, decoding that
// block unless it is the symbol's cached one. The row is valid until the
// symbol's next block is decoded.
func (g *Segment) rankRow(b, i int) ([]byte, error) {
	return g.dataRow(b, i, g.rslots[i], g.rowRank[i])
}

// dataRow returns row i of rank block b, the rank k row of the symbol in
// slot sl, as rankRow does.
func (g *Segment) dataRow(b, i int, sl uint32, k uint64) ([]byte, error) {
	blk := g.dir[sl].first + int(k/BlockRows)
	c, err := g.cached(sl, blk)
	if err != nil {
		return nil, err
	}
	r := int(k % BlockRows)
	if want := g.h.baseSeq() + uint64(b)*BlockRows + uint64(i); c.seqs[r] != want {
		return nil, format.Corruptf(g.path, g.entry(blk).off, "block %d row %d is seq %d, the seq-order index (rank block %d) says %d",
			blk, r, c.seqs[r], b, want)
	}
	return c.rows[r*g.rs : (r+1)*g.rs], nil
}

// decodeData decodes data block k of a version 2 file into dst (rows with
// every column set, padding and check words left as they are) and seqs:
// every row of the block, or with a window (from, hi) only the rows
// inWindow picks. It checks the whole block either way. past reports that
// the block has a row past the window after them.
func (g *Segment) decodeData(k int, w window, dst []byte, seqs []uint64) (_ []byte, _ []uint64, past bool, err error) {
	e, err := g.checkBlock(k)
	if err != nil {
		return dst, seqs, false, err
	}
	n, rs := e.rows, g.rs
	// The seq column first: the ts column is relative to it.
	c := g.symCol
	raw, err := g.frameBytes(k, c, n)
	if err != nil {
		return dst, seqs, false, err
	}
	var used int
	g.offs, used, err = codec.DecodeI64(g.offs[:0], raw, n, nil, &g.state)
	if err = g.decoded(k, c, raw, used, err); err != nil {
		return dst, seqs, false, err
	}
	prev := uint64(0)
	for i, q := range g.offs {
		// Row 0's offset in the segment, then the gaps less one.
		o := zigzag(q)
		if i > 0 {
			o += prev + 1
		}
		if o >= g.h.Rows || (i > 0 && o <= prev) {
			return dst, seqs, false, format.Corruptf(g.path, g.frames[c].off, "block %d row %d: seq offset %d after %d in a segment of %d rows", k, i, o, prev, g.h.Rows)
		}
		g.offs[i], prev = int64(o), o
	}
	// Then ts (always column 0), which picks the rows to write.
	raw, err = g.frameBytes(k, 0, n)
	if err != nil {
		return dst, seqs, false, err
	}
	if len(raw) < 8 {
		return dst, seqs, false, format.Corruptf(g.path, g.frames[0].off, "block %d column %q: %d bytes, no room for the rate", k, g.names[0], len(raw))
	}
	rate := int64(le.Uint64(raw))
	g.ts, used, err = codec.DecodeTs(g.ts[:0], raw[8:], n)
	if err = g.decoded(k, 0, raw[8:], used, err); err != nil {
		return dst, seqs, false, err
	}
	for i, o := range g.offs {
		g.ts[i] += rate * (o - g.offs[0])
	}
	asc, err := g.checkTs(k, e)
	if err != nil {
		return dst, seqs, false, err
	}
	lo, hi := w.rows(g.ts, asc)
	m := hi - lo
	// Room for a whole block when they grow: a window's first block may
	// take a few rows, its next ones all of theirs.
	if cap(dst) < m*rs {
		dst = make([]byte, m*rs, max(m, BlockRows)*rs)
	}
	dst = dst[:m*rs]
	if cap(seqs) < m {
		seqs = make([]uint64, m, max(m, BlockRows))
	}
	seqs = seqs[:m]
	base := g.h.baseSeq()
	for i, o := range g.offs[lo:hi] {
		seqs[i] = base + uint64(o)
	}
	id := g.dir[e.slot].id
	for i, o := 0, g.cols[c].Off; i < m; i, o = i+1, o+rs {
		le.PutUint32(dst[o:], id)
	}
	for i, o := 0, 0; i < m; i, o = i+1, o+rs {
		le.PutUint64(dst[o:], uint64(g.ts[lo+i]))
	}
	for c, col := range g.cols {
		if c == g.symCol || c == 0 {
			continue
		}
		raw, err := g.frameBytes(k, c, n)
		if err != nil {
			return dst, seqs, false, err
		}
		var used int
		switch col.Type {
		case store.TypeSym:
			g.u32, used, err = codec.DecodeU32(g.u32[:0], raw, n)
			if err = g.decoded(k, c, raw, used, err); err != nil {
				return dst, seqs, false, err
			}
			scatterU32(dst, rs, col.Off, g.u32[lo:hi])
		case store.TypeF64:
			g.f64, used, err = codec.DecodeF64(g.f64[:0], raw, n, nil, &g.state)
			if err = g.decoded(k, c, raw, used, err); err != nil {
				return dst, seqs, false, err
			}
			for i, o := 0, col.Off; i < m; i, o = i+1, o+rs {
				le.PutUint64(dst[o:], math.Float64bits(g.f64[lo+i]))
			}
		case store.TypeI64:
			g.i64, used, err = codec.DecodeI64(g.i64[:0], raw, n, nil, &g.state)
			if err = g.decoded(k, c, raw, used, err); err != nil {
				return dst, seqs, false, err
			}
			for i, o := 0, col.Off; i < m; i, o = i+1, o+rs {
				le.PutUint64(dst[o:], uint64(g.i64[lo+i]))
			}
		case store.TypeBool:
			g.bools, used, err = codec.DecodeBool(g.bools[:0], raw, n)
			if err = g.decoded(k, c, raw, used, err); err != nil {
				return dst, seqs, false, err
			}
			for i, o := 0, col.Off; i < m; i, o = i+1, o+rs {
				var x byte
				if g.bools[lo+i] {
					x = 1
				}
				dst[o] = x
			}
		}
	}
	return dst, seqs, hi < n, nil
}

// window is a ts window [from, hi] (hi inclusive) that a decode writes the
// rows of; allRows writes every row.
type window struct{ from, hi int64 }

var allRows = window{math.MinInt64, math.MaxInt64}

// rows returns the rows [lo, hi) of a block with timestamps ts that w
// picks: from the first with ts >= from (found by binary search when asc
// says the timestamps ascend) up to the first after it with ts > hi.
func (w window) rows(ts []int64, asc bool) (lo, hi int) {
	if w == allRows {
		return 0, len(ts)
	}
	if asc {
		if w.from > math.MinInt64 {
			lo = firstAbove(ts, w.from-1)
		}
		return lo, lo + firstAbove(ts[lo:], w.hi)
	}
	for lo < len(ts) && ts[lo] < w.from {
		lo++
	}
	hi = lo
	for hi < len(ts) && ts[hi] <= w.hi {
		hi++
	}
	return lo, hi
}

// firstAbove returns the first i with ts[i] > t in ascending ts (len(ts)
// if none).
func firstAbove(ts []int64, t int64) int {
	lo, hi := 0, len(ts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ts[m] <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// sealSeqs zeroes the padding of each row of dst and writes its check
// word for its sequence number seqs[i] (seal for rows that are not
// consecutive).
func sealSeqs(dst []byte, rs int, l *layout, seqs []uint64) {
	padLo, padHi := l.padLo, l.padHi
	if rs == 32 && padLo == 28 && len(l.gaps) == 0 {
		for i, seq := range seqs {
			row := dst[i*32 : i*32+32 : i*32+32]
			le.PutUint32(row[28:], format.Check32(seq, le.Uint64(row[0:]), le.Uint64(row[8:]), le.Uint64(row[16:]), le.Uint32(row[24:])))
		}
		return
	}
	for i, seq := range seqs {
		row := dst[i*rs : (i+1)*rs]
		clear(row[padLo:padHi])
		for k := 0; k < len(l.gaps); k += 2 {
			clear(row[l.gaps[k]:l.gaps[k+1]])
		}
		format.Seal(seq, row)
	}
}

// decodeSlots decodes the n-slot list of a rank frame (appendSlots) from
// src, and returns how many bytes it took.
func decodeSlots(dst []uint32, src []byte, n, nsyms int) ([]uint32, int, error) {
	w := slotWidth(nsyms)
	if w == 0 {
		return codec.DecodeU32(dst, src, n)
	}
	if len(src) < n*w {
		return dst, 0, fmt.Errorf("slot list of %d bytes, want %d", len(src), n*w)
	}
	for i := range n {
		x := uint32(src[i*w])
		if w == 2 {
			x |= uint32(src[i*w+1]) << 8
		}
		dst = append(dst, x)
	}
	return dst, n * w, nil
}

// blocksTs is the lowest min ts and the highest max ts of blocks.
func blocksTs(blocks []blockEntry) (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	for i := range blocks {
		lo, hi = min(lo, blocks[i].minTs), max(hi, blocks[i].maxTs)
	}
	return lo, hi
}

// runTs is blocksTs of the segment's blocks [from, to), from its index.
func (g *Segment) runTs(from, to int) (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	for i := from; i < to; i++ {
		e := g.entry(i)
		lo, hi = min(lo, e.minTs), max(hi, e.maxTs)
	}
	return lo, hi
}
