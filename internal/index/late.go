package index

import (
	"fmt"
	"math"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
)

// Late index (on-disk contract; docs/FORMAT.md "late.idx"): after the
// header block, entry i (LateEntrySize bytes at 4096 + 32i) describes the
// i-th late row of the table in sequence order: a row stored with a ts
// before the newest ts appended before it (inside the writer's late
// window). Its words: seq u64, ts i64, prev i64 (the newest ts before the
// row: the time index's key for it), sym u32 (the row's postings symbol,
// 0 without a sym column) and a CRC-32C of those 28 bytes. Entries below
// the published late count (ctl) are valid; seq and prev never decrease
// from one entry to the next.
const (
	LateEntrySize = 32
	lateReserve   = 1 << 36 // 64 GiB of virtual space: 2^31 late rows
	lateInitial   = 2 * format.BlockSize
)

// LateEntry is one late row.
type LateEntry struct {
	Seq  uint64
	Ts   int64
	Prev int64 // the newest ts appended before the row (> Ts)
	Sym  uint32
}

// LateIndex is the mapped late.idx.
type LateIndex struct {
	m *mappedFile
	b []byte // entries, past the header
}

// CreateLateIndex creates an empty late.idx at path.
func CreateLateIndex(path string, tableID [16]byte, fs vfs.FS) error {
	return createIndexFile(fs, path, format.MagicLate, format.FormatVersion, tableID, lateInitial)
}

// OpenLateIndex maps late.idx.
func OpenLateIndex(path string, tableID [16]byte, fs vfs.FS) (*LateIndex, error) {
	m, err := openIndexFile(path, format.MagicLate, format.FormatVersion, tableID, lateReserve, fs)
	if err != nil {
		return nil, err
	}
	return &LateIndex{m: m, b: m.b[format.BlockSize:]}, nil
}

// Path is the file's path.
func (l *LateIndex) Path() string { return l.m.Path }

// Close unmaps the file.
func (l *LateIndex) Close() error { return l.m.Close() }

// Covers reports whether entries [0, n) are inside the file.
func (l *LateIndex) Covers(n uint64) bool {
	return l.m.covers(format.BlockSize + int64(n)*LateEntrySize)
}

// Capacity is the number of entries the file holds now (writer side).
func (l *LateIndex) Capacity() uint64 {
	return uint64(l.m.size.Load()-format.BlockSize) / LateEntrySize
}

// Set stores entry i. Writer only; it is published with the late count.
// The file must hold it (Capacity; Grow).
func (l *LateIndex) Set(i uint64, e LateEntry) {
	x := l.b[i*LateEntrySize : (i+1)*LateEntrySize]
	le.PutUint64(x[0:], e.Seq)
	le.PutUint64(x[8:], uint64(e.Ts))
	le.PutUint64(x[16:], uint64(e.Prev))
	le.PutUint32(x[24:], e.Sym)
	le.PutUint32(x[28:], format.CRC32C(x[:28]))
}

// At returns entry i without checking it. The caller has checked i
// against the published late count and Covers.
func (l *LateIndex) At(i uint64) LateEntry {
	x := l.b[i*LateEntrySize : (i+1)*LateEntrySize]
	return LateEntry{Seq: le.Uint64(x[0:]), Ts: int64(le.Uint64(x[8:])), Prev: int64(le.Uint64(x[16:])), Sym: le.Uint32(x[24:])}
}

// Seq is entry i's seq (unchecked, as At).
func (l *LateIndex) Seq(i uint64) uint64 { return le.Uint64(l.b[i*LateEntrySize:]) }

// Prev is entry i's prev (unchecked, as At).
func (l *LateIndex) Prev(i uint64) int64 { return int64(le.Uint64(l.b[i*LateEntrySize+16:])) }

// Check returns entry i after checking its CRC (verify), or a
// *store.CorruptError naming the file and offset.
func (l *LateIndex) Check(i uint64) (LateEntry, error) {
	x := l.b[i*LateEntrySize : (i+1)*LateEntrySize]
	if format.CRC32C(x[:28]) != le.Uint32(x[28:]) {
		return LateEntry{}, format.Corruptf(l.m.Path, format.BlockSize+int64(i)*LateEntrySize, "late entry %d fails its checksum", i)
	}
	return l.At(i), nil
}

// SearchSeq is the first entry in [0, n) whose seq is >= seq (n if none).
func (l *LateIndex) SearchSeq(n, seq uint64) uint64 {
	lo, hi := uint64(0), n
	for lo < hi {
		m := lo + (hi-lo)/2
		if l.Seq(m) < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// SearchPrev is the first entry in [0, n) whose prev is >= t (n if none).
func (l *LateIndex) SearchPrev(n uint64, t int64) uint64 {
	lo, hi := uint64(0), n
	for lo < hi {
		m := lo + (hi-lo)/2
		if l.Prev(m) < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Grow makes room for n entries and pre-faults them. Writer side.
func (l *LateIndex) Grow(n uint64) error {
	size := (format.BlockSize + int64(n)*LateEntrySize + format.BlockSize - 1) &^ (format.BlockSize - 1)
	if size > int64(len(l.m.b)) {
		return fmt.Errorf("index: %s: %d late rows, past the file's reservation", l.m.Path, n)
	}
	return l.m.grow(size)
}

// Sync writes entries [0, n) back to disk.
func (l *LateIndex) Sync(n uint64) error { return l.m.sync(format.BlockSize + int64(n)*LateEntrySize) }

// Trim cuts the file after the first n entries.
func (l *LateIndex) Trim(n uint64) error { return l.m.trim(format.BlockSize + int64(n)*LateEntrySize) }

// clampSub is a - b, saturating at MinInt64.
func clampSub(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// LowerTs is the lowest ts a late row with this prev can have under window
// w (prev - w, saturating).
func LowerTs(prev, w int64) int64 { return clampSub(prev, w) }
