package index

import (
	"slices"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
)

// symPost is the writer's cursor into one symbol's postings: Put's four
// words first, padded to 64 bytes (indexing is a shift, and a cursor one
// cache line when the slice is so aligned).
type symPost struct {
	at    uint64 // file offset of the next entry
	end   uint64 // Put stores while at < end (0: a version 2 or 3 block not started)
	base  uint64 // an entry is seq - base (version 1: ^0, seq+1)
	lim   uint64 // Put stores entries below lim (version 1: ^0)
	dir   uint64 // current directory (address)
	slot  int32  // next free slot in it
	first bool   // version 3: dir is the symbol's first directory (smallSlots slots)
	c     uint64 // current data block (address)
	cend  uint64 // file offset of its end
}

// symPostSize is a symPost's size (TestSymPostSize).
const symPostSize = 64

// PostWriter appends to the postings. Writer goroutine only.
type PostWriter struct {
	p      *Postings
	b      []byte    // p.b
	w      []uint64  // p.w
	syms   []symPost // in symMem, off the Go heap (grow)
	symMem []byte
	next   uint64 // next address to allocate
	width  uint64 // entry bytes: 8 or 3
	lim    uint64 // version 2 and 3: entries stay below it (MaxDelta)
	// Grow is called with the chunks the file must hold when allocation
	// reaches its end; the writer points it at its preparer-aware growth.
	Grow func(need uint64) error
	// After KeepMapped: the pages PrefetchEntry saw, a bit a 4 KiB page
	// of the file, since the last Repopulate, and the file's sync count
	// then (keep.go).
	pages []uint64
	seen  uint64
	pop   *mmap.Populator
}

// NewPostWriter starts a writer over p whose next free address is next.
// It writes entries in p's version.
func NewPostWriter(p *Postings, next uint64) *PostWriter {
	pw := &PostWriter{p: p, b: p.b, w: p.w, width: 8, lim: MaxDelta}
	pw.next = max(next, pw.firstAddr())
	if p.v != format.PostVersion1 {
		pw.width = 3
	}
	return pw
}

// firstAddr is the first address past the header.
func (pw *PostWriter) firstAddr() uint64 { return format.BlockSize >> pw.p.shift }

// SetMaxDelta lowers the bound on a version 2 or 3 entry (seq_k - seq_0 +
// 1, default and at most MaxDelta, at least 2), so that blocks close
// early more often: for tests, which cannot put 2^24 rows between two of
// a symbol's. Readers need not know it. Call it before NewSymbol and
// Reset.
func (pw *PostWriter) SetMaxDelta(n uint64) { pw.lim = min(max(n, 2), MaxDelta) }

// NextChunk is the next address to allocate (published in the snapshot
// as NextChunk).
func (pw *PostWriter) NextChunk() uint64 { return pw.next }

// alloc allocates units of address space (a 4 KiB block or directory is
// aligned to 4 KiB), cleared.
func (pw *PostWriter) alloc(units uint64) (uint64, error) {
	c := pw.next
	if per := uint64(1) << (chunkShift - pw.p.shift); units >= per {
		c = (c + per - 1) &^ (per - 1)
	}
	end := c + units
	if need := (end<<pw.p.shift + format.BlockSize - 1) / format.BlockSize; need > pw.p.Chunks() {
		grow := pw.Grow
		if grow == nil {
			grow = func(need uint64) error { return pw.p.Grow(need + need/4 + 16) }
		}
		if err := grow(need); err != nil {
			return 0, err
		}
	}
	pw.next = end
	clear(pw.w[c*pw.p.wpu : end*pw.p.wpu])
	return c, nil
}

// open points s at the start of data block c (j: its place in the
// chain), empty. A version 2 or 3 block starts with its first row
// (Advance), which sets its header.
func (pw *PostWriter) open(s *symPost, c, j uint64) {
	s.c, s.at = c, c<<pw.p.shift
	s.cend = s.at + pw.p.blockUnits(j)<<pw.p.shift
	if pw.p.v == format.PostVersion1 {
		s.end, s.base, s.lim = s.cend, ^uint64(0), ^uint64(0)
		return
	}
	s.at += entryOff2(0)
	s.end = 0
}

