package index

import (
	"fmt"
	"slices"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
)

// Postings (on-disk contract; docs/FORMAT.md "post.idx"): the file is an
// array of 4 KiB chunks; chunk 0 is the header. Each symbol owns a chain
// of directory chunks (512 u64 words; word 0: next directory chunk or 0;
// words 1..511: data chunks in order, 0 = not yet) and its data chunks
// hold its rows' seqs in increasing order. A symbol's first directory
// chunk is recorded in its dictionary entry. Chunks are allocated in
// order; the published NextChunk bounds them.
//
// A data chunk's layout is the file's version (its header's version word):
//
//   - version 1: 512 u64 entries, each seq+1 of a row (0 = empty);
//   - version 2: word 0 is seq+1 of the chunk's first row (0 = empty or
//     punched), then 1341 entries of 3 bytes (little-endian), entry k =
//     seq_k - seq_0 + 1 (0 = empty), 21 to each 64-byte line so that
//     none straddles a cache line (line 0 holds the word, a pad byte and
//     18): entry k is at byte 64(v/21) + 3(v%21), v = k+3. Entry 0 is
//     the first row itself (1). A chunk spans fewer than 2^24 seqs: a
//     symbol whose next row is farther closes its chunk early, repeating
//     its last entry to the chunk's end, so every chunk but the last is
//     full and entries never decrease; a reader walking forward skips an
//     entry equal to the one before it.
//
// Callers read entries through Entry and EntriesPerChunk, never the
// layout.
//
// postReserve is the mapping's virtual size: 256 GiB, 2^26 chunks, so a
// table with a symbol column holds at most about 90 billion rows in its
// lifetime (1341 a chunk; 34 billion in a version 1 file, 512 a chunk;
// retention does not shrink post.idx). It was 1 TiB, which let a process map at most about
// 115 tables (128 TiB of user address space); at 288 GiB for the three
// index files, about 400 fit.
const postReserve = 1 << 38

// postInitial is a new post.idx's size in chunks: the header and room for
// a few symbols' first chunks. The writer's preparer grows it ahead of
// the rows.
const postInitial = 16

// Version 2 data chunk geometry (on-disk contract; docs/FORMAT.md §7).
const (
	// entries2 is a version 2 data chunk's entries (positions).
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
	// putEnd2 is the chunk offset where Put's 8-byte stores stop (the
	// last two entries, at 4089 and 4092, take 4-byte stores in
	// Advance, inside the chunk).
	putEnd2 = 4089
)

// entryOff2 is the chunk offset of version 2 entry k.
func entryOff2(k int) uint64 {
	v := uint64(k) + lineSkip
	return v/lineEntries*64 + v%lineEntries*3
}

// nextOff2 is the offset (in the chunk or the file) of the version 2
// entry after the one at off (the chunk's end after the last): 3 bytes
// on, and past the pad byte at the end of a line.
func nextOff2(off uint64) uint64 {
	a := off + 3
	return a + (a+1)>>6 - a>>6
}

// Postings is the mapped postings file.
type Postings struct {
	m *mappedFile
	b []byte   // the whole file
	w []uint64 // the same as words: chunk c, word i = w[c*ChunkWords+i]
	v uint32   // the file's version
	n int      // entries per data chunk
}

// CreatePostings creates an empty post.idx at path, in the current
// version (2).
func CreatePostings(path string, tableID [16]byte) error {
	return createPostings(path, format.PostVersion2, tableID)
}

func createPostings(path string, version uint32, tableID [16]byte) error {
	return createIndexFile(path, format.MagicPost, version, tableID, postInitial*format.BlockSize)
}

// OpenPostings maps post.idx, of version 1 or 2.
func OpenPostings(path string, tableID [16]byte, writable bool) (*Postings, error) {
	m, err := openIndexFile(path, format.MagicPost, format.PostVersion2, tableID, postReserve, writable)
	if err != nil {
		return nil, err
	}
	p := &Postings{m: m, b: m.b, w: mmap.Words(m.b), v: m.version, n: ChunkWords}
	if p.v == format.PostVersion2 {
		p.n = entries2
	}
	return p, nil
}

