package index

import (
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
)

// Postings (on-disk contract; docs/FORMAT.md "post.idx"): after the 4 KiB
// header, each symbol owns a chain of directories, whose words name its
// data blocks in order, and its data blocks hold its rows' seqs in
// increasing order. A symbol's first directory is recorded in its
// dictionary entry. Space is allocated in increasing order; the published
// NextChunk bounds it. Positions, directories and blocks are addressed in
// the file's unit: 4 KiB chunks in versions 1 and 2, 64-byte lines in
// version 3 (address a is at byte a<<unitShift).
//
// A data block's entries are the file's version (its header's version
// word):
//
//   - version 1: 4 KiB chunks of 512 u64 entries, each seq+1 of a row (0 =
//     empty); directories are 4 KiB chunks of 512 words (word 0: the next
//     directory or 0; words 1..511: data chunks, 0 = not yet);
//   - version 2: the same chunks and directories, but a data chunk's word
//     0 is seq+1 of its first row (0 = empty or punched), then 1341
//     entries of 3 bytes (little-endian), entry k = seq_k - seq_0 + 1 (0 =
//     empty), 21 to each 64-byte line so that none straddles a cache line
//     (line 0 holds the word, a pad byte and 18): entry k is at byte
//     64(v/21) + 3(v%21), v = k+3. Entry 0 is the first row itself (1). A
//     chunk spans fewer than 2^24 seqs: a symbol whose next row is farther
//     closes its chunk early, repeating its last entry to the chunk's end,
//     so every chunk but the last is full and entries never decrease; a
//     reader walking forward skips an entry equal to the one before it.
//   - version 3: version 2's blocks, but a symbol's first ones are small
//     and grow: its first directory is one line (word 0: its next
//     directory; words 1..7: data blocks of 1, 2, 4, ..., 64 lines, with
//     18, 39, 81, 165, 333, 669 and 1341 entries), its next directories
//     4 KiB of 512 words naming 4 KiB blocks, as in version 2. A symbol
//     with one row costs 128 bytes (its directory and a one-line block),
//     not 8 KiB. Blocks of 64 lines and the 4 KiB directories are 4 KiB
//     aligned (chunks, which PunchBelow can punch); smaller ones are
//     allocated line by line.
//
// Callers read entries through Entry, Locate, BlockStart and BlockLen,
// never the layout.
//
// postReserve is the mapping's virtual size: 256 GiB, 2^26 chunks, so a
// table with a symbol column holds at most about 90 billion rows in its
// lifetime (1341 a chunk; 34 billion in a version 1 file, 512 a chunk;
// retention does not shrink post.idx). It was 1 TiB, which let a process map at most about
// 115 tables (128 TiB of user address space); at 288 GiB for the three
// index files, about 400 fit.
const postReserve = 1 << 38

// postInitial is a new post.idx's size in chunks: the header and room for
// a few symbols' first blocks. The writer's preparer grows it ahead of
// the rows.
const postInitial = 16

// Version 2 and 3 data block geometry (on-disk contract; docs/FORMAT.md §7).
const (
	// entries2 is a version 2 data chunk's entries (positions), and a
	// version 3 block of 64 lines'.
	entries2 = 64*lineEntries - lineSkip
	// lineEntries is the 3-byte entries of a 64-byte line (63 bytes and
	// a pad byte).
	lineEntries = 21
	// lineSkip is line 0's entry places taken by the header word (and a
	// pad byte): entry 0 is at byte 9.
	lineSkip = 3
	// entryMask keeps an entry's 24 bits of a 4-byte load.
	entryMask = 1<<24 - 1
	// MaxDelta bounds a version 2 entry: seq_k - seq_0 + 1 < MaxDelta.
	MaxDelta = 1 << 24
	// putTail is how far before its block's end Put's 8-byte stores stop
	// (the last two entries, 7 and 4 bytes before the end, take 4-byte
	// stores in Advance, inside the block).
	putTail = 7
)

