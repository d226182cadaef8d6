package codec

import "encoding/binary"

// Varints are the unsigned LEB128 of encoding/binary (7 bits a byte, least
// significant group first, high bit set on every byte but the last), with
// two stricter decoding rules: at most 10 bytes, and no redundant trailing
// zero group (the shortest form only), so each value has one encoding.

const maxVarintLen = 10

// zigzag maps signed to unsigned so that small magnitudes stay small:
// 0, -1, 1, -2, ... → 0, 1, 2, 3, ...
func zigzag(x int64) uint64 { return uint64(x<<1) ^ uint64(x>>63) }

// unzigzag inverts zigzag.
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// appendUvarint appends x as a varint. One- and two-byte values, the
// common cases, take a short path.
func appendUvarint(dst []byte, x uint64) []byte {
	if x < 1<<7 {
		return append(dst, byte(x))
	}
	if x < 1<<14 {
		return append(dst, byte(x)|0x80, byte(x>>7))
	}
	for x >= 0x80 {
		dst = append(dst, byte(x)|0x80)
		x >>= 7
	}
	return append(dst, byte(x))
}

// uvarint reads a varint at src[p:] and returns it and the offset after
// it, or a negative offset when the varint is truncated, longer than 10
// bytes, overflows 64 bits or is not in its shortest form. The one-byte
// case is small enough to inline.
func uvarint(src []byte, p int) (uint64, int) {
	if uint(p) < uint(len(src)) {
		if b := src[p]; b < 0x80 {
			return uint64(b), p + 1
		}
	}
	return uvarintSlow(src, p)
}

func uvarintSlow(src []byte, p int) (uint64, int) {
	if p < 0 {
		return 0, -1
	}
	var x uint64
	for i := 0; i < maxVarintLen; i++ {
		if p+i >= len(src) {
			return 0, -1 // truncated
		}
		b := src[p+i]
		if b < 0x80 {
			if i > 0 && b == 0 {
				return 0, -1 // not the shortest form
			}
			if i == maxVarintLen-1 && b > 1 {
				return 0, -1 // overflows 64 bits
			}
			return x | uint64(b)<<(7*i), p + i + 1
		}
		x |= uint64(b&0x7F) << (7 * i)
	}
	return 0, -1 // longer than 10 bytes
}

// readVarints decodes len(out) varints from src[p:] into out (the raw
// unsigned values, as int64 bits) and returns the offset after them, or
// -1-off for a bad varint starting at off. Decoders read all their varints
// with it, then transform out in place: one tight loop that reads 8 bytes
// at a time and decodes one- and two-byte varints without a call, and
// simple arithmetic loops after it.
func readVarints(out []int64, src []byte, p int) int {
	i := 0
	for ; i < len(out) && p <= len(src)-8; i++ {
		w := binary.LittleEndian.Uint64(src[p:])
		if w&0x80 == 0 {
			out[i] = int64(w & 0x7F)
			p++
			continue
		}
		if w&0x8000 == 0 && w&0xFF00 != 0 { // two bytes, shortest form
			out[i] = int64(w&0x7F | w>>1&0x3F80)
			p += 2
			continue
		}
		x, q := uvarintSlow(src, p)
		if q < 0 {
			return -1 - p
		}
		out[i] = int64(x)
		p = q
	}
	for ; i < len(out); i++ {
		x, q := uvarintSlow(src, p)
		if q < 0 {
			return -1 - p
		}
		out[i] = int64(x)
		p = q
	}
	return p
}
