//go:build !linux

package mmap

import (
	"fmt"
	"os"

	mmapgo "github.com/edsrzf/mmap-go"
	"github.com/tickdb/tickdb/store"
)

// Off Linux a table can only be read: mappings are read-only (mmap-go:
// mmap on darwin and the BSDs, a file mapping view on Windows), page-cache
// advice is a no-op, and every write-side call returns store.ErrUnsupported.
// mmap_linux.go documents each function.

// MapShared maps min(length, file size) bytes of f read-only. The mapping
// is cut at the file's size because Windows cannot map a read-only view
// past the end of a file; a reader off Linux reads durable files, which do
// not grow under it. A writable mapping returns store.ErrUnsupported.
func MapShared(f *os.File, length int, writable bool) ([]byte, error) {
	if writable {
		return nil, fmt.Errorf("mmap %s writable: %w", f.Name(), store.ErrUnsupported)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	length = int(min(int64(length), st.Size()))
	if length <= 0 {
		return []byte{}, nil // an empty file cannot be mapped on Windows
	}
	b, err := mmapgo.MapRegion(f, length, mmapgo.RDONLY, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("mmap %s (%d bytes): %w", f.Name(), length, err)
	}
	return b, nil
}

// MapAnon returns store.ErrUnsupported: only the writer uses it.
func MapAnon(length int) ([]byte, error) {
	return nil, fmt.Errorf("mmap anonymous %d bytes: %w", length, store.ErrUnsupported)
}

// MapAnonReserve returns store.ErrUnsupported: only the writer uses it.
func MapAnonReserve(length int) ([]byte, error) {
	return nil, fmt.Errorf("mmap anonymous %d bytes: %w", length, store.ErrUnsupported)
}

// Replace returns store.ErrUnsupported off Linux, where no hot copies are read.
func Replace(b []byte, f *os.File) error {
	return fmt.Errorf("mmap %s over its copy: %w", f.Name(), store.ErrUnsupported)
}

// AdviseHuge is a no-op off Linux.
func AdviseHuge(b []byte) error { return nil }

// Unmap releases a mapping made by MapShared. nil or empty is a no-op.
func Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	m := mmapgo.MMap(b)
	return m.Unmap()
}

// PopulateWrite is a no-op off Linux.
func PopulateWrite(b []byte) error { return nil }

// PopulateRead is a no-op off Linux.
func PopulateRead(b []byte) error { return nil }

// WillNeed is a no-op off Linux.
func WillNeed(b []byte) error { return nil }

// AdviseRandom is a no-op off Linux.
func AdviseRandom(b []byte) error { return nil }

// Release is a no-op off Linux.
func Release(b []byte) error { return nil }

// DropMapping is a no-op off Linux.
func DropMapping(b []byte) error { return nil }

// MsyncSync returns store.ErrUnsupported for a non-empty b: mappings off Linux
// are read-only, with nothing to write back.
func MsyncSync(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return fmt.Errorf("msync: %w", store.ErrUnsupported)
}

// Fallocate returns store.ErrUnsupported.
func Fallocate(f *os.File, from, size int64) error {
	return fmt.Errorf("fallocate %s from %d to %d bytes: %w", f.Name(), from, size, store.ErrUnsupported)
}

// Allocate returns store.ErrUnsupported.
func Allocate(f *os.File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	return fmt.Errorf("fallocate %s [%d, %d): %w", f.Name(), off, off+n, store.ErrUnsupported)
}

// FadviseWillNeed is a no-op off Linux.
func FadviseWillNeed(f *os.File, off, n int64) error { return nil }

// PunchHole returns store.ErrUnsupported.
func PunchHole(f *os.File, off, n int64) error {
	return fmt.Errorf("punch %s [%d, %d): %w", f.Name(), off, off+n, store.ErrUnsupported)
}

// BootID returns all ones off Linux: never a Linux boot id (a version 4
// UUID) nor the zeros a writer records when it cannot read its own, so a
// reader here never trusts a table's live slots and reads only its durable
// files.
func BootID() [16]byte {
	var id [16]byte
	for i := range id {
		id[i] = 0xff
	}
	return id
}

// Populator pre-faults ranges writable on Linux; elsewhere it does
// nothing.
type Populator struct{}

// NewPopulator returns an empty Populator.
func NewPopulator() *Populator { return &Populator{} }

// Add does nothing here.
func (p *Populator) Add(b []byte) error { return nil }

// Flush does nothing here.
func (p *Populator) Flush() error { return nil }

// Close does nothing here.
func (p *Populator) Close() {}