// Version 3 geometry (on-disk contract; docs/FORMAT.md §7).
const (
	// lineShift is a version 3 address's unit: 64-byte lines.
	lineShift = 6
	// chunkShift is a version 1 or 2 address's unit: 4 KiB chunks.
	chunkShift = 12
	// chunkLines is the lines of a chunk (a big block or directory).
	chunkLines = format.BlockSize >> lineShift
	// smallSlots is the data blocks a version 3 first directory names:
	// classes 0..6, of 1<<class lines.
	smallSlots = 7
	// bigClass is the class of a 4 KiB block (chunkLines lines); every
	// block after the first directory's is one.
	bigClass = 6
	// smallEnd is the first position in a block of bigClass.
	smallEnd = 21*(1<<bigClass-1) - lineSkip*bigClass
	// dirSlots is the data chunks a 4 KiB directory names.
	dirSlots = ChunkWords - 1
)

// entryOff2 is the block offset of version 2 (and 3) entry k.
func entryOff2(k int) uint64 {
	v := uint64(k) + lineSkip
	return v/lineEntries*64 + v%lineEntries*3
}

// nextOff2 is the offset (in the block or the file) of the version 2
// entry after the one at off (the block's end after the last): 3 bytes
// on, and past the pad byte at the end of a line.
func nextOff2(off uint64) uint64 {
	a := off + 3
	return a + (a+1)>>6 - a>>6
}

// Postings is the mapped postings file.
type Postings struct {
	m     *mappedFile
	b     []byte   // the whole file
	w     []uint64 // the same as words
	v     uint32   // the file's version
	n     int      // entries of a 4 KiB data block
	shift uint     // an address's unit: chunkShift, or lineShift (version 3)
	wpu   uint64   // words per unit
	// punchFrom is the first chain position PunchBelow may punch: 0, or
	// bigClass in version 3 (the smaller blocks share pages).
	punchFrom int
}

// CreatePostings creates an empty post.idx at path, in the current
// version (3).
func CreatePostings(path string, tableID [16]byte, fs vfs.FS) error {
	return createPostings(path, format.PostVersion3, tableID, fs)
}

func createPostings(path string, version uint32, tableID [16]byte, fs vfs.FS) error {
	return createIndexFile(fs, path, format.MagicPost, version, tableID, postInitial*format.BlockSize)
}

// OpenPostings maps post.idx, of version 1, 2 or 3.
func OpenPostings(path string, tableID [16]byte, fs vfs.FS) (*Postings, error) {
	m, err := openIndexFile(path, format.MagicPost, format.PostVersion3, tableID, postReserve, fs)
	if err != nil {
		return nil, err
	}
	p := &Postings{m: m, b: m.b, w: mmap.Words(m.b), v: m.version, n: ChunkWords, shift: chunkShift}
	switch p.v {
	case format.PostVersion2:
		p.n = entries2
	case format.PostVersion3:
		p.n, p.shift, p.punchFrom = entries2, lineShift, bigClass
	}
	p.wpu = 1 << (p.shift - 3)
	return p, nil
}

// Path is the file's path.
func (p *Postings) Path() string { return p.m.Path }

// Version is the file's version (format.PostVersion1, 2 or 3).
func (p *Postings) Version() uint32 { return p.v }

// EntriesPerChunk is the entries of a 4 KiB data block: 512 in version
// 1, 1341 in versions 2 and 3. Positions map to blocks through Locate.
func (p *Postings) EntriesPerChunk() int { return p.n }

// Locate returns the block (its place j in the symbol's chain of data
// blocks) and the entry in it of position pos: in versions 1 and 2,
// pos/EntriesPerChunk and the rest; in version 3, past the first
// directory's growing blocks, the same from smallEnd on.
func (p *Postings) Locate(pos uint64) (j uint64, k int) {
	if p.shift == chunkShift {
		n := uint64(p.n)
		return pos / n, int(pos % n)
	}
	if pos >= smallEnd {
		q := pos - smallEnd
		return bigClass + q/entries2, int(q % entries2)
	}
	for j = 0; pos >= smallStart(j+1); j++ {
	}
	return j, int(pos - smallStart(j))
}

// smallStart is the first position of version 3 block j (j <= bigClass).
func smallStart(j uint64) uint64 { return lineEntries*(1<<j-1) - lineSkip*j }

// BlockStart is the first position of block j.
func (p *Postings) BlockStart(j uint64) uint64 {
	switch {
	case p.shift == chunkShift:
		return j * uint64(p.n)
	case j < bigClass:
		return smallStart(j)
	}
	return smallEnd + (j-bigClass)*entries2
}

// BlockLen is the entries of block j.
func (p *Postings) BlockLen(j uint64) int {
	if p.shift == lineShift && j < bigClass {
		return lineEntries<<j - lineSkip
	}
	return p.n
}

