package pgwire

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// decodeParam turns one Bind parameter into the value passed to DuckDB.
//
// Text-format parameters of undeclared type (oid 0) and of types DuckDB
// parses better than we would (numeric, dates, timestamps, uuid, ...)
// pass as Go strings: duckdb-go binds a string as a string literal, which
// DuckDB casts to whatever type the parameter's place needs, as Postgres
// does with an "unknown" literal. Integers, floats, booleans and bytea are
// decoded, as DuckDB must see them typed (a string cannot be compared
// with a BIGINT). Binary-format parameters need a declared type.
func decodeParam(oid uint32, format int16, data []byte) (any, *pgError) {
	if data == nil {
		return nil, nil
	}
	if format == 0 {
		return decodeTextParam(oid, string(data))
	}
	if format != 1 {
		return nil, newError(codeProtocolViolation, fmt.Sprintf("unsupported format code: %d", format))
	}
	bad := func() (any, *pgError) {
		return nil, newError(codeInvalidBinaryFormat, fmt.Sprintf("incorrect binary data format for type %s", typeName(oid)))
	}
	switch oid {
	case oidBool:
		if len(data) != 1 {
			return bad()
		}
		return data[0] != 0, nil
	case oidInt2:
		if len(data) != 2 {
			return bad()
		}
		return int64(int16(binary.BigEndian.Uint16(data))), nil
	case oidInt4:
		if len(data) != 4 {
			return bad()
		}
		return int64(int32(binary.BigEndian.Uint32(data))), nil
	case oidInt8:
		if len(data) != 8 {
			return bad()
		}
		return int64(binary.BigEndian.Uint64(data)), nil
	case oidFloat4:
		if len(data) != 4 {
			return bad()
		}
		return float64(math.Float32frombits(binary.BigEndian.Uint32(data))), nil
	case oidFloat8:
		if len(data) != 8 {
			return bad()
		}
		return math.Float64frombits(binary.BigEndian.Uint64(data)), nil
	case oidDate:
		if len(data) != 4 {
			return bad()
		}
		days := int64(int32(binary.BigEndian.Uint32(data)))
		return time.Unix(pgEpoch+days*86400, 0).UTC(), nil
	case oidTimestamp, oidTimestampTZ:
		if len(data) != 8 {
			return bad()
		}
		us := int64(binary.BigEndian.Uint64(data))
		return time.Unix(pgEpoch, 0).UTC().Add(time.Duration(us) * time.Microsecond), nil
	case oidTime:
		if len(data) != 8 {
			return bad()
		}
		us := int64(binary.BigEndian.Uint64(data))
		return time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(us) * time.Microsecond).Format("15:04:05.999999"), nil
	case oidInterval:
		if len(data) != 16 {
			return bad()
		}
		return duckdb.Interval{
			Micros: int64(binary.BigEndian.Uint64(data)),
			Days:   int32(binary.BigEndian.Uint32(data[8:])),
			Months: int32(binary.BigEndian.Uint32(data[12:])),
		}, nil
	case oidUUID:
		if len(data) != 16 {
			return bad()
		}
		return string(appendUUID(nil, [16]byte(data))), nil
	case oidNumeric:
		s, ok := numericFromBinary(data)
		if !ok {
			return bad()
		}
		return s, nil
	case oidBytea:
		return append([]byte(nil), data...), nil
	}
	// text, varchar, unknown, and undeclared (a client that sends binary
	// without declaring a type sends the text bytes).
	return string(data), nil
}

func decodeTextParam(oid uint32, s string) (any, *pgError) {
	invalid := func() (any, *pgError) {
		return nil, newError(codeInvalidText, fmt.Sprintf("invalid input syntax for type %s: %q", typeName(oid), s))
	}
	switch oid {
	case oidInt2, oidInt4, oidInt8:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return invalid()
		}
		return n, nil
	case oidFloat4, oidFloat8:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "infinity", "+infinity":
				return math.Inf(1), nil
			case "-infinity":
				return math.Inf(-1), nil
			}
			return invalid()
		}
		return f, nil
	case oidBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "y", "yes", "on", "1":
			return true, nil
		case "f", "false", "n", "no", "off", "0":
			return false, nil
		}
		return invalid()
	case oidBytea:
		if h, ok := strings.CutPrefix(s, `\x`); ok {
			b, err := hex.DecodeString(h)
			if err != nil {
				return invalid()
			}
			return b, nil
		}
		return []byte(s), nil
	}
	return s, nil
}

// standIn is a parameter value of the kind decodeParam gives for oid,
// used to describe a statement before its parameters are known.
func standIn(oid uint32) any {
	switch oid {
	case oidInt2, oidInt4, oidInt8:
		return int64(0)
	case oidFloat4, oidFloat8:
		return float64(0)
	case oidBool:
		return false
	case oidBytea:
		return []byte{}
	case oidDate, oidTimestamp, oidTimestampTZ:
		return time.Unix(pgEpoch, 0).UTC()
	case oidInterval:
		return duckdb.Interval{}
	case oidNumeric:
		return "0"
	}
	return ""
}

// numericFromBinary decodes Postgres's binary numeric into a decimal
// string.
func numericFromBinary(b []byte) (string, bool) {
	if len(b) < 8 {
		return "", false
	}
	ndigits := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	if len(b) != 8+2*ndigits {
		return "", false
	}
	switch sign {
	case numericNaN:
		return "NaN", true
	case 0xD000:
		return "Infinity", true
	case 0xF000:
		return "-Infinity", true
	}
	var intPart, frac strings.Builder
	for i := 0; i < ndigits; i++ {
		d := binary.BigEndian.Uint16(b[8+2*i:])
		if d > 9999 {
			return "", false
		}
		group := fmt.Sprintf("%04d", d)
		if i <= weight {
			intPart.WriteString(group)
		} else {
			frac.WriteString(group)
		}
	}
	ip := intPart.String()
	for i := ndigits; i <= weight; i++ { // trailing zero groups of the integer part
		ip += "0000"
	}
	fs := frac.String()
	for i := weight + 1; i < 0; i++ { // leading zero groups of the fraction
		fs = "0000" + fs
	}
	ip = strings.TrimLeft(ip, "0")
	if ip == "" {
		ip = "0"
	}
	for len(fs) < dscale {
		fs += "0"
	}
	fs = fs[:dscale]
	s := ip
	if dscale > 0 {
		s += "." + fs
	}
	if sign == numericNeg {
		s = "-" + s
	}
	return s, true
}
