package cseg

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// level is the zstd level of every frame Encode writes (not recorded in the
// file: any level decodes). The fastest level keeps compaction cheap; the
// column codecs have already removed most of the redundancy, and on
// realistic ticks LevelDefault is slower and no smaller (3.07 against 3.04
// bytes a row: BenchmarkEncode's level= cases).
const level = codec.LevelFastest

// Encode writes the compressed form of rows (h.Rows rows of h.RowSize bytes
// each, laid end to end exactly as in the raw segment file, check words
// included) to w, and returns what it wrote.
//
// Before compressing a block it verifies each of the block's rows: its
// check word for sequence number h.SegNo*h.RowsPerSeg + i (format.Valid), a
// ts no smaller than the previous row's, bool bytes of 0 or 1 and zero
// padding. The first row that fails is reported as a *store.CorruptError
// naming srcPath (the raw file) and the row's offset in it, and nothing is
// written: damage is never compressed. The whole compressed file is built
// in memory (a few bytes a row) and written to w at the end, in three
// Write calls; an error from w is returned wrapped.
//
// A mismatch between s, h and rows (row size, row count, geometry) is an
// error wrapping ErrArgs.
//
// Encode writes format version 2 (clustered by the schema's first sym
// column: see the package doc) when the schema has a sym column and the
// segment has rows, and version 1 otherwise.
func Encode(w io.Writer, s *store.Schema, h Header, rows []byte, srcPath string) (Stats, error) {
	return encode(w, s, h, rows, srcPath, level, Version)
}

// EncodeV1 is Encode writing format version 1 (rows in seq order) whatever
// the schema: for tests and tools that need files of the older version.
func EncodeV1(w io.Writer, s *store.Schema, h Header, rows []byte, srcPath string) (Stats, error) {
	return encode(w, s, h, rows, srcPath, level, VersionSeqOrder)
}

// encode is Encode at zstd level lvl (the benchmarks compare levels),
// writing version 2 when version is 2 and the schema allows it.
func encode(w io.Writer, s *store.Schema, h Header, rows []byte, srcPath string, lvl codec.Level, version int) (Stats, error) {
	return encodeN(w, s, h, rows, srcPath, lvl, version, 1, nil)
}

// EncodeParallel is Encode on up to workers goroutines (version 2 only:
// a version 1 file is encoded on one), the same bytes whatever workers
// is: compaction on a machine with cores to spare. Once stop is closed
// (nil: never), the encoding gives up within a block's work and returns
// ErrStopped, having written nothing to w.
func EncodeParallel(w io.Writer, s *store.Schema, h Header, rows []byte, srcPath string, workers int, stop <-chan struct{}) (Stats, error) {
	return encodeN(w, s, h, rows, srcPath, level, Version, workers, stop)
}

// encodeN is encode on up to workers goroutines, until stop closes.
func encodeN(w io.Writer, s *store.Schema, h Header, rows []byte, srcPath string, lvl codec.Level, version, workers int, stop <-chan struct{}) (Stats, error) {
	if err := checkHeader(s, h); err != nil {
		return Stats{}, err
	}
	if uint64(len(rows))%uint64(h.RowSize) != 0 || uint64(len(rows))/uint64(h.RowSize) != h.Rows {
		return Stats{}, fmt.Errorf("%w: %d bytes of rows, want %d rows of %d bytes", ErrArgs, len(rows), h.Rows, h.RowSize)
	}
	if version == VersionClustered && s.SymCol >= 0 && h.Rows > 0 && h.Rows <= math.MaxUint32 {
		return encodeClustered(w, s, h, rows, srcPath, lvl, workers, stop)
	}
	e := newEncoder(s, h, srcPath, len(rows))
	e.level, e.stop = lvl, stop
	nblocks := int(numBlocks(h.Rows))
	bytesPerBlock := BlockRows * h.RowSize
	for b := range nblocks {
		end := min((b+1)*bytesPerBlock, len(rows))
		if e.stopped() {
			return Stats{}, ErrStopped
		}
		if err := e.block(b, rows[b*bytesPerBlock:end]); err != nil {
			return Stats{}, err
		}
	}

	// Header, blocks, zero padding to 8, index.
	blocksEnd := int64(headerSize + len(e.out))
	indexOff := (blocksEnd + 7) &^ 7
	es := entrySize(len(s.Cols))
	tail := make([]byte, indexOff-blocksEnd+int64(nblocks*es)+4)
	index := tail[indexOff-blocksEnd:]
	for b, ent := range e.entries {
		putEntry(index[b*es:], ent, e.colLens[b*len(s.Cols):(b+1)*len(s.Cols)])
	}
	le.PutUint32(index[nblocks*es:], format.CRC32C(index[:nblocks*es]))
	header := make([]byte, headerSize)
	putHeader(header, s, h, nblocks, indexOff, int64(len(index)), e.flags())
	for _, p := range [][]byte{header, e.out, tail} {
		if _, err := w.Write(p); err != nil {
			return Stats{}, fmt.Errorf("cseg: write segment %d: %w", h.SegNo, err)
		}
	}
	return Stats{
		Rows:     h.Rows,
		RawBytes: int64(len(rows)),
		Bytes:    indexOff + int64(len(index)),
		ColBytes: e.colBytes,
	}, nil
}