// Path is the file's path.
func (p *Postings) Path() string { return p.m.Path }

// Version is the file's version (format.PostVersion1 or PostVersion2).
func (p *Postings) Version() uint32 { return p.v }

// EntriesPerChunk is the entries (positions) of a data chunk: 512 in
// version 1, 1341 in version 2. A symbol's position j is entry
// j%EntriesPerChunk of its data chunk j/EntriesPerChunk.
func (p *Postings) EntriesPerChunk() int { return p.n }

// WillNeed starts reading the given chunks into the page cache in the
// background: a cold symbol query then waits for one batch of reads, not
// one random read per step of its binary search.
func (p *Postings) WillNeed(chunks []uint64) {
	for _, c := range chunks {
		p.m.willNeed(int64(c)*format.BlockSize, format.BlockSize)
	}
}

// Close unmaps the file.
func (p *Postings) Close() error { return p.m.Close() }

// Chunks is the number of chunks the file holds now (writer side).
func (p *Postings) Chunks() uint64 { return uint64(p.m.size.Load()) / format.BlockSize }

// Grow makes room for n chunks and pre-faults them. Writer side.
func (p *Postings) Grow(n uint64) error { return p.m.grow(int64(n) * format.BlockSize) }

// Sync writes chunks [0, n) back to disk.
func (p *Postings) Sync(n uint64) error { return p.m.sync(int64(n) * format.BlockSize) }

// Word returns word i of chunk c: a directory chunk's words. The caller
// has checked c < the published NextChunk and CoversChunks.
func (p *Postings) Word(c uint64, i int) uint64 { return p.w[c*ChunkWords+uint64(i)] }

// Entry returns entry k (< EntriesPerChunk) of data chunk c: seq+1 of a
// row, or 0 (empty, or punched out below the postings floor). A version 2
// chunk closed early repeats its last row to its end. The caller has
// checked c < the published NextChunk and CoversChunks; an entry for a row
// at or past the published count is not to be trusted (it may be being
// written).
func (p *Postings) Entry(c uint64, k int) uint64 {
	if p.v == format.PostVersion1 {
		return p.w[c*ChunkWords+uint64(k)]
	}
	h := p.w[c*ChunkWords]
	d := uint64(le.Uint32(p.b[c*format.BlockSize+entryOff2(k):])) & entryMask
	if h == 0 || d == 0 {
		return 0
	}
	return h + d - 1
}

// EntryOff is the file offset of entry k of data chunk c (for errors).
func (p *Postings) EntryOff(c uint64, k int) int64 {
	if p.v == format.PostVersion1 {
		return int64(c)*format.BlockSize + int64(k)*8
	}
	return int64(c)*format.BlockSize + int64(entryOff2(k))
}

// CoversChunks reports whether chunks [0, n) are inside the file.
func (p *Postings) CoversChunks(n uint64) bool { return p.m.covers(int64(n) * format.BlockSize) }

// DataChunks appends to dst the data chunks of the symbol whose first
// directory chunk is dir, skipping chunks at or past nextChunk (allocated
// but not yet published). Every chunk number is validated.
func (p *Postings) DataChunks(dst []uint64, dir, nextChunk uint64) ([]uint64, error) {
	if !p.CoversChunks(nextChunk) {
		return dst, format.Corruptf(p.m.Path, int64(nextChunk)*format.BlockSize, "published chunk count %d is past the end of the file", nextChunk)
	}
	// Chunks are allocated in increasing order, so a symbol's chain (a
	// directory, its data chunks, the next directory, ...) goes strictly
	// forward: a link that does not is damage, and the walk is bounded by
	// nextChunk (a cycle would otherwise append without end).
	var prev, prevDir uint64
	for hops := 0; dir != 0; hops++ {
		if dir >= nextChunk {
			if hops > 0 {
				return dst, nil // next directory not yet published
			}
			return dst, format.Corruptf(p.m.Path, int64(dir)*format.BlockSize, "directory chunk %d out of range (next chunk %d)", dir, nextChunk)
		}
		if dir <= prev {
			return dst, format.Corruptf(p.m.Path, int64(prevDir)*format.BlockSize, "directory chunk %d links back to %d", prevDir, dir)
		}
		base := dir * ChunkWords
		prev = dir
		for i := 1; i < ChunkWords; i++ {
			c := p.w[base+uint64(i)]
			if c == 0 || c >= nextChunk {
				return dst, nil
			}
			if c <= prev {
				return dst, format.Corruptf(p.m.Path, int64(base+uint64(i))*8, "directory chunk %d slot %d: data chunk %d is not after %d", dir, i, c, prev)
			}
			prev = c
			dst = append(dst, c)
		}
		prevDir, dir = dir, p.w[base]
	}
	return dst, nil
}

