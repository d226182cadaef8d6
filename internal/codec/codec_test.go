package codec_test

import (
	"errors"
	"math"
	"testing"

	"github.com/tickdb/tickdb/internal/codec"
)

// The first byte of a block names its codec and mode (docs/FORMAT.md).
const (
	tagTsDoD       = 0x01
	tagTsDelta     = 0x02
	tagI64Raw      = 0x20
	tagI64Delta    = 0x21
	tagF64DecRaw   = 0x30
	tagF64DecDelta = 0x31
	tagF64XOR      = 0x32
)

func repeat[T any](x T, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = x
	}
	return s
}

func alternate[T any](a, b T, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = a
		if i%2 == 1 {
			s[i] = b
		}
	}
	return s
}

// intCases are adversarial int64 sequences for the ts and i64 codecs.
func intCases() map[string][]int64 {
	r := rng(1)
	random := make([]int64, 5000)
	for i := range random {
		random[i] = int64(r.Uint64())
	}
	small := make([]int64, 5000)
	for i := range small {
		small[i] = r.Int64N(2000) - 1000
	}
	walk := make([]int64, 5000)
	for i := 1; i < len(walk); i++ {
		walk[i] = walk[i-1] + r.Int64N(3)*1_000_000_000 - 1_000_000_000
	}
	lots := make([]int64, 5000)
	for i := range lots {
		lots[i] = (1 + r.Int64N(19)) * 100
	}
	decreasing := make([]int64, 1000)
	for i := range decreasing {
		decreasing[i] = math.MaxInt64 - int64(i)*int64(i)*7919
	}
	return map[string][]int64{
		"empty":         {},
		"single":        {7},
		"single_min":    {math.MinInt64},
		"all_equal":     repeat[int64](123456789, 1000),
		"all_zero":      repeat[int64](0, 1000),
		"alt_min_max":   alternate[int64](math.MinInt64, math.MaxInt64, 1001),
		"alt_max_min":   alternate[int64](math.MaxInt64, math.MinInt64, 1000),
		"zero_and_min":  alternate[int64](0, math.MinInt64, 999), // common divisor 2^63
		"huge_deltas":   {0, math.MaxInt64, math.MinInt64, 1, -1, math.MaxInt64, 0, math.MinInt64 + 1},
		"decreasing":    decreasing,
		"random":        random,
		"small":         small,
		"walk_of_1e9":   walk,
		"round_lots":    lots,
		"powers_of_two": {1 << 62, 1 << 61, -(1 << 62), 1 << 40, 0, 1 << 62},
		"regular_clock": func() []int64 {
			s := make([]int64, 1000)
			for i := range s {
				s[i] = 1e18 + int64(i)*1e9
			}
			return s
		}(),
		"negative_lots": {-300, -500, 700, -100, 0, 900},
		"mult_of_3_pow": {3 * 3 * 3 * 7, 3 * 3 * 3 * 14, -3 * 3 * 3 * 21, 0},
	}
}

func TestTsRoundTrip(t *testing.T) {
	for name, v := range intCases() {
		t.Run(name, func(t *testing.T) { roundTripTs(t, v) })
	}
}

func TestTsMode(t *testing.T) {
	// A jittered clock with repeats deltas better; a regular one needs
	// delta-of-delta.
	c := genTicks(10000, 1)
	if enc := roundTripTs(t, c.ts); enc[0] != tagTsDelta {
		t.Errorf("jittered ticks: tag %#x, want delta %#x", enc[0], tagTsDelta)
	}
	if enc := roundTripTs(t, intCases()["regular_clock"]); enc[0] != tagTsDoD {
		t.Errorf("regular clock: tag %#x, want delta-of-delta %#x", enc[0], tagTsDoD)
	}
	if enc := roundTripTs(t, intCases()["regular_clock"]); len(enc) > 1+2+8+5+998 { // tag, count, first, the first delta, then zeros
		t.Errorf("regular clock: %d bytes for 1000 values, want a byte each", len(enc))
	}
}

// keyCases are the key slices the keyed codecs are tested with, for n
// values.
func keyCases(n int) map[string][]uint32 {
	r := rng(2)
	few, dense, sparse, huge := make([]uint32, n), make([]uint32, n), make([]uint32, n), make([]uint32, n)
	for i := range n {
		few[i] = uint32(r.IntN(7))
		dense[i] = uint32(r.IntN(65536))
		sparse[i] = r.Uint32()
		huge[i] = math.MaxUint32 - uint32(r.IntN(3))
	}
	return map[string][]uint32{
		"nil":       nil,
		"few":       few,
		"dense":     dense,
		"sparse":    sparse,
		"huge":      huge,
		"all_65535": repeat[uint32](65535, n),
		"all_65536": repeat[uint32](65536, n),
	}
}

