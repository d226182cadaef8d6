package lineproto

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// This file holds how values are read: the parsers of field values
// (numbers and booleans), and ParseInt and ParseFloat, the same number
// spellings for readers of other formats (load's CSV cells). parse.go
// holds the line's grammar; escape.go the escaping rule, in both
// directions, shared with the encoder.

// How the two most used client families escape, which decides what Parse
// accepts:
//
//   - InfluxDB's encoder (github.com/influxdata/line-protocol/v2/lineprotocol,
//     v2.2.1, escape.go and decoder.go) escapes ' ' and ',' in measurements,
//     and ',', '=' and ' ' in tag keys, tag values and field keys. It never
//     escapes a backslash, and its decoder keeps a backslash that does not
//     precede one of those bytes. It refuses names that end in a backslash,
//     and its decoder refuses a raw line break or other control byte in a
//     name.
//   - The QuestDB clients (go-questdb-client v4 buffer.go writeTableName,
//     writeColumnName and writeStrValue; c-questdb-client questdb-rs
//     src/ingress/buffer/ilp.rs must_escape_unquoted; the shared suite
//     questdb-client-test ilp-client-interop-test.json) escape ' ', ',', '=',
//     '\\', CR and LF in table names, column names and symbols, and
//     QuestDB's server (core/.../cutlass/line/tcp/LineTcpParser.java)
//     drops the backslash before any byte of a symbol.
//
// Parse therefore undoes \, \space \= \\ and a backslash before a raw CR
// or LF everywhere, reads \n and \r as LF and CR (Encoder's spelling of a
// line break, the only one InfluxDB accepts in a name), and keeps any
// other backslash. That reads both families right in every case but
// these: an InfluxDB name or symbol that itself holds two backslashes in a row, a
// backslash before ',', '=' or ' ' (InfluxDB writes a\,b as a\\,b; a
// QuestDB client writes it as a\\\,b) or a backslash before n or r.
// Encoder writes what Parse reads back exactly and QuestDB and InfluxDB
// accept (see doc.go).

// quickValue parses the commonest field values in one pass, without
// first looking for the value's end: [-]digits[.digits] (at most 15
// digits, so the float is exact), [-]digits i (at most 18 digits), t and f.
// It returns the index after the value, or -1 for anything else, which
// parseValue then handles in full.
func quickValue(line []byte, i int, f *Field) int {
	n := len(line)
	if i == n {
		return -1
	}
	switch line[i] {
	case 't', 'f':
		if valueEnds(line, i+1) {
			f.Kind, f.B = KindBool, line[i] == 't'
			return i + 1
		}
		return -1
	}
	neg := line[i] == '-'
	if neg {
		i++
	}
	s0 := i
	var m uint64
	for i < n && line[i]-'0' <= 9 {
		m = m*10 + uint64(line[i]-'0')
		i++
	}
	digits := i - s0
	if digits == 0 {
		return -1
	}
	if i < n && line[i] == 'i' {
		if digits > 18 || !valueEnds(line, i+1) {
			return -1
		}
		f.Kind, f.I = KindInt, int64(m)
		if neg {
			f.I = -f.I
		}
		return i + 1
	}
	frac := 0
	if i < n && line[i] == '.' {
		i++
		f0 := i
		for i < n && line[i]-'0' <= 9 {
			m = m*10 + uint64(line[i]-'0')
			i++
		}
		frac = i - f0
		digits += frac
	}
	if digits > 15 || !valueEnds(line, i) {
		return -1
	}
	// At most 15 digits is below 2^53, and 10^frac is exact: one
	// correctly rounded division, as in parseFloat's fast path.
	x := float64(m) / pow10[frac]
	if neg {
		x = -x
	}
	f.Kind, f.F = KindFloat, x
	return i
}

// valueEnds reports whether an unquoted value may end before line[i].
func valueEnds(line []byte, i int) bool {
	return i == len(line) || line[i] == ',' || line[i] == ' '
}

