package format

import (
	"encoding/binary"
	"hash/crc32"
)

// Clustered hot copy layout (on-disk contract, docs/FORMAT.md §13): a
// sealed segment's rows, byte for byte, grouped by symbol.
//
//	@0   magic [8]   "TICKCLU\0"
//	@8   version u32 = CluVersion
//	@12  rowSize u32
//	@16  tableID [16]
//	@32  segNo u64
//	@40  rowsPerSeg u64
//	@48  rows u64       rows in the copy (= rowsPerSeg: only full segments)
//	@56  nsym u32       directory entries
//	@60  pad u32
//	@64  dirOff u64     = BlockSize
//	@72  idxOff u64     = dirOff + roundup(nsym*24, BlockSize)
//	@80  rowsOff u64    = idxOff + roundup(rows*4, BlockSize)
//	@88  size u64       = rowsOff + rows*rowSize (the file size)
//	@96  check u32      CRC32C of bytes [0,96) then the directory
//
// Directory entry (24 bytes, by id ascending): id u32, pad u32, first u64
// (clustered position of the symbol's first row), count u64. Then a u32
// per clustered position: the row's index in the segment (ascending
// within a symbol's run). Then the rows in clustered order.
const (
	CluVersion     = 1
	CluDirEntry    = 24
	cluHeaderCheck = 96
)

// CluHeader is a decoded clustered copy header.
type CluHeader struct {
	TableID    [16]byte
	RowSize    int
	SegNo      uint64
	RowsPerSeg uint64
	Rows       uint64
	NSym       int
	DirOff     uint64
	IdxOff     uint64
	RowsOff    uint64
	Size       uint64
}

// CluLayout fills in the section offsets and the size from the other fields.
func (h *CluHeader) CluLayout() {
	round := func(x uint64) uint64 { return (x + BlockSize - 1) &^ (BlockSize - 1) }
	h.DirOff = BlockSize
	h.IdxOff = h.DirOff + round(uint64(h.NSym)*CluDirEntry)
	h.RowsOff = h.IdxOff + round(h.Rows*4)
	h.Size = h.RowsOff + h.Rows*uint64(h.RowSize)
}

// Marshal writes the header into dst[:BlockSize] and its check over it and
// dir (the directory bytes, nsym*24).
func (h CluHeader) Marshal(dst, dir []byte) {
	clear(dst[:BlockSize])
	copy(dst, MagicClu)
	le := binary.LittleEndian
	le.PutUint32(dst[8:], CluVersion)
	le.PutUint32(dst[12:], uint32(h.RowSize))
	copy(dst[16:32], h.TableID[:])
	le.PutUint64(dst[32:], h.SegNo)
	le.PutUint64(dst[40:], h.RowsPerSeg)
	le.PutUint64(dst[48:], h.Rows)
	le.PutUint32(dst[56:], uint32(h.NSym))
	le.PutUint64(dst[64:], h.DirOff)
	le.PutUint64(dst[72:], h.IdxOff)
	le.PutUint64(dst[80:], h.RowsOff)
	le.PutUint64(dst[88:], h.Size)
	le.PutUint32(dst[cluHeaderCheck:], cluCheck(dst, dir))
}

func cluCheck(hdr, dir []byte) uint32 {
	c := CRC32C(hdr[:cluHeaderCheck])
	return crc32.Update(c, castagnoli, dir)
}

// PutCluDirEntry writes directory entry k into dir.
func PutCluDirEntry(dir []byte, k int, id uint32, first, count uint64) {
	e := dir[k*CluDirEntry:]
	binary.LittleEndian.PutUint32(e, id)
	binary.LittleEndian.PutUint32(e[4:], 0)
	binary.LittleEndian.PutUint64(e[8:], first)
	binary.LittleEndian.PutUint64(e[16:], count)
}

// CluDirEntryAt decodes directory entry k.
func CluDirEntryAt(dir []byte, k int) (id uint32, first, count uint64) {
	e := dir[k*CluDirEntry:]
	return binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint64(e[8:]), binary.LittleEndian.Uint64(e[16:])
}

