package query

// Append-style value encoders: each appends to dst and returns it, so that
// the per-row path writes into one reused buffer and allocates nothing.

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// rfc3339Fixed is RFC 3339 in UTC with exactly nine fractional digits:
// fixed width, so that the text sorts as the time does.
const rfc3339Fixed = "2006-01-02T15:04:05.000000000Z"

// timeCache formats timestamps as rfc3339Fixed, keeping the text of the
// last second seen: ticks come many per second, and time.AppendFormat
// costs several times what copying 30 bytes and writing nine digits
// does.
type timeCache struct {
	sec  int64
	text [len(rfc3339Fixed)]byte // sec as rfc3339Fixed; append writes the nanoseconds in
	ok   bool
}

// append appends ts (ns since the epoch) as rfc3339Fixed.
func (c *timeCache) append(dst []byte, ts int64) []byte {
	sec, frac := ts/1e9, ts%1e9
	if frac < 0 {
		sec, frac = sec-1, frac+1e9
	}
	if !c.ok || sec != c.sec {
		// Every int64 of ns falls in the years 1677 to 2262: the date
		// and time are always these 20 bytes, written in place.
		time.Unix(sec, 0).UTC().AppendFormat(c.text[:0], "2006-01-02T15:04:05.")
		c.text[len(c.text)-1] = 'Z'
		c.sec, c.ok = sec, true
	}
	n := len(dst)
	dst = slices.Grow(dst, len(c.text))[:n+len(c.text)]
	t := (*[len(c.text)]byte)(dst[n:])
	*t = c.text // a fixed-size copy: moves, not a call
	put9(t[20:29], uint32(frac))
	return dst
}

// nsCache formats timestamps as integer ns, keeping the digits of the
// last second seen, as timeCache does: the text is copied and the nine
// digits below the second written in.
type nsCache struct {
	sec  int64    // 0: nothing cached (append caches seconds ≥ 1 only)
	text [19]byte // sec's digits, then nine for the ns below it
	n    int      // the length of the text
}

// append appends ts as strconv.AppendInt(dst, ts, 10) does.
func (c *nsCache) append(dst []byte, ts int64) []byte {
	if ts < 1e9 { // no whole second: no cache (and no sign to carry)
		return strconv.AppendInt(dst, ts, 10)
	}
	sec := ts / 1e9
	if sec != c.sec {
		c.n = len(strconv.AppendInt(c.text[:0], sec, 10)) + 9 // at most 10 digits: MaxInt64 is 9223372036.854775807 s
		c.sec = sec
	}
	n := len(dst)
	dst = slices.Grow(dst, len(c.text))[:n+c.n]
	*(*[len(c.text)]byte)(dst[n : n+len(c.text)]) = c.text // all 19 bytes: a fixed-size copy, the ones past c.n cut off
	put9(dst[n+c.n-9:], uint32(ts-sec*1e9))
	return dst
}

// digits8 is v (< 1e8) as eight decimal digits, zero-padded, one per
// byte of a 64-bit word, the first in the lowest byte: values 0 to 9, not
// yet ASCII (add asciiZeros). v is split into two 4-digit lanes of 32
// bits, each of those into two 2-digit lanes of 16 bits, each of those
// into two 1-digit lanes of 8 bits, by multiplications that stand for the
// divisions (x·10486 >> 20 is x/100 for x < 10,000; x·103 >> 10 is x/10
// for x < 100) and never carry from one lane into the next. A zero digit
// is a zero byte, so bits.TrailingZeros64/8 counts the leading zero
// digits and bits.LeadingZeros64/8 the trailing ones.
func digits8(v uint32) uint64 {
	hi := uint64(v / 1e4)
	x := hi | (uint64(v)-hi*1e4)<<32
	q := (x * 10486 >> 20) & 0x0000007f_0000007f
	x = q | (x-q*100)<<16
	q = (x * 103 >> 10) & 0x000f_000f_000f_000f
	return q | (x-q*10)<<8
}

// asciiZeros turns the digits of digits8 into ASCII.
const asciiZeros = 0x30303030_30303030

// put8 writes v (< 1e8) as eight digits, zero-padded, at b[0:8].
func put8(b []byte, v uint32) {
	binary.LittleEndian.PutUint64(b, digits8(v)+asciiZeros)
}

// put9 writes v (< 1e9) as nine digits, zero-padded, at b[0:9].
func put9(b []byte, v uint32) {
	_ = b[8]
	hi := v / 1e8
	b[0] = byte('0' + hi)
	put8(b[1:], v-hi*1e8)
}

// putUint writes v (< 1e8) in decimal, without leading zeros, at the
// start of b, and returns how many digits that is; it writes all of
// b[0:8] (the bytes past the digits are left for the caller to
// overwrite or cut off).
func putUint(b []byte, v uint32) int {
	d := digits8(v)
	lead := min(bits.TrailingZeros64(d)/8, 7) // leading zero digits; v = 0 still has its "0"
	binary.LittleEndian.PutUint64(b, (d+asciiZeros)>>(8*lead))
	return 8 - lead
}