// resume points s after the first fill entries of data block c (j: its
// place in the chain), whose later entries it clears (a partial block
// holds no repeated entries).
func (pw *PostWriter) resume(s *symPost, c, j uint64, fill int) {
	pu := pw.p.blockUnits(j) * pw.p.wpu // the block's words
	if fill == 0 {
		clearWords(pw.w[c*pw.p.wpu : c*pw.p.wpu+pu])
		pw.open(s, c, j)
		return
	}
	cb := c << pw.p.shift
	s.c, s.cend = c, cb+pu*8
	if pw.p.v == format.PostVersion1 {
		clearWords(pw.w[c*pw.p.wpu+uint64(fill) : c*pw.p.wpu+pu])
		s.at, s.end, s.base, s.lim = cb+uint64(fill)*8, s.cend, ^uint64(0), ^uint64(0)
		return
	}
	s.at, s.end, s.base, s.lim = s.cend, s.cend-putTail, pw.w[c*pw.p.wpu]-2, pw.lim
	if fill < pw.p.BlockLen(j) {
		s.at = cb + entryOff2(fill)
		clearBytes(pw.b[s.at:s.cend])
	}
}

// NewSymbol allocates the postings of the next symbol id (which must be
// len of the symbols so far) and returns its first directory: two chunks
// in versions 1 and 2, two lines (the directory and a one-line block) in
// version 3.
func (pw *PostWriter) NewSymbol() (uint64, error) {
	var dir, data uint64
	s := symPost{slot: 2}
	if pw.p.shift == lineShift {
		a, err := pw.alloc(2)
		if err != nil {
			return 0, err
		}
		dir, data, s.first = a, a+1, true
	} else {
		var err error
		if dir, err = pw.alloc(1); err != nil {
			return 0, err
		}
		if data, err = pw.alloc(1); err != nil {
			return 0, err
		}
	}
	pw.w[dir*pw.p.wpu+1] = data
	s.dir = dir
	pw.open(&s, data, 0)
	if len(pw.syms) == cap(pw.syms) {
		pw.grow(len(pw.syms) + 1)
	}
	pw.syms = append(pw.syms, s)
	return dir, nil
}

// grow gives the cursors room for n symbols (a quarter more), in memory
// mapped apart from the Go heap with huge pages advised: the cursor is
// the append path's first load of a row, and at a million symbols (64
// MiB of cursors) one in 4 KiB pages is a TLB miss, and in a virtual
// machine a costly page walk, on most rows; huge pages make it a cache
// miss alone. Where mapping fails the cursors stay on the heap.
func (pw *PostWriter) grow(n int) {
	n += n / 4
	if n < 1024 {
		n = 1024
	}
	mapAnon := mmap.MapAnon
	if n >= reserveFrom {
		// A table of many symbols: address space for the most it is
		// likely to have, once, so that it never copies its cursors
		// (and faults on every page of the copy) again. Its pages
		// cost memory only as symbols are added.
		n, mapAnon = max(n, reserveSyms), mmap.MapAnonReserve
	}
	b, err := mapAnon(n * symPostSize)
	if err != nil {
		pw.syms = slices.Grow(pw.syms, n-len(pw.syms))
		return
	}
	_ = mmap.AdviseHuge(b) // advice: 4 KiB pages without it
	syms := mmap.Slice[symPost](b)[:len(pw.syms)]
	copy(syms, pw.syms)
	pw.releaseCursors()
	pw.syms, pw.symMem = syms, b
}

// From reserveFrom symbols, the cursors' memory is reserved for
// reserveSyms symbols at once (1 GiB of address space, MAP_NORESERVE):
// past it, they grow by a quarter, copied, as before.
const (
	reserveFrom = 1 << 16
	reserveSyms = 1 << 24
)

// Release unmaps the cursors' memory: the writer calls it when it
// closes; the PostWriter is not used after.
func (pw *PostWriter) Release() {
	if pw.pop != nil {
		pw.pop.Close()
		pw.pop = nil
	}
	pw.releaseCursors()
}

