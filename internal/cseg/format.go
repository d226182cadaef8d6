package cseg

import (
	"encoding/binary"
	"os"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/store"
)

// On-disk contract: the magic, the version and every offset below are the
// layout described in the package doc. Changing one needs a version bump.
const (
	// Magic starts every compressed segment file.
	Magic = "TICKZSG\x00"
	// Version is the newest format version this package writes and reads:
	// 2, clustered by symbol. Version 1 (seq order) is still read, and
	// written for a schema without a sym column (and by EncodeV1).
	Version = 2
	// VersionSeqOrder is format version 1: rows in seq order.
	VersionSeqOrder = 1
	// VersionClustered is format version 2: rows grouped by the schema's
	// first sym column, with a directory and a seq-order index.
	VersionClustered = 2
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
	// LateWindow (encoding only) lets a row's ts go back from the newest
	// before it by up to this many ns: the table's late rows
	// (writer.Options.LateWindow). A file that holds such a row has
	// FlagLate set; 0 refuses them.
	LateWindow int64
}

// Header feature flags (the word at hFlags): a reader refuses a file with
// a flag it does not know.
const (
	// FlagLate: rows are in seq (arrival) order, but a row's ts may be
	// before an earlier row's (a late row); block and symbol ts ranges
	// are the true minimum and maximum, not the first and last rows'.
	FlagLate   = 1
	knownFlags = FlagLate
)

// baseSeq is the sequence number of the segment's first row.
func (h Header) baseSeq() uint64 { return h.SegNo * h.RowsPerSeg }

// Stats is what encoding one segment produced.
type Stats struct {
	Rows     uint64
	RawBytes int64   // Rows * RowSize
	Bytes    int64   // the file's size
	ColBytes []int64 // compressed bytes per schema column (schema order; the check word is not stored)
	// Version 2 only (zero in version 1): the seq column's bytes (frames
	// and their length prefixes), and the seq-order index's: the rank
	// frames, the directory and the rank table. The sym column is not
	// stored per row in version 2; the seq-order index carries it (each
	// row's symbol, in seq order), so ColBytes of the sym column is
	// OrderBytes.
	SeqBytes   int64
	OrderBytes int64
	// (Each column's bytes include the 4-byte length before each of its
	// frames, so ColBytes sums to the bytes of the blocks: Bytes less the
	// header, the padding before the index and the index.)
}