// appendFloat appends v in the shortest form that parses back to the same
// float64: plain decimal for magnitudes in [1e-6, 1e21), where it is never
// much longer ("1500000", not "1.5e+06"), exponent form outside it (and for
// zero, "0"), where plain decimal would be long ("1e-07", "1e+21"). Every
// form is a valid JSON number and a valid line-protocol float. NaN and the
// infinities are the caller's business.
func appendFloat(dst []byte, v float64) []byte {
	if a := math.Abs(v); a >= 1e-6 && a < 1e21 {
		if a < decimalMax {
			if b, ok := appendDecimal(dst, v, a); ok {
				return b
			}
		}
		return strconv.AppendFloat(dst, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}

// The decimal fast path of appendFloat: prices, sizes and most other
// values a feed carries are short decimals, m/10^8 for an integer m.
const (
	decimalDigits = 8
	decimalScale  = 1e8 // 10^decimalDigits
	decimalMax    = 1e7 // below it, m < 10^15: at most 15 significant digits
)

// appendDecimal appends v (a = |v|, in [1e-6, decimalMax)) as
// strconv.AppendFloat(dst, v, 'f', -1, 64) does, when v is the float64
// nearest to m/10^8 for an integer m, and reports whether it was. It
// costs a few multiplications and one division where the general
// shortest-digits search costs several times that.
//
// Why the output is the same: float64(m)/1e8 is the correctly rounded
// quotient of two exactly represented numbers, so it equals a exactly
// when parsing the decimal D = m/10^8 gives a. D has at most 15
// significant digits, and two different decimals of at most 15
// significant digits never round to the same float64 (a float64 carries
// 15.95 decimal digits), so D, trailing zeros dropped, is the only
// decimal of at most 15 digits that parses to a: the shortest one, which
// is what strconv prints.
func appendDecimal(dst []byte, v, a float64) ([]byte, bool) {
	m := uint64(a*decimalScale + 0.5)
	if float64(m)/decimalScale != a {
		return dst, false
	}
	n := len(dst)
	dst = slices.Grow(dst, decimalRoom)
	b := dst[n : n+decimalRoom]
	i := 0
	if v < 0 {
		b[0] = '-'
		i = 1
	}
	i += putUint(b[i:], uint32(m/decimalScale)) // < decimalMax
	// The point and eight digits go out whatever they are, and count
	// only when the fraction is not 0, its trailing zeros cut off: no
	// branch on how many digits the value has.
	frac := digits8(uint32(m % decimalScale))
	b[i] = '.'
	binary.LittleEndian.PutUint64(b[i+1:], frac+asciiZeros)
	if frac != 0 {
		i += 1 + decimalDigits - bits.LeadingZeros64(frac)/8
	}
	return dst[:n+i], true
}

// decimalRoom is the room appendDecimal writes in: a sign, eight bytes
// for the integer part (at most seven digits), the point and eight
// digits.
const decimalRoom = 1 + 8 + 1 + decimalDigits

// appendInt appends v as strconv.AppendInt(dst, v, 10) does; values
// below 10^8 (sizes, counts) take the path of digits8.
func appendInt(dst []byte, v int64) []byte {
	if v < 0 || v >= 1e8 {
		return strconv.AppendInt(dst, v, 10)
	}
	n := len(dst)
	dst = slices.Grow(dst, 8)
	return dst[:n+putUint(dst[n:n+8], uint32(v))]
}

// appendBool appends true or false.
func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// csvNeedsQuotes reports whether s must be quoted in a CSV field: RFC 4180
// for the comma, quote, CR and LF; also an empty string (so that it differs
// from a missing value, which is an empty field) and leading or trailing
// blanks (which some readers trim).
func csvNeedsQuotes(s string) bool {
	if s == "" || s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', '"', '\r', '\n':
			return true
		}
	}
	return false
}

// appendCSV appends s as one CSV field, quoted (with quotes doubled) where
// csvNeedsQuotes says so.
func appendCSV(dst []byte, s string) []byte {
	if !csvNeedsQuotes(s) {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, and U+2028
// and U+2029 escaped (JavaScript treats them as line ends).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, `\u202`...)
			dst = append(dst, hexDigits[r&15])
		default:
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// appendTableText appends s for the table format, readable on one line:
// as it is unless it holds a control character or invalid UTF-8, then Go
// quoted. It returns the width in runes of what it appended.
func appendTableText(dst []byte, s string) ([]byte, int) {
	plain := utf8.ValidString(s)
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] != 0x7f
	}
	if plain {
		return append(dst, s...), utf8.RuneCountInString(s)
	}
	n := len(dst)
	dst = strconv.AppendQuote(dst, s)
	return dst, utf8.RuneCount(dst[n:])
}
