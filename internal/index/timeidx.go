package index

import (
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
)

// Time index (on-disk contract; docs/FORMAT.md "ts.idx"): after the header
// block, entry k (int64 LE at 4096 + 8k) is the ts of row k << StrideShift.
// Entries for rows below the published count are valid.
// timeReserve is the mapping's virtual size: 16 GiB, 2^31 entries (2^37
// rows at the default stride, more than post.idx can index).
const timeReserve = 1 << 34

// timeInitial is a new ts.idx's size: the header and one block of entries
// (512 entries, 32,768 rows at the default stride). The writer's preparer
// grows it ahead of the rows.
const timeInitial = 2 * format.BlockSize

// TimeIndex is the mapped sparse time index.
type TimeIndex struct {
	m *mappedFile
	w []uint64 // entries, over the mapping past the header
}

// CreateTimeIndex creates an empty ts.idx at path.
func CreateTimeIndex(path string, tableID [16]byte, fs vfs.FS) error {
	return createIndexFile(fs, path, format.MagicTime, format.FormatVersion, tableID, timeInitial)
}

// OpenTimeIndex maps ts.idx.
func OpenTimeIndex(path string, tableID [16]byte, fs vfs.FS) (*TimeIndex, error) {
	m, err := openIndexFile(path, format.MagicTime, format.FormatVersion, tableID, timeReserve, fs)
	if err != nil {
		return nil, err
	}
	return &TimeIndex{m: m, w: mmap.Words(m.b[format.BlockSize:])}, nil
}

// Path is the file's path.
func (t *TimeIndex) Path() string { return t.m.Path }

// WillNeedTail starts reading the index's last n bytes into the page
// cache in the background: its newest rows' entries.
func (t *TimeIndex) WillNeedTail(n int64) { _ = mmap.WillNeed(t.tail(n)) }

// ReadTail reads the index's last n bytes into the page cache and maps
// them, and returns once they are in (MADV_POPULATE_READ).
func (t *TimeIndex) ReadTail(n int64) { _ = mmap.PopulateRead(t.tail(n)) }

// tail is the mapping of the index's last n bytes, from a page boundary.
func (t *TimeIndex) tail(n int64) []byte {
	end := min(t.m.size.Load(), int64(len(t.m.b)))
	return t.m.b[max(0, end-n)&^(format.BlockSize-1) : end]
}

// Close unmaps the file.
func (t *TimeIndex) Close() error { return t.m.Close() }

// Set stores entry k. Writer only; the entry is published with the row.
func (t *TimeIndex) Set(k uint64, ts int64) { t.w[k] = uint64(ts) }

// At returns entry k. The caller has checked k against the published count
// and Covers.
func (t *TimeIndex) At(k uint64) int64 { return int64(t.w[k]) }

// Covers reports whether entries [0, n) are inside the file.
func (t *TimeIndex) Covers(n uint64) bool { return t.m.covers(format.BlockSize + int64(n)*8) }

// Capacity is the number of entries the file holds now (writer side).
func (t *TimeIndex) Capacity() uint64 { return uint64(t.m.size.Load()-format.BlockSize) / 8 }

// Grow makes room for n entries and pre-faults them. Writer side.
func (t *TimeIndex) Grow(n uint64) error {
	return t.m.grow((format.BlockSize + int64(n)*8 + format.BlockSize - 1) &^ (format.BlockSize - 1))
}

// Sync writes entries [0, n) back to disk.
func (t *TimeIndex) Sync(n uint64) error { return t.m.sync(format.BlockSize + int64(n)*8) }

// Trim cuts the file after the first n entries (the room grown ahead
// goes): maintenance when a table closes.
func (t *TimeIndex) Trim(n uint64) error { return t.m.trim(format.BlockSize + int64(n)*8) }