// symPost is the writer's cursor into one symbol's postings: Put's four
// words first, padded to 64 bytes (indexing is a shift, and a cursor one
// cache line when the slice is so aligned).
type symPost struct {
	at   uint64 // file offset of the next entry
	end  uint64 // Put stores while at < end (0: a version 2 chunk not started)
	base uint64 // an entry is seq - base (version 1: ^0, seq+1)
	lim  uint64 // Put stores entries below lim (version 1: ^0)
	dir  uint64 // current directory chunk
	slot int    // next free slot in it (1..ChunkWords)
	c    uint64 // current data chunk
	_    uint64
}

// PostWriter appends to the postings. Writer goroutine only.
type PostWriter struct {
	p     *Postings
	b     []byte // p.b
	syms  []symPost
	next  uint64 // next chunk to allocate
	width uint64 // entry bytes: 8 or 3
	lim   uint64 // version 2: entries stay below it (MaxDelta)
	// Grow is called when allocation reaches the end of the file; the
	// writer points it at its preparer-aware growth.
	Grow func(need uint64) error
}

// NewPostWriter starts a writer over p whose next free chunk is next. It
// writes entries in p's version.
func NewPostWriter(p *Postings, next uint64) *PostWriter {
	if next < 1 {
		next = 1
	}
	pw := &PostWriter{p: p, b: p.b, next: next, width: 8, lim: MaxDelta}
	if p.v == format.PostVersion2 {
		pw.width = 3
	}
	return pw
}

// SetMaxDelta lowers the bound on a version 2 entry (seq_k - seq_0 + 1,
// default and at most MaxDelta, at least 2), so that chunks close early
// more often: for tests, which cannot put 2^24 rows between two of a
// symbol's. Readers need not know it. Call it before NewSymbol and Reset.
func (pw *PostWriter) SetMaxDelta(n uint64) { pw.lim = min(max(n, 2), MaxDelta) }

// NextChunk is the next chunk to allocate (published in the snapshot).
func (pw *PostWriter) NextChunk() uint64 { return pw.next }

func (pw *PostWriter) alloc() (uint64, error) {
	if pw.next >= pw.p.Chunks() {
		grow := pw.Grow
		if grow == nil {
			grow = func(need uint64) error { return pw.p.Grow(need + need/4 + 16) }
		}
		if err := grow(pw.next + 1); err != nil {
			return 0, err
		}
	}
	c := pw.next
	pw.next++
	clear(pw.p.w[c*ChunkWords : (c+1)*ChunkWords])
	return c, nil
}

// open points s at the start of data chunk c, empty. A version 2 chunk
// starts with its first row (Advance), which sets its header.
func (pw *PostWriter) open(s *symPost, c uint64) {
	s.c, s.at = c, c*format.BlockSize
	if pw.p.v == format.PostVersion1 {
		s.end, s.base, s.lim = s.at+format.BlockSize, ^uint64(0), ^uint64(0)
		return
	}
	s.at += entryOff2(0)
	s.end = 0
}

