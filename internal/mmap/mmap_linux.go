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
// never takes a first-touch fault on it.
func PopulateWrite(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Madvise(b, unix.MADV_POPULATE_WRITE)
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

// MsyncSync writes the dirty pages of b back and waits (MS_SYNC).
func MsyncSync(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Msync(b, unix.MS_SYNC)
}

// Fallocate reserves [0, size) of f (mode 0: the size grows too).
func Fallocate(f *os.File, size int64) error {
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		return fmt.Errorf("fallocate %s to %d bytes: %w", f.Name(), size, err)
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
