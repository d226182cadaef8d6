package query

// Append-style value encoders: each appends to dst and returns it, so that
// the per-row path writes into one reused buffer and allocates nothing.

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// rfc3339Fixed is RFC 3339 in UTC with exactly nine fractional digits:
// fixed width, so that the text sorts as the time does.
const rfc3339Fixed = "2006-01-02T15:04:05.000000000Z"

// timeCache formats timestamps as rfc3339Fixed, keeping the text of the
// last second seen: ticks come many per second, and time.AppendFormat
// costs several times what copying 20 bytes and nine digits does.
type timeCache struct {
	sec int64
	pre [20]byte // "2006-01-02T15:04:05." of sec
	ok  bool
}

// append appends ts (ns since the epoch) as rfc3339Fixed.
func (c *timeCache) append(dst []byte, ts int64) []byte {
	sec, frac := ts/1e9, ts%1e9
	if frac < 0 {
		sec, frac = sec-1, frac+1e9
	}
	if !c.ok || sec != c.sec {
		time.Unix(sec, 0).UTC().AppendFormat(c.pre[:0], "2006-01-02T15:04:05.")
		c.sec, c.ok = sec, true
	}
	dst = append(dst, c.pre[:]...)
	var d [9]byte
	for i := 8; i >= 0; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	dst = append(dst, d[:]...)
	return append(dst, 'Z')
}

// appendFloat appends v in the shortest form that parses back to the same
// float64: plain decimal for magnitudes in [1e-6, 1e21), where it is never
// much longer ("1500000", not "1.5e+06"), exponent form outside it (and for
// zero, "0"), where plain decimal would be long ("1e-07", "1e+21"). Every
// form is a valid JSON number and a valid line-protocol float. NaN and the
// infinities are the caller's business.
func appendFloat(dst []byte, v float64) []byte {
	if a := math.Abs(v); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(dst, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
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