// resume points s after the first fill entries of data chunk c, whose
// later entries it clears (a partial chunk holds no repeated entries).
func (pw *PostWriter) resume(s *symPost, c uint64, fill int) {
	if fill == 0 {
		clear(pw.p.w[c*ChunkWords : (c+1)*ChunkWords])
		pw.open(s, c)
		return
	}
	cb := c * format.BlockSize
	s.c = c
	if pw.p.v == format.PostVersion1 {
		clear(pw.p.w[c*ChunkWords+uint64(fill) : (c+1)*ChunkWords])
		s.at, s.end, s.base, s.lim = cb+uint64(fill)*8, cb+format.BlockSize, ^uint64(0), ^uint64(0)
		return
	}
	s.at, s.end, s.base, s.lim = cb+format.BlockSize, cb+putEnd2, pw.p.w[c*ChunkWords]-2, pw.lim
	if fill < entries2 {
		s.at = cb + entryOff2(fill)
		clear(pw.b[s.at : cb+format.BlockSize])
	}
}

// NewSymbol allocates the postings of the next symbol id (which must be
// len of the symbols so far) and returns its first directory chunk.
func (pw *PostWriter) NewSymbol() (uint64, error) {
	dir, err := pw.alloc()
	if err != nil {
		return 0, err
	}
	data, err := pw.alloc()
	if err != nil {
		return 0, err
	}
	pw.p.w[dir*ChunkWords+1] = data
	s := symPost{dir: dir, slot: 2}
	pw.open(&s, data)
	pw.syms = append(pw.syms, s)
	return dir, nil
}

// Add records that row seq has symbol id: one store, and an allocation
// every chunk of the symbol's rows.
func (pw *PostWriter) Add(id uint32, seq uint64) error {
	if pw.Put(id, seq) {
		return nil
	}
	return pw.Advance(id, seq)
}

// Put is Add's store, small enough to inline into the writer's append
// loop: one 8-byte store of the entry (a version 2 entry's 3 bytes and
// zeros over the entries after it, which are empty) when the symbol's
// chunk has room for it. It reports false, storing nothing, when it has
// not; the caller then calls Advance(id, seq). Seqs of a symbol go up.
func (pw *PostWriter) Put(id uint32, seq uint64) bool {
	s := &pw.syms[id]
	d, at := seq-s.base, s.at
	if d >= s.lim || at >= s.end {
		return false
	}
	le.PutUint64(pw.b[at:at+8], d)
	// The next entry: width bytes on, and past a version 2 line's pad
	// byte (a version 1 entry never ends a line at byte 63).
	a := at + pw.width
	s.at = a + (a+1)>>6 - a>>6
	return true
}

// Advance stores the entry of row seq of symbol id that Put could not:
// in a version 2 chunk's last two entries, or in a new data chunk when
// the symbol's is full (or not started), or after a version 2 chunk
// closed early because seq is too far from its first row.
func (pw *PostWriter) Advance(id uint32, seq uint64) error {
	s := &pw.syms[id]
	if pw.p.v == format.PostVersion1 {
		if err := pw.nextData(s); err != nil {
			return err
		}
		pw.Put(id, seq)
		return nil
	}
	cb := s.c * format.BlockSize
	cend := cb + format.BlockSize
	if s.end != 0 {
		d := seq - s.base
		switch {
		case d >= s.lim:
			// Too far: close the chunk, repeating its last entry (the
			// one before s.at; a started chunk has entry 0) to its end.
			prev := s.at - 3
			if s.at%64 == 0 {
				prev-- // past the previous line's pad byte
			}
			last := le.Uint32(pw.b[prev:]) & entryMask
			for a := s.at; a < cend; a = nextOff2(a) {
				le.PutUint32(pw.b[a:], last)
			}
		case s.at < cend:
			// One of the last two entries: a 4-byte store stays inside
			// the chunk.
			le.PutUint32(pw.b[s.at:], uint32(d))
			s.at = nextOff2(s.at)
			return nil
		}
		if err := pw.nextData(s); err != nil {
			return err
		}
		cb = s.c * format.BlockSize
	}
	// Start chunk s.c with row seq: its header, then entry 0 (1).
	pw.p.w[s.c*ChunkWords] = seq + 1
	s.base, s.lim, s.end = seq-1, pw.lim, cb+putEnd2
	pw.Put(id, seq)
	return nil
}

