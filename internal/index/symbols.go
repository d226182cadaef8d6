package index

import (
	"fmt"

	"github.com/tickdb/tickdb/internal/format"
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
	ids   map[string]uint32
	end   uint64 // file offset just past the last decoded entry
}

// CreateSymbols creates an empty sym.dat at path.
func CreateSymbols(path string, tableID [16]byte) error {
	return createIndexFile(path, format.MagicSym, format.FormatVersion, tableID, symInitial)
}

// OpenSymbols maps sym.dat.
func OpenSymbols(path string, tableID [16]byte, writable bool) (*Symbols, error) {
	m, err := openIndexFile(path, format.MagicSym, format.FormatVersion, tableID, symReserve, writable)
	if err != nil {
		return nil, err
	}
	return &Symbols{m: m, ids: map[string]uint32{}, end: format.BlockSize}, nil
}

// Path is the file's path.
func (s *Symbols) Path() string { return s.m.Path }

// Close unmaps the file.
func (s *Symbols) Close() error { return s.m.Close() }

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

// Dir returns symbol id's first postings directory chunk.
func (s *Symbols) Dir(id uint32) uint64 { return s.dirs[id] }

// Dirs returns every symbol's first directory chunk, by id. The slice is
// the Symbols' own; do not modify it.
func (s *Symbols) Dirs() []uint64 { return s.dirs }

// Lookup returns the id of name without allocating.
func (s *Symbols) Lookup(name []byte) (uint32, bool) {
	id, ok := s.ids[string(name)]
	return id, ok
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
	for uint64(len(s.names)) < count {
		if s.end >= end {
			return format.Corruptf(s.m.Path, int64(s.end), "published %d symbols, entries end after %d", count, len(s.names))
		}
		id := uint32(len(s.names))
		name, dir, size, err := format.ParseSymEntry(s.m.Path, int64(s.end), s.m.b[s.end:end], id)
		if err != nil {
			return err
		}
		s.add(string(name), dir)
		s.end += uint64(size)
	}
	return nil
}

// Scan decodes entries from the current end until one fails its check or
// the file ends: recovery uses it when the published count is not trusted.
// It returns the number of symbols then known.
func (s *Symbols) Scan() int {
	for {
		id := uint32(len(s.names))
		if !s.m.covers(int64(s.end) + format.SymEntryHeader) {
			return len(s.names)
		}
		limit := uint64(s.m.size.Load())
		name, dir, size, err := format.ParseSymEntry(s.m.Path, int64(s.end), s.m.b[s.end:limit], id)
		if err != nil || (len(name) == 0 && dir == 0) {
			return len(s.names)
		}
		s.add(string(name), dir)
		s.end += uint64(size)
	}
}

func (s *Symbols) add(name string, dir uint64) {
	id := uint32(len(s.names))
	s.names = append(s.names, name)
	s.dirs = append(s.dirs, dir)
	if _, dup := s.ids[name]; !dup {
		s.ids[name] = id
	}
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
	for _, n := range s.names[count:] {
		if id, ok := s.ids[n]; ok && int(id) >= count {
			delete(s.ids, n)
		}
	}
	end := uint64(format.BlockSize)
	for _, n := range s.names[:count] {
		end += uint64(format.SymEntrySize(len(n)))
	}
	s.names, s.dirs, s.end = s.names[:count], s.dirs[:count], end
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
	if _, err := s.m.f.WriteAt(buf, int64(from)); err != nil {
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
