package codec

import "fmt"

// Tags: the first byte of every column block says which codec and mode
// wrote it, so a block handed to the wrong decoder is rejected instead of
// being misread. The values are on-disk contract: changing one, or the
// layout behind it, needs a format version bump (docs/FORMAT.md).
const (
	tagTsDoD   = 0x01 // ts: delta-of-delta
	tagTsDelta = 0x02 // ts: delta

	tagU32 = 0x10 // u32: bit-packed at the width of the largest value

	tagBool = 0x18 // bool: one bit per value

	tagI64Raw   = 0x20 // i64: value / g
	tagI64Delta = 0x21 // i64: (value - previous of the same key) / g

	tagF64DecRaw   = 0x30 // f64: value·10^k / g
	tagF64DecDelta = 0x31 // f64: (value·10^k - previous of the same key) / g
	tagF64XOR      = 0x32 // f64: bits XOR the previous bits of the same key
)

// Limits of the format (on-disk contract).
const (
	maxScale  = 9       // decimal mode: k in 0..maxScale
	maxU32Bit = 32      // u32: width in 0..32
	denseKeys = 1 << 16 // keys below this index a slice; larger ones a map (not a format limit)
)

// pow10 holds 10^k for the decimal mode; every entry is exact in float64.
var pow10 = [maxScale + 1]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// appendHeader writes a block's tag and value count.
func appendHeader(dst []byte, tag byte, n int) []byte {
	return appendUvarint(append(dst, tag), uint64(n))
}

// readHeader checks a block's tag against the ones the caller accepts
// (lo..hi) and its value count against n, and returns the tag and the
// offset just past the header.
func readHeader(codec string, src []byte, n int, lo, hi byte) (byte, int, error) {
	if n < 0 {
		return 0, 0, fmt.Errorf("%w: negative value count %d", ErrArgs, n)
	}
	if len(src) == 0 {
		return 0, 0, corrupt(codec, 0, "empty block")
	}
	tag := src[0]
	if tag < lo || tag > hi {
		return 0, 0, corrupt(codec, 0, "tag %#02x is not a %s block", tag, codec)
	}
	cnt, p := uvarint(src, 1)
	if p < 0 {
		return 0, 0, corrupt(codec, 1, "bad value count varint")
	}
	if cnt != uint64(n) {
		return 0, 0, corrupt(codec, 1, "block holds %d values, want %d", cnt, n)
	}
	return tag, p, nil
}