// Header block fields.
const (
	headerSize    = format.BlockSize
	hMagic        = 0
	hVersion      = 8
	hFlags        = 12
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

// Version 2 header fields: bytes [0, hCheck) as in version 1, then these,
// and the check after them.
const (
	h2SymCol    = 152
	h2Syms      = 156
	h2Ranks     = 160
	h2Reserved  = 164
	h2DirOff    = 168
	h2DirLen    = 176
	h2RankOff   = 184
	h2RankLen   = 192
	h2Check     = 200
	h2End       = h2Check + 4
	tableGap    = 4  // zero bytes after the block index and the directory (8-alignment)
	dirEntry    = 40 // directory entry size
	rankEntry   = 40 // rank table entry size
	dId         = 0
	dFirst      = 4
	dBlocks     = 8
	dReserved   = 12
	dRows       = 16
	dMinTs      = 24
	dMaxTs      = 32
	rOff        = 0
	rLen        = 8
	rCRC        = 12
	rPresent    = 16
	rReserved   = 20
	rMinTs      = 24
	rMaxTs      = 32
	eSlot       = eReserved // version 2: the block's directory slot
	maxRankSyms = BlockRows // a rank block has at most this many symbols
)

// dirEnt is one decoded directory entry of a version 2 file: symbol id's
// blocks [first, first+nblocks) hold its rows, in seq order.
type dirEnt struct {
	id           uint32
	first        int
	nblocks      int
	rows         uint64
	minTs, maxTs int64
}

// rankEnt is one decoded rank table entry of a version 2 file.
type rankEnt struct {
	off     int64
	len     int
	crc     uint32
	present int
	minTs   int64 // ts of the rank block's first row (in seq order)
	maxTs   int64 // and of its last
}

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

// readEntry decodes the block index entry e. slot reads the version 2
// field, which is the reserved word (0) in version 1.
func readEntry(e []byte) blockEntry {
	return blockEntry{
		off:   int64(le.Uint64(e[eOff:])),
		len:   int(le.Uint32(e[eLen:])),
		rows:  int(le.Uint32(e[eRows:])),
		minTs: int64(le.Uint64(e[eMinTs:])),
		maxTs: int64(le.Uint64(e[eMaxTs:])),
		crc:   le.Uint32(e[eCRC:]),
		slot:  int(le.Uint32(e[eSlot:])),
	}
}

// readRank decodes the rank table entry x.
func readRank(x []byte) rankEnt {
	return rankEnt{
		off:     int64(le.Uint64(x[rOff:])),
		len:     int(le.Uint32(x[rLen:])),
		crc:     le.Uint32(x[rCRC:]),
		present: int(le.Uint32(x[rPresent:])),
		minTs:   int64(le.Uint64(x[rMinTs:])),
		maxTs:   int64(le.Uint64(x[rMaxTs:])),
	}
}

// blockEntry is one decoded index entry.
type blockEntry struct {
	off          int64
	len          int
	rows         int
	minTs, maxTs int64
	crc          uint32
	slot         int // version 2: the directory slot of the block's symbol (0 in version 1)
}

// putHeader writes the header block into dst[:headerSize].
func putHeader(dst []byte, s *store.Schema, h Header, nblocks int, indexOff, indexLen int64, flags uint32) {
	putHeaderFields(dst, s, h, nblocks, indexOff, indexLen, VersionSeqOrder, flags)
	le.PutUint32(dst[hCheck:], format.CRC32C(dst[:hCheck]))
}

// putHeaderFields writes the header fields common to both versions.
func putHeaderFields(dst []byte, s *store.Schema, h Header, nblocks int, indexOff, indexLen int64, version, flags uint32) {
	clear(dst[:headerSize])
	copy(dst[hMagic:], Magic)
	le.PutUint32(dst[hVersion:], version)
	le.PutUint32(dst[hFlags:], flags)
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
	le.PutUint32(dst[eSlot:], uint32(e.slot))
	for c, l := range colLen {
		le.PutUint32(dst[eColLen+4*c:], l)
	}
}

// FileVersion reads the format version from the header of the compressed
// segment file at path (without checking the rest of the file).
func FileVersion(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var h [12]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return 0, err
	}
	if string(h[:8]) != Magic {
		return 0, format.Corruptf(path, 0, "not a compressed segment file")
	}
	return int(le.Uint32(h[8:])), nil
}

// TablesSize bounds the size of the tables at the end of a clustered
// (version 2) file of a segment of rowsPerSeg rows, ncols columns and at
// most nsyms symbols: block index, directory and rank table with their
// checks and padding (what Prefetch's tail should cover). Each symbol
// adds at most one block to the full ones.
func TablesSize(rowsPerSeg uint64, ncols, nsyms int) int64 {
	blocks := int64((rowsPerSeg + BlockRows - 1) / BlockRows)
	ns := min(int64(nsyms), int64(rowsPerSeg))
	return (blocks+ns)*int64(entrySize(ncols)) + ns*dirEntry + blocks*rankEntry + 3*4 + 8
}

// Prefetch starts reading, in the background, what Open reads of the
// compressed segment file at path: its header and the tables at its end
// (the last tail bytes), so a first query on a cold machine does not wait
// for them one read after another.
func Prefetch(path string, tail int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_ = mmap.FadviseWillNeed(f, 0, headerSize)
	from := max(headerSize, st.Size()-tail)
	return mmap.FadviseWillNeed(f, from, st.Size()-from)
}