// blockUnits is the size of block j in address units.
func (p *Postings) blockUnits(j uint64) uint64 {
	if p.shift == lineShift && j < bigClass {
		return 1 << j
	}
	return 1 << (chunkShift - p.shift) // a chunk: 1, or 64 lines
}

// WillNeed starts reading the given blocks into the page cache in the
// background: a cold symbol query then waits for one batch of reads, not
// one random read per step of its binary search.
func (p *Postings) WillNeed(blocks []uint64) {
	for _, c := range blocks {
		p.m.willNeed(int64(c)<<p.shift, format.BlockSize)
	}
}

// Close unmaps the file.
func (p *Postings) Close() error { return p.m.Close() }

// Chunks is the number of 4 KiB chunks the file holds now (writer side).
func (p *Postings) Chunks() uint64 { return uint64(p.m.size.Load()) / format.BlockSize }

// Grow makes room for n chunks and pre-faults them. Writer side.
func (p *Postings) Grow(n uint64) error { return p.m.grow(int64(n) * format.BlockSize) }

// AheadChunks is the size in chunks the writer's preparer keeps the file
// at: room past address next for rows more rows of the symbols there are
// and for syms/4 more symbols. Allocation past it grows the file itself.
func (p *Postings) AheadChunks(next, rows, syms uint64) uint64 {
	if p.shift == chunkShift {
		// A chunk per EntriesPerChunk rows, a directory now and then;
		// symbols whose chunk fills (or closes early) meanwhile take a
		// few more; a symbol takes two.
		return next + rows/uint64(p.n) + syms/4 + 16
	}
	// Rows take 3 bytes in 4 KiB blocks, up to 64/18 in growing small
	// ones (a symbol's first 1305 rows); a symbol takes two lines.
	return next>>(chunkShift-lineShift) + rows/1024 + syms/128 + 16
}

// Sync writes the file back up to address next (the published NextChunk).
func (p *Postings) Sync(next uint64) error { return p.m.sync(int64(next) << p.shift) }

// Word returns word i of the directory at address c. The caller has
// checked c < the published NextChunk and Covers.
func (p *Postings) Word(c uint64, i int) uint64 { return p.w[c*p.wpu+uint64(i)] }

// Entry returns entry k (< BlockLen) of the data block at address c:
// seq+1 of a row, or 0 (empty, or punched out below the postings floor).
// A version 2 or 3 block closed early repeats its last row to its end.
// The caller has checked c < the published NextChunk and Covers; an entry
// for a row at or past the published count is not to be trusted (it may
// be being written).
func (p *Postings) Entry(c uint64, k int) uint64 {
	if p.v == format.PostVersion1 {
		return p.w[c*ChunkWords+uint64(k)]
	}
	h := p.w[c*p.wpu]
	d := uint64(le.Uint32(p.b[c<<p.shift+entryOff2(k):])) & entryMask
	if h == 0 || d == 0 {
		return 0
	}
	return h + d - 1
}

// EntryOff is the file offset of entry k of the data block at address c
// (for errors).
func (p *Postings) EntryOff(c uint64, k int) int64 {
	if p.v == format.PostVersion1 {
		return int64(c)*format.BlockSize + int64(k)*8
	}
	return int64(c<<p.shift + entryOff2(k))
}

// WordOff is the file offset of word i of the directory at address c (for
// errors).
func (p *Postings) WordOff(c uint64, i int) int64 { return int64(c<<p.shift) + 8*int64(i) }

// Covers reports whether the file holds everything below address next
// (the published NextChunk).
func (p *Postings) Covers(next uint64) bool { return p.m.covers(int64(next) << p.shift) }

// ClosedEarly reports whether entry k of block j at address c, equal to
// the one before it (e), is one of the repeats that close a version 2 or
// 3 block early: not its block's first, and equal to its block's last
// (entries never decrease, so every one between is too). Anything else
// equal is damage.
func (p *Postings) ClosedEarly(j, c uint64, k int, e uint64) bool {
	return k != 0 && p.v != format.PostVersion1 && p.Entry(c, p.BlockLen(j)-1) == e
}

// Punchable reports whether block j of a chain may have been punched out
// (a block of zeros there is one: PunchBelow punches only whole chunks,
// from position punchFrom of a chain on).
func (p *Postings) Punchable(j uint64) bool { return j >= uint64(p.punchFrom) }