// checkHeader checks h against s and the geometry rules shared by Encode
// and Open.
func checkHeader(s *store.Schema, h Header) error {
	switch {
	case s == nil:
		return fmt.Errorf("%w: nil schema", ErrArgs)
	case h.RowSize != s.RowSize:
		return fmt.Errorf("%w: row size %d, the schema's is %d", ErrArgs, h.RowSize, s.RowSize)
	case h.RowsPerSeg == 0 || h.RowsPerSeg&(h.RowsPerSeg-1) != 0:
		return fmt.Errorf("%w: %d rows per segment is not a power of two", ErrArgs, h.RowsPerSeg)
	case h.Rows > h.RowsPerSeg:
		return fmt.Errorf("%w: %d rows in a segment of %d", ErrArgs, h.Rows, h.RowsPerSeg)
	case numBlocks(h.Rows) > math.MaxUint32:
		return fmt.Errorf("%w: %d rows make too many blocks", ErrArgs, h.Rows)
	}
	return nil
}

// layout is a schema's row layout as the block codec sees it.
type layout struct {
	cols   []store.Col
	names  []string
	symCol int // the key column of f64 and i64, or -1
	rs     int // row size
	padLo  int // row bytes [padLo, padHi) are padding: zero
	padHi  int
	// gaps: more padding, before padLo, in pairs [lo, hi): a schema that
	// grew columns (store.Schema.AddColumn) laid each after the padding
	// of the rows before it.
	gaps []int
}

func newLayout(s *store.Schema) layout {
	l := layout{cols: make([]store.Col, len(s.Cols)), names: make([]string, len(s.Cols)), symCol: s.SymCol, rs: s.RowSize}
	used := make([]bool, s.RowSize-store.CheckSize)
	for i, c := range s.Cols {
		l.cols[i] = s.ColAt(i)
		l.names[i] = c.Name
		for j := range c.Type.Width() {
			used[l.cols[i].Off+j] = true
		}
	}
	// The padding: every byte no column covers. store.NewSchema packs the
	// columns from offset 0 with no gaps, so it is what follows the last
	// of them; AddColumn leaves a gap where each earlier layout's padding
	// was.
	l.padLo, l.padHi = len(used), len(used)
	for i := len(used) - 1; i >= 0 && !used[i]; i-- {
		l.padLo = i
	}
	for i := 0; i < l.padLo; {
		if used[i] {
			i++
			continue
		}
		j := i
		for j < l.padLo && !used[j] {
			j++
		}
		l.gaps = append(l.gaps, i, j)
		i = j
	}
	return l
}

// encoder is the state of one Encode call.
type encoder struct {
	layout
	h     Header
	path  string
	level codec.Level

	// One block's column values, reused block after block.
	ts    []int64
	keys  []uint32
	u32   []uint32
	f64   []float64
	i64   []int64
	bools []bool
	state codec.State
	raw   []byte // one column's codec block

	out      []byte // the block bodies, from file offset headerSize
	entries  []blockEntry
	colLens  []uint32 // nblocks × ncols frame lengths
	colBytes []int64
	lastTs   int64 // the newest ts so far
	late     bool  // a row went back (inside h.LateWindow): FlagLate

	// Version 2 only.
	offs     []int64 // one data block's seq offsets
	seqBytes int64

	stop <-chan struct{} // EncodeParallel's
}

