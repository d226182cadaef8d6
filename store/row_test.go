package store_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// allTypes has one column of each type, with a bool that leaves padding
// before the check word (row size 40).
func allTypes() *store.Schema {
	return store.MustSchema(ts, col("sym", store.TypeSym), col("price", store.TypeF64), col("size", store.TypeI64), col("buy", store.TypeBool))
}

func TestRowAccessors(t *testing.T) {
	s := allTypes()
	symC, _ := s.Col("sym")
	pxC, _ := s.Col("price")
	szC, _ := s.Col("size")
	buyC, _ := s.Col("buy")
	cases := []struct {
		name string
		ts   int64
		sym  uint32
		px   float64
		size int64
		buy  bool
	}{
		{"zero", 0, 0, 0, 0, false},
		{"typical", 1_700_000_000_123_456_789, 42, 101.25, 300, true},
		{"min", math.MinInt64, 0, -math.MaxFloat64, math.MinInt64, false},
		{"max", math.MaxInt64, math.MaxUint32, math.MaxFloat64, math.MaxInt64, true},
		{"neg_zero", -1, 1, math.Copysign(0, -1), -1, true},
		{"inf", 1, 2, math.Inf(-1), 7, false},
		{"nan", 1, 2, math.NaN(), 7, true},
		{"subnormal", 1, 2, math.SmallestNonzeroFloat64, 7, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.NewRow()
			for i := range r {
				r[i] = 0xEE // setters must overwrite whatever was there
			}
			r.SetTs(tc.ts)
			r.SetSym(symC, tc.sym)
			r.SetF64(pxC, tc.px)
			r.SetI64(szC, tc.size)
			r.SetBool(buyC, tc.buy)
			if r.Ts() != tc.ts {
				t.Errorf("Ts = %d, want %d", r.Ts(), tc.ts)
			}
			if r.Sym(symC) != tc.sym {
				t.Errorf("Sym = %d, want %d", r.Sym(symC), tc.sym)
			}
			if math.Float64bits(r.F64(pxC)) != math.Float64bits(tc.px) {
				t.Errorf("F64 = %v (%x), want %v", r.F64(pxC), math.Float64bits(r.F64(pxC)), tc.px)
			}
			if r.I64(szC) != tc.size {
				t.Errorf("I64 = %d, want %d", r.I64(szC), tc.size)
			}
			if r.Bool(buyC) != tc.buy {
				t.Errorf("Bool = %v, want %v", r.Bool(buyC), tc.buy)
			}
			// Little-endian at the documented offsets.
			if got := int64(binary.LittleEndian.Uint64(r[0:])); got != tc.ts {
				t.Errorf("ts bytes decode to %d", got)
			}
			if got := binary.LittleEndian.Uint32(r[symC.Off:]); got != tc.sym {
				t.Errorf("sym bytes decode to %d", got)
			}
			wantBool := byte(0)
			if tc.buy {
				wantBool = 1
			}
			if r[buyC.Off] != wantBool {
				t.Errorf("bool byte = %d, want %d", r[buyC.Off], wantBool)
			}
		})
	}
	t.Run("bool_reads_any_nonzero_as_true", func(t *testing.T) {
		r := s.NewRow()
		r[buyC.Off] = 0x80
		if !r.Bool(buyC) {
			t.Error("Bool(0x80) = false")
		}
	})
	t.Run("setters_touch_only_their_bytes", func(t *testing.T) {
		r := s.NewRow()
		r.SetF64(pxC, math.Float64frombits(^uint64(0)))
		for i, b := range r {
			in := i >= pxC.Off && i < pxC.Off+8
			if in != (b == 0xFF) {
				t.Fatalf("byte %d = %#x after SetF64 at %d", i, b, pxC.Off)
			}
		}
	})
}

func TestCheckGolden(t *testing.T) {
	// The check word is on-disk contract: these values must never change
	// without a format version bump.
	r := make([]byte, 32)
	for i := range r {
		r[i] = byte(i*7 + 1)
	}
	cases := []struct {
		seq  uint64
		want uint32
	}{
		{0, 0xdc7e66a9},
		{123456789, 0x3be26d21},
	}
	for _, tc := range cases {
		if got := format.Check(tc.seq, r); got != tc.want {
			t.Errorf("Check(%d) = %08x, want %08x", tc.seq, got, tc.want)
		}
	}
}

