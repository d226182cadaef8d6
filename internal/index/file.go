package index

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
)

// mappedFile is an index file mapped with a large fixed virtual size that
// grows underneath the mapping (fallocate), so nobody ever remaps it.
//
// A reader keeps the file open (rf: covers refreshes the size with
// fstat). The writer does not: the mapping keeps the file alive, and the
// rare operations that need a descriptor (grow, trim, punch) open the
// file for their call (file), so a table's index files cost its writer
// no descriptor (a thousand tables in one process, four files each).
//
// The writer opens, grows and syncs the file through its vfs.FS (fs):
// the file it opened (wf, closed once mapped) is what the mapping's
// msync goes through.
type mappedFile struct {
	Path string
	rf   *os.File  // the reader's descriptor (nil in the writer)
	fs   vfs.FS    // the writer's file system (nil in a reader)
	wf   *vfs.File // the writer's file as opened (closed), for msync
	b    []byte
	// size is the bytes known to exist (writer: allocated; reader: last
	// fstat). Atomic because the writer's preparer grows the file while the
	// writer goroutine allocates from it. This file is the package's only
	// user of sync/atomic; mapped words go through store's helpers.
	size atomic.Int64
	// synced is how far the file's writeback has got (sync): the pass
	// (counted from 1) in the high 32 bits, the pages written back in it
	// in the low ones. The checkpointer syncs; a writer that maps pages
	// again once they are written back reads it (KeepMapped).
	synced  atomic.Uint64
	rw      bool
	max     int        // the largest reservation the file's kind takes (reserve.go)
	old     [][]byte   // the writer's earlier mappings, unmapped at Close (reserve.go)
	version uint32     // the header's version word
	growMu  sync.Mutex // serialises growth (writer goroutine and preparer)
}

func createIndexFile(fs vfs.FS, path, magic string, version uint32, tableID [16]byte, size int64) error {
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	hdr := make([]byte, format.BlockSize)
	format.MarshalFileHeaderVersion(hdr, magic, version, tableID)
	if _, err := f.Write(hdr); err != nil {
		return err
	}
	if err := mmap.Fallocate(f.File, format.BlockSize, size); err != nil {
		return err
	}
	return f.Sync()
}

