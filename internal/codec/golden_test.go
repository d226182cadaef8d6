package codec_test

import (
	"encoding/hex"
	"math"
	"testing"

	"github.com/tickdb/tickdb/internal/codec"
)

// TestGolden pins the byte layout of every codec and mode (the on-disk
// contract in docs/FORMAT.md): if an encoding changes, this fails, and the
// change needs a format version bump, not a new golden string. The
// decoders must keep reading these bytes.
func TestGolden(t *testing.T) {
	key := []uint32{0, 1, 0, 1, 2}
	var s codec.State
	cases := []struct {
		name string
		enc  []byte
		hex  string
	}{
		// tag 02, n 4, first ts LE, zz deltas 2000 0 2500
		{"ts_delta", codec.AppendTs(nil, []int64{1704205800000000000, 1704205800000001000, 1704205800000001000, 1704205800000002250}),
			"020400102955258ea617d00f00c413"},
		// tag 01, n 6, first 0, zz delta-of-deltas 2000 0 0 2 then a wrapped one of 10 bytes
		{"ts_dod", codec.AppendTs(nil, []int64{0, 1000, 2000, 3000, 4001, math.MinInt64}),
			"01060000000000000000d00f000002ecb1ffffffffffffff01"},
		// tag 10, n 5, width 7, 35 bits LSB first
		{"u32", codec.AppendU32(nil, []uint32{1, 99, 0, 64, 3}), "1005078131003800"},
		// tag 18, n 9, 2 bytes LSB first
		{"bool", codec.AppendBool(nil, []bool{true, false, true, true, false, false, false, true, true}), "18098d01"},
		// tag 20, n 5, g 100, zz 1 9 3 1 5
		{"i64_raw", codec.AppendI64(nil, []int64{100, 900, 300, 100, 500}, key, &s), "200564021206020a"},
		// tag 21, n 5, g 5, zz per-key deltas / 5: 200 400 20 20 1
		{"i64_delta", codec.AppendI64(nil, []int64{1000, 2000, 1100, 2100, 5}, key, &s), "2105059003a006282802"},
		// tag 31, n 5, k 2, g 1, zz per-key cent deltas 47001 18550 1 -1 1200
		{"f64_decimal_delta", codec.AppendF64(nil, []float64{470.01, 185.5, 470.02, 185.49, 12}, key, &s),
			"31050201b2de05eca1020201e012"},
		// tag 30, n 5, k 1, g 1, zz 1 9 2 8 2
		{"f64_decimal_raw", codec.AppendF64(nil, []float64{0.1, 0.9, 0.2, 0.8, 0.2}, nil, &s), "300501010212041004"},
		// tag 32, n 5, per value: control byte (count<<4 | low zero bytes), significant XOR bytes
		{"f64_xor", codec.AppendF64(nil, []float64{1.5, math.NaN(), math.Copysign(0, -1), math.Inf(1), 5e-324}, key, &s),
			"320526f83f80010000000000f87f26f8bf70010000000000081001"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := hex.EncodeToString(tc.enc); got != tc.hex {
				t.Errorf("encoding changed:\n got %s\nwant %s", got, tc.hex)
			}
		})
	}
	// And the golden bytes still decode to their values.
	b, _ := hex.DecodeString("31050201b2de05eca1020201e012")
	got, _, err := codec.DecodeF64(nil, b, 5, key, &s)
	if err != nil || sameF64(got, []float64{470.01, 185.5, 470.02, 185.49, 12}) >= 0 {
		t.Errorf("golden f64 block decodes to %v, %v", got, err)
	}
	b, _ = hex.DecodeString("01060000000000000000d00f000002ecb1ffffffffffffff01")
	ts, _, err := codec.DecodeTs(nil, b, 6)
	if err != nil || firstDiff(ts, []int64{0, 1000, 2000, 3000, 4001, math.MinInt64}) >= 0 {
		t.Errorf("golden ts block decodes to %v, %v", ts, err)
	}
}
