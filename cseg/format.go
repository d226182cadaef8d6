package cseg

import (
	"encoding/binary"

	"github.com/tickdb/tickdb/store"
)

// On-disk contract: the magic, the version and every offset below are the
// layout described in the package doc. Changing one needs a version bump.
const (
	// Magic starts every compressed segment file.
	Magic = "TICKZSG\x00"
	// Version is the format version this package writes and reads.
	Version = 1
	// BlockRows is the rows per block (the last block of a segment may be
	// shorter).
	BlockRows = 4096
)

// Header identifies a compressed segment: the same identity as the raw file
// it replaces.
type Header struct {
	TableID    [16]byte
	SegNo      uint64
	RowSize    int    // schema row size (bytes), check word included
	RowsPerSeg uint64 // rows per segment of the table (power of two)
	Rows       uint64 // rows stored (RowsPerSeg for a sealed segment; fewer allowed)
}

// baseSeq is the sequence number of the segment's first row.
func (h Header) baseSeq() uint64 { return h.SegNo * h.RowsPerSeg }

// Stats is what encoding one segment produced.
type Stats struct {
	Rows     uint64
	RawBytes int64   // Rows * RowSize
	Bytes    int64   // the file's size
	ColBytes []int64 // compressed bytes per schema column (schema order; the check word is not stored)
	// (Each column's bytes include the 4-byte length before each of its
	// frames, so ColBytes sums to the bytes of the blocks: Bytes less the
	// header, the padding before the index and the index.)
}

// Header block fields.
const (
	headerSize    = store.BlockSize
	hMagic        = 0
	hVersion      = 8
	hReserved     = 12
	hTableID      = 16
	hSegNo        = 32
	hRowsPerSeg   = 40
	hRows         = 48
	hRowSize      = 56
	hBlockRows    = 60
	hBlocks       = 64
	hCols         = 68
	hIndexOff     = 72
	hIndexLen     = 80
	hColTypes     = 88
	colTypesBytes = 64 // room for store.MaxColumns
	hCheck        = hColTypes + colTypesBytes
	hEnd          = hCheck + 4 // bytes [hEnd, headerSize) are zero
)

// Block index entry fields.
const (
	eOff      = 0
	eLen      = 8
	eRows     = 12
	eMinTs    = 16
	eMaxTs    = 24
	eCRC      = 32
	eReserved = 36
	eColLen   = 40
)

// frameLenSize is the u32 length before each column's frame in a block.
const frameLenSize = 4

// entrySize is the size of one index entry for ncols columns.
func entrySize(ncols int) int { return (eColLen + 4*ncols + 7) &^ 7 }

// numBlocks is the block count of a segment of rows rows.
func numBlocks(rows uint64) uint64 { return (rows + BlockRows - 1) / BlockRows }

// maxColumnBlock bounds the codec encoding of one column of n values, for
// any type (the widest is a 10-byte varint a value, after a tag, a count
// and a few fixed fields): Decompress gets it as its limit.
func maxColumnBlock(n int) int { return 64 + 10*n }

var le = binary.LittleEndian

// blockEntry is one decoded index entry.
type blockEntry struct {
	off          int64
	len          int
	rows         int
	minTs, maxTs int64
	crc          uint32
}

// putHeader writes the header block into dst[:headerSize].
func putHeader(dst []byte, s *store.Schema, h Header, nblocks int, indexOff, indexLen int64) {
	clear(dst[:headerSize])
	copy(dst[hMagic:], Magic)
	le.PutUint32(dst[hVersion:], Version)
	copy(dst[hTableID:hTableID+16], h.TableID[:])
	le.PutUint64(dst[hSegNo:], h.SegNo)
	le.PutUint64(dst[hRowsPerSeg:], h.RowsPerSeg)
	le.PutUint64(dst[hRows:], h.Rows)
	le.PutUint32(dst[hRowSize:], uint32(h.RowSize))
	le.PutUint32(dst[hBlockRows:], BlockRows)
	le.PutUint32(dst[hBlocks:], uint32(nblocks))
	le.PutUint32(dst[hCols:], uint32(len(s.Cols)))
	le.PutUint64(dst[hIndexOff:], uint64(indexOff))
	le.PutUint64(dst[hIndexLen:], uint64(indexLen))
	for i, c := range s.Cols {
		dst[hColTypes+i] = byte(c.Type)
	}
	le.PutUint32(dst[hCheck:], store.CRC32C(dst[:hCheck]))
}

// putEntry writes block e's index entry, with its column frame lengths,
// into dst[:entrySize(len(colLen))].
func putEntry(dst []byte, e blockEntry, colLen []uint32) {
	clear(dst[:entrySize(len(colLen))])
	le.PutUint64(dst[eOff:], uint64(e.off))
	le.PutUint32(dst[eLen:], uint32(e.len))
	le.PutUint32(dst[eRows:], uint32(e.rows))
	le.PutUint64(dst[eMinTs:], uint64(e.minTs))
	le.PutUint64(dst[eMaxTs:], uint64(e.maxTs))
	le.PutUint32(dst[eCRC:], e.crc)
	for c, l := range colLen {
		le.PutUint32(dst[eColLen+4*c:], l)
	}
}
