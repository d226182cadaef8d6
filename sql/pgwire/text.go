package pgwire

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// appendText appends v, a value database/sql scanned from DuckDB, as
// Postgres prints a value of type oid in text format. shape is the
// column's DuckDB type, used for the types sent as text.
//
// The value's Go type and oid usually match the column's DuckDB type; when
// they do not (a statement described before its parameters were known),
// the value is converted, or an error says why it cannot be.
func appendText(dst []byte, oid uint32, shape *duckShape, v any) ([]byte, error) {
	switch oid {
	case oidBool:
		switch b := v.(type) {
		case bool:
			if b {
				return append(dst, 't'), nil
			}
			return append(dst, 'f'), nil
		}
	case oidInt2, oidInt4, oidInt8:
		if n, ok := toInt64(v); ok {
			return strconv.AppendInt(dst, n, 10), nil
		}
	case oidFloat4:
		if f, ok := toFloat64(v); ok {
			return appendFloat(dst, f, 32), nil
		}
	case oidFloat8:
		if f, ok := toFloat64(v); ok {
			return appendFloat(dst, f, 64), nil
		}
	case oidNumeric:
		if s, ok := numericString(v); ok {
			return append(dst, s...), nil
		}
	case oidDate:
		if t, ok := v.(time.Time); ok {
			return appendDate(dst, t), nil
		}
	case oidTime:
		if t, ok := v.(time.Time); ok {
			return appendClock(dst, t, 6), nil
		}
	case oidTimestamp:
		if t, ok := v.(time.Time); ok {
			return appendTimestamp(dst, t, false), nil
		}
	case oidTimestampTZ:
		if t, ok := v.(time.Time); ok {
			return appendTimestamp(dst, t.UTC(), true), nil
		}
	case oidInterval:
		if iv, ok := v.(duckdb.Interval); ok {
			return appendInterval(dst, iv), nil
		}
	case oidBytea:
		switch b := v.(type) {
		case []byte:
			dst = append(dst, `\x`...)
			return hex.AppendEncode(dst, b), nil
		case string:
			dst = append(dst, `\x`...)
			return hex.AppendEncode(dst, []byte(b)), nil
		}
	case oidUUID:
		if u, ok := toUUID(v); ok {
			return appendUUID(dst, u), nil
		}
	case oidText, oidVarchar, oidUnspecified:
		switch s := v.(type) {
		case string:
			return append(dst, s...), nil
		case []byte:
			return append(dst, s...), nil
		}
		return appendDuck(dst, shape, v, true)
	}
	return dst, fmt.Errorf("%w: %T value as %s", errEncode, v, typeName(oid))
}

// appendFloat prints f as Postgres 12 and later do with the default
// extra_float_digits (1): the shortest string that reads back exactly,
// in fixed notation for decimal exponents from -4 up to 14 (float8) or
// 5 (float4), else as 1.5e+15.
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	}
	limit := 15
	if bits == 32 {
		limit = 6
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bits)
	exp := 0
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] == 'e' {
			exp, _ = strconv.Atoi(string(e[i+1:]))
			break
		}
	}
	if exp >= -4 && exp < limit {
		return strconv.AppendFloat(dst, f, 'f', -1, bits)
	}
	return append(dst, e...)
}

// appendDate prints 2023-11-14, or 0044-03-15 BC.
func appendDate(dst []byte, t time.Time) []byte {
	y, m, d := t.Date()
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	dst = appendPadded(dst, y, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int(m), 2)
	dst = append(dst, '-')
	dst = appendPadded(dst, d, 2)
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendClock prints 22:13:20 and the fraction of the second, trailing
// zeros dropped, at most digits digits.
func appendClock(dst []byte, t time.Time, digits int) []byte {
	h, mi, s := t.Clock()
	dst = appendPadded(dst, h, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, mi, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, s, 2)
	return appendFraction(dst, t.Nanosecond(), digits)
}

// appendFraction appends ".123456789" for ns nanoseconds cut to digits
// digits, trailing zeros dropped; nothing for zero.
func appendFraction(dst []byte, ns, digits int) []byte {
	for i := digits; i < 9; i++ {
		ns /= 10
	}
	if ns == 0 {
		return dst
	}
	for digits > 0 && ns%10 == 0 {
		ns /= 10
		digits--
	}
	dst = append(dst, '.')
	return appendPadded(dst, ns, digits)
}

// appendTimestamp prints a timestamp as Postgres does with DateStyle ISO
// (2023-11-14 22:13:20.123456789), with every nanosecond digit DuckDB
// keeps: Postgres stops at microseconds, TIMESTAMP_NS does not. With tz,
// t is in UTC, the session's TimeZone, and "+00" follows.
func appendTimestamp(dst []byte, t time.Time, tz bool) []byte {
	y, m, d := t.Date()
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	dst = appendPadded(dst, y, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int(m), 2)
	dst = append(dst, '-')
	dst = appendPadded(dst, d, 2)
	dst = append(dst, ' ')
	dst = appendClock(dst, t, 9)
	if tz {
		dst = append(dst, "+00"...)
	}
	if bc {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendInterval prints an interval in IntervalStyle postgres:
// "1 year 2 mons 3 days 04:05:06.789", "-1 days +02:00:00", "00:00:00".
func appendInterval(dst []byte, iv duckdb.Interval) []byte {
	start := len(dst)
	before := false // the last field printed was negative
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		if before && v > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if v != 1 {
			dst = append(dst, 's')
		}
		before = v < 0
	}
	part(int64(iv.Months/12), "year")
	part(int64(iv.Months%12), "mon")
	part(int64(iv.Days), "day")
	if iv.Micros != 0 || len(dst) == start {
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		us := iv.Micros
		if us < 0 {
			dst = append(dst, '-')
			us = -us
		} else if before {
			dst = append(dst, '+')
		}
		dst = appendPadded64(dst, us/3_600_000_000, 2)
		dst = append(dst, ':')
		dst = appendPadded64(dst, us/60_000_000%60, 2)
		dst = append(dst, ':')
		dst = appendPadded64(dst, us/1_000_000%60, 2)
		dst = appendFraction(dst, int(us%1_000_000)*1000, 6)
	}
	return dst
}

func appendPadded(dst []byte, v, width int) []byte {
	return appendPadded64(dst, int64(v), width)
}

func appendPadded64(dst []byte, v int64, width int) []byte {
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], v, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

func appendUUID(dst []byte, u [16]byte) []byte {
	dst = hex.AppendEncode(dst, u[0:4])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[4:6])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[6:8])
	dst = append(dst, '-')
	dst = hex.AppendEncode(dst, u[8:10])
	dst = append(dst, '-')
	return hex.AppendEncode(dst, u[10:16])
}

