package index

import (
	"fmt"
	"slices"

	"github.com/tickdb/tickdb/store"
)

// Postings (on-disk contract; docs/FORMAT.md "post.idx"): the file is an
// array of 4 KiB chunks of 512 u64 words; chunk 0 is the header. Each symbol
// owns a chain of directory chunks (word 0: next directory chunk or 0;
// words 1..511: data chunk numbers in order, 0 = not yet) and its data
// chunks hold seq+1 of each of its rows in increasing order (0 = empty).
// A symbol's first directory chunk is recorded in its dictionary entry.
// Chunks are allocated in order; the published NextChunk bounds them.
//
// postReserve is the mapping's virtual size: 256 GiB, 2^35 postings
// entries, so a table with a symbol column holds at most about 34 billion
// rows in its lifetime (retention does not shrink post.idx). It was 1 TiB,
// which let a process map at most about 115 tables (128 TiB of user
// address space); at 288 GiB for the three index files, about 400 fit.
const postReserve = 1 << 38

// postInitial is a new post.idx's size in chunks: the header and room for
// a few symbols' first chunks. The writer's preparer grows it ahead of
// the rows.
const postInitial = 16

// Postings is the mapped postings file.
type Postings struct {
	m *mappedFile
	w []uint64 // the whole file as words: chunk c, word i = w[c*ChunkWords+i]
}

// CreatePostings creates an empty post.idx at path.
func CreatePostings(path string, tableID [16]byte) error {
	return createIndexFile(path, store.MagicPost, tableID, postInitial*store.BlockSize)
}

// OpenPostings maps post.idx.
func OpenPostings(path string, tableID [16]byte, writable bool) (*Postings, error) {
	m, err := openIndexFile(path, store.MagicPost, tableID, postReserve, writable)
	if err != nil {
		return nil, err
	}
	return &Postings{m: m, w: store.Words(m.b)}, nil
}

// Path is the file's path.
func (p *Postings) Path() string { return p.m.Path }

// WillNeed starts reading the given chunks into the page cache in the
// background: a cold symbol query then waits for one batch of reads, not
// one random read per step of its binary search.
func (p *Postings) WillNeed(chunks []uint64) {
	for _, c := range chunks {
		p.m.willNeed(int64(c)*store.BlockSize, store.BlockSize)
	}
}

// Close unmaps the file.
func (p *Postings) Close() error { return p.m.Close() }

// Chunks is the number of chunks the file holds now (writer side).
func (p *Postings) Chunks() uint64 { return uint64(p.m.size.Load()) / store.BlockSize }

// Grow makes room for n chunks and pre-faults them. Writer side.
func (p *Postings) Grow(n uint64) error { return p.m.grow(int64(n) * store.BlockSize) }

// Sync writes chunks [0, n) back to disk.
func (p *Postings) Sync(n uint64) error { return p.m.sync(int64(n) * store.BlockSize) }

// Word returns word i of chunk c. The caller has checked c < the published
// NextChunk and CoversChunks.
func (p *Postings) Word(c uint64, i int) uint64 { return p.w[c*ChunkWords+uint64(i)] }

// CoversChunks reports whether chunks [0, n) are inside the file.
func (p *Postings) CoversChunks(n uint64) bool { return p.m.covers(int64(n) * store.BlockSize) }

// DataChunks appends to dst the data chunks of the symbol whose first
// directory chunk is dir, skipping chunks at or past nextChunk (allocated
// but not yet published). Every chunk number is validated.
func (p *Postings) DataChunks(dst []uint64, dir, nextChunk uint64) ([]uint64, error) {
	if !p.CoversChunks(nextChunk) {
		return dst, store.Corruptf(p.m.Path, int64(nextChunk)*store.BlockSize, "published chunk count %d is past the end of the file", nextChunk)
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
			return dst, store.Corruptf(p.m.Path, int64(dir)*store.BlockSize, "directory chunk %d out of range (next chunk %d)", dir, nextChunk)
		}
		if dir <= prev {
			return dst, store.Corruptf(p.m.Path, int64(prevDir)*store.BlockSize, "directory chunk %d links back to %d", prevDir, dir)
		}
		base := dir * ChunkWords
		prev = dir
		for i := 1; i < ChunkWords; i++ {
			c := p.w[base+uint64(i)]
			if c == 0 || c >= nextChunk {
				return dst, nil
			}
			if c <= prev {
				return dst, store.Corruptf(p.m.Path, int64(base+uint64(i))*8, "directory chunk %d slot %d: data chunk %d is not after %d", dir, i, c, prev)
			}
			prev = c
			dst = append(dst, c)
		}
		prevDir, dir = dir, p.w[base]
	}
	return dst, nil
}