// parseValue parses an unquoted field value into f, or returns why it
// cannot: a reason and a message. The first byte picks the kind, so a
// number (the common case) costs no word comparisons.
func parseValue(v []byte, f *Field) (Reason, string) {
	switch v[0] {
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '.':
	case '+', '-':
		if len(v) > 1 && v[1]|0x20 == 'i' {
			return special(v, f)
		}
	case 't', 'T', 'f', 'F':
		switch string(v) {
		case "t", "T", "true", "True", "TRUE":
			f.Kind, f.B = KindBool, true
			return 0, ""
		case "f", "F", "false", "False", "FALSE":
			f.Kind, f.B = KindBool, false
			return 0, ""
		}
		return notAValue(v)
	default:
		return special(v, f)
	}
	switch v[len(v)-1] {
	case 'i':
		return suffixedInt(v, KindInt, "integer", f)
	case 'u':
		if v[0] == '-' {
			return ReasonNumber, fmt.Sprintf("unsigned integer %s is negative", snippet(v))
		}
		return suffixedInt(v, KindUint, "unsigned integer", f)
	}
	x, r := parseFloat(v)
	switch r {
	case intSyntax:
		return ReasonNumber, fmt.Sprintf("malformed number %s", snippet(v))
	case intRange:
		return ReasonNumber, fmt.Sprintf("number %s overflows f64", snippet(v))
	}
	f.Kind, f.F = KindFloat, x
	return 0, ""
}

// suffixedInt parses v, an integer with its one-letter suffix, into f as
// kind; what names the kind in errors.
func suffixedInt(v []byte, kind Kind, what string, f *Field) (Reason, string) {
	x, r := parseInt(v[:len(v)-1])
	switch r {
	case intSyntax:
		return ReasonNumber, fmt.Sprintf("malformed %s %s", what, snippet(v))
	case intRange:
		return ReasonNumber, fmt.Sprintf("%s %s overflows i64", what, snippet(v))
	}
	f.Kind, f.I = kind, x
	return 0, ""
}

// special parses the non-finite float spellings, or rejects v as no value.
func special(v []byte, f *Field) (Reason, string) {
	if x, ok := parseSpecialFloat(v); ok {
		f.Kind, f.F = KindFloat, x
		return 0, ""
	}
	return notAValue(v)
}

func notAValue(v []byte) (Reason, string) {
	return ReasonValue, fmt.Sprintf("value %s is not a number (1.5, 2i, 3u), a boolean (t, f, true, false) or a quoted string", snippet(v))
}

// parseSpecialFloat accepts the non-finite spellings that QuestDB's server
// and clients use (NaN, Infinity, -Infinity), in any case, and the shorter
// inf. InfluxDB rejects non-finite floats, so no InfluxDB client sends them.
func parseSpecialFloat(v []byte) (float64, bool) {
	if len(v) < 3 {
		return 0, false
	}
	sign := 1
	w := v
	switch w[0] {
	case '-':
		sign = -1
		w = w[1:]
	case '+':
		w = w[1:]
	case 'n', 'N':
		if len(w) == 3 && (w[1]|0x20) == 'a' && (w[2]|0x20) == 'n' {
			return math.NaN(), true
		}
		return 0, false
	}
	if asciiEqualFold(w, "inf") || asciiEqualFold(w, "infinity") {
		return math.Inf(sign), true
	}
	return 0, false
}

// asciiEqualFold reports whether b equals the lower-case ASCII word s,
// ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}

// ParseInt parses a decimal integer, [+-]digits, as the parser reads an
// integer field's digits and a timestamp: no underscores, no base prefix.
// It returns strconv.ErrSyntax for anything else and strconv.ErrRange for
// a value outside int64, and allocates nothing. (It is small enough to
// inline, so a caller in another package pays one call, as the parser
// does.)
func ParseInt(b []byte) (int64, error) {
	x, r := parseInt(b)
	return x, numErrs[r]
}

// ParseFloat parses a float as the parser reads a float field's value: a
// decimal, [+-](digits[.[digits]]|.digits)[(e|E)[+-]digits], or one of
// the non-finite spellings (NaN, Infinity, -Infinity, inf, in any case).
// It returns strconv.ErrSyntax for anything else (hex floats and
// underscores included, and a decimal beyond float64's range) and
// allocates nothing.
func ParseFloat(b []byte) (float64, error) {
	x, r := parseFloatAny(b)
	return x, numErrs[r]
}

// parseFloatAny is ParseFloat's body: a decimal, else a non-finite
// spelling.
func parseFloatAny(b []byte) (float64, int) {
	if len(b) == 0 {
		return 0, intSyntax
	}
	if x, r := parseFloat(b); r == intOK {
		return x, intOK
	}
	if x, ok := parseSpecialFloat(b); ok {
		return x, intOK
	}
	return 0, intSyntax
}

