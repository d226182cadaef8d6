package codec_test

import (
	"errors"
	"math"
	"testing"

	"github.com/tickdb/tickdb/internal/codec"
)

// decoders decode a block of n values with each Decode function, keys nil
// (the keyed ones with a fresh State).
var decoders = map[string]func(src []byte, n int) (int, error){
	"ts": func(src []byte, n int) (int, error) { _, u, err := codec.DecodeTs(nil, src, n); return u, err },
	"i64": func(src []byte, n int) (int, error) {
		_, u, err := codec.DecodeI64(nil, src, n, nil, nil)
		return u, err
	},
	"f64": func(src []byte, n int) (int, error) {
		_, u, err := codec.DecodeF64(nil, src, n, nil, nil)
		return u, err
	},
	"u32":  func(src []byte, n int) (int, error) { _, u, err := codec.DecodeU32(nil, src, n); return u, err },
	"bool": func(src []byte, n int) (int, error) { _, u, err := codec.DecodeBool(nil, src, n); return u, err },
}

// validBlocks are small valid encodings of every codec and mode, with their
// value counts.
func validBlocks() map[string]struct {
	codec string
	n     int
	b     []byte
} {
	type blk = struct {
		codec string
		n     int
		b     []byte
	}
	ints := []int64{5, 300, math.MinInt64, 7, 7, 1 << 40}
	return map[string]blk{
		"ts_delta":    {"ts", 6, codec.AppendTs(nil, []int64{100, 1100, 2100, 2100, 3000, 4200})},
		"ts_dod":      {"ts", 6, codec.AppendTs(nil, ints)},
		"ts_one":      {"ts", 1, codec.AppendTs(nil, []int64{-1})},
		"ts_empty":    {"ts", 0, codec.AppendTs(nil, nil)},
		"i64_raw":     {"i64", 6, codec.AppendI64(nil, []int64{100, 900, 300, 100, 500, 1900}, nil, nil)},
		"i64_delta":   {"i64", 6, codec.AppendI64(nil, ints, nil, nil)},
		"f64_dec":     {"f64", 4, codec.AppendF64(nil, []float64{470.01, 470.02, 470.02, 469.99}, nil, nil)},
		"f64_dec_raw": {"f64", 4, codec.AppendF64(nil, []float64{5, 7, 100, 3}, nil, nil)},
		"f64_xor":     {"f64", 5, codec.AppendF64(nil, []float64{math.NaN(), 1.5, math.Inf(-1), 5e-324, math.Pi}, nil, nil)},
		"u32_w7":      {"u32", 5, codec.AppendU32(nil, []uint32{1, 99, 0, 64, 3})},
		"u32_w0":      {"u32", 3, codec.AppendU32(nil, []uint32{0, 0, 0})},
		"u32_w32":     {"u32", 2, codec.AppendU32(nil, []uint32{math.MaxUint32, 1})},
		"bool":        {"bool", 11, codec.AppendBool(nil, []bool{true, false, true, true, false, false, false, true, true, false, true})},
	}
}

// TestTruncated: every byte of a block is needed, so every strict prefix
// of a valid block must be rejected as corrupt.
func TestTruncated(t *testing.T) {
	for name, vb := range validBlocks() {
		t.Run(name, func(t *testing.T) {
			dec := decoders[vb.codec]
			if used, err := dec(vb.b, vb.n); err != nil || used != len(vb.b) {
				t.Fatalf("the valid block: used %d of %d bytes, %v", used, len(vb.b), err)
			}
			for i := range len(vb.b) {
				if _, err := dec(vb.b[:i], vb.n); !errors.Is(err, codec.ErrCorrupt) {
					t.Errorf("prefix of %d of %d bytes: %v, want ErrCorrupt", i, len(vb.b), err)
				}
			}
			// The wrong count, and any other codec, are rejected at the
			// header.
			if _, err := dec(vb.b, vb.n+1); !errors.Is(err, codec.ErrCorrupt) {
				t.Errorf("count %d for a block of %d: %v, want ErrCorrupt", vb.n+1, vb.n, err)
			}
			for other, dec := range decoders {
				if other == vb.codec {
					continue
				}
				if _, err := dec(vb.b, vb.n); !errors.Is(err, codec.ErrCorrupt) {
					t.Errorf("decoded as %s: %v, want ErrCorrupt", other, err)
				}
			}
		})
	}
}

