package format

import (
	"bytes"
	"hash/crc32"
	"os"

	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/store"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the checksum used by file headers and dictionary entries.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Segment header layout (on-disk contract), block 0 of every segment file:
//
//	@0  magic [8]  "TICKSEG\0" (durable) or "TICKLIV\0" (live slot)
//	@8  version u32
//	@12 rowSize u32
//	@16 tableID [16]
//	@32 segNo u64
//	@40 baseSeq u64      = segNo * rowsPerSeg
//	@48 rowsPerSeg u64   a power of two
//	@56 check u32        CRC32C of bytes [0,56)
//	@64 gen u64          live slots only: the assignment generation, mutable
//	@72 liveFrom u64     live slots only: rows of the segment below this
//	                     index are not in the slot; read them from the
//	                     durable file (set before gen is published)
//
// Row i of the segment (seq = baseSeq+i) sits at BlockSize + i*rowSize.
const (
	segHeaderCheckOff = 56
	// LiveGenOff is the offset of a live slot's generation word.
	LiveGenOff = 64
	// LiveFromOff is the offset of a live slot's first-row-held word.
	LiveFromOff = 72
)

// SegHeader is a decoded segment header.
type SegHeader struct {
	Live       bool
	TableID    [16]byte
	RowSize    int
	SegNo      uint64
	RowsPerSeg uint64
}

// BaseSeq is the sequence number of the segment's first row.
func (h SegHeader) BaseSeq() uint64 { return h.SegNo * h.RowsPerSeg }

// SegFileSize is the size of a segment file: header block plus the row area
// rounded up to whole blocks.
func SegFileSize(rowSize int, rowsPerSeg uint64) int64 {
	return BlockSize + (int64(rowsPerSeg)*int64(rowSize)+BlockSize-1)&^(BlockSize-1)
}

// Marshal writes the header into dst[:BlockSize] (the gen word is zero).
func (h SegHeader) Marshal(dst []byte) {
	clear(dst[:BlockSize])
	magic := MagicSeg
	if h.Live {
		magic = MagicLive
	}
	copy(dst, magic)
	le.PutUint32(dst[8:], FormatVersion)
	le.PutUint32(dst[12:], uint32(h.RowSize))
	copy(dst[16:32], h.TableID[:])
	le.PutUint64(dst[32:], h.SegNo)
	le.PutUint64(dst[40:], h.BaseSeq())
	le.PutUint64(dst[48:], h.RowsPerSeg)
	le.PutUint32(dst[segHeaderCheckOff:], CRC32C(dst[:segHeaderCheckOff]))
}

// UnmarshalSegHeader decodes and checks a segment header read from path.
func UnmarshalSegHeader(path string, b []byte) (SegHeader, error) {
	var h SegHeader
	if len(b) < BlockSize {
		return h, Corruptf(path, 0, "segment header truncated: %d bytes, want %d", len(b), BlockSize)
	}
	switch string(b[:8]) {
	case MagicSeg:
	case MagicLive:
		h.Live = true
	default:
		return h, Corruptf(path, 0, "bad segment magic %q", b[:8])
	}
	if got, want := le.Uint32(b[segHeaderCheckOff:]), CRC32C(b[:segHeaderCheckOff]); got != want {
		return h, Corruptf(path, segHeaderCheckOff, "segment header check %08x, computed %08x", got, want)
	}
	if v := le.Uint32(b[8:]); v != FormatVersion {
		return h, Corruptf(path, 8, "segment format version %d, this build reads %d", v, FormatVersion)
	}
	h.RowSize = int(le.Uint32(b[12:]))
	copy(h.TableID[:], b[16:32])
	h.SegNo = le.Uint64(b[32:])
	h.RowsPerSeg = le.Uint64(b[48:])
	if h.RowsPerSeg == 0 || h.RowsPerSeg&(h.RowsPerSeg-1) != 0 || le.Uint64(b[40:]) != h.BaseSeq() {
		return h, Corruptf(path, 40, "segment geometry: %d rows per segment, base %d for segment %d", h.RowsPerSeg, le.Uint64(b[40:]), h.SegNo)
	}
	return h, nil
}

// Generic header of sym.dat, ts.idx and post.idx (on-disk contract):
//
//	@0  magic [8]
//	@8  version u32
//	@12 reserved u32
//	@16 tableID [16]
//	@32 check u32   CRC32C of bytes [0,32)
const fileHeaderCheckOff = 32

// MarshalFileHeader writes a generic file header into dst[:BlockSize].
func MarshalFileHeader(dst []byte, magic string, tableID [16]byte) {
	MarshalFileHeaderVersion(dst, magic, FormatVersion, tableID)
}

// MarshalFileHeaderVersion is MarshalFileHeader for a file kind with
// versions of its own (post.idx: docs/FORMAT.md §7).
func MarshalFileHeaderVersion(dst []byte, magic string, version uint32, tableID [16]byte) {
	clear(dst[:BlockSize])
	copy(dst, magic)
	le.PutUint32(dst[8:], version)
	copy(dst[16:32], tableID[:])
	le.PutUint32(dst[fileHeaderCheckOff:], CRC32C(dst[:fileHeaderCheckOff]))
}

// CheckFileHeader validates a generic file header read from path.
func CheckFileHeader(path string, b []byte, magic string, tableID [16]byte) error {
	_, err := CheckFileHeaderVersion(path, b, magic, FormatVersion, tableID)
	return err
}

// CheckFileHeaderVersion is CheckFileHeader for a file kind with versions
// of its own: it accepts versions 1 to maxVersion and returns the file's.
func CheckFileHeaderVersion(path string, b []byte, magic string, maxVersion uint32, tableID [16]byte) (uint32, error) {
	if len(b) < BlockSize {
		return 0, Corruptf(path, 0, "header truncated: %d bytes, want %d", len(b), BlockSize)
	}
	if string(b[:8]) != magic {
		return 0, Corruptf(path, 0, "bad magic %q, want %q", b[:8], magic)
	}
	if got, want := le.Uint32(b[fileHeaderCheckOff:]), CRC32C(b[:fileHeaderCheckOff]); got != want {
		return 0, Corruptf(path, fileHeaderCheckOff, "header check %08x, computed %08x", got, want)
	}
	v := le.Uint32(b[8:])
	if v < 1 || v > maxVersion {
		if maxVersion == 1 {
			return 0, Corruptf(path, 8, "format version %d, this build reads %d", v, maxVersion)
		}
		return 0, Corruptf(path, 8, "format version %d, this build reads 1 to %d", v, maxVersion)
	}
	if !bytes.Equal(b[16:32], tableID[:]) {
		return 0, Corruptf(path, 16, "table id %x does not match the table's %x", b[16:32], tableID)
	}
	return v, nil
}

// Symbol dictionary entry (on-disk contract), appended after sym.dat's
// header block, 8-aligned:
//
//	@0  nameLen u32
//	@4  check u32   CRC32C of id u32 LE, dir u64 LE, name
//	@8  dir u64     first postings directory chunk of this symbol
//	@16 name [nameLen], zero padded to a multiple of 8
//
// A name is at most store.MaxSymLen bytes.
const SymEntryHeader = 16

// SymEntrySize is the size of an entry for a name of n bytes.
func SymEntrySize(n int) int { return SymEntryHeader + (n+7)&^7 }

func symCheck(id uint32, dir uint64, name []byte) uint32 {
	var b [12]byte
	le.PutUint32(b[0:], id)
	le.PutUint64(b[4:], dir)
	return crc32.Update(CRC32C(b[:]), castagnoli, name)
}

// PutSymEntry writes symbol id's entry into dst and returns its size.
func PutSymEntry(dst []byte, id uint32, dir uint64, name []byte) int {
	n := SymEntrySize(len(name))
	clear(dst[:n])
	le.PutUint32(dst[0:], uint32(len(name)))
	le.PutUint32(dst[4:], symCheck(id, dir, name))
	le.PutUint64(dst[8:], dir)
	copy(dst[SymEntryHeader:], name)
	return n
}

// ParseSymEntry decodes the entry of symbol id at b[0:]; off is its file
// offset for error messages. The returned name aliases b.
func ParseSymEntry(path string, off int64, b []byte, id uint32) (name []byte, dir uint64, size int, err error) {
	if len(b) < SymEntryHeader {
		return nil, 0, 0, Corruptf(path, off, "symbol %d: entry header truncated", id)
	}
	n := int(le.Uint32(b[0:]))
	if n > store.MaxSymLen || SymEntrySize(n) > len(b) {
		return nil, 0, 0, Corruptf(path, off, "symbol %d: name length %d does not fit", id, n)
	}
	dir = le.Uint64(b[8:])
	name = b[SymEntryHeader : SymEntryHeader+n]
	if got, want := le.Uint32(b[4:]), symCheck(id, dir, name); got != want {
		return nil, 0, 0, Corruptf(path, off, "symbol %d: entry check %08x, computed %08x", id, got, want)
	}
	return name, dir, SymEntrySize(n), nil
}

// MapSegment maps the segment file at path read-only and checks that its
// header is segment seg of table id with this geometry: the one way every
// reader and the writer's recovery map a durable segment. An error from
// opening the file is returned as is (os.ErrNotExist included).
func MapSegment(path string, want SegHeader) ([]byte, error) {
	b, _, err := MapSegmentOf(path, want, nil)
	return b, err
}

// MapSegmentOf is MapSegment for a table whose rows had several layouts
// (Schema.AddColumn): with layout non-nil, the header's row size need
// not be want.RowSize, only one layout accepts; it returns the row size.
func MapSegmentOf(path string, want SegHeader, layout func(rowSize int) bool) ([]byte, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if st.Size() < BlockSize {
		return nil, 0, Corruptf(path, st.Size(), "segment file is %d bytes, shorter than its header", st.Size())
	}
	b, err := mmap.MapShared(f, int(st.Size()), false)
	if err != nil {
		return nil, 0, err
	}
	h, err := UnmarshalSegHeader(path, b)
	if err == nil && layout != nil && h.RowSize != want.RowSize && layout(h.RowSize) {
		want.RowSize = h.RowSize
	}
	if err == nil && h != want {
		err = Corruptf(path, 0, "header is for segment %d of table %x (%d-byte rows, %d a segment, live %v), want segment %d of %x (%d, %d, live %v)",
			h.SegNo, h.TableID, h.RowSize, h.RowsPerSeg, h.Live, want.SegNo, want.TableID, want.RowSize, want.RowsPerSeg, want.Live)
	}
	if size := SegFileSize(want.RowSize, want.RowsPerSeg); err == nil && st.Size() != size {
		err = Corruptf(path, st.Size(), "segment file is %d bytes, want %d", st.Size(), size)
	}
	if err != nil {
		mmap.Unmap(b)
		return nil, 0, err
	}
	return b, h.RowSize, nil
}
