package codec

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// AppendF64 appends the floats v as one f64 block to dst and returns the
// extended slice. key is as for AppendI64 (the previous value is that of
// the same key, or of the previous row when key is nil).
//
// Two modes, chosen per block:
//
//   - decimal, when some k in 0..9 makes every value exactly
//     float64(m)/10^k for an integer |m| < 2^53, checked bit for bit (so
//     no NaN, ±Inf or -0.0): the integers m are stored as AppendI64 stores
//     integers, raw or per-key delta, divided by their common divisor.
//     Prices in whole cents store as small cent deltas.
//   - XOR otherwise: each value's bits XOR the previous bits of the same
//     key, as a control byte and the XOR's significant bytes. Every bit
//     pattern round-trips: NaN payloads, ±Inf, -0.0, subnormals.
//
// s is scratch reused across calls (nil allocates a temporary one). With a
// warm s and enough capacity in dst, AppendF64 allocates nothing. It panics
// if key is neither nil nor len(v) long.
func AppendF64(dst []byte, v []float64, key []uint32, s *State) []byte {
	checkKeys("AppendF64", len(v), key)
	s = s.orNew()
	if m, k, ok := s.decimal(v); ok {
		d := s.deltas(m, key)
		delta, g := planInts(m, d)
		x, tag := m, byte(tagF64DecRaw)
		if delta {
			x, tag = d, tagF64DecDelta
		}
		dst = appendHeader(dst, tag, len(v))
		dst = append(dst, byte(k))
		return appendQuotients(dst, x, &g)
	}
	dst = appendHeader(dst, tagF64XOR, len(v))
	if key == nil {
		var prev uint64
		for _, x := range v {
			b := math.Float64bits(x)
			dst = appendXOR(dst, b^prev)
			prev = b
		}
		return dst
	}
	key = key[:len(v)]
	if prev := s.begin(key); prev != nil {
		for i, x := range v {
			b, k := math.Float64bits(x), key[i]
			dst = appendXOR(dst, b^prev[k])
			prev[k] = b
		}
		return dst
	}
	for i, x := range v {
		b := math.Float64bits(x)
		dst = appendXOR(dst, b^s.sparse[key[i]])
		s.sparse[key[i]] = b
	}
	return dst
}

// decimal finds the smallest scale k that makes every value of v an exact
// decimal (see exactAt) and returns the scaled integers (in s's buffer) and
// k, or ok false when no k <= 9 does.
func (s *State) decimal(v []float64) (m []int64, k int, ok bool) {
	// The scale only grows, so each value is tried at the scale in force
	// when it is met (bumping it as needed); the values before the last
	// bump are scaled and checked again at the final scale.
	m = s.intsBuf(len(v))
	last := 0
	for i, x := range v {
		for {
			mi, ok := exactAt(x, k)
			if ok {
				m[i] = mi
				break
			}
			if k++; k > maxScale {
				return nil, 0, false
			}
			last = i
		}
	}
	for i, x := range v[:last] {
		mi, ok := exactAt(x, k)
		if !ok {
			return nil, 0, false
		}
		m[i] = mi
	}
	return m, k, true
}

// exactAt returns m = round(x·10^k) and whether float64(m)/10^k is x bit
// for bit with |m| < 2^53: the decoder's float64(m)/10^k then rebuilds x
// exactly. NaN and ±Inf fail the range test; -0.0 fails the bit test.
func exactAt(x float64, k int) (int64, bool) {
	p := pow10[k]
	y := x * p
	if !(math.Abs(y) < 1<<53) {
		return 0, false
	}
	m := int64(math.Round(y))
	return m, math.Float64bits(float64(m)/p) == math.Float64bits(x)
}

// appendXOR appends x as a control byte, high nibble the count c of its
// significant bytes and low nibble the count t of its low zero bytes, then
// bytes t..t+c-1 of x, least significant first. Zero is the single byte 0.
func appendXOR(dst []byte, x uint64) []byte {
	if x == 0 {
		return append(dst, 0)
	}
	t := bits.TrailingZeros64(x) >> 3
	c := 8 - t - bits.LeadingZeros64(x)>>3
	dst = append(dst, byte(c<<4|t))
	dst = binary.LittleEndian.AppendUint64(dst, x>>(8*t))
	return dst[:len(dst)-8+c]
}