// CheckCluHead validates a clustered copy's header and directory: b holds
// the file's bytes from 0 to at least the index array, size is the file's
// size, want names the table, geometry and segment (its layout fields are
// derived). It checks the magic, version, header fields, section offsets
// and size, the check over the header and the directory, and the
// directory itself (ids ascending, runs adjacent, covering the rows). It
// returns the directory bytes.
func CheckCluHead(path string, b []byte, want CluHeader, size uint64) ([]byte, error) {
	if len(b) < BlockSize {
		return nil, Corruptf(path, int64(len(b)), "clustered copy header is %d bytes, want %d", len(b), BlockSize)
	}
	le := binary.LittleEndian
	if string(b[:8]) != MagicClu {
		return nil, Corruptf(path, 0, "magic %q, want %q", b[:8], MagicClu)
	}
	if v := le.Uint32(b[8:]); v != CluVersion {
		return nil, Corruptf(path, 8, "version %d, want %d", v, CluVersion)
	}
	got := CluHeader{RowSize: int(le.Uint32(b[12:])), SegNo: le.Uint64(b[32:]), RowsPerSeg: le.Uint64(b[40:]),
		Rows: le.Uint64(b[48:]), NSym: int(le.Uint32(b[56:]))}
	copy(got.TableID[:], b[16:32])
	want.NSym = got.NSym
	want.CluLayout()
	if uint64(got.NSym) > want.Rows || got.RowSize != want.RowSize || got.SegNo != want.SegNo || got.RowsPerSeg != want.RowsPerSeg ||
		got.Rows != want.Rows || got.TableID != want.TableID {
		return nil, Corruptf(path, 12, "header is for segment %d of table %x (%d rows of %d bytes, %d a segment, %d symbols), want segment %d of %x (%d, %d, %d)",
			got.SegNo, got.TableID, got.Rows, got.RowSize, got.RowsPerSeg, got.NSym, want.SegNo, want.TableID, want.Rows, want.RowSize, want.RowsPerSeg)
	}
	if le.Uint64(b[64:]) != want.DirOff || le.Uint64(b[72:]) != want.IdxOff || le.Uint64(b[80:]) != want.RowsOff || le.Uint64(b[88:]) != want.Size {
		return nil, Corruptf(path, 64, "section offsets %d %d %d size %d, want %d %d %d %d", le.Uint64(b[64:]), le.Uint64(b[72:]),
			le.Uint64(b[80:]), le.Uint64(b[88:]), want.DirOff, want.IdxOff, want.RowsOff, want.Size)
	}
	if size != want.Size {
		return nil, Corruptf(path, int64(size), "clustered copy is %d bytes, want %d", size, want.Size)
	}
	if uint64(len(b)) < want.IdxOff {
		return nil, Corruptf(path, int64(len(b)), "clustered copy header and directory: %d bytes, want %d", len(b), want.IdxOff)
	}
	dir := b[want.DirOff : want.DirOff+uint64(want.NSym)*CluDirEntry]
	if c := le.Uint32(b[cluHeaderCheck:]); c != cluCheck(b, dir) {
		return nil, Corruptf(path, cluHeaderCheck, "check %08x, want %08x (header and directory)", c, cluCheck(b, dir))
	}
	next := uint64(0)
	for k := range want.NSym {
		id, first, count := CluDirEntryAt(dir, k)
		if (k > 0 && id <= le.Uint32(dir[(k-1)*CluDirEntry:])) || first != next || count == 0 {
			return nil, Corruptf(path, int64(want.DirOff)+int64(k*CluDirEntry), "directory entry %d (symbol %d, first %d, count %d) does not follow the one before", k, id, first, count)
		}
		next += count
	}
	if next != want.Rows {
		return nil, Corruptf(path, int64(want.DirOff), "directory covers %d rows, want %d", next, want.Rows)
	}
	return dir, nil
}