// toInt64 converts every Go integer type (and an integral numeric) to
// int64 where it fits.
func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int16:
		return int64(n), true
	case int8:
		return int64(n), true
	case int:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), true
		}
	case *big.Int:
		if n.IsInt64() {
			return n.Int64(), true
		}
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

func toFloat64(v any) (float64, bool) {
	switch f := v.(type) {
	case float64:
		return f, true
	case float32:
		return float64(f), true
	case duckdb.Decimal:
		return f.Float64(), true
	case string:
		x, err := strconv.ParseFloat(f, 64)
		return x, err == nil
	}
	if n, ok := toInt64(v); ok {
		return float64(n), true
	}
	return 0, false
}

func toUUID(v any) ([16]byte, bool) {
	var u [16]byte
	switch b := v.(type) {
	case []byte:
		if len(b) == 16 {
			copy(u[:], b)
			return u, true
		}
	case duckdb.UUID:
		return b, true
	case *duckdb.UUID:
		return *b, true
	case string:
		var x duckdb.UUID
		if err := x.Scan(b); err == nil {
			return x, true
		}
	}
	return u, false
}

// numericString prints an exact number: integers of any width and
// DuckDB decimals with all their scale digits (1.50 stays 1.50, as
// Postgres keeps a numeric's display scale).
func numericString(v any) (string, bool) {
	switch n := v.(type) {
	case duckdb.Decimal:
		return decimalString(n.Value, int(n.Scale)), n.Value != nil
	case *big.Int:
		return n.String(), true
	case uint64:
		return strconv.FormatUint(n, 10), true
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64), !math.IsInf(n, 0)
	case float32:
		return strconv.FormatFloat(float64(n), 'f', -1, 32), !math.IsInf(float64(n), 0)
	case string:
		if _, ok := new(big.Float).SetString(n); ok {
			return n, true
		}
		return "", false
	}
	if i, ok := toInt64(v); ok {
		return strconv.FormatInt(i, 10), true
	}
	return "", false
}

