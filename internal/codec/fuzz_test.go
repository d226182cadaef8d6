package codec_test

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/tickdb/tickdb/internal/codec"
)

// Fuzz targets for every decoder of untrusted bytes. Each one feeds the
// input to a decoder, which must decode it or fail with ErrCorrupt (never
// panic, never read past it), and also reads the input as values that must
// round-trip through the encoder. Run one with e.g.
//
//	go test ./codec -run '^$' -fuzz '^FuzzDecodeF64$' -fuzztime 30s

// maxFuzzValues bounds the value count a fuzz input can ask for.
const maxFuzzValues = 1 << 16

// headerCount returns the value count a block's header claims, bounded, so
// the fuzzer reaches past the header check without having to guess n.
func headerCount(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || n > maxFuzzValues {
		return 0
	}
	return int(n)
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("error %v does not wrap ErrCorrupt", err)
	}
}

func seed(f *testing.F, codecName string) {
	for _, vb := range validBlocks() {
		if vb.codec == codecName {
			f.Add(vb.b)
		}
	}
	c := genTicks(300, 9)
	var s codec.State
	switch codecName {
	case "ts":
		f.Add(codec.AppendTs(nil, c.ts))
	case "u32":
		f.Add(codec.AppendU32(nil, c.sym))
	case "f64":
		f.Add(codec.AppendF64(nil, c.price, nil, &s))
		f.Add(codec.AppendF64(nil, []float64{math.NaN(), math.Inf(1), math.Copysign(0, -1), 5e-324}, nil, &s))
	case "i64":
		f.Add(codec.AppendI64(nil, c.size, nil, &s))
		f.Add(codec.AppendI64(nil, c.ts, nil, &s))
	}
	f.Add([]byte{})
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
}

// int64s reads b as little-endian int64s (a short tail is dropped).
func int64s(b []byte) []int64 {
	v := make([]int64, len(b)/8)
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

// keysFor derives one small key per value from b, or nil when b says so.
func keysFor(b []byte, n int) []uint32 {
	if len(b) == 0 || b[0]&1 == 0 {
		return nil
	}
	key := make([]uint32, n)
	for i := range key {
		key[i] = uint32(b[i%len(b)]) >> 1
		if b[0]&2 != 0 {
			key[i] *= 0x01000193 // spread over the sparse range too
		}
	}
	return key
}

func FuzzDecodeTs(f *testing.F) {
	seed(f, "ts")
	f.Fuzz(func(t *testing.T, b []byte) {
		n := headerCount(b)
		got, used, err := codec.DecodeTs(nil, b, n)
		if err != nil {
			checkErr(t, err)
		} else {
			if used > len(b) || len(got) != n {
				t.Fatalf("used %d of %d bytes for %d of %d values", used, len(b), len(got), n)
			}
			roundTripTs(t, got)
		}
		if _, _, err := codec.DecodeTs(nil, b, n+1); err == nil {
			t.Fatalf("decoded %d values from a block of %d", n+1, n)
		}
		roundTripTs(t, int64s(b))
	})
}

func FuzzDecodeI64(f *testing.F) {
	seed(f, "i64")
	var s codec.State
	f.Fuzz(func(t *testing.T, b []byte) {
		n := headerCount(b)
		key := keysFor(b, n)
		got, used, err := codec.DecodeI64(nil, b, n, key, &s)
		if err != nil {
			checkErr(t, err)
		} else {
			if used > len(b) || len(got) != n {
				t.Fatalf("used %d of %d bytes for %d of %d values", used, len(b), len(got), n)
			}
			roundTripI64(t, got, key, &s)
		}
		v := int64s(b)
		roundTripI64(t, v, keysFor(b, len(v)), &s)
	})
}

func FuzzDecodeF64(f *testing.F) {
	seed(f, "f64")
	var s codec.State
	f.Fuzz(func(t *testing.T, b []byte) {
		n := headerCount(b)
		key := keysFor(b, n)
		got, used, err := codec.DecodeF64(nil, b, n, key, &s)
		if err != nil {
			checkErr(t, err)
		} else {
			if used > len(b) || len(got) != n {
				t.Fatalf("used %d of %d bytes for %d of %d values", used, len(b), len(got), n)
			}
			roundTripF64(t, got, key, &s)
		}
		// The input as float bits, and as small decimals (to reach the
		// decimal mode with every scale).
		ints := int64s(b)
		fl, dec := make([]float64, len(ints)), make([]float64, len(ints))
		for i, x := range ints {
			fl[i] = math.Float64frombits(uint64(x))
			dec[i] = float64(x>>40) / math.Pow10(int(uint64(x)%11))
		}
		roundTripF64(t, fl, keysFor(b, len(fl)), &s)
		roundTripF64(t, dec, keysFor(b, len(dec)), &s)
	})
}

func FuzzDecodeU32(f *testing.F) {
	seed(f, "u32")
	f.Fuzz(func(t *testing.T, b []byte) {
		n := headerCount(b)
		got, used, err := codec.DecodeU32(nil, b, n)
		if err != nil {
			checkErr(t, err)
		} else {
			if used > len(b) || len(got) != n {
				t.Fatalf("used %d of %d bytes for %d of %d values", used, len(b), len(got), n)
			}
			roundTripU32(t, got)
		}
		v := make([]uint32, len(b)/4)
		for i := range v {
			v[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
		roundTripU32(t, v)
	})
}

func FuzzDecodeBool(f *testing.F) {
	seed(f, "bool")
	f.Fuzz(func(t *testing.T, b []byte) {
		n := headerCount(b)
		got, used, err := codec.DecodeBool(nil, b, n)
		if err != nil {
			checkErr(t, err)
		} else {
			if used > len(b) || len(got) != n {
				t.Fatalf("used %d of %d bytes for %d of %d values", used, len(b), len(got), n)
			}
			roundTripBool(t, got)
		}
		v := make([]bool, len(b))
		for i, x := range b {
			v[i] = x&1 != 0
		}
		roundTripBool(t, v)
	})
}

func FuzzDecompress(f *testing.F) {
	c := genTicks(1000, 9)
	f.Add(codec.Compress(nil, codec.AppendTs(nil, c.ts), codec.LevelFastest))
	f.Add(codec.Compress(nil, codec.AppendU32(nil, c.sym), codec.LevelBest))
	f.Add(codec.Compress(nil, nil, codec.LevelDefault))
	f.Add(codec.Compress(nil, []byte("tick tick tick tick tick"), codec.LevelBetter))
	f.Add([]byte{0x28, 0xB5, 0x2F, 0xFD})
	const maxLen = 1 << 20
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := codec.Decompress(nil, b, maxLen)
		if err != nil {
			checkErr(t, err)
			if len(out) != 0 {
				t.Fatalf("dst grew to %d bytes on error", len(out))
			}
			return
		}
		if len(out) > maxLen {
			t.Fatalf("decompressed %d bytes, max %d", len(out), maxLen)
		}
		z := codec.Compress(nil, out, codec.LevelFastest)
		again, err := codec.Decompress(nil, z, len(out))
		if err != nil || string(again) != string(out) {
			t.Fatalf("recompressed content does not round-trip: %v", err)
		}
	})
}