// releaseCursors unmaps the cursors' memory.
func (pw *PostWriter) releaseCursors() {
	if pw.symMem != nil {
		_ = mmap.Unmap(pw.symMem)
	}
	pw.syms, pw.symMem = nil, nil
}

// PrefetchCursor starts loading symbol id's cursor (mmap.Prefetch): the
// first load of an append of its row.
func (pw *PostWriter) PrefetchCursor(id uint32) { mmap.Prefetch(pw.syms, uint64(id)) }

// PrefetchEntry starts loading the line symbol id's next entry goes to,
// reading its cursor (which PrefetchCursor brought in): the store of an
// append of its row. A page of post.idx that is not mapped (the
// checkpoint drops the mapping) is not faulted in.
func (pw *PostWriter) PrefetchEntry(id uint32) {
	if int(id) < len(pw.syms) {
		at := pw.syms[id].at
		mmap.Prefetch(pw.b, at)
		if pw.pop != nil {
			pw.markPage(at)
		}
	}
}

// Add records that row seq has symbol id: one store, and an allocation
// every block of the symbol's rows.
func (pw *PostWriter) Add(id uint32, seq uint64) error {
	if pw.Put(id, seq) {
		return nil
	}
	return pw.Advance(id, seq)
}

// Put is Add's store, small enough to inline into the writer's append
// loop: one 8-byte store of the entry (a version 2 or 3 entry's 3 bytes
// and zeros over the entries after it, which are empty) when the symbol's
// block has room for it. It reports false, storing nothing, when it has
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
// in a version 2 or 3 block's last two entries, or in a new data block
// when the symbol's is full (or not started), or after a version 2 or 3
// block closed early because seq is too far from its first row.
func (pw *PostWriter) Advance(id uint32, seq uint64) error {
	s := &pw.syms[id]
	if pw.p.v == format.PostVersion1 {
		if err := pw.nextData(s); err != nil {
			return err
		}
		pw.Put(id, seq)
		return nil
	}
	if s.end != 0 {
		d := seq - s.base
		switch {
		case d >= s.lim:
			// Too far: close the block, repeating its last entry (the
			// one before s.at; a started block has entry 0) to its end.
			prev := s.at - 3
			if s.at%64 == 0 {
				prev-- // past the previous line's pad byte
			}
			last := le.Uint32(pw.b[prev:]) & entryMask
			for a := s.at; a < s.cend; a = nextOff2(a) {
				le.PutUint32(pw.b[a:], last)
			}
		case s.at < s.cend:
			// One of the last two entries: a 4-byte store stays inside
			// the block.
			le.PutUint32(pw.b[s.at:], uint32(d))
			s.at = nextOff2(s.at)
			return nil
		}
		if err := pw.nextData(s); err != nil {
			return err
		}
	}
	// Start block s.c with row seq: its header, then entry 0 (1).
	pw.w[s.c*pw.p.wpu] = seq + 1
	s.base, s.lim, s.end = seq-1, pw.lim, s.cend-putTail
	pw.Put(id, seq)
	return nil
}

// nextData gives s a new data block (and a new directory when its
// directory is full), empty: in version 3, the next of the growing
// blocks its first directory names, then 4 KiB ones.
func (pw *PostWriter) nextData(s *symPost) error {
	wpu := pw.p.wpu
	if s.first {
		if s.slot <= smallSlots {
			j := uint64(s.slot - 1)
			c, err := pw.alloc(pw.p.blockUnits(j))
			if err != nil {
				return err
			}
			pw.w[s.dir*wpu+uint64(s.slot)] = c
			s.slot++
			pw.open(s, c, j)
			return nil
		}
		s.slot = ChunkWords // full: a 4 KiB directory next
	}
	if s.slot == ChunkWords {
		d, err := pw.alloc(1 << (chunkShift - pw.p.shift))
		if err != nil {
			return err
		}
		pw.w[s.dir*wpu] = d
		s.dir, s.slot, s.first = d, 1, false
	}
	c, err := pw.alloc(1 << (chunkShift - pw.p.shift))
	if err != nil {
		return err
	}
	pw.w[s.dir*wpu+uint64(s.slot)] = c
	s.slot++
	pw.open(s, c, bigClass)
	return nil
}