func TestI64RoundTrip(t *testing.T) {
	var s codec.State // shared by every case: no state may leak between blocks
	for name, v := range intCases() {
		for kname, key := range keyCases(len(v)) {
			t.Run(name+"/key="+kname, func(t *testing.T) {
				roundTripI64(t, v, key, &s)
				roundTripI64(t, v, key, nil)
			})
		}
	}
}

func TestI64Mode(t *testing.T) {
	c := genTicks(10000, 1)
	var s codec.State
	// Sizes are independent draws: stored raw, over 100.
	enc := roundTripI64(t, c.size, c.sym, &s)
	if enc[0] != tagI64Raw {
		t.Errorf("sizes: tag %#x, want raw %#x", enc[0], tagI64Raw)
	}
	if len(enc) > 3+2+len(c.size) {
		t.Errorf("sizes: %d bytes for %d values, want about 1 each (divided by 100)", len(enc), len(c.size))
	}
	// A cumulative volume per symbol deltas by key.
	cum := make([]int64, len(c.size))
	tot := map[uint32]int64{}
	for i, x := range c.size {
		tot[c.sym[i]] += x
		cum[i] = tot[c.sym[i]]
	}
	if enc := roundTripI64(t, cum, c.sym, &s); enc[0] != tagI64Delta {
		t.Errorf("cumulative volume: tag %#x, want delta %#x", enc[0], tagI64Delta)
	}
}

// floatCases are adversarial float64 sequences.
func floatCases() map[string][]float64 {
	r := rng(3)
	nans := []float64{
		math.Float64frombits(0x7FF8000000000000), // quiet NaN
		math.Float64frombits(0x7FF8000000000001),
		math.Float64frombits(0x7FF0000000000001), // signalling
		math.Float64frombits(0xFFF8000000000000), // negative
		math.Float64frombits(0x7FFFFFFFFFFFFFFF),
		math.Float64frombits(0xFFFFFFFFFFFFFFFF),
		math.NaN(),
	}
	bitsRandom := make([]float64, 5000)
	for i := range bitsRandom {
		bitsRandom[i] = math.Float64frombits(r.Uint64())
	}
	normal := make([]float64, 5000)
	for i := range normal {
		normal[i] = r.NormFloat64() * 1e6
	}
	mixedK := make([]float64, 5000)
	for i := range mixedK {
		k := r.IntN(10)
		mixedK[i] = float64(r.Int64N(2_000_000)-1_000_000) / math.Pow10(k)
	}
	cents := make([]float64, 5000)
	for i := range cents {
		cents[i] = float64(r.Int64N(100_000)) / 100
	}
	return map[string][]float64{
		"empty":         {},
		"single":        {1.5},
		"single_nan":    {math.NaN()},
		"nan_payloads":  nans,
		"nan_and_cents": append([]float64{1.25, 3.5}, nans...),
		"infs":          {math.Inf(1), math.Inf(-1), 0, math.Inf(1), 1},
		"neg_zero":      {math.Copysign(0, -1), 0, math.Copysign(0, -1)},
		"neg_zero_only": {math.Copysign(0, -1)},
		"subnormals":    {5e-324, -5e-324, math.Float64frombits(0x000FFFFFFFFFFFFF), math.SmallestNonzeroFloat64, 2.2250738585072014e-308},
		"extremes":      {math.MaxFloat64, -math.MaxFloat64, 1 << 53, -(1 << 53), 1<<53 + 2, 1e300},
		"all_equal":     repeat(470.01, 1000),
		"all_zero":      repeat(0.0, 1000),
		"integers":      {1, 2, 3, -4, 1e15, -1e15},
		"near_2p53":     {1<<53 - 1, -(1<<53 - 1), 0},
		"mixed_k":       mixedK,
		"k9":            {1e-9, 2e-9, 123456.123456789},
		"k10":           {1e-10, 1},
		"tenths":        {0.1, 0.2, 0.3, 0.7, 1.1},
		"not_decimal":   {math.Nextafter(0.3, 1), 1},
		"cents":         cents,
		"random_bits":   bitsRandom,
		"normal":        normal,
		"alt_inf":       alternate(math.Inf(1), math.Inf(-1), 101),
	}
}

