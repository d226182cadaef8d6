package pgwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// pgEpoch is 2000-01-01 00:00:00 UTC in Unix seconds: the origin of
// Postgres's binary dates and timestamps.
const pgEpoch = 946_684_800

// appendBinary appends v in Postgres's binary format for oid. Types sent
// as text (oidText) carry their text form, which is also their binary
// form.
//
// A binary timestamp is an int64 count of microseconds since 2000-01-01,
// so it cannot carry DuckDB's nanoseconds: they are cut toward minus
// infinity (…20.123456789 becomes …20.123456, and one nanosecond before
// the epoch becomes one microsecond before it). Clients that need the
// nanoseconds read timestamps in text format, or epoch_ns(ts).
func appendBinary(dst []byte, oid uint32, shape *duckShape, v any) ([]byte, error) {
	switch oid {
	case oidBool:
		if b, ok := v.(bool); ok {
			if b {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		}
	case oidInt2:
		if n, ok := toInt64(v); ok && n >= math.MinInt16 && n <= math.MaxInt16 {
			return binary.BigEndian.AppendUint16(dst, uint16(n)), nil
		}
	case oidInt4:
		if n, ok := toInt64(v); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
			return binary.BigEndian.AppendUint32(dst, uint32(n)), nil
		}
	case oidInt8:
		if n, ok := toInt64(v); ok {
			return binary.BigEndian.AppendUint64(dst, uint64(n)), nil
		}
	case oidFloat4:
		if f, ok := toFloat64(v); ok {
			return binary.BigEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
		}
	case oidFloat8:
		if f, ok := toFloat64(v); ok {
			return binary.BigEndian.AppendUint64(dst, math.Float64bits(f)), nil
		}
	case oidNumeric:
		if s, ok := numericString(v); ok {
			return appendNumeric(dst, s)
		}
	case oidDate:
		if t, ok := v.(time.Time); ok {
			days := floorDiv(t.Unix()-pgEpoch, 86400)
			return binary.BigEndian.AppendUint32(dst, uint32(int32(days))), nil
		}
	case oidTime:
		if t, ok := v.(time.Time); ok {
			h, m, s := t.Clock()
			us := int64(h)*3_600_000_000 + int64(m)*60_000_000 + int64(s)*1_000_000 + int64(t.Nanosecond()/1000)
			return binary.BigEndian.AppendUint64(dst, uint64(us)), nil
		}
	case oidTimestamp, oidTimestampTZ:
		if t, ok := v.(time.Time); ok {
			return binary.BigEndian.AppendUint64(dst, uint64(pgMicros(t))), nil
		}
	case oidInterval:
		if iv, ok := v.(duckdb.Interval); ok {
			dst = binary.BigEndian.AppendUint64(dst, uint64(iv.Micros))
			dst = binary.BigEndian.AppendUint32(dst, uint32(iv.Days))
			return binary.BigEndian.AppendUint32(dst, uint32(iv.Months)), nil
		}
	case oidBytea:
		switch b := v.(type) {
		case []byte:
			return append(dst, b...), nil
		case string:
			return append(dst, b...), nil
		}
	case oidUUID:
		if u, ok := toUUID(v); ok {
			return append(dst, u[:]...), nil
		}
	case oidText, oidVarchar, oidUnspecified:
		return appendText(dst, oidText, shape, v)
	}
	return dst, fmt.Errorf("%w: %T value as binary %s", errEncode, v, typeName(oid))
}

// pgMicros is t as microseconds since 2000-01-01 UTC, nanoseconds cut
// toward minus infinity (t.Nanosecond is never negative, so dividing it
// floors).
func pgMicros(t time.Time) int64 {
	return (t.Unix()-pgEpoch)*1_000_000 + int64(t.Nanosecond()/1000)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Binary numeric: ndigits, weight, sign, dscale (int16 each), then
// ndigits base-10000 digits, the first of weight 10000^weight.
const (
	numericPos = 0x0000
	numericNeg = 0x4000
	numericNaN = 0xC000
)

// appendNumeric encodes a decimal string ("-123.4500", "1e+20" is not
// accepted: numericString never makes one) in binary numeric format.
func appendNumeric(dst []byte, s string) ([]byte, error) {
	if s == "NaN" {
		dst = binary.BigEndian.AppendUint32(dst, 0) // ndigits, weight
		dst = binary.BigEndian.AppendUint16(dst, numericNaN)
		return binary.BigEndian.AppendUint16(dst, 0), nil
	}
	sign := uint16(numericPos)
	if strings.HasPrefix(s, "-") {
		sign, s = numericNeg, s[1:]
	}
	if strings.ContainsAny(s, "eE") { // a float's 'f' form has none; a string argument might
		f, ok := new(big.Float).SetString(s)
		if !ok {
			return dst, fmt.Errorf("%w: %q as binary numeric", errEncode, s)
		}
		s = f.Text('f', -1)
	}
	intPart, frac, _ := strings.Cut(s, ".")
	for _, c := range intPart + frac {
		if c < '0' || c > '9' {
			return dst, fmt.Errorf("%w: %q as binary numeric", errEncode, s)
		}
	}
	dscale := len(frac)
	// Pad both parts to whole base-10000 digits.
	if pad := (4 - len(intPart)%4) % 4; pad > 0 {
		intPart = strings.Repeat("0", pad) + intPart
	}
	if pad := (4 - len(frac)%4) % 4; pad > 0 {
		frac += strings.Repeat("0", pad)
	}
	all := intPart + frac
	digits := make([]uint16, 0, len(all)/4)
	for i := 0; i < len(all); i += 4 {
		d := uint16(all[i]-'0')*1000 + uint16(all[i+1]-'0')*100 + uint16(all[i+2]-'0')*10 + uint16(all[i+3]-'0')
		digits = append(digits, d)
	}
	weight := len(intPart)/4 - 1
	for len(digits) > 0 && digits[0] == 0 {
		digits = digits[1:]
		weight--
	}
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		weight, sign = 0, numericPos
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(digits)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(weight)))
	dst = binary.BigEndian.AppendUint16(dst, sign)
	dst = binary.BigEndian.AppendUint16(dst, uint16(dscale))
	for _, d := range digits {
		dst = binary.BigEndian.AppendUint16(dst, d)
	}
	return dst, nil
}