// stopped reports whether the encoding is to give up (e.stop closed).
func (e *encoder) stopped() bool {
	select {
	case <-e.stop:
		return true
	default:
		return false
	}
}

func newEncoder(s *store.Schema, h Header, path string, rawBytes int) *encoder {
	n := min(int(h.Rows), BlockRows)
	nblocks := int(numBlocks(h.Rows))
	return &encoder{
		layout:   newLayout(s),
		h:        h,
		path:     path,
		ts:       make([]int64, n),
		keys:     make([]uint32, n),
		u32:      make([]uint32, n),
		f64:      make([]float64, n),
		i64:      make([]int64, n),
		bools:    make([]bool, n),
		raw:      make([]byte, 0, maxColumnBlock(n)),
		out:      make([]byte, 0, rawBytes/8+4096), // grows if the data compresses worse
		entries:  make([]blockEntry, 0, nblocks),
		colLens:  make([]uint32, 0, nblocks*len(s.Cols)),
		colBytes: make([]int64, len(s.Cols)),
		lastTs:   math.MinInt64,
	}
}

// flags is the header's feature flags for what was encoded.
func (e *encoder) flags() uint32 {
	if e.late {
		return FlagLate
	}
	return 0
}

// rowOff is the offset of row i of the segment in the raw file.
func (e *encoder) rowOff(i int) int64 { return format.BlockSize + int64(i)*int64(e.rs) }

// block verifies and compresses block b, whose rows are rows.
func (e *encoder) block(b int, rows []byte) error {
	n := len(rows) / e.rs
	first := b * BlockRows
	seq := e.h.baseSeq() + uint64(first)
	ts := e.ts[:n]
	if err := e.verifyBlock(b, rows, ts); err != nil {
		return err
	}

	var key []uint32
	if e.symCol >= 0 {
		key = gatherU32(e.keys[:n], rows, e.rs, e.cols[e.symCol].Off)
	}
	start := len(e.out)
	for c, col := range e.cols {
		raw := e.raw[:0]
		switch col.Type {
		case store.TypeTs:
			raw = codec.AppendTs(raw, ts)
		case store.TypeSym:
			v := key
			if c != e.symCol {
				v = gatherU32(e.u32[:n], rows, e.rs, col.Off)
			}
			raw = codec.AppendU32(raw, v)
		case store.TypeF64:
			v := e.f64[:n]
			for i, o := 0, col.Off; i < n; i, o = i+1, o+e.rs {
				v[i] = math.Float64frombits(le.Uint64(rows[o:]))
			}
			raw = codec.AppendF64(raw, v, key, &e.state)
		case store.TypeI64:
			v := e.i64[:n]
			for i, o := 0, col.Off; i < n; i, o = i+1, o+e.rs {
				v[i] = int64(le.Uint64(rows[o:]))
			}
			raw = codec.AppendI64(raw, v, key, &e.state)
		case store.TypeBool:
			v := e.bools[:n]
			for i, o := 0, col.Off; i < n; i, o = i+1, o+e.rs {
				x := rows[o]
				if x > 1 {
					return format.Corruptf(e.path, e.rowOff(first+i), "row %d (seq %d): bool column %q holds %d",
						first+i, seq+uint64(i), e.names[c], x)
				}
				v[i] = x == 1
			}
			raw = codec.AppendBool(raw, v)
		default:
			// store.NewSchema admits no other type.
			return fmt.Errorf("%w: column %q has type %v", ErrArgs, e.names[c], col.Type)
		}
		e.colBytes[c] += e.appendFrame(raw)
	}
	e.entries = append(e.entries, blockEntry{
		off:   int64(headerSize + start),
		len:   len(e.out) - start,
		rows:  n,
		minTs: slices.Min(ts),
		maxTs: slices.Max(ts),
		crc:   format.CRC32C(e.out[start:]),
	})
	return nil
}