// DecodeF64 decodes an f64 block of n values from the start of src with
// the keys it was encoded with, appends the values to dst and returns the
// extended slice and the number of bytes of src the block used. key must
// be nil or n long (else the error wraps ErrArgs). With a warm s and
// capacity in dst for n more values it allocates nothing. On error dst
// keeps its length.
func DecodeF64(dst []float64, src []byte, n int, key []uint32, s *State) ([]float64, int, error) {
	if err := decodeKeys(n, key); err != nil {
		return dst, 0, err
	}
	tag, p, err := readHeader("f64", src, n, tagF64DecRaw, tagF64XOR)
	if err != nil {
		return dst, 0, err
	}
	if len(src)-p < n { // at least a byte a value in either mode
		return dst, 0, corrupt("f64", len(src), "truncated: %d bytes for %d values", len(src)-p, n)
	}
	s = s.orNew()
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	if tag == tagF64XOR {
		p, err = decodeXOR(out, src, p, key, s)
	} else {
		p, err = decodeDecimal(out, src, p, tag == tagF64DecDelta, key, s)
	}
	if err != nil {
		return dst, 0, err
	}
	return dst[:len(dst)+n], p, nil
}

func decodeDecimal(out []float64, src []byte, p int, delta bool, key []uint32, s *State) (int, error) {
	if p >= len(src) || src[p] > maxScale {
		return 0, corrupt("f64", p, "bad decimal scale")
	}
	d := pow10[src[p]]
	var prev []uint64
	if delta && key != nil {
		if prev = s.begin(key); prev == nil {
			// Keys too large for the dense table: the generic loop, then
			// the conversion.
			m := s.intsBuf(len(out))
			p, err := decodeInts("f64", m, src, p+1, delta, key, s)
			if err != nil {
				return 0, err
			}
			for i, x := range m[:len(out)] {
				out[i] = float64(x) / d
			}
			return p, nil
		}
	}
	q := s.intsBuf(len(out))
	g, p, err := readQuotients("f64", q, src, p+1)
	if err != nil {
		return 0, err
	}
	// Integer to float, then the division: float64(m)/10^k is the value
	// the encoder checked bit for bit (k = 0 divides by 1, exactly).
	out = out[:len(q)]
	switch {
	case !delta:
		for i, x := range q {
			out[i] = float64(unzigzag(uint64(x))*g) / d
		}
	case key == nil:
		var v int64
		for i, x := range q {
			v += unzigzag(uint64(x)) * g
			out[i] = float64(v) / d
		}
	default:
		key = key[:len(q)]
		for i, x := range q {
			k := key[i]
			v := int64(prev[k]) + unzigzag(uint64(x))*g
			prev[k] = uint64(v)
			out[i] = float64(v) / d
		}
	}
	return p, nil
}

func decodeXOR(out []float64, src []byte, p int, key []uint32, s *State) (int, error) {
	if key == nil {
		var prev uint64
		for i := range out {
			x, q := readXOR(src, p)
			if q < 0 {
				return 0, corrupt("f64", p, "bad xor control byte for value %d", i)
			}
			p = q
			prev ^= x
			out[i] = math.Float64frombits(prev)
		}
		return p, nil
	}
	key = key[:len(out)]
	prev := s.begin(key)
	for i := range out {
		x, q := readXOR(src, p)
		if q < 0 {
			return 0, corrupt("f64", p, "bad xor control byte for value %d", i)
		}
		p = q
		var b uint64
		if k := key[i]; prev != nil {
			b = prev[k] ^ x
			prev[k] = b
		} else {
			b = s.sparse[k] ^ x
			s.sparse[k] = b
		}
		out[i] = math.Float64frombits(b)
	}
	return p, nil
}

// readXOR reads what appendXOR wrote at src[p:], returning a negative
// offset for a control byte that no encoder writes (more than 8 bytes in
// all, a zero value with a shift, or payload bytes that are not the
// significant ones) or a truncated payload.
func readXOR(src []byte, p int) (uint64, int) {
	if p >= len(src) {
		return 0, -1
	}
	c := int(src[p])
	if c == 0 {
		return 0, p + 1
	}
	n, t := c>>4, c&15
	if n == 0 || n+t > 8 {
		return 0, -1
	}
	var w uint64
	if p+9 <= len(src) {
		w = binary.LittleEndian.Uint64(src[p+1:]) & (^uint64(0) >> (64 - 8*n))
	} else {
		if p+1+n > len(src) {
			return 0, -1
		}
		for i := n - 1; i >= 0; i-- {
			w = w<<8 | uint64(src[p+1+i])
		}
	}
	if w&0xFF == 0 || w>>(8*(n-1)) == 0 {
		return 0, -1
	}
	return w << (8 * t), p + 1 + n
}
