package format

import (
	"encoding/binary"

	"github.com/tickdb/tickdb/store"
)

var le = binary.LittleEndian

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
	n := len(row) - store.CheckSize
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
	le.PutUint32(row[len(row)-store.CheckSize:], Check(seq, row))
}

// Valid reports whether row's stored check word matches sequence seq.
func Valid(seq uint64, row []byte) bool {
	return le.Uint32(row[len(row)-store.CheckSize:]) == Check(seq, row)
}

// Relayout copies row src (seq's, of any layout of the table) into dst,
// a row of layout s (s.RowSize bytes): the columns of s that src holds,
// the missing value of those it lacks (written before they were added),
// and dst's check word. A column src has and s lacks is left out.
func Relayout(s *store.Schema, seq uint64, dst, src []byte) {
	n := copy(dst[:len(dst)-store.CheckSize], src[:len(src)-store.CheckSize])
	clear(dst[n:])
	row := store.Row(dst)
	for i := range s.Cols {
		if c := s.ColAt(i); !store.Has(store.Row(src), c) {
			row.SetMissing(c)
		}
	}
	Seal(seq, dst)
}
