package codec

import (
	"fmt"
	"math"
	"math/bits"
)

// Shared by the i64 codec and the decimal mode of the f64 codec: a block of
// integers is stored either as the values themselves (raw) or as each
// value's difference from the previous value of the same key (delta), then
// divided by g, the greatest common divisor of all the stored numbers, as
// zig-zag varints:
//
//	g uvarint (1 <= g <= 2^63) | n × zigzag uvarint(x / g)
//
// Differences and products wrap modulo 2^64, so every int64 sequence
// round-trips: x = v - prev wraps, g divides x as an integer (|x| <= 2^63
// taken unsigned), and the decoder's prev + (x/g)·g wraps back to v.

// checkKeys panics when key is neither nil nor one per value: that is a
// bug in the caller, like an index out of range, not bad data.
func checkKeys(fn string, n int, key []uint32) {
	if key != nil && len(key) != n {
		panic(fmt.Sprintf("codec: %s: %d keys for %d values", fn, len(key), n))
	}
}

// decodeKeys checks the keys passed to a Decode call.
func decodeKeys(n int, key []uint32) error {
	if key != nil && len(key) != n {
		return fmt.Errorf("%w: %d keys for %d values", ErrArgs, len(key), n)
	}
	return nil
}

// deltas writes each value's difference from the previous value of its
// key (or of the previous row when key is nil; the first previous is 0)
// into s's work buffer and returns it.
func (s *State) deltas(v []int64, key []uint32) []int64 {
	d := s.workBuf(len(v))
	if key == nil {
		var prev int64
		for i, x := range v {
			d[i] = x - prev
			prev = x
		}
		return d
	}
	key = key[:len(v)]
	if prev := s.begin(key); prev != nil {
		for i, x := range v {
			k := key[i]
			d[i] = x - int64(prev[k])
			prev[k] = uint64(x)
		}
		return d
	}
	for i, x := range v {
		d[i] = x - int64(s.sparse[key[i]])
		s.sparse[key[i]] = uint64(x)
	}
	return d
}

// planInts picks raw or delta for the values v with deltas d, and returns
// the divisor to store with it: the one whose quotients should be smaller
// after zstd (see byteHist and costWindow).
func planInts(v, d []int64) (delta bool, g divisor) {
	d = d[:len(v)]
	var gr, gd divisor
	gr.reset(0)
	gd.reset(0)
	for i, a := range v {
		ua, ub := uabs(a), uabs(d[i])
		if gr.divides(ua) && gd.divides(ub) {
			continue
		}
		gr.add(ua)
		gd.add(ub)
		if gr.g == 1 && gd.g == 1 {
			break // both final: nothing left to learn
		}
	}
	if gr.g == 0 {
		gr.reset(1)
	}
	if gd.g == 0 {
		gd.reset(1)
	}
	var hr, hd byteHist
	for j := range costWindows {
		lo, hi := costWindow(len(v), j)
		for i := lo; i < hi; i++ {
			hr.addUvarint(zigzag(gr.quo(v[i])))
			hd.addUvarint(zigzag(gd.quo(d[i])))
		}
	}
	if hd.bits() < hr.bits() {
		return true, gd
	}
	return false, gr
}

// divisor tests divisibility by g and divides exactly without a hardware
// division (a 64-bit divide costs tens of cycles, more than the rest of a
// value's encoding): with g = 2^shift·o for odd o, a is a multiple of g
// iff its low shift bits are zero and (a>>shift)·o⁻¹ mod 2^64 <= ⌊(2^64-1)/o⌋,
// and then a/g = (a>>shift)·o⁻¹ mod 2^64 (Granlund and Montgomery, 1994).
type divisor struct {
	g     uint64 // 0 until a nonzero value has been seen
	shift uint   // trailing zero bits of g; 64 while g is 0
	inv   uint64 // inverse of g>>shift modulo 2^64
	lim   uint64 // MaxUint64 / (g>>shift)
}

func (d *divisor) reset(g uint64) {
	if g == 0 {
		*d = divisor{shift: 64} // divides only 0
		return
	}
	s := uint(bits.TrailingZeros64(g))
	o := g >> s
	inv := o // correct to 3 bits for any odd o; each step doubles that
	for range 5 {
		inv *= 2 - o*inv
	}
	*d = divisor{g: g, shift: s, inv: inv, lim: math.MaxUint64 / o}
}

func (d *divisor) divides(a uint64) bool {
	return uint(bits.TrailingZeros64(a)) >= d.shift && (a>>d.shift)*d.inv <= d.lim
}

// add makes d the divisor of a and of everything it divided before.
func (d *divisor) add(a uint64) {
	if !d.divides(a) {
		d.reset(gcd(d.g, a))
	}
}

// quo returns x/g for an x that g divides, as a signed value.
func (d *divisor) quo(x int64) int64 { return int64(uint64(x>>d.shift) * d.inv) }

func uabs(x int64) uint64 {
	if x < 0 {
		return -uint64(x)
	}
	return uint64(x)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// appendQuotients appends g and each x/g as a zig-zag varint.
func appendQuotients(dst []byte, x []int64, g *divisor) []byte {
	dst = appendUvarint(dst, g.g)
	if g.g == 1 {
		for _, v := range x {
			dst = appendUvarint(dst, zigzag(v))
		}
		return dst
	}
	for _, v := range x {
		dst = appendUvarint(dst, zigzag(g.quo(v)))
	}
	return dst
}

// readQuotients reads g and len(out) varints from src[p:] into out (as
// unsigned zig-zag codes) and returns g and the offset after them.
func readQuotients(codec string, out []int64, src []byte, p int) (int64, int, error) {
	g, q := uvarint(src, p)
	if q < 0 || g == 0 || g > 1<<63 {
		return 0, 0, corrupt(codec, p, "bad divisor")
	}
	p = q
	if len(src)-p < len(out) { // at least a byte a value
		return 0, 0, corrupt(codec, len(src), "truncated: %d bytes for %d values", len(src)-p, len(out))
	}
	if p = readVarints(out, src, p); p < 0 {
		return 0, 0, corrupt(codec, -1-p, "bad varint")
	}
	return int64(g), p, nil
}

// decodeInts reads what appendQuotients wrote at src[p:] and fills out
// with the values (raw) or the running sums per key (delta). It returns the
// offset after the last quotient.
func decodeInts(codec string, out []int64, src []byte, p int, delta bool, key []uint32, s *State) (int, error) {
	m, p, err := readQuotients(codec, out, src, p)
	if err != nil {
		return 0, err
	}
	switch {
	case !delta:
		for i, x := range out {
			out[i] = unzigzag(uint64(x)) * m
		}
	case key == nil:
		var prev int64
		for i, x := range out {
			prev += unzigzag(uint64(x)) * m
			out[i] = prev
		}
	default:
		key = key[:len(out)]
		prev := s.begin(key)
		if prev == nil {
			for i, x := range out {
				v := int64(s.sparse[key[i]]) + unzigzag(uint64(x))*m
				s.sparse[key[i]] = uint64(v)
				out[i] = v
			}
			return p, nil
		}
		for i, x := range out {
			k := key[i]
			v := int64(prev[k]) + unzigzag(uint64(x))*m
			prev[k] = uint64(v)
			out[i] = v
		}
	}
	return p, nil
}