// nextData gives s a new data chunk (and a new directory chunk when its
// directory is full), empty.
func (pw *PostWriter) nextData(s *symPost) error {
	if s.slot == ChunkWords {
		d, err := pw.alloc()
		if err != nil {
			return err
		}
		pw.p.w[s.dir*ChunkWords] = d
		s.dir, s.slot = d, 1
	}
	c, err := pw.alloc()
	if err != nil {
		return err
	}
	pw.p.w[s.dir*ChunkWords+uint64(s.slot)] = c
	s.slot++
	pw.open(s, c)
	return nil
}

// Reset rebuilds the writer's cursors after a restart so that the postings
// hold exactly the rows below seq. Chunk numbers at or past limit (the
// published or checkpointed chunk count) are not trusted: links to them are
// cut. A symbol whose first directory chunk is at or past limit (its
// postings were never checkpointed) starts empty in that cleared chunk.
// Allocation resumes past limit and past every such directory. dirs[i] is
// symbol i's first directory chunk.
//
// With punched (the table's postings floor is above 0), a data chunk that
// reads as all zeros and follows only such chunks was punched out below
// the floor (PunchBelow): it counts as full of rows below seq and stays in
// the chain (a reader takes its zeros as rows compacted below the floor),
// and the symbol's rows from seq on go into chunks after it.
func (pw *PostWriter) Reset(dirs []uint64, seq, limit uint64, punched bool) error {
	if limit < 1 {
		limit = 1
	}
	next := limit
	for _, d := range dirs {
		if d >= next {
			next = d + 1
		}
	}
	if !pw.p.CoversChunks(next) {
		if err := pw.p.Grow(next + next/4 + 16); err != nil {
			return err
		}
	}
	pw.next = next
	pw.syms = pw.syms[:0]
	w := pw.p.w
	var chunks []uint64
	for id, first := range dirs {
		if first == 0 {
			return format.Corruptf(pw.p.m.Path, 0, "symbol %d has no postings directory", id)
		}
		if first >= limit {
			clear(w[first*ChunkWords : (first+1)*ChunkWords])
			c, err := pw.alloc()
			if err != nil {
				return err
			}
			w[first*ChunkWords+1] = c
			s := symPost{dir: first, slot: 2}
			pw.open(&s, c)
			pw.syms = append(pw.syms, s)
			continue
		}
		// Cut directory links and slots that point at untrusted chunks.
		// Directories are allocated in increasing order, so the chain
		// left behind goes strictly forward below limit, and every walk
		// of it below ends.
		dir := first
		for {
			for i := 1; i < ChunkWords; i++ {
				if c := w[dir*ChunkWords+uint64(i)]; c >= limit {
					clear(w[dir*ChunkWords+uint64(i) : (dir+1)*ChunkWords])
					w[dir*ChunkWords] = 0
					break
				}
			}
			nx := w[dir*ChunkWords]
			if nx == 0 {
				break
			}
			// Only a full directory is linked (nextData); readers follow
			// no other link, so one out of a partial directory is cut.
			full := w[(dir+1)*ChunkWords-1] != 0
			if full && nx <= dir {
				return format.Corruptf(pw.p.m.Path, int64(dir)*format.BlockSize, "symbol %d: directory chunk %d links back to %d", id, dir, nx)
			}
			if !full || nx >= limit {
				w[dir*ChunkWords] = 0
				break
			}
			dir = nx
		}
		var err error
		if chunks, err = pw.p.DataChunks(chunks[:0], first, limit); err != nil {
			return fmt.Errorf("symbol %d: %w", id, err)
		}
		// Find the last chunk holding a row below seq; clear what follows.
		// (A version 2 chunk closed early whose repeated last row is
		// below seq is full; one whose last row is not is cut before it.)
		n := pw.p.n
		keep, fill := -1, 0
		for j := len(chunks) - 1; j >= 0 && keep < 0; j-- {
			c := chunks[j]
			zero := true
			for i := n - 1; i >= 0; i-- {
				e := pw.p.Entry(c, i)
				if e != 0 && e-1 < seq {
					keep, fill = j, i+1
					break
				}
				zero = zero && e == 0
			}
			// A chunk of zeros is a punched one only where punched chunks
			// are, first in the chain: one after a chunk with rows is
			// empty (a version 2 chunk whose first row was cut, or a
			// chunk a version 1 writer allocated ahead), and dropped.
			if keep < 0 && zero && punched && (j == 0 || pw.p.Entry(chunks[j-1], n-1) == 0) {
				keep, fill = j, n
			}
		}
		if keep < 0 {
			keep, fill = 0, 0
		}
		// Re-walk the directories to drop the slots of chunks after keep.
		s := symPost{}
		dir, pos := first, 0
		for dir != 0 {
			partial := false
			for i := 1; i < ChunkWords; i++ {
				c := w[dir*ChunkWords+uint64(i)]
				if c == 0 {
					partial = true // DataChunks stops here too
					break
				}
				switch {
				case pos < keep:
				case pos == keep:
					// Later slots and the link are dropped (stray ones too).
					clear(w[dir*ChunkWords+uint64(i)+1 : (dir+1)*ChunkWords])
					w[dir*ChunkWords] = 0
					s = symPost{dir: dir, slot: i + 1}
					pw.resume(&s, c, fill)
				default:
					w[dir*ChunkWords+uint64(i)] = 0
				}
				pos++
			}
			nx := w[dir*ChunkWords]
			if (pos > keep || partial) && nx != 0 {
				w[dir*ChunkWords] = 0
				break
			}
			dir = nx
		}
		if s.dir == 0 {
			// No data chunk at all (its slot was past limit): give it one
			// in a directory cleared of whatever was left.
			c, err := pw.alloc()
			if err != nil {
				return err
			}
			clear(w[first*ChunkWords : (first+1)*ChunkWords])
			w[first*ChunkWords+1] = c
			s = symPost{dir: first, slot: 2}
			pw.open(&s, c)
		}
		// A full chunk (fill == n) stays current: the symbol's next row
		// takes a new one (Advance).
		pw.syms = append(pw.syms, s)
	}
	return nil
}