// TestCorrupt damages blocks at exact offsets and checks the offset the
// error names.
func TestCorrupt(t *testing.T) {
	cases := []struct {
		name  string
		codec string
		n     int
		b     []byte
		off   int // the offset the CorruptError must name
	}{
		{"empty", "ts", 0, nil, 0},
		{"unknown_tag", "ts", 1, []byte{0x7F, 1}, 0},
		{"count_mismatch", "i64", 2, []byte{0x20, 3, 1, 0, 0, 0}, 1},
		{"count_overlong", "u32", 1, []byte{0x10, 0x81, 0x00, 1, 1}, 1},
		{"ts_overlong_varint", "ts", 2, append([]byte{0x02, 2, 0, 0, 0, 0, 0, 0, 0, 0}, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), 10},
		{"ts_varint_overflow", "ts", 2, append([]byte{0x02, 2, 0, 0, 0, 0, 0, 0, 0, 0}, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02), 10},
		{"ts_not_shortest", "ts", 3, []byte{0x02, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x80, 0x00}, 11},
		{"i64_divisor_0", "i64", 1, []byte{0x20, 1, 0, 2}, 2},
		{"i64_divisor_huge", "i64", 1, []byte{0x20, 1, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 2}, 2},
		{"i64_short", "i64", 3, []byte{0x21, 3, 1, 2, 2}, 5},
		{"f64_scale_10", "f64", 1, []byte{0x30, 1, 10, 1, 2}, 2},
		{"xor_nine_bytes", "f64", 1, []byte{0x32, 1, 0x90, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 2},
		{"xor_shift_of_zero", "f64", 1, []byte{0x32, 1, 0x03}, 2},
		{"xor_low_zero_byte", "f64", 2, []byte{0x32, 2, 0x20, 0x00, 0x01, 0x00}, 2},
		{"xor_high_zero_byte", "f64", 1, []byte{0x32, 1, 0x20, 0x01, 0x00}, 2},
		{"xor_truncated", "f64", 2, []byte{0x32, 2, 0x00, 0x30, 1, 2}, 3},
		{"u32_width_33", "u32", 1, []byte{0x10, 1, 33, 0, 0, 0, 0, 0}, 2},
		{"u32_padding", "u32", 1, []byte{0x10, 1, 7, 0x80}, 3},
		{"u32_short", "u32", 9, []byte{0x10, 9, 7, 1, 2, 3, 4, 5, 6, 7}, 10},
		{"bool_padding", "bool", 3, []byte{0x18, 3, 0x08}, 2},
		{"bool_short", "bool", 9, []byte{0x18, 9, 0xFF}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decoders[tc.codec](tc.b, tc.n)
			var ce *codec.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("got %v, want a *CorruptError", err)
			}
			if ce.Codec != tc.codec || ce.Offset != tc.off {
				t.Fatalf("error names %s at byte %d, want %s at %d: %v", ce.Codec, ce.Offset, tc.codec, tc.off, err)
			}
		})
	}
}

func TestDecompressCorrupt(t *testing.T) {
	src := codec.AppendTs(nil, genTicks(5000, 3).ts)
	z := codec.Compress(nil, src, codec.LevelDefault)
	flipped := append([]byte(nil), z...)
	flipped[len(flipped)/2] ^= 0x10
	lastFlip := append([]byte(nil), z...)
	lastFlip[len(lastFlip)-1] ^= 1 // the checksum
	cases := map[string]struct {
		b   []byte
		max int
	}{
		"empty":          {nil, 1 << 20},
		"not_zstd":       {[]byte("hello, world"), 1 << 20},
		"truncated":      {z[:len(z)-5], 1 << 20},
		"header_only":    {z[:6], 1 << 20},
		"flipped":        {flipped, 1 << 20},
		"bad_checksum":   {lastFlip, 1 << 20},
		"over_max":       {z, len(src) - 1},
		"zero_max":       {z, 0},
		"negative_max":   {z, -5},
		"skippable":      {[]byte{0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}, 1 << 20},
		"trailing_junk":  {append(append([]byte(nil), z...), 1, 2, 3), 1 << 20},
		"huge_declared":  {[]byte{0x28, 0xB5, 0x2F, 0xFD, 0xE4, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 1, 0, 0}, math.MaxInt},
		"lying_declared": {lie(z), 1 << 20},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := codec.Decompress(prefix, tc.b, tc.max)
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("got %d bytes, %v; want ErrCorrupt", len(out), err)
			}
			t.Log(err)
			if len(out) != len(prefix) {
				t.Fatalf("dst grew to %d bytes on error", len(out))
			}
		})
	}
}

// lie returns a copy of a Compress frame of more than 255 bytes whose
// header claims 255 bytes of content (the single-segment size field is one
// byte then): the decoder must stop, not overrun.
func lie(z []byte) []byte {
	// Frame header descriptor at byte 4: FCS flag in bits 7-6, single
	// segment in bit 5, checksum in bit 2. Rebuild it with a 1-byte FCS.
	desc := z[4]
	fcsLen := []int{0, 2, 4, 8}[desc>>6]
	if desc>>6 == 0 && desc&0x20 != 0 {
		fcsLen = 1
	}
	hdrEnd := 5 + fcsLen
	if desc&0x20 == 0 {
		hdrEnd++ // window descriptor
	}
	out := []byte{0x28, 0xB5, 0x2F, 0xFD, desc&0x07 | 0x20, 255}
	return append(out, z[hdrEnd:]...)
}
