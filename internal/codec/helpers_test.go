package codec_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/harness/gen"
)

// blockRows is the rows of the realistic block the tests and benchmarks
// use: the largest block the design allows.
const blockRows = 64 << 10

// ticks is one block of the tick schema's columns.
type ticks struct {
	ts    []int64
	sym   []uint32
	price []float64
	size  []int64
}

// genTicks returns n realistic ticks: 100 symbols interleaved in time
// order, random-walk prices in whole cents, ts about 1 µs apart with 1 in
// 16 repeated, sizes in round lots.
func genTicks(n int, seed int64) ticks {
	g := gen.New(gen.Options{Symbols: 100, Seed: seed})
	c := ticks{make([]int64, n), make([]uint32, n), make([]float64, n), make([]int64, n)}
	for i := range n {
		k := g.Next()
		c.ts[i], c.sym[i], c.price[i], c.size[i] = k.Ts, uint32(k.Sym), k.Price, k.Size
	}
	return c
}

// prefix is put in front of every dst, to check that the Append and Decode
// functions append and leave what was there alone.
var prefix = []byte{0xAA, 0xBB, 0xCC}

func checkPrefix(t *testing.T, b []byte) {
	t.Helper()
	if len(b) < len(prefix) || string(b[:len(prefix)]) != string(prefix) {
		t.Fatalf("the prefix of dst was overwritten: % x", b[:min(len(b), len(prefix))])
	}
}

// sameF64 compares bit patterns: NaN payloads and -0.0 must survive.
func sameF64(a, b []float64) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

func firstDiff[T comparable](a, b []T) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// Round trips: encode after prefix, decode after a one-value prefix, check
// values, the consumed byte count, and that trailing bytes are left alone.

func roundTripTs(t *testing.T, v []int64) []byte {
	t.Helper()
	enc := codec.AppendTs(append([]byte(nil), prefix...), v)
	checkPrefix(t, enc)
	enc = enc[len(prefix):]
	got, used, err := codec.DecodeTs([]int64{42}, append(enc, 0xFF), len(v))
	if err != nil {
		t.Fatalf("DecodeTs: %v", err)
	}
	if used != len(enc) {
		t.Fatalf("DecodeTs used %d bytes of a %d-byte block", used, len(enc))
	}
	if got[0] != 42 {
		t.Fatalf("DecodeTs overwrote dst")
	}
	if i := firstDiff(got[1:], v); i >= 0 {
		t.Fatalf("ts value %d: got %v, want %v", i, got[1:][min(i, len(got)-2)], v[min(i, len(v)-1)])
	}
	return enc
}

func roundTripI64(t *testing.T, v []int64, key []uint32, s *codec.State) []byte {
	t.Helper()
	enc := codec.AppendI64(append([]byte(nil), prefix...), v, key, s)
	checkPrefix(t, enc)
	enc = enc[len(prefix):]
	got, used, err := codec.DecodeI64([]int64{42}, append(enc, 0xFF), len(v), key, s)
	if err != nil {
		t.Fatalf("DecodeI64: %v", err)
	}
	if used != len(enc) {
		t.Fatalf("DecodeI64 used %d bytes of a %d-byte block", used, len(enc))
	}
	if got[0] != 42 {
		t.Fatalf("DecodeI64 overwrote dst")
	}
	if i := firstDiff(got[1:], v); i >= 0 {
		t.Fatalf("i64 value %d: got %v, want %v", i, got[1:][min(i, len(got)-2)], v[min(i, len(v)-1)])
	}
	return enc
}

func roundTripF64(t *testing.T, v []float64, key []uint32, s *codec.State) []byte {
	t.Helper()
	enc := codec.AppendF64(append([]byte(nil), prefix...), v, key, s)
	checkPrefix(t, enc)
	enc = enc[len(prefix):]
	got, used, err := codec.DecodeF64([]float64{42}, append(enc, 0xFF), len(v), key, s)
	if err != nil {
		t.Fatalf("DecodeF64: %v", err)
	}
	if used != len(enc) {
		t.Fatalf("DecodeF64 used %d bytes of a %d-byte block", used, len(enc))
	}
	if got[0] != 42 {
		t.Fatalf("DecodeF64 overwrote dst")
	}
	if i := sameF64(got[1:], v); i >= 0 {
		t.Fatalf("f64 value %d: got %#x, want %#x", i, math.Float64bits(got[1:][min(i, len(got)-2)]), math.Float64bits(v[min(i, len(v)-1)]))
	}
	return enc
}

func roundTripU32(t *testing.T, v []uint32) []byte {
	t.Helper()
	enc := codec.AppendU32(append([]byte(nil), prefix...), v)
	checkPrefix(t, enc)
	enc = enc[len(prefix):]
	got, used, err := codec.DecodeU32([]uint32{42}, append(enc, 0xFF), len(v))
	if err != nil {
		t.Fatalf("DecodeU32: %v", err)
	}
	if used != len(enc) {
		t.Fatalf("DecodeU32 used %d bytes of a %d-byte block", used, len(enc))
	}
	if got[0] != 42 {
		t.Fatalf("DecodeU32 overwrote dst")
	}
	if i := firstDiff(got[1:], v); i >= 0 {
		t.Fatalf("u32 value %d differs", i)
	}
	return enc
}

func roundTripBool(t *testing.T, v []bool) []byte {
	t.Helper()
	enc := codec.AppendBool(append([]byte(nil), prefix...), v)
	checkPrefix(t, enc)
	enc = enc[len(prefix):]
	got, used, err := codec.DecodeBool([]bool{true}, append(enc, 0xFF), len(v))
	if err != nil {
		t.Fatalf("DecodeBool: %v", err)
	}
	if used != len(enc) {
		t.Fatalf("DecodeBool used %d bytes of a %d-byte block", used, len(enc))
	}
	if !got[0] {
		t.Fatalf("DecodeBool overwrote dst")
	}
	if i := firstDiff(got[1:], v); i >= 0 {
		t.Fatalf("bool value %d differs", i)
	}
	return enc
}

// rng returns a deterministic source for a test.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x7469636B)) }
