package codec

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// AppendU32 appends v as one u32 block to dst and returns the extended
// slice: every value bit-packed at the width of the largest (0 to 32 bits;
// 7 bits for 100 sym ids, nothing at all when every value is 0), least
// significant bit first. It allocates only when dst lacks the capacity.
func AppendU32(dst []byte, v []uint32) []byte {
	var or uint32
	for _, x := range v {
		or |= x
	}
	w := uint(bits.Len32(or))
	dst = appendHeader(dst, tagU32, len(v))
	dst = append(dst, byte(w))
	if w == 0 {
		return dst
	}
	// Values go into a 64-bit accumulator that is flushed 32 bits at a
	// time; it holds at most 31 + 32 bits.
	var acc uint64
	var nb uint
	for _, x := range v {
		acc |= uint64(x) << nb
		if nb += w; nb >= 32 {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(acc))
			acc >>= 32
			nb -= 32
		}
	}
	for ; nb > 0; nb -= min(nb, 8) {
		dst = append(dst, byte(acc))
		acc >>= 8
	}
	return dst
}

// DecodeU32 decodes a u32 block of n values from the start of src, appends
// them to dst and returns the extended slice and the number of bytes of src
// the block used. The unused high bits of the last byte must be zero. It
// allocates only when dst lacks capacity for n more values; on error dst
// keeps its length.
func DecodeU32(dst []uint32, src []byte, n int) ([]uint32, int, error) {
	_, p, err := readHeader("u32", src, n, tagU32, tagU32)
	if err != nil {
		return dst, 0, err
	}
	if p >= len(src) || src[p] > maxU32Bit {
		return dst, 0, corrupt("u32", p, "bad bit width")
	}
	w := uint(src[p])
	p++
	if w != 0 && n > (len(src)-p)*8/int(w) {
		return dst, 0, corrupt("u32", len(src), "truncated: %d bytes for %d values of %d bits", len(src)-p, n, w)
	}
	size := (n*int(w) + 7) / 8
	body := src[p : p+size]
	if r := n * int(w) % 8; r != 0 && body[size-1]>>r != 0 {
		return dst, 0, corrupt("u32", p+size-1, "nonzero padding bits")
	}
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	switch w {
	case 0:
		clear(out)
	default:
		unpack(out, body, w)
	}
	return dst[:len(dst)+n], p + size, nil
}

// unpack extracts len(out) values of w bits from body. Up to 8 bits wide
// (sym ids of up to 256 symbols), each run of 8 values fills exactly w
// bytes, so one 8-byte load yields 8 values; wider values take one
// unaligned load each while 8 bytes remain, and the tail goes byte by byte.
func unpack(out []uint32, body []byte, w uint) {
	mask := uint64(1)<<w - 1
	i := 0
	if w <= 8 {
		for off := 0; i+8 <= len(out) && off+8 <= len(body); i, off = i+8, off+int(w) {
			word := binary.LittleEndian.Uint64(body[off:])
			o := out[i : i+8 : i+8]
			o[0] = uint32(word & mask)
			o[1] = uint32(word >> w & mask)
			o[2] = uint32(word >> (2 * w) & mask)
			o[3] = uint32(word >> (3 * w) & mask)
			o[4] = uint32(word >> (4 * w) & mask)
			o[5] = uint32(word >> (5 * w) & mask)
			o[6] = uint32(word >> (6 * w) & mask)
			o[7] = uint32(word >> (7 * w) & mask)
		}
	}
	bit := uint(i) * w
	for ; i < len(out) && int(bit>>3)+8 <= len(body); i++ {
		word := binary.LittleEndian.Uint64(body[bit>>3:])
		out[i] = uint32(word >> (bit & 7) & mask)
		bit += w
	}
	for ; i < len(out); i++ {
		var word uint64
		for j := int(bit >> 3); j < len(body) && j < int(bit>>3)+5; j++ {
			word |= uint64(body[j]) << (8 * (j - int(bit>>3)))
		}
		out[i] = uint32(word >> (bit & 7) & mask)
		bit += w
	}
}

// AppendBool appends v as one bool block to dst and returns the extended
// slice: one bit per value, least significant bit first, the unused high
// bits of the last byte zero. It allocates only when dst lacks the
// capacity.
func AppendBool(dst []byte, v []bool) []byte {
	dst = appendHeader(dst, tagBool, len(v))
	for len(v) >= 8 {
		w := v[:8:8]
		dst = append(dst, bit(w[0])|bit(w[1])<<1|bit(w[2])<<2|bit(w[3])<<3|
			bit(w[4])<<4|bit(w[5])<<5|bit(w[6])<<6|bit(w[7])<<7)
		v = v[8:]
	}
	if len(v) > 0 {
		var b byte
		for i, x := range v {
			b |= bit(x) << i
		}
		dst = append(dst, b)
	}
	return dst
}

// bit is 1 for true (a flag set without a branch: random bools would
// mispredict half the time).
func bit(x bool) byte {
	var b byte
	if x {
		b = 1
	}
	return b
}

// DecodeBool decodes a bool block of n values from the start of src,
// appends them to dst and returns the extended slice and the number of
// bytes of src the block used. The unused high bits of the last byte must
// be zero. It allocates only when dst lacks capacity for n more values; on
// error dst keeps its length.
func DecodeBool(dst []bool, src []byte, n int) ([]bool, int, error) {
	_, p, err := readHeader("bool", src, n, tagBool, tagBool)
	if err != nil {
		return dst, 0, err
	}
	size := n/8 + min(n%8, 1)
	if len(src)-p < size {
		return dst, 0, corrupt("bool", len(src), "truncated: %d bytes for %d values", len(src)-p, n)
	}
	body := src[p : p+size]
	if r := n % 8; r != 0 && body[size-1]>>r != 0 {
		return dst, 0, corrupt("bool", p+size-1, "nonzero padding bits")
	}
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	i := 0
	for _, b := range body[:n/8] {
		o := out[i : i+8 : i+8]
		o[0], o[1], o[2], o[3] = b&1 != 0, b&2 != 0, b&4 != 0, b&8 != 0
		o[4], o[5], o[6], o[7] = b&16 != 0, b&32 != 0, b&64 != 0, b&128 != 0
		i += 8
	}
	for ; i < n; i++ {
		out[i] = body[i>>3]>>(i&7)&1 != 0
	}
	return dst[:len(dst)+n], p + size, nil
}