// symPost is the writer's cursor into one symbol's postings.
type symPost struct {
	dir  uint64 // current directory chunk
	slot int    // next free slot in it (1..ChunkWords)
	at   uint64 // word index of the next entry
}

// PostWriter appends to the postings. Writer goroutine only.
type PostWriter struct {
	p    *Postings
	syms []symPost
	next uint64 // next chunk to allocate
	// Grow is called when allocation reaches the end of the file; the
	// writer points it at its preparer-aware growth.
	Grow func(need uint64) error
}

// NewPostWriter starts a writer over p whose next free chunk is next.
func NewPostWriter(p *Postings, next uint64) *PostWriter {
	if next < 1 {
		next = 1
	}
	return &PostWriter{p: p, next: next}
}

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
	pw.syms = append(pw.syms, symPost{dir: dir, slot: 2, at: data * ChunkWords})
	return dir, nil
}

// Add records that row seq has symbol id: one store, and an allocation
// every 512 rows of the symbol.
func (pw *PostWriter) Add(id uint32, seq uint64) error {
	if pw.Put(id, seq) {
		return nil
	}
	return pw.Advance(id)
}

// Put is Add's store, small enough to inline into the writer's append
// loop: it reports false when it filled the symbol's chunk, and then the
// caller must call Advance(id) before the symbol's next Put.
func (pw *PostWriter) Put(id uint32, seq uint64) bool {
	s := &pw.syms[id]
	pw.p.w[s.at] = seq + 1
	s.at++
	return s.at%ChunkWords != 0
}

// Advance gives symbol id a new data chunk after Put filled its last one.
func (pw *PostWriter) Advance(id uint32) error { return pw.nextData(&pw.syms[id]) }

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
	s.at = c * ChunkWords
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
// reads as all zeros was punched out below the floor (PunchBelow): it
// counts as full of rows below seq and stays in the chain (a reader takes
// its zeros as rows compacted below the floor), and the symbol's rows
// from seq on go into chunks after it.
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
			return store.Corruptf(pw.p.m.Path, 0, "symbol %d has no postings directory", id)
		}
		if first >= limit {
			clear(w[first*ChunkWords : (first+1)*ChunkWords])
			c, err := pw.alloc()
			if err != nil {
				return err
			}
			w[first*ChunkWords+1] = c
			pw.syms = append(pw.syms, symPost{dir: first, slot: 2, at: c * ChunkWords})
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
				return store.Corruptf(pw.p.m.Path, int64(dir)*store.BlockSize, "symbol %d: directory chunk %d links back to %d", id, dir, nx)
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
		keep, fill := -1, 0
		for j := len(chunks) - 1; j >= 0 && keep < 0; j-- {
			c := chunks[j]
			zero := true
			for i := ChunkWords - 1; i >= 0; i-- {
				e := w[c*ChunkWords+uint64(i)]
				if e != 0 && e-1 < seq {
					keep, fill = j, i+1
					break
				}
				zero = zero && e == 0
			}
			if keep < 0 && zero && punched {
				keep, fill = j, ChunkWords
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
					clear(w[c*ChunkWords+uint64(fill) : (c+1)*ChunkWords])
					// Later slots and the link are dropped (stray ones too).
					clear(w[dir*ChunkWords+uint64(i)+1 : (dir+1)*ChunkWords])
					w[dir*ChunkWords] = 0
					s = symPost{dir: dir, slot: i + 1, at: c*ChunkWords + uint64(fill)}
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
			s = symPost{dir: first, slot: 2, at: c * ChunkWords}
		}
		if fill == ChunkWords {
			if err := pw.nextData(&s); err != nil {
				return err
			}
		}
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
			last := p.Word(c, ChunkWords-1)
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
		off, n := int64(punch[i])*store.BlockSize, int64(j-i)*store.BlockSize
		if err := store.PunchHole(p.m.f, off, n); err != nil {
			return 0, fmt.Errorf("index: punch %s [%d, %d): %w", p.m.Path, off, off+n, err)
		}
		i = j
	}
	return len(punch), nil
}

// Trim frees the disk blocks of the chunks from chunk n on (the room grown
// ahead of the published chunk count): maintenance when a table closes.
func (p *Postings) Trim(n uint64) error { return p.m.trim(int64(n) * store.BlockSize) }