// refCheck is the check word exactly as docs/FORMAT.md "Row check" states
// it, written independently of the (unrolled) production code.
func refCheck(seq uint64, row []byte) uint32 {
	const m0, step = 0x9E3779B97F4A7C15, 0x3C6EF372FE94F82A
	m := uint64(m0)
	h := seq*m + 0x5851F42D4C957F2D
	for off := 0; off <= len(row)-16; off += 8 {
		m += step
		h += binary.LittleEndian.Uint64(row[off:]) * m
	}
	m += step
	h += uint64(binary.LittleEndian.Uint32(row[len(row)-8:])) * m
	h ^= h >> 33
	h *= 0xFF51AFD7ED558CCD
	h ^= h >> 33
	return uint32(h)
}

func TestCheckMatchesFormatDoc(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, size := range append([]int{8}, rowSizes...) {
		t.Run("size"+itoa(size), func(t *testing.T) {
			for range 2000 {
				r := randomRow(rng, size)
				seq := rng.Uint64() >> rng.IntN(64)
				if got, want := format.Check(seq, r), refCheck(seq, r); got != want {
					t.Fatalf("Check(%d) = %08x, the documented formula gives %08x", seq, got, want)
				}
			}
		})
	}
}

func TestCheckIgnoresCheckWord(t *testing.T) {
	r := make([]byte, 24)
	r[3] = 9
	c := format.Check(5, r)
	for i := 20; i < 24; i++ {
		r[i] ^= 0xFF
	}
	if format.Check(5, r) != c {
		t.Error("Check reads the check word bytes")
	}
	format.Seal(5, r)
	if got := binary.LittleEndian.Uint32(r[20:]); got != c {
		t.Errorf("Seal stored %08x, Check gives %08x", got, c)
	}
	format.Seal(5, r) // idempotent
	if !format.Valid(5, r) {
		t.Error("sealed row is not valid")
	}
}

var rowSizes = []int{16, 24, 32, 40, 488}

func randomRow(rng *rand.Rand, size int) []byte {
	r := make([]byte, size)
	for i := range r {
		r[i] = byte(rng.Uint32())
	}
	return r
}

func TestValidZeroRowFails(t *testing.T) {
	seqs := []uint64{math.MaxUint64, math.MaxUint64 - 1, 1 << 32, 1 << 40, 1<<63 + 12345}
	for s := uint64(0); s < 1<<16; s++ {
		seqs = append(seqs, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 12 {
		seqs = append(seqs, rng.Uint64())
	}
	for _, size := range rowSizes {
		t.Run("size"+itoa(size), func(t *testing.T) {
			zero := make([]byte, size)
			for _, seq := range seqs {
				if format.Valid(seq, zero) {
					t.Fatalf("an all-zero row of %d bytes is valid at seq %d", size, seq)
				}
			}
		})
	}
}

func TestValidBitFlipFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range rowSizes {
		for _, seq := range []uint64{0, 1, 127, 128, 1 << 33, math.MaxUint64} {
			t.Run("size"+itoa(size)+"/seq"+utoa(seq), func(t *testing.T) {
				r := randomRow(rng, size)
				format.Seal(seq, r)
				if !format.Valid(seq, r) {
					t.Fatal("sealed row is not valid")
				}
				for i := range r {
					for bit := range 8 {
						r[i] ^= 1 << bit
						if format.Valid(seq, r) {
							t.Errorf("row still valid with bit %d of byte %d flipped", bit, i)
						}
						r[i] ^= 1 << bit
					}
				}
				if !format.Valid(seq, r) {
					t.Fatal("row not restored")
				}
			})
		}
	}
}

func TestValidMovedRowFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range rowSizes {
		t.Run("size"+itoa(size), func(t *testing.T) {
			for _, seq := range []uint64{0, 1, 100, 128, 1 << 20, 1<<40 + 3} {
				r := randomRow(rng, size)
				format.Seal(seq, r)
				others := []uint64{seq + 1, seq + 128, seq + 1<<20, ^seq}
				if seq > 0 {
					others = append(others, seq-1)
				}
				for k := range 64 {
					others = append(others, seq^1<<k)
				}
				for _, o := range others {
					if format.Valid(o, r) {
						t.Errorf("row sealed for seq %d is valid at seq %d", seq, o)
					}
				}
			}
		})
	}
}

func TestValidRowSwapFails(t *testing.T) {
	// Two rows swapped in place (a misdirected write) both fail.
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := randomRow(rng, 32), randomRow(rng, 32)
	format.Seal(10, a)
	format.Seal(11, b)
	if format.Valid(10, b) || format.Valid(11, a) {
		t.Error("swapped rows pass their checks")
	}
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }
