package codec

import (
	"encoding/binary"
	"slices"
)

// AppendTs appends the timestamps ts as one ts block to dst and returns the
// extended slice. It allocates only when dst lacks the capacity.
//
// The first value is stored raw; each later one as the zig-zag varint of
// either its delta from the previous value or that delta's change from the
// previous delta (delta-of-delta), whichever should be smaller after zstd
// for this block (regular clocks favour delta-of-delta; jittered ones with
// repeated timestamps, like trades, favour delta). All arithmetic wraps modulo 2^64, so any int64
// sequence round-trips exactly: decreasing, repeated, MinInt64 next to
// MaxInt64.
func AppendTs(dst []byte, ts []int64) []byte {
	tag := byte(tagTsDoD)
	if tsPreferDelta(ts) {
		tag = tagTsDelta
	}
	dst = appendHeader(dst, tag, len(ts))
	if len(ts) == 0 {
		return dst
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(ts[0]))
	prev := uint64(ts[0])
	if tag == tagTsDelta {
		for _, t := range ts[1:] {
			dst = appendUvarint(dst, zigzag(int64(uint64(t)-prev)))
			prev = uint64(t)
		}
		return dst
	}
	var pd uint64
	for _, t := range ts[1:] {
		d := uint64(t) - prev
		dst = appendUvarint(dst, zigzag(int64(d-pd)))
		prev, pd = uint64(t), d
	}
	return dst
}

// tsPreferDelta reports whether plain deltas cost less than
// delta-of-deltas for ts (see byteHist and costWindow).
func tsPreferDelta(ts []int64) bool {
	var hd, hdd byteHist
	for j := range costWindows {
		lo, hi := costWindow(len(ts), j)
		for i := max(lo, 1); i < hi; i++ {
			d := uint64(ts[i]) - uint64(ts[i-1])
			var pd uint64
			if i >= 2 {
				pd = uint64(ts[i-1]) - uint64(ts[i-2])
			}
			hd.addUvarint(zigzag(int64(d)))
			hdd.addUvarint(zigzag(int64(d - pd)))
		}
	}
	return hd.bits() < hdd.bits()
}

// DecodeTs decodes a ts block of n values from the start of src, appends
// the values to dst and returns the extended slice and the number of bytes
// of src the block used. It allocates only when dst lacks capacity for n
// more values. On error dst keeps its length.
func DecodeTs(dst []int64, src []byte, n int) ([]int64, int, error) {
	tag, p, err := readHeader("ts", src, n, tagTsDoD, tagTsDelta)
	if err != nil {
		return dst, 0, err
	}
	if n == 0 {
		return dst, p, nil
	}
	if len(src)-p < 8+n-1 { // the first value, then at least a byte each
		return dst, 0, corrupt("ts", len(src), "truncated: %d bytes for %d values", len(src)-p, n)
	}
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	t := binary.LittleEndian.Uint64(src[p:])
	out[0] = int64(t)
	if p = readVarints(out[1:], src, p+8); p < 0 {
		return dst, 0, corrupt("ts", -1-p, "bad varint")
	}
	rest := out[1:]
	if tag == tagTsDelta {
		for i, x := range rest {
			t += uint64(unzigzag(uint64(x)))
			rest[i] = int64(t)
		}
	} else {
		var d uint64
		for i, x := range rest {
			d += uint64(unzigzag(uint64(x)))
			t += d
			rest[i] = int64(t)
		}
	}
	return dst[:len(dst)+n], p, nil
}