func TestF64RoundTrip(t *testing.T) {
	var s codec.State
	for name, v := range floatCases() {
		for kname, key := range keyCases(len(v)) {
			t.Run(name+"/key="+kname, func(t *testing.T) {
				roundTripF64(t, v, key, &s)
				roundTripF64(t, v, key, nil)
			})
		}
	}
}

func TestF64Mode(t *testing.T) {
	c := genTicks(10000, 1)
	var s codec.State
	cases := []struct {
		name string
		v    []float64
		key  []uint32
		tag  byte
		k    byte // decimal scale, when decimal
	}{
		{"prices", c.price, c.sym, tagF64DecDelta, 2},
		{"integers", []float64{5, 7, 100, 3}, nil, tagF64DecRaw, 0},
		{"tenths", []float64{0.1, 0.2, 0.3, 0.7, 1.1}, nil, tagF64DecDelta, 1},
		{"tenths_scattered", []float64{0.1, 0.9, 0.2, 0.8, 0.2, 0.9}, nil, tagF64DecRaw, 1},
		{"mixed_k", []float64{1, 0.5, 0.25, 0.125}, nil, tagF64DecRaw, 3},
		{"k9", []float64{1e-9, 1}, nil, tagF64DecRaw, 9},
		{"k10", []float64{1e-10, 1}, nil, tagF64XOR, 0},
		{"nan", []float64{1, math.NaN()}, nil, tagF64XOR, 0},
		{"inf", []float64{1, math.Inf(-1)}, nil, tagF64XOR, 0},
		{"neg_zero", []float64{1, math.Copysign(0, -1)}, nil, tagF64XOR, 0},
		{"subnormal", []float64{5e-324}, nil, tagF64XOR, 0},
		{"not_decimal", []float64{math.Nextafter(0.3, 1)}, nil, tagF64XOR, 0}, // 0.1+0.2 in float64
		{"too_big", []float64{1 << 53}, nil, tagF64XOR, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc := roundTripF64(t, tc.v, tc.key, &s)
			if enc[0] != tc.tag {
				t.Fatalf("tag %#x, want %#x", enc[0], tc.tag)
			}
			if tc.tag != tagF64XOR {
				// tag, count varint, then k.
				off := 2
				if len(tc.v) >= 128 {
					off = 3
				}
				if enc[off] != tc.k {
					t.Fatalf("scale %d, want %d", enc[off], tc.k)
				}
			}
		})
	}
}

func TestU32RoundTrip(t *testing.T) {
	r := rng(4)
	cases := map[string][]uint32{
		"empty":    {},
		"single":   {5},
		"zeros":    repeat[uint32](0, 1001),
		"max":      repeat[uint32](math.MaxUint32, 77),
		"alt":      alternate[uint32](0, math.MaxUint32, 99),
		"one_bit":  alternate[uint32](0, 1, 13),
		"ids_0_99": nil,
	}
	for w := 1; w <= 32; w++ {
		for _, n := range []int{1, 7, 8, 9, 63, 64, 65, 1000} {
			v := make([]uint32, n)
			for i := range v {
				v[i] = uint32(r.Uint64() & (1<<w - 1))
			}
			v[r.IntN(n)] = uint32(1<<w - 1) // the width is exactly w
			cases["w"+itoa(w)+"_n"+itoa(n)] = v
		}
	}
	ids := make([]uint32, 5000)
	for i := range ids {
		ids[i] = uint32(r.IntN(100))
	}
	cases["ids_0_99"] = ids
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			enc := roundTripU32(t, v)
			if w := 0; len(v) > 0 {
				var or uint32
				for _, x := range v {
					or |= x
				}
				for or != 0 {
					w++
					or >>= 1
				}
				if want := (len(v)*w + 7) / 8; len(enc) > want+8 {
					t.Fatalf("%d bytes for %d values of %d bits", len(enc), len(v), w)
				}
			}
		})
	}
}

func TestBoolRoundTrip(t *testing.T) {
	r := rng(5)
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 1000, 65536} {
		v := make([]bool, n)
		for i := range v {
			v[i] = r.IntN(2) == 1
		}
		t.Run("n="+itoa(n), func(t *testing.T) {
			roundTripBool(t, v)
			roundTripBool(t, repeat(true, n))
			roundTripBool(t, repeat(false, n))
		})
	}
}

