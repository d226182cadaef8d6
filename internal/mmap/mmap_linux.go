package mmap

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MapShared maps length bytes of f from offset 0, MAP_SHARED. A writable
// mapping is PROT_READ|PROT_WRITE; a read-only one is PROT_READ, so a stray
// store faults. length may exceed the file size: pages past the end must not
// be touched until the file has grown over them (that is how the index files
// grow without remapping).
func MapShared(f *os.File, length int, writable bool) ([]byte, error) {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, length, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s (%d bytes): %w", f.Name(), length, err)
	}
	return b, nil
}

// MapAnon maps length bytes of zeroed, page-aligned anonymous memory: the
// O_DIRECT flush buffer lives here, never on the Go heap.
func MapAnon(length int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("mmap anonymous %d bytes: %w", length, err)
	}
	return b, nil
}

// MapAnonReserve is MapAnon for a region sized for the most it may ever
// need: MAP_NORESERVE, so its untouched pages cost neither memory nor
// commit charge (on a kernel that does not overcommit strictly), and a
// table that grows into it never moves (a copy of what it holds, and a
// fault for every page of the copy, each time it outgrows a mapping).
func MapAnonReserve(length int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("mmap anonymous %d bytes: %w", length, err)
	}
	return b, nil
}

// Replace maps f read-only over b, a whole read-only mapping MapShared
// made, in place (MAP_FIXED): from then on b reads f's bytes, and the
// pages of the file mapped before are released. The swap is one system
// call, so no goroutine finds b unmapped; f must hold the same bytes for
// readers of b to see no change (a hot copy and its durable file).
func Replace(b []byte, f *os.File) error {
	if len(b) == 0 {
		return nil
	}
	_, err := unix.MmapPtr(int(f.Fd()), 0, unsafe.Pointer(&b[0]), uintptr(len(b)), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		return fmt.Errorf("mmap %s over its copy: %w", f.Name(), err)
	}
	return nil
}

// AdviseHuge asks for transparent huge pages on b, an anonymous mapping
// (MADV_HUGEPAGE): a large buffer then costs a fault per 2 MiB, not per
// 4 KiB page. Advice: an error only means 4 KiB pages.
func AdviseHuge(b []byte) error { return unix.Madvise(b, unix.MADV_HUGEPAGE) }

// Unmap releases a mapping made by MapShared or MapAnon. nil is a no-op.
func Unmap(b []byte) error {
	if b == nil {
		return nil
	}
	return unix.Munmap(b)
}

// PopulateWrite pre-faults b writable (MADV_POPULATE_WRITE), so the writer
// never takes a first-touch fault on it, and then reads a word of every
// page (Touch).
func PopulateWrite(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil {
		return err
	}
	Touch(b)
	return nil
}

// PopulateRead pre-faults b readable (MADV_POPULATE_READ).
func PopulateRead(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Madvise(b, unix.MADV_POPULATE_READ)
}

// WillNeed starts reading b's pages into the page cache in the background
// (MADV_WILLNEED).
func WillNeed(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Madvise(b, unix.MADV_WILLNEED)
}

// AdviseRandom sets MADV_RANDOM: small folios, so page-cache writeback of a
// mapped index file writes what changed and not a 2 MiB folio around it.
func AdviseRandom(b []byte) error { return unix.Madvise(b, unix.MADV_RANDOM) }

// DropMapping removes the process's page table entries for b
// (MADV_DONTNEED). On a shared file mapping the data is kept: dirty pages
// stay dirty in the page cache and the next access faults them back in.
// Never use it on private or anonymous memory, which it would zero.
func DropMapping(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Madvise(b, unix.MADV_DONTNEED)
}

// Release gives the pages of b, anonymous memory whose contents are no
// longer needed, back to the system (MADV_DONTNEED): b stays mapped and
// reads as zeros, and costs memory again only where it is written.
func Release(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Madvise(b, unix.MADV_DONTNEED)
}

// MsyncSync writes the dirty pages of b back and waits (MS_SYNC).
func MsyncSync(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Msync(b, unix.MS_SYNC)
}

// Fallocate grows f from from bytes to size, reserving [from, size)
// (mode 0: the size grows too). Bytes below from are left alone: a hole
// punched there (PunchHole) stays a hole.
func Fallocate(f *os.File, from, size int64) error {
	if size <= from {
		return nil
	}
	if err := unix.Fallocate(int(f.Fd()), 0, from, size-from); err != nil {
		return fmt.Errorf("fallocate %s from %d to %d bytes: %w", f.Name(), from, size, err)
	}
	return nil
}

