package store

import (
	"encoding/binary"
	"math"
)

// Row is one encoded row: RowSize bytes, little-endian, laid out as the
// schema says, the check word in the last 4 bytes. A Row handed out by a
// reader points into a read-only mapping; see the reader's doc for how long
// it stays valid.
type Row []byte

// NoSym is the symbol id a row reads for a sym column added to its table
// after the row was written (Schema.AddColumn); readers name it "", the
// empty symbol. A dictionary never gives it out.
const NoSym = ^uint32(0)

var le = binary.LittleEndian

// Ts returns the row's timestamp (ns since the Unix epoch).
func (r Row) Ts() int64 { return int64(le.Uint64(r)) }

// The getters read a column the row does not hold (a row written before
// the column was added to the table: Schema.AddColumn, Has) as its missing
// value: NaN, 0, NoSym (read as the empty symbol "") or false.

// F64 returns a float64 column.
func (r Row) F64(c Col) float64 {
	if c.Off+8 > len(r)-CheckSize {
		return math.NaN()
	}
	return math.Float64frombits(le.Uint64(r[c.Off:]))
}

// I64 returns an int64 column.
func (r Row) I64(c Col) int64 {
	if c.Off+8 > len(r)-CheckSize {
		return 0
	}
	return int64(le.Uint64(r[c.Off:]))
}

// Sym returns a sym column's dictionary id.
func (r Row) Sym(c Col) uint32 {
	if c.Off+4 > len(r)-CheckSize {
		return NoSym
	}
	return le.Uint32(r[c.Off:])
}

// Bool returns a bool column.
func (r Row) Bool(c Col) bool { return c.Off < len(r)-CheckSize && r[c.Off] != 0 }

// SetMissing stores column c's missing value: NaN, 0, NoSym or false (what
// the getters read for a row without the column).
func (r Row) SetMissing(c Col) {
	switch c.Type {
	case TypeF64:
		r.SetF64(c, math.NaN())
	case TypeSym:
		r.SetSym(c, NoSym)
	case TypeI64:
		r.SetI64(c, 0)
	case TypeBool:
		r.SetBool(c, false)
	}
}

// SetTs sets the timestamp.
func (r Row) SetTs(ts int64) { le.PutUint64(r, uint64(ts)) }

// SetF64 sets a float64 column.
func (r Row) SetF64(c Col, v float64) { le.PutUint64(r[c.Off:], math.Float64bits(v)) }

// SetI64 sets an int64 column.
func (r Row) SetI64(c Col, v int64) { le.PutUint64(r[c.Off:], uint64(v)) }

// SetSym sets a sym column to a dictionary id.
func (r Row) SetSym(c Col, id uint32) { le.PutUint32(r[c.Off:], id) }

// SetBool sets a bool column.
func (r Row) SetBool(c Col, v bool) {
	if v {
		r[c.Off] = 1
	} else {
		r[c.Off] = 0
	}
}

// Check word (on-disk contract, docs/FORMAT.md "Row check"): a seeded
// multiply-sum over the row's bytes before the check word, mixed and cut to
// 32 bits. It depends on the row's sequence number, so a stale row left in a
// recycled or reused file, an all-zero row and a torn row all fail it. It is
// not a cryptographic hash; it is cheap enough for the append path.
const (
	checkSeed = 0x5851F42D4C957F2D
	checkMul  = 0x9E3779B97F4A7C15
	checkMix  = 0xFF51AFD7ED558CCD
	checkStep = 0x3C6EF372FE94F82A // 2*checkMul mod 2^64
)

// Check computes the check word of row (len(row) = RowSize) at sequence seq.
// The last 4 bytes of row are not read. The multipliers are independent, so
// the products run in parallel; 32-byte rows (the tick schema) take an
// unrolled path. Both paths compute the same sum.
func Check(seq uint64, row []byte) uint32 {
	n := len(row) - CheckSize
	h := seq*checkMul + checkSeed
	if n == 28 {
		_ = row[27]
		return Check32(seq, le.Uint64(row[0:]), le.Uint64(row[8:]), le.Uint64(row[16:]), le.Uint32(row[24:]))
	} else {
		m := uint64(checkMul)
		i := 0
		for ; i+8 <= n; i += 8 {
			m += checkStep
			h += le.Uint64(row[i:]) * m
		}
		m += checkStep
		h += uint64(le.Uint32(row[i:])) * m
	}
	h ^= h >> 33
	h *= checkMix
	h ^= h >> 33
	return uint32(h)
}

// Check32 is Check for a 32-byte row given as its first three words and
// the 4 bytes before the check word: the writer's append loop computes it
// from registers, without a call that spills them (it inlines).
func Check32(seq, w0, w1, w2 uint64, lo uint32) uint32 {
	h := seq*checkMul + checkSeed + w0*checkM1 + w1*checkM2 + w2*checkM3 + uint64(lo)*checkM4
	h ^= h >> 33
	h *= checkMix
	h ^= h >> 33
	return uint32(h)
}

// The first multipliers, checkMul + k*checkStep mod 2^64, for the unrolled
// 32-byte path.
const (
	wrap64  = 1<<64 - 1
	checkM1 = (checkMul + 1*checkStep) & wrap64
	checkM2 = (checkMul + 2*checkStep) & wrap64
	checkM3 = (checkMul + 3*checkStep) & wrap64
	checkM4 = (checkMul + 4*checkStep) & wrap64
)

// Seal writes row's check word for sequence seq.
func Seal(seq uint64, row []byte) {
	le.PutUint32(row[len(row)-CheckSize:], Check(seq, row))
}

// Valid reports whether row's stored check word matches sequence seq.
func Valid(seq uint64, row []byte) bool {
	return le.Uint32(row[len(row)-CheckSize:]) == Check(seq, row)
}
