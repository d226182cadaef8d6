package codec_test

import (
	"runtime"
	"testing"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// TestAllocs holds every codec to zero allocations on a 64k-row block once
// its State and buffers are warm: encode into a dst with room, decode into
// a dst of the right capacity.
func TestAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	c := genTicks(blockRows, 1)
	bools := make([]bool, blockRows)
	for i := range bools {
		bools[i] = c.size[i] > 300
	}
	xorPrices := make([]float64, blockRows) // not decimal: the XOR mode
	for i, p := range c.price {
		xorPrices[i] = p * 1.000000001
	}
	var s codec.State
	enc := make([]byte, 0, 16*blockRows)
	z := make([]byte, 0, 16*blockRows)
	ts, i64 := make([]int64, 0, blockRows), make([]int64, 0, blockRows)
	f64, u32, bl := make([]float64, 0, blockRows), make([]uint32, 0, blockRows), make([]bool, 0, blockRows)
	cases := []struct {
		name   string
		encode func() []byte
		decode func(b []byte) error
	}{
		{"ts", func() []byte { return codec.AppendTs(enc[:0], c.ts) },
			func(b []byte) error { _, _, err := codec.DecodeTs(ts[:0], b, blockRows); return err }},
		{"u32", func() []byte { return codec.AppendU32(enc[:0], c.sym) },
			func(b []byte) error { _, _, err := codec.DecodeU32(u32[:0], b, blockRows); return err }},
		{"f64_decimal", func() []byte { return codec.AppendF64(enc[:0], c.price, c.sym, &s) },
			func(b []byte) error { _, _, err := codec.DecodeF64(f64[:0], b, blockRows, c.sym, &s); return err }},
		{"f64_xor", func() []byte { return codec.AppendF64(enc[:0], xorPrices, c.sym, &s) },
			func(b []byte) error { _, _, err := codec.DecodeF64(f64[:0], b, blockRows, c.sym, &s); return err }},
		{"i64", func() []byte { return codec.AppendI64(enc[:0], c.size, c.sym, &s) },
			func(b []byte) error { _, _, err := codec.DecodeI64(i64[:0], b, blockRows, c.sym, &s); return err }},
		{"i64_nokey", func() []byte { return codec.AppendI64(enc[:0], c.ts, nil, &s) },
			func(b []byte) error { _, _, err := codec.DecodeI64(i64[:0], b, blockRows, nil, &s); return err }},
		{"bool", func() []byte { return codec.AppendBool(enc[:0], bools) },
			func(b []byte) error { _, _, err := codec.DecodeBool(bl[:0], b, blockRows); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.encode() // warm the State
			if err := tc.decode(b); err != nil {
				t.Fatal(err)
			}
			if n := testing.AllocsPerRun(20, func() { tc.encode() }); n != 0 {
				t.Errorf("encode allocates %v times", n)
			}
			b = append([]byte(nil), tc.encode()...)
			if n := testing.AllocsPerRun(20, func() { _ = tc.decode(b) }); n != 0 {
				t.Errorf("decode allocates %v times", n)
			}
			zb := append([]byte(nil), codec.Compress(z[:0], b, codec.LevelFastest)...)
			for _, l := range []codec.Level{codec.LevelFastest, codec.LevelDefault} {
				for range runtime.GOMAXPROCS(0) + 1 { // warm each pooled encoder
					codec.Compress(z[:0], b, l)
				}
				if n := testing.AllocsPerRun(20, func() { codec.Compress(z[:0], b, l) }); n != 0 {
					t.Errorf("Compress at level %d allocates %v times", l, n)
				}
			}
			if n := testing.AllocsPerRun(20, func() { _, _ = codec.Decompress(enc[:0], zb, cap(enc)) }); n != 0 {
				t.Errorf("Decompress allocates %v times", n)
			}
		})
	}
}
