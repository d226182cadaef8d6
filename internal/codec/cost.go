package codec

import "math"

// The mode choices (ts: delta or delta-of-delta; i64 and decimal f64: raw
// or delta) compare what each candidate would cost after zstd. The bytes
// of these columns rarely repeat as strings, so zstd stores them mostly as
// Huffman-coded literals, whose size is close to the order-0 entropy of
// the byte stream: that is the cost used. (Counting varint bytes, or
// significant bits, picks wrongly on the tick data: both candidates take
// one or two bytes a value, and the smaller numbers are not always the
// less varied ones; for round-lot sizes the values beat their deltas by a
// fifth after zstd, though the deltas are smaller.)

// byteHist counts the bytes of a candidate encoding.
type byteHist [256]uint32

// addUvarint counts the bytes of x's varint.
func (h *byteHist) addUvarint(x uint64) {
	for x >= 0x80 {
		h[byte(x)|0x80]++
		x >>= 7
	}
	h[x]++
}

// bits returns the order-0 entropy of the counted bytes, in bits: the
// size of the stream after ideal entropy coding.
func (h *byteHist) bits() float64 {
	var n, sum float64
	for _, c := range h {
		if c != 0 {
			f := float64(c)
			n += f
			sum += f * math.Log2(f)
		}
	}
	if n == 0 {
		return 0
	}
	return n*math.Log2(n) - sum
}

// The cost estimates of a block of more than 1,024 values look at 8
// evenly spread windows of 128 values rather than at every value: the
// byte statistics of a window track the block's closely, and the estimate
// then costs a fraction of the encoding (a compressed segment's 4,096-row
// blocks are sampled at one value in four).
const (
	costWindows   = 8
	costWindowLen = 128
)

// costWindow returns the bounds of the j-th window (0 <= j < costWindows)
// of a block of n values: the whole block for j = 0 and nothing for the
// others when the block is small enough to look at in full.
func costWindow(n, j int) (lo, hi int) {
	if n <= costWindows*costWindowLen {
		if j == 0 {
			return 0, n
		}
		return 0, 0
	}
	lo = j * (n / costWindows)
	return lo, lo + costWindowLen
}
