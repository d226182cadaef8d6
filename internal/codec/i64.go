package codec

import "slices"

// AppendI64 appends the integers v as one i64 block to dst and returns the
// extended slice.
//
// key, when not nil, holds one key per value (the row's sym id): deltas
// are then taken from the previous value of the same key, so interleaved
// series delta well. With a nil key they are taken from the previous row.
// Per block the codec stores either the values or those deltas, whichever
// should be smaller after zstd, divided by their greatest common divisor (round lots of 100
// store as 1, 2, 3, ...), as zig-zag varints. Any int64 sequence
// round-trips (the arithmetic wraps).
//
// s is scratch reused across calls (nil allocates a temporary one). With a
// warm s and enough capacity in dst, AppendI64 allocates nothing. It panics
// if key is neither nil nor len(v) long.
func AppendI64(dst []byte, v []int64, key []uint32, s *State) []byte {
	checkKeys("AppendI64", len(v), key)
	s = s.orNew()
	d := s.deltas(v, key)
	delta, g := planInts(v, d)
	x, tag := v, byte(tagI64Raw)
	if delta {
		x, tag = d, tagI64Delta
	}
	dst = appendHeader(dst, tag, len(v))
	return appendQuotients(dst, x, &g)
}

// DecodeI64 decodes an i64 block of n values from the start of src with
// the keys it was encoded with, appends the values to dst and returns the
// extended slice and the number of bytes of src the block used. key must
// be nil or n long (else the error wraps ErrArgs). With a warm s and
// capacity in dst for n more values it allocates nothing. On error dst
// keeps its length.
func DecodeI64(dst []int64, src []byte, n int, key []uint32, s *State) ([]int64, int, error) {
	if err := decodeKeys(n, key); err != nil {
		return dst, 0, err
	}
	tag, p, err := readHeader("i64", src, n, tagI64Raw, tagI64Delta)
	if err != nil {
		return dst, 0, err
	}
	if len(src)-p < n {
		return dst, 0, corrupt("i64", len(src), "truncated: %d bytes for %d values", len(src)-p, n)
	}
	dst = slices.Grow(dst, n)
	p, err = decodeInts("i64", dst[len(dst):len(dst)+n], src, p, tag == tagI64Delta, key, s.orNew())
	if err != nil {
		return dst, 0, err
	}
	return dst[:len(dst)+n], p, nil
}