func TestRandomRoundTrips(t *testing.T) {
	// Many short random blocks of every codec, mixing sizes and keys.
	r := rng(6)
	var s codec.State
	for iter := range 2000 {
		n := r.IntN(300)
		ints, fl, fdec, u, bl := make([]int64, n), make([]float64, n), make([]float64, n), make([]uint32, n), make([]bool, n)
		key := make([]uint32, n)
		shift := r.IntN(64)
		nk := 1 + r.IntN(50)
		k := r.IntN(12)
		for i := range n {
			ints[i] = int64(r.Uint64()) >> shift
			fl[i] = math.Float64frombits(r.Uint64())
			fdec[i] = float64(r.Int64N(1<<40)>>shift) / math.Pow10(k)
			u[i] = r.Uint32() >> (shift / 2)
			bl[i] = r.IntN(3) == 0
			key[i] = uint32(r.IntN(nk))
		}
		if iter%2 == 0 {
			key = nil
		}
		roundTripTs(t, ints)
		roundTripI64(t, ints, key, &s)
		roundTripF64(t, fl, key, &s)
		roundTripF64(t, fdec, key, &s)
		roundTripU32(t, u)
		roundTripBool(t, bl)
	}
}

func TestKeysMismatch(t *testing.T) {
	var s codec.State
	enc := codec.AppendI64(nil, []int64{1, 2}, nil, &s)
	if _, _, err := codec.DecodeI64(nil, enc, 2, []uint32{1}, &s); !errors.Is(err, codec.ErrArgs) {
		t.Errorf("DecodeI64 with 1 key for 2 values: %v, want ErrArgs", err)
	}
	enc = codec.AppendF64(nil, []float64{1, 2}, nil, &s)
	if _, _, err := codec.DecodeF64(nil, enc, 2, []uint32{1, 2, 3}, &s); !errors.Is(err, codec.ErrArgs) {
		t.Errorf("DecodeF64 with 3 keys for 2 values: %v, want ErrArgs", err)
	}
	if _, _, err := codec.DecodeTs(nil, enc, -1); !errors.Is(err, codec.ErrArgs) {
		t.Errorf("DecodeTs with n = -1: %v, want ErrArgs", err)
	}
	for name, f := range map[string]func(){
		"AppendI64": func() { codec.AppendI64(nil, []int64{1}, []uint32{1, 2}, &s) },
		"AppendF64": func() { codec.AppendF64(nil, []float64{1}, []uint32{}, &s) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with the wrong number of keys did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestCompressRoundTrip(t *testing.T) {
	r := rng(7)
	random := make([]byte, 300_000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	cases := map[string][]byte{
		"empty":  {},
		"one":    {1},
		"zeros":  make([]byte, 1<<20),
		"random": random,
		"block":  codec.AppendTs(nil, genTicks(blockRows, 1).ts),
	}
	for name, src := range cases {
		for l := codec.LevelFastest - 1; l <= codec.LevelBest+1; l++ {
			t.Run(name+"/level="+itoa(int(l)), func(t *testing.T) {
				z := codec.Compress(append([]byte(nil), prefix...), src, l)
				checkPrefix(t, z)
				z = z[len(prefix):]
				got, err := codec.Decompress(append([]byte(nil), prefix...), z, len(src))
				if err != nil {
					t.Fatalf("Decompress: %v", err)
				}
				checkPrefix(t, got)
				if string(got[len(prefix):]) != string(src) {
					t.Fatalf("content differs")
				}
				if len(src) > 0 {
					// One byte short of the content is refused, whatever
					// the capacity of dst.
					_, err := codec.Decompress(make([]byte, 0, 2*len(src)), z, len(src)-1)
					if !errors.Is(err, codec.ErrCorrupt) {
						t.Fatalf("Decompress with max %d of %d: %v, want ErrCorrupt", len(src)-1, len(src), err)
					}
				}
			})
		}
	}
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestConcurrentZstd runs Compress and Decompress from several goroutines
// at once (run with -race): they share the package's encoders and decoder.
func TestConcurrentZstd(t *testing.T) {
	c := genTicks(20000, 5)
	src := codec.AppendTs(nil, c.ts)
	done := make(chan error)
	for g := range 8 {
		go func() {
			var err error
			for i := range 20 {
				level := codec.Level(1 + (g+i)%4)
				z := codec.Compress(nil, src, level)
				var out []byte
				if out, err = codec.Decompress(nil, z, len(src)); err == nil && string(out) != string(src) {
					err = errors.New("content differs")
				}
				if err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
