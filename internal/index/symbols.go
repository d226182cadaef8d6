package index

import (
	"fmt"
	"hash/maphash"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

// Symbol dictionary (on-disk contract; docs/FORMAT.md "sym.dat"): entries
// (format.PutSymEntry) appended after the header block; symbol ids are dense
// in entry order. The writer publishes the entry count and end offset in the
// control file after writing an entry, so a reader never parses a partial one.
const symReserve = 1 << 34

// symInitial is a new sym.dat's size: the header and one block of entries.
// It grows by a quarter when an entry does not fit.
const symInitial = 2 * format.BlockSize

// Symbols is a mapped dictionary plus a private decoded copy of the entries
// seen so far. Not safe for concurrent use: each reader and the writer own one.
type Symbols struct {
	m     *mappedFile
	names []string
	dirs  []uint64
	// ids finds a name's id: open addressing, linear probing, at most
	// half full, a 32-byte slot a name (aligned, so one cache line) that
	// holds the name itself when it has at most 23 bytes (an option
	// contract's has 21): a lookup then reads one line, where a Go map
	// of strings reads a group, a string header and the name's bytes,
	// three cache misses (and page walks) at a million symbols, the
	// largest cost of a row then. No pointers for the collector either.
	ids  []uint64 // slotWords words a slot, in memory of its own (idsMem)
	mem  []byte   // ids' mapping (huge pages where the kernel gives them)
	nids int      // names in ids
	seed maphash.Seed
	end  uint64 // file offset just past the last decoded entry
}

// CreateSymbols creates an empty sym.dat at path.
func CreateSymbols(path string, tableID [16]byte, fs vfs.FS) error {
	return createIndexFile(fs, path, format.MagicSym, format.FormatVersion, tableID, symInitial)
}

// OpenSymbols maps sym.dat.
func OpenSymbols(path string, tableID [16]byte, fs vfs.FS) (*Symbols, error) {
	m, err := openIndexFile(path, format.MagicSym, format.FormatVersion, tableID, symReserve, fs)
	if err != nil {
		return nil, err
	}
	return &Symbols{m: m, seed: maphash.MakeSeed(), end: format.BlockSize}, nil
}

// Path is the file's path.
func (s *Symbols) Path() string { return s.m.Path }

// Close unmaps the file and the name table.
func (s *Symbols) Close() error {
	s.releaseIDs()
	return s.m.Close()
}

// Len is the number of decoded symbols.
func (s *Symbols) Len() int { return len(s.names) }

// End is the file offset just past the last decoded entry.
func (s *Symbols) End() uint64 { return s.end }

// Name returns symbol id's name ("" if unknown, and for store.NoSym).
func (s *Symbols) Name(id uint32) string {
	if int(id) < len(s.names) {
		return s.names[id]
	}
	return ""
}

// Names returns the names decoded so far, by id. The slice is the
// Symbols' own: do not modify it. Later decoding only appends (to this
// array or a new one), so a goroutine may go on reading the slice while
// the owner decodes more (Truncate, the writer's recovery, is the
// exception).
func (s *Symbols) Names() []string { return s.names }

// Dir returns symbol id's first postings directory chunk.
func (s *Symbols) Dir(id uint32) uint64 { return s.dirs[id] }

// Dirs returns every symbol's first directory chunk, by id. The slice is
// the Symbols' own; do not modify it.
func (s *Symbols) Dirs() []uint64 { return s.dirs }

// Lookup returns the id of name without allocating.
func (s *Symbols) Lookup(name []byte) (uint32, bool) {
	if len(s.ids) == 0 {
		return 0, false
	}
	return s.LookupHash(name, maphash.Bytes(s.seed, name))
}

// Hash is name's hash, for PrefetchSlot and LookupHash.
func (s *Symbols) Hash(name []byte) uint64 { return maphash.Bytes(s.seed, name) }

// PrefetchSlot starts loading the slot where the lookup of a name of
// hash h begins (mmap.Prefetch), so that a LookupHash of it a few
// hundred nanoseconds later does not wait on memory.
func (s *Symbols) PrefetchSlot(h uint64) {
	if n := uint64(len(s.ids) / slotWords); n > 0 {
		mmap.Prefetch(s.ids, (h&(n-1))*slotWords)
	}
}

// LookupHash is Lookup of a name whose Hash is h.
func (s *Symbols) LookupHash(name []byte, h uint64) (uint32, bool) {
	if len(s.ids) == 0 {
		return 0, false
	}
	var k [slotWords - 1]uint64
	packName(&k, name)
	mask := uint64(len(s.ids)/slotWords - 1)
	key := uint64(uint32(h>>32) | 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := s.ids[i*slotWords : i*slotWords+slotWords : i*slotWords+slotWords]
		if e[0] == 0 {
			return 0, false
		}
		if e[0]>>32 == key && s.same(e, &k, name) {
			return uint32(e[0]) - 1, true
		}
	}
}

// A slot of Symbols.ids is slotWords words, 32 bytes aligned (one cache
// line): word 0 is the name's hash's high 32 bits with bit 0 set (0:
// empty) above id+1; words 1 to 3 hold the name's length (byte 0, or
// inlineName+1 for a longer name, which is then names[id]) and its bytes
// (bytes 1 to inlineName), little-endian, zero padded.
const (
	slotWords  = 4
	inlineName = 23
	// pageSlots is the slots of a 4 KiB page.
	pageSlots = format.BlockSize / (8 * slotWords)
)

// packName puts name's length and, when it fits, bytes in k as a slot
// holds them.
func packName(k *[slotWords - 1]uint64, name []byte) {
	var b [8 * (slotWords - 1)]byte
	if len(name) <= inlineName {
		b[0] = byte(len(name))
		copy(b[1:], name)
	} else {
		b[0] = inlineName + 1
	}
	for i := range k {
		k[i] = le.Uint64(b[8*i:])
	}
}

// same reports whether slot e, whose key matched, holds name (packed in k).
func (s *Symbols) same(e []uint64, k *[slotWords - 1]uint64, name []byte) bool {
	if e[1] != k[0] || e[2] != k[1] || e[3] != k[2] {
		return false
	}
	return len(name) <= inlineName || s.names[uint32(e[0])-1] == string(name)
}

// index adds name's id to ids unless name is there already (the first id
// of a name stays), growing ids to keep it at most half full.
func (s *Symbols) index(name string, id uint32) {
	if 2*(s.nids+1) > len(s.ids)/slotWords {
		s.rehash(2 * (s.nids + 1))
	}
	h := maphash.String(s.seed, name)
	var k [slotWords - 1]uint64
	packName(&k, []byte(name))
	mask := uint64(len(s.ids)/slotWords - 1)
	key := uint64(uint32(h>>32) | 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := s.ids[i*slotWords : i*slotWords+slotWords : i*slotWords+slotWords]
		if e[0] == 0 {
			e[0] = key<<32 | uint64(id+1)
			e[1], e[2], e[3] = k[0], k[1], k[2]
			s.nids++
			return
		}
		if e[0]>>32 == key && s.same(e, &k, []byte(name)) {
			return
		}
	}
}

// rehash makes ids room for n names (a power of two, at least 2n slots)
// and indexes every name of names again. The table is mapped apart from
// the Go heap, in huge pages where the kernel gives them: at a million
// symbols, 64 MiB in 32 pages rather than 16,000, a fault each at open
// and a page walk, in a virtual machine a costly one, at most lookups.
func (s *Symbols) rehash(n int) {
	size := 64
	for size < 2*max(n, len(s.names)) {
		size *= 2
	}
	s.releaseIDs()
	b, err := mmap.MapAnon(size * slotWords * 8)
	if err != nil {
		// (No memory for the map: the heap then, where the same
		// shortage would panic anyway.)
		b = make([]byte, size*slotWords*8)
	} else {
		_ = mmap.AdviseHuge(b) // advice: 4 KiB pages without it
		s.mem = b
	}
	s.ids, s.nids = mmap.Words(b), 0
	// Write each page first, in order: the probes read a slot before
	// writing it, and a page first read is the shared zero page, whose
	// write then costs a second fault and a TLB shootdown (an interrupt
	// to every CPU).
	for i := 0; i < len(s.ids); i += pageSlots * slotWords {
		s.ids[i] = 0
	}
	for id, name := range s.names {
		s.index(name, uint32(id))
	}
}

// releaseIDs unmaps the table.
func (s *Symbols) releaseIDs() {
	if s.mem != nil {
		_ = mmap.Unmap(s.mem)
	}
	s.ids, s.mem = nil, nil
}

// Refresh decodes entries up to count symbols and the end offset published
// in the control file. Allocates only for new symbols.
func (s *Symbols) Refresh(count, end uint64) error {
	if uint64(len(s.names)) >= count {
		return nil
	}
	if end > uint64(len(s.m.b)) || !s.m.covers(int64(end)) {
		return format.Corruptf(s.m.Path, int64(end), "published dictionary end %d is past the end of the file", end)
	}
	return s.decode(end, int(count), true)
}

// Scan decodes entries from the current end until one fails its check or
// the file ends: recovery uses it when the published count is not trusted.
// It returns the number of symbols then known.
func (s *Symbols) Scan() int {
	_ = s.decode(uint64(s.m.size.Load()), -1, false)
	return len(s.names)
}

// decode decodes the entries from s.end below limit: count symbols in all
// (strict: the published ones, a failure is damage), or (count < 0) until
// one fails its check. The new names share one string and go into a map
// sized for them: a million symbols cost three allocations here, not a
// million, and no rehash.
func (s *Symbols) decode(limit uint64, count int, strict bool) error {
	var (
		buf  []byte
		offs []uint32
		dirs []uint64
		err  error
	)
	end := s.end
	if n := count - len(s.names); n > 0 {
		offs, dirs = make([]uint32, 0, n+1), make([]uint64, 0, n)
	}
	for id := len(s.names); count < 0 || id < count; id++ {
		if strict && end >= limit {
			err = format.Corruptf(s.m.Path, int64(end), "published %d symbols, entries end after %d", count, id)
			break
		}
		if !strict && !s.m.covers(int64(end)+format.SymEntryHeader) {
			break
		}
		if buf == nil {
			buf = make([]byte, 0, min(limit-end, 1<<31))
		}
		name, dir, size, perr := format.ParseSymEntry(s.m.Path, int64(end), s.m.b[end:limit], uint32(id))
		if perr != nil {
			if strict {
				err = perr
			}
			break
		}
		if !strict && len(name) == 0 && dir == 0 {
			break
		}
		offs = append(offs, uint32(len(buf)))
		buf = append(buf, name...)
		dirs = append(dirs, dir)
		end += uint64(size)
	}
	if len(dirs) == 0 {
		return err
	}
	all := string(buf)
	offs = append(offs, uint32(len(all)))
	if len(s.names) == 0 {
		// The whole dictionary at once (an open): sized once.
		s.names, s.dirs = make([]string, 0, len(dirs)), make([]uint64, 0, len(dirs))
	}
	if 2*(s.nids+len(dirs)) > len(s.ids)/slotWords {
		s.rehash(s.nids + len(dirs))
	}
	for i, dir := range dirs {
		s.add(all[offs[i]:offs[i+1]], dir)
	}
	s.end = end
	return err
}

func (s *Symbols) add(name string, dir uint64) {
	id := uint32(len(s.names))
	s.names = append(s.names, name)
	s.dirs = append(s.dirs, dir)
	s.index(name, id)
}

// Append writes a new entry for name (writer only) and returns its id; the
// caller publishes the new count and End through the control file.
func (s *Symbols) Append(name []byte, dir uint64) (uint32, error) {
	if len(name) > store.MaxSymLen {
		return 0, fmt.Errorf("index: symbol is %d bytes, at most %d", len(name), store.MaxSymLen)
	}
	need := int64(s.end) + int64(format.SymEntrySize(len(name)))
	if need > s.m.size.Load() {
		// A quarter more, in whole blocks: proportional to the symbols.
		if err := s.m.grow((need + need/4 + format.BlockSize - 1) &^ (format.BlockSize - 1)); err != nil {
			return 0, err
		}
	}
	id := uint32(len(s.names))
	n := format.PutSymEntry(s.m.b[s.end:], id, dir, name)
	s.add(string(name), dir)
	s.end += uint64(n)
	return id, nil
}

// ReserveTo grows the file, if needed, to hold entries up to file offset
// end (a quarter more, in whole blocks), so that entries appended below
// it need no allocation. Writer side; the preparer calls it with the
// published end plus some room while the writer appends.
func (s *Symbols) ReserveTo(end uint64) error {
	size := min((int64(end)+int64(end)/4+format.BlockSize-1)&^(format.BlockSize-1), int64(len(s.m.b)))
	if int64(end) <= s.m.size.Load() || size <= s.m.size.Load() {
		return nil // enough, or as much as the mapping holds (Append says when full)
	}
	return s.m.grow(size)
}

// Truncate forgets decoded entries past count (recovery).
func (s *Symbols) Truncate(count int) {
	if count >= len(s.names) {
		return
	}
	end := uint64(format.BlockSize)
	for _, n := range s.names[:count] {
		end += uint64(format.SymEntrySize(len(n)))
	}
	s.names, s.dirs, s.end = s.names[:count], s.dirs[:count], end
	s.rehash(count)
}

// Sync writes the dictionary back up to End.
func (s *Symbols) Sync() error { return s.m.sync(int64(s.end)) }

// SyncTo writes the dictionary back up to file offset end. It touches only
// the mapping, so the flusher may call it while the writer appends entries.
func (s *Symbols) SyncTo(end uint64) error { return s.m.sync(int64(end)) }

// Rewrite writes the dictionary's bytes [from, to) (file offsets) to the
// file again through the page cache, from a copy, so that they are dirty
// again: after a failed msync the kernel may have marked them clean
// without their reaching the disk, and a second msync would skip them.
// The bytes must be published (they do not change); the writer may go on
// appending past to.
func (s *Symbols) Rewrite(from, to uint64) error {
	from = min(from, to)
	buf := make([]byte, to-from)
	copy(buf, s.m.b[from:to])
	f, err := s.m.file()
	if err == nil {
		_, err = f.WriteAt(buf, int64(from))
		if e := f.Close(); err == nil {
			err = e
		}
	}
	if err != nil {
		return fmt.Errorf("index: rewrite %s: %w", s.m.Path, err)
	}
	return nil
}

// ClearTail zeroes the bytes after the last decoded entry, up to the size
// of the largest possible entry: a writer that died between writing an
// entry and publishing it leaves one there, with a valid check, naming a
// postings chunk that a later writer may reuse. Writer only (recovery).
func (s *Symbols) ClearTail() {
	end := min(s.end+uint64(format.SymEntrySize(store.MaxSymLen)), uint64(s.m.size.Load()))
	if s.end < end {
		clear(s.m.b[s.end:end])
	}
}