// verifyBlock verifies the rows of block b (see verify), copying their ts
// into ts, and reports the first bad one as a corrupt error naming the raw
// file and the row's offset in it.
func (e *encoder) verifyBlock(b int, rows []byte, ts []int64) error {
	first := b * BlockRows
	seq := e.h.baseSeq() + uint64(first)
	if i, bad := e.verify(rows, seq, ts); bad != rowOK {
		row, at, s := rows[i*e.rs:(i+1)*e.rs], e.rowOff(first+i), seq+uint64(i)
		switch bad {
		case rowBadCheck:
			return format.Corruptf(e.path, at, "row %d (seq %d) fails its check: check word %08x, computed %08x",
				first+i, s, le.Uint32(row[e.rs-store.CheckSize:]), format.Check(s, row))
		case rowTsBack:
			prev := e.lastTs
			if i > 0 {
				prev = ts[i-1]
			}
			return format.Corruptf(e.path, at, "row %d (seq %d): ts %d goes back from %d", first+i, s, store.Row(row).Ts(), prev)
		default:
			return format.Corruptf(e.path, at, "row %d (seq %d): nonzero padding", first+i, s)
		}
	}
	e.lastTs = max(e.lastTs, slices.Max(ts))
	return nil
}

// What verify found wrong with a row.
const (
	rowOK = iota
	rowBadCheck
	rowTsBack
	rowPadding
)

// verify checks each row of rows (the first at sequence number seq): its
// check word, a ts no smaller than the previous row's (e.lastTs before the
// first) and zero padding. It copies the ts into ts (len(ts) rows) and
// returns -1, rowOK, or the first bad row and what is wrong with it.
// 32-byte rows (the tick schema, no padding) take format.Check32 inline.
func (e *encoder) verify(rows []byte, seq uint64, ts []int64) (int, int) {
	prev := e.lastTs
	if e.rs == 32 && e.padLo == 28 && len(e.gaps) == 0 {
		for i := range ts {
			row := rows[i*32 : i*32+32 : i*32+32]
			w0 := le.Uint64(row[0:])
			if le.Uint32(row[28:]) != format.Check32(seq+uint64(i), w0, le.Uint64(row[8:]), le.Uint64(row[16:]), le.Uint32(row[24:])) {
				return i, rowBadCheck
			}
			if t := int64(w0); t >= prev {
				ts[i], prev = t, t
			} else if uint64(prev)-uint64(t) <= uint64(e.h.LateWindow) {
				ts[i], e.late = t, true
			} else {
				return i, rowTsBack
			}
		}
		return -1, rowOK
	}
	for i := range ts {
		row := rows[i*e.rs : (i+1)*e.rs]
		if !format.Valid(seq+uint64(i), row) {
			return i, rowBadCheck
		}
		t := int64(le.Uint64(row))
		switch {
		case t >= prev:
			prev = t
		case uint64(prev)-uint64(t) <= uint64(e.h.LateWindow):
			e.late = true
		default:
			return i, rowTsBack
		}
		ts[i] = t
		for _, x := range row[e.padLo:e.padHi] {
			if x != 0 {
				return i, rowPadding
			}
		}
		for k := 0; k < len(e.gaps); k += 2 {
			for _, x := range row[e.gaps[k]:e.gaps[k+1]] {
				if x != 0 {
					return i, rowPadding
				}
			}
		}
	}
	return -1, rowOK
}

// gatherU32 copies the u32 column at offset off of rows into v.
func gatherU32(v []uint32, rows []byte, rs, off int) []uint32 {
	for i, o := 0, off; i < len(v); i, o = i+1, o+rs {
		v[i] = le.Uint32(rows[o:])
	}
	return v
}

// appendFrame appends column block raw to the block being built as a
// length-prefixed zstd frame, records its length for the index, and
// returns the bytes it took (prefix included). raw is kept as the next
// column's scratch.
func (e *encoder) appendFrame(raw []byte) int64 {
	e.raw = raw
	at := len(e.out)
	e.out = append(e.out, 0, 0, 0, 0)
	e.out = codec.Compress(e.out, raw, e.level)
	l := len(e.out) - at - frameLenSize
	le.PutUint32(e.out[at:], uint32(l))
	e.colLens = append(e.colLens, uint32(l))
	return int64(frameLenSize + l)
}