// openIndexFile maps an index file whose header version is 1 to
// maxVersion (m.version): read-write through fs (the writer), or
// read-only when fs is nil (a reader).
func openIndexFile(path, magic string, maxVersion uint32, tableID [16]byte, reserve int, fs vfs.FS) (*mappedFile, error) {
	writable := fs != nil
	var f *os.File
	var wf *vfs.File
	var err error
	if writable {
		if wf, err = fs.OpenFile(path, os.O_RDWR, 0); err == nil {
			f = wf.File
		}
	} else {
		f, err = os.OpenFile(path, os.O_RDONLY, 0)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() < format.BlockSize {
		f.Close()
		return nil, format.Corruptf(path, st.Size(), "file is %d bytes, shorter than its header", st.Size())
	}
	max := reserve
	if writable {
		reserve = writerReserve(st.Size(), magic, max)
	}
	b, err := mmap.MapShared(f, reserve, writable)
	if err != nil {
		f.Close()
		return nil, err
	}
	// No read-around: for the writer, small folios, so writeback writes the
	// 4 KiB pages that changed; for a reader, a page fault reads its page
	// only (a device's read-ahead can be megabytes: 8 MiB on this project's
	// machines), and what a query needs is read ahead explicitly
	// (WillNeed) instead.
	_ = mmap.AdviseRandom(b)
	m := &mappedFile{Path: path, rf: f, fs: fs, wf: wf, b: b, rw: writable, max: max}
	if writable {
		f.Close()
		m.rf = nil
	}
	m.size.Store(st.Size())
	if m.version, err = format.CheckFileHeaderVersion(path, b, magic, maxVersion, tableID); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (m *mappedFile) Close() error {
	err := mmap.Unmap(m.b)
	m.b = nil
	for _, b := range m.old {
		if e := mmap.Unmap(b); err == nil {
			err = e
		}
	}
	m.old = nil
	if m.rf != nil {
		if e := m.rf.Close(); err == nil {
			err = e
		}
	}
	return err
}

// file opens the writer's file for one operation that needs a descriptor;
// the caller closes it.
func (m *mappedFile) file() (*vfs.File, error) {
	return m.fs.OpenFile(m.Path, os.O_RDWR, 0)
}

// punch frees the disk blocks of bytes [off, off+n), keeping the size.
// Writer side.
func (m *mappedFile) punch(off, n int64) error {
	f, err := m.file()
	if err != nil {
		return err
	}
	err = mmap.PunchHole(f.File, off, n)
	if e := f.Close(); err == nil {
		err = e
	}
	return err
}

// willNeed starts reading bytes [off, off+n) of the file into the page
// cache in the background (within what is known to exist).
func (m *mappedFile) willNeed(off, n int64) {
	end := min(off+n, m.size.Load(), int64(len(m.b)))
	if off < end {
		_ = mmap.WillNeed(m.b[off&^(format.BlockSize-1) : end])
	}
}

// covers reports whether [0, end) lies inside the file, refreshing the
// known size with fstat when needed. A reader calls it before touching
// bytes past what it has seen, so a damaged counter gives an error, not a
// SIGBUS.
func (m *mappedFile) covers(end int64) bool {
	if end <= m.size.Load() {
		return true
	}
	if end > int64(len(m.b)) {
		return false
	}
	if m.rf == nil {
		return false // the writer's size is its own
	}
	st, err := m.rf.Stat()
	if err != nil {
		return false
	}
	m.size.Store(st.Size())
	return end <= st.Size()
}

// grow makes the file at least size bytes and pre-faults the new range
// writable. Writer side (called from the preparer, or synchronously when
// the writer outruns it).
func (m *mappedFile) grow(size int64) error {
	m.growMu.Lock()
	defer m.growMu.Unlock()
	old := m.size.Load()
	if size <= old {
		return nil
	}
	if size > int64(len(m.b)) {
		return fmt.Errorf("index: %s would grow to %d bytes, past its %d-byte reservation", m.Path, size, len(m.b))
	}
	f, err := m.file()
	if err != nil {
		return err
	}
	// From the old size only: the postings' punched blocks below it
	// (PunchBelow) stay holes.
	err = mmap.Fallocate(f.File, old, size)
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return err
	}
	// Pre-faulting is an optimisation: a kernel without
	// MADV_POPULATE_WRITE (before 5.14) faults the pages in on first use.
	_ = mmap.PopulateWrite(m.b[old:size])
	m.size.Store(size)
	return nil
}

// sync writes [0, end) back to disk.
func (m *mappedFile) sync(end int64) error {
	if n := m.size.Load(); end > n {
		end = n
	}
	b := m.b[:(end+format.BlockSize-1)&^(format.BlockSize-1)]
	if !m.rw {
		return m.wf.Msync(b, 0)
	}
	// Drop this process's page table entries first: writeback would
	// otherwise write-protect each mapped dirty page with its own TLB
	// shootdown, interrupting the writer thousands of times a segment
	// (and on the reference VM costing the checkpointer about 30 µs a
	// page). The pages stay dirty in the page cache (a shared file
	// mapping loses nothing), msync writes them, and the writer
	// re-faults the few it still uses. A writer that uses many pages
	// again at once (PostWriter.KeepMapped) maps them again itself once
	// they are written back, a chunk at a time, so that it can start
	// while the rest is written: synced says how far this pass got.
	pass := m.synced.Load()>>32 + 1
	m.synced.Store(pass << 32)
	for off := 0; off < len(b); off += syncChunk {
		c := b[off:min(off+syncChunk, len(b))]
		if err := mmap.DropMapping(c); err != nil {
			return err
		}
		if err := m.wf.Msync(c, int64(off)); err != nil {
			return err
		}
		m.synced.Store(pass<<32 | uint64((off+len(c))/format.BlockSize))
	}
	return nil
}

// syncChunk is the bytes sync writes back at a time.
const syncChunk = 4 << 20

// trim cuts the file at byte from (rounded up to a page): the room grown
// ahead that a closed table will not use goes, blocks and size. (A hole
// punched there, keeping the size, would be worse: a writer that reopens
// the table would find the size and take the room as allocated, and its
// first store into a page the file system cannot allocate, on a full disk,
// would raise SIGBUS.) Readers read only entries below what is published,
// below from; a writer that reopens the table grows the file again
// (fallocate) before it uses more.
func (m *mappedFile) trim(from int64) error {
	from = max((from+format.BlockSize-1)&^(format.BlockSize-1), format.BlockSize)
	if size := m.size.Load(); from < size {
		f, err := m.file()
		if err != nil {
			return err
		}
		err = f.Truncate(from)
		if e := f.Close(); err == nil {
			err = e
		}
		if err != nil {
			return fmt.Errorf("index: trim %s to %d bytes: %w", m.Path, from, err)
		}
		m.size.Store(from)
	}
	return nil
}