// numErrs maps a number parse result to ParseInt's and ParseFloat's error
// (read-only).
var numErrs = [...]error{intOK: nil, intSyntax: strconv.ErrSyntax, intRange: strconv.ErrRange}

// Number parse results.
const (
	intOK = iota
	intSyntax
	intRange
)

// parseInt parses [+-]digits into an int64 by hand: strconv would need a
// string, and up to 19 digits (every int64, and a nanosecond timestamp)
// cannot wrap a uint64, so one range check at the end is enough.
func parseInt(b []byte) (int64, int) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, intSyntax
	}
	var u uint64
	if len(b) <= 19 {
		var ok bool
		if u, ok = parseDigits(b); !ok {
			return 0, intSyntax
		}
	} else {
		over := false
		for _, c := range b {
			d := c - '0'
			if d > 9 {
				return 0, intSyntax
			}
			if u > (1<<63)/10 {
				over = true // keep going: a syntax error after the digits wins
				continue
			}
			u = u*10 + uint64(d)
		}
		if over {
			return 0, intRange
		}
	}
	switch {
	case neg && u > 1<<63, !neg && u > math.MaxInt64:
		return 0, intRange
	case neg:
		return int64(-u), intOK // -(1<<63) wraps to MinInt64, as wanted
	}
	return int64(u), intOK
}

// parseDigits parses up to 19 decimal digits, eight at a time while it can.
func parseDigits(b []byte) (uint64, bool) {
	var u uint64
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if !eightDigits(x) {
			return 0, false
		}
		u = u*100_000_000 + eightDigitsValue(x)
		b = b[8:]
	}
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		u = u*10 + uint64(d)
	}
	return u, true
}

// eightDigits reports whether all eight bytes of the little-endian word x
// are '0'..'9': each byte's high nibble is 3, and adding 6 leaves it 3. (A
// carry out of a byte only comes from a byte that already fails.)
func eightDigits(x uint64) bool {
	return (x&0xF0F0F0F0F0F0F0F0)|((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 == 0x3333333333333333
}

// eightDigitsValue converts eight ASCII digits, first digit in the low byte,
// SWAR style: a nanosecond timestamp is 19 digits, and digit at a time it
// is a 19-step chain of dependent multiply-adds. Digits to values, then
// pairs (byte 2k holds digits 2k and 2k+1), then 4-digit groups into one.
func eightDigitsValue(x uint64) uint64 {
	x -= 0x3030303030303030
	x = x*10 + x>>8
	return ((x&0x000000FF000000FF)*(100+1000000<<32) + (x>>16&0x000000FF000000FF)*(1+10000<<32)) >> 32
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat parses a decimal float, [+-](digits[.[digits]]|.digits)
// [(e|E)[+-]digits], the spelling every InfluxDB and QuestDB client uses.
//
// It checks the syntax itself, so that strconv's extras (hex floats,
// underscores) stay out, and then takes the exact fast path when the
// mantissa fits in 53 bits and the power of ten in 22: both are then exact
// float64 values and one IEEE multiplication or division rounds correctly.
// Everything else goes to strconv.ParseFloat, whose string(b) argument does
// not escape and so costs no allocation.
func parseFloat(b []byte) (float64, int) {
	i, neg := 0, false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		i = 1
	}
	// Up to 19 digits cannot wrap the uint64 mantissa; past that (leading
	// zeros included) the mantissa is garbage and strconv takes over.
	var mant uint64
	s0 := i
	for i < len(b) && b[i]-'0' <= 9 {
		mant = mant*10 + uint64(b[i]-'0')
		i++
	}
	digits, exp := i-s0, 0
	if i < len(b) && b[i] == '.' {
		i++
		f0 := i
		for i < len(b) && b[i]-'0' <= 9 {
			mant = mant*10 + uint64(b[i]-'0')
			i++
		}
		digits += i - f0
		exp = f0 - i
	}
	if digits == 0 {
		return 0, intSyntax
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i == len(b) {
			return 0, intSyntax
		}
		e := 0
		for ; i < len(b) && b[i]-'0' <= 9; i++ {
			if e < 100_000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(b) {
		return 0, intSyntax
	}
	if digits <= 19 && mant <= 1<<53 && exp >= -22 && exp <= 22 {
		f := float64(mant)
		if exp < 0 {
			f /= pow10[-exp]
		} else {
			f *= pow10[exp]
		}
		if neg {
			f = -f
		}
		return f, intOK
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, intRange
		}
		return 0, intSyntax
	}
	return f, intOK
}
