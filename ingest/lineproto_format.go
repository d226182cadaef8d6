package ingest

import (
	"math"
	"strconv"
)

// How the two most used client families escape, which decides what Parse
// accepts and what AppendLine writes:
//
//   - InfluxDB's encoder (github.com/influxdata/line-protocol/v2/lineprotocol,
//     v2.2.1, escape.go and decoder.go) escapes ' ' and ',' in measurements,
//     and ',', '=' and ' ' in tag keys, tag values and field keys. It never
//     escapes a backslash, and its decoder keeps a backslash that does not
//     precede one of those bytes. It refuses names that end in a backslash.
//   - The QuestDB clients (go-questdb-client v4 buffer.go writeTableName,
//     writeColumnName and writeStrValue; c-questdb-client questdb-rs
//     src/ingress/buffer/ilp.rs must_escape_unquoted; the shared suite
//     questdb-client-test ilp-client-interop-test.json) escape ' ', ',', '=',
//     '\\', CR and LF in table names, column names and symbols, and
//     QuestDB's server drops a backslash before any byte.
//
// Parse therefore undoes \, \space \= \\ \CR \LF everywhere and keeps any
// other backslash, which reads both families right in every case but one:
// an InfluxDB name or symbol that itself holds two backslashes in a row or
// a backslash before ',', '=' or ' ' (InfluxDB writes a\,b as a\\,b; a
// QuestDB client writes it as a\\\,b). AppendLine writes what the QuestDB
// clients write, which both QuestDB and tickdb read back exactly; InfluxDB
// reads it back exactly unless a name holds a backslash or a measurement
// holds '='.

// AppendLine appends l to dst as one line of line protocol, ending in '\n',
// and returns the extended buffer. Parse reads the result back to an equal
// Line, and formatting that again gives the same bytes.
//
// Names and symbols are escaped as above. Floats are written in the
// shortest form that reads back to the same float64 ('g' style: 100,
// 1.5e-07, 1e+06, as InfluxDB's encoder writes them), and the non-finite
// ones as NaN, Infinity and -Infinity, the spellings QuestDB uses (InfluxDB
// has none and rejects such a line). A caller that treats NaN as a missing
// value, as tickdb's f64 columns do, leaves that field out of l instead.
// Ints are written as 123i, uints as 123u (a negative KindUint value, which
// Parse never makes, as an int), booleans as t and f, and the timestamp, in
// nanoseconds, only when HasTs.
//
// AppendLine does not check l: an empty measurement, a measurement that
// starts with '#', an empty key or value, or a line with neither tags nor
// fields gives a line that Parse rejects.
func AppendLine(dst []byte, l *Line) []byte {
	dst = appendEscaped(dst, l.Measurement)
	for i := range l.Tags {
		dst = append(dst, ',')
		dst = appendEscaped(dst, l.Tags[i].Key)
		dst = append(dst, '=')
		dst = appendEscaped(dst, l.Tags[i].Value)
	}
	for i := range l.Fields {
		f := &l.Fields[i]
		if i == 0 {
			dst = append(dst, ' ')
		} else {
			dst = append(dst, ',')
		}
		dst = appendEscaped(dst, f.Key)
		dst = append(dst, '=')
		switch f.Kind {
		case KindFloat:
			dst = appendFloat(dst, f.F)
		case KindInt:
			dst = strconv.AppendInt(dst, f.I, 10)
			dst = append(dst, 'i')
		case KindUint:
			dst = strconv.AppendInt(dst, f.I, 10)
			if f.I < 0 {
				dst = append(dst, 'i')
			} else {
				dst = append(dst, 'u')
			}
		case KindBool:
			if f.B {
				dst = append(dst, 't')
			} else {
				dst = append(dst, 'f')
			}
		}
	}
	if l.HasTs {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, l.Ts, 10)
	}
	return append(dst, '\n')
}

// appendEscaped appends b with every byte that Parse would read as a
// separator or an escape preceded by a backslash.
func appendEscaped(dst, b []byte) []byte {
	start := 0
	for i, c := range b {
		if class[c]&escapable != 0 {
			dst = append(dst, b[start:i]...)
			dst = append(dst, '\\', c)
			start = i + 1
		}
	}
	return append(dst, b[start:]...)
}

// appendFloat appends f so that it reads back as the same KindFloat value.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}