// Allocate reserves bytes [off, off+n) of f (fallocate mode 0; within
// the file's size it allocates blocks, as unwritten extents on ext4 and
// xfs, and leaves the size alone). It reports ErrNoAllocate where the file
// system has no fallocate: the caller's writes then allocate as they go.
func Allocate(f *os.File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	err := unix.Fallocate(int(f.Fd()), 0, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return ErrNoAllocate
	}
	if err != nil {
		return fmt.Errorf("fallocate %s [%d, %d): %w", f.Name(), off, off+n, err)
	}
	return nil
}

// FadviseWillNeed starts reading bytes [off, off+n) of f into the page
// cache in the background (POSIX_FADV_WILLNEED).
func FadviseWillNeed(f *os.File, off, n int64) error {
	return unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED)
}

// PunchHole frees the disk blocks of bytes [off, off+n) of f and keeps its
// size: reads there give zeros.
func PunchHole(f *os.File, off, n int64) error {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}

// BootID returns the kernel's boot id (16 bytes), or zeros if unknown. A
// changed boot id means tmpfs was emptied: live segments are gone.
func BootID() [16]byte {
	var id [16]byte
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return id
	}
	j := 0
	for i := 0; i < len(b) && j < 32; i++ {
		c := b[i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		default:
			continue
		}
		if j%2 == 0 {
			id[j/2] = v << 4
		} else {
			id[j/2] |= v
		}
		j++
	}
	return id
}

// Populator pre-faults many scattered ranges of mappings writable
// (MADV_POPULATE_WRITE) with few system calls: Add collects ranges, Flush
// hands up to 1,024 of them at a time to process_madvise(2) on the
// process itself (Linux 6.13 and later), or, where the kernel refuses
// that, to one madvise each. On a virtual machine a page fault, and a
// system call, is a costly exit to the hypervisor: re-enabling writes to
// 30,000 scattered pages of post.idx after a checkpoint's writeback (the
// pages a writer of a million symbols writes again at once) costs about
// 20 µs a page as faults, about 2 µs a page this way. A Populator
// belongs to one goroutine; Close releases its descriptor.
type Populator struct {
	iov   []unix.Iovec
	pidfd int  // for process_madvise; -1 until opened
	plain bool // process_madvise refused: madvise each range
}

// NewPopulator returns an empty Populator.
func NewPopulator() *Populator { return &Populator{pidfd: -1} }

// Add queues b to be populated writable, flushing first when the queue
// is full.
func (p *Populator) Add(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var err error
	if len(p.iov) == populateBatch {
		err = p.Flush()
	}
	v := unix.Iovec{Base: &b[0]}
	v.SetLen(len(b))
	p.iov = append(p.iov, v)
	return err
}

// populateBatch is the ranges of one process_madvise call (UIO_MAXIOV).
const populateBatch = 1024

// Flush populates the queued ranges and empties the queue. A range that
// cannot be populated (past the end of its file) is skipped: population
// is an optimisation, the first store faults the page in anyway.
func (p *Populator) Flush() error {
	if len(p.iov) == 0 {
		return nil
	}
	defer func() { p.iov = p.iov[:0] }()
	if !p.plain {
		if p.pidfd < 0 {
			fd, err := unix.PidfdOpen(os.Getpid(), 0)
			if err != nil {
				p.plain = true
			} else {
				p.pidfd = fd
			}
		}
		if !p.plain {
			_, _, e := unix.Syscall6(unix.SYS_PROCESS_MADVISE, uintptr(p.pidfd), uintptr(unsafe.Pointer(&p.iov[0])), uintptr(len(p.iov)), unix.MADV_POPULATE_WRITE, 0, 0)
			switch e {
			case 0:
				return nil
			case unix.EINVAL, unix.ENOSYS, unix.EPERM:
				p.plain = true // an older kernel: one madvise a range
			default:
				// (EFAULT: a range past the end of its file; the
				// ranges before it are populated.)
				return nil
			}
		}
	}
	var first error
	for _, v := range p.iov {
		b := unsafe.Slice(v.Base, v.Len)
		if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil && first == nil && err != unix.EFAULT {
			first = err
		}
	}
	return first
}

// Close releases the Populator's descriptor.
func (p *Populator) Close() {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
		p.pidfd = -1
	}
	p.iov = nil
}