// decimalString prints value / 10^scale with exactly scale fraction
// digits.
func decimalString(value *big.Int, scale int) string {
	if value == nil {
		return ""
	}
	digits := new(big.Int).Abs(value).String()
	neg := value.Sign() < 0
	if scale > 0 {
		for len(digits) <= scale {
			digits = "0" + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// appendDuck appends v as DuckDB casts it to VARCHAR, for the types
// Postgres has no match for: [1, 2] for a list, {'a': 1} for a struct,
// {k=1} for a map; inside those, a string that holds a separator is
// quoted as 'a,b'. top is false inside a nested value.
func appendDuck(dst []byte, shape *duckShape, v any, top bool) ([]byte, error) {
	if shape == nil {
		shape = &duckShape{}
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "NULL"...), nil
	case []any:
		var elem *duckShape
		if shape.kind == 'l' && len(shape.elems) == 1 {
			elem = shape.elems[0]
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			var err error
			if dst, err = appendDuck(dst, elem, e, false); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		dst = append(dst, '{')
		n := 0
		field := func(name string, fv any, fs *duckShape) error {
			if n > 0 {
				dst = append(dst, ", "...)
			}
			n++
			dst = appendQuoted(dst, name)
			dst = append(dst, ": "...)
			var err error
			dst, err = appendDuck(dst, fs, fv, false)
			return err
		}
		if shape.kind == 's' && len(shape.fields) == len(x) {
			for i, name := range shape.fields {
				if err := field(name, x[name], shape.elems[i]); err != nil {
					return dst, err
				}
			}
		} else {
			for _, name := range sortedKeys(x) {
				if err := field(name, x[name], nil); err != nil {
					return dst, err
				}
			}
		}
		return append(dst, '}'), nil
	case duckdb.OrderedMap:
		var ks, vs *duckShape
		if shape.kind == 'm' && len(shape.elems) == 2 {
			ks, vs = shape.elems[0], shape.elems[1]
		}
		keys, values := x.Keys(), x.Values()
		dst = append(dst, '{')
		for i := range keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			var err error
			if dst, err = appendDuck(dst, ks, keys[i], false); err != nil {
				return dst, err
			}
			dst = append(dst, '=')
			if dst, err = appendDuck(dst, vs, values[i], false); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case duckdb.Union:
		var member *duckShape
		for i, f := range shape.fields {
			if f == x.Tag && shape.kind == 'u' {
				member = shape.elems[i]
			}
		}
		return appendDuck(dst, member, x.Value, top)
	}
	s, err := duckScalar(shape, v)
	if err != nil {
		return dst, err
	}
	if top {
		return append(dst, s...), nil
	}
	if needsQuotes(s) {
		return appendQuoted(dst, s), nil
	}
	return append(dst, s...), nil
}

// duckScalar is DuckDB's string form of one scalar.
func duckScalar(shape *duckShape, v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return duckFloat(x, 64), nil
	case float32:
		return duckFloat(float64(x), 32), nil
	case duckdb.Decimal:
		return decimalString(x.Value, int(x.Scale)), nil
	case *big.Int:
		return x.String(), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case duckdb.Interval:
		return duckInterval(x), nil
	case time.Time:
		var b []byte
		switch shape.name {
		case "DATE":
			b = appendDate(b, x)
		case "TIME":
			b = appendClock(b, x, 9)
		case "TIMETZ", "TIME WITH TIME ZONE":
			b = appendClock(b, x, 9)
			_, off := x.Zone()
			b = appendOffset(b, off)
		case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
			b = appendTimestamp(b, x.UTC(), true)
		default:
			b = appendTimestamp(b, x, false)
		}
		return string(b), nil
	case []byte:
		if shape.name == "UUID" && len(x) == 16 {
			return string(appendUUID(nil, [16]byte(x))), nil
		}
		return blobString(x), nil
	}
	if n, ok := toInt64(v); ok {
		return strconv.FormatInt(n, 10), nil
	}
	// JSON arrives decoded.
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%w: %T value as text", errEncode, v)
	}
	return string(b), nil
}

// appendOffset prints a UTC offset as +05:30, or +05 for whole hours.
func appendOffset(dst []byte, off int) []byte {
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	dst = append(dst, sign)
	dst = appendPadded(dst, off/3600, 2)
	if m := off % 3600 / 60; m != 0 {
		dst = append(dst, ':')
		dst = appendPadded(dst, m, 2)
	}
	return dst
}

// duckFloat prints a float the way DuckDB does inside nested values:
// 2.0, 0.1, 1e+20.
func duckFloat(f float64, bits int) string {
	if math.IsNaN(f) {
		return "nan"
	}
	if math.IsInf(f, 0) {
		if f > 0 {
			return "inf"
		}
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, bits)
	exp := 0
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] == 'e' {
			exp, _ = strconv.Atoi(e[i+1:])
			break
		}
	}
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s
		}
	}
	return s + ".0"
}

// duckInterval is DuckDB's interval string: "1 year 2 months 3 days
// 04:05:06.789".
func duckInterval(iv duckdb.Interval) string {
	var b []byte
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, v, 10)
		b = append(b, ' ')
		b = append(b, unit...)
		if v != 1 && v != -1 {
			b = append(b, 's')
		}
	}
	part(int64(iv.Months/12), "year")
	part(int64(iv.Months%12), "month")
	part(int64(iv.Days), "day")
	if iv.Micros != 0 || len(b) == 0 {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		us := iv.Micros
		if us < 0 {
			b = append(b, '-')
			us = -us
		}
		b = appendPadded64(b, us/3_600_000_000, 2)
		b = append(b, ':')
		b = appendPadded64(b, us/60_000_000%60, 2)
		b = append(b, ':')
		b = appendPadded64(b, us/1_000_000%60, 2)
		b = appendFraction(b, int(us%1_000_000)*1000, 6)
	}
	return string(b)
}

// blobString is DuckDB's BLOB string: printable ASCII as is, other bytes
// as \xAB.
func blobString(b []byte) string {
	const digits = "0123456789ABCDEF"
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c >= 0x20 && c < 0x7f && c != '\\' && c != '\'' && c != '"' {
			out = append(out, c)
			continue
		}
		out = append(out, '\\', 'x', digits[c>>4], digits[c&15])
	}
	return string(out)
}

// needsQuotes says whether DuckDB quotes s inside a nested value.
func needsQuotes(s string) bool {
	if s == "" || s == "NULL" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', '\'', '"', '[', ']', '{', '}', '=', ':', '(', ')', '\n', '\t', '\r':
			return true
		}
	}
	return false
}

func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			dst = append(dst, '\\')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '\'')
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