// PunchBelow frees the data chunks of the symbols whose first directory
// chunks are dirs whose entries all name rows below floor (the postings
// floor, published before): each is punched out of the file (it reads as
// zeros, and its disk blocks are freed). A symbol's last data chunk, which
// the writer still appends to, and directory chunks are kept. Chunks
// already punched are skipped. Writer only (the checkpointer, with the
// writer's postings cursors untouched). It returns the chunks punched.
func (p *Postings) PunchBelow(dirs []uint64, nextChunk, floor uint64) (int, error) {
	var punch, chunks []uint64
	for _, dir := range dirs {
		var err error
		if chunks, err = p.DataChunks(chunks[:0], dir, nextChunk); err != nil {
			return 0, err
		}
		for i, c := range chunks {
			if i == len(chunks)-1 {
				break // the symbol's current chunk
			}
			last := p.Entry(c, p.n-1) // a chunk closed early repeats it
			if last == 0 {
				continue // punched already
			}
			if last-1 >= floor {
				break // reaches the floor, and so do the chunks after it
			}
			punch = append(punch, c)
		}
	}
	slices.Sort(punch)
	for i := 0; i < len(punch); {
		j := i + 1
		for j < len(punch) && punch[j] == punch[j-1]+1 {
			j++
		}
		off, n := int64(punch[i])*format.BlockSize, int64(j-i)*format.BlockSize
		if err := mmap.PunchHole(p.m.f, off, n); err != nil {
			return 0, fmt.Errorf("index: punch %s [%d, %d): %w", p.m.Path, off, off+n, err)
		}
		i = j
	}
	return len(punch), nil
}

// Trim cuts the file after chunk n-1 (the room grown ahead of the
// published chunk count goes): maintenance when a table closes.
func (p *Postings) Trim(n uint64) error { return p.m.trim(int64(n) * format.BlockSize) }
