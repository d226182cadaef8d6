package pgwire

import (
	"strconv"
	"strings"
)

// Postgres type OIDs (pg_type.dat) that DuckDB columns map to.
const (
	oidUnspecified uint32 = 0
	oidBool        uint32 = 16
	oidBytea       uint32 = 17
	oidInt8        uint32 = 20
	oidInt2        uint32 = 21
	oidInt4        uint32 = 23
	oidText        uint32 = 25
	oidFloat4      uint32 = 700
	oidFloat8      uint32 = 701
	oidVarchar     uint32 = 1043
	oidDate        uint32 = 1082
	oidTime        uint32 = 1083
	oidTimestamp   uint32 = 1114
	oidTimestampTZ uint32 = 1184
	oidInterval    uint32 = 1186
	oidNumeric     uint32 = 1700
	oidUUID        uint32 = 2950
)

// pgType is the Postgres face of one DuckDB column type.
type pgType struct {
	oid  uint32
	size int16 // pg_type.typlen: -1 for variable length
	mod  int32 // atttypmod: -1, or numeric's ((precision << 16) | scale) + 4
}

// typeFor maps a DuckDB type name, as sql.ColumnType.DatabaseTypeName
// spells it, to the Postgres type clients are told. Unsigned integers
// get the next wider signed type, so no value overflows; every type
// Postgres has no match for (LIST, STRUCT, MAP, ENUM, UNION, BIT, JSON,
// TIMETZ, ...) is text carrying DuckDB's own string form.
func typeFor(duck string) pgType {
	switch duck {
	case "BOOLEAN":
		return pgType{oidBool, 1, -1}
	case "TINYINT", "SMALLINT", "UTINYINT":
		return pgType{oidInt2, 2, -1}
	case "INTEGER", "USMALLINT":
		return pgType{oidInt4, 4, -1}
	case "BIGINT", "UINTEGER":
		return pgType{oidInt8, 8, -1}
	case "HUGEINT", "UHUGEINT", "UBIGINT", "BIGNUM", "VARINT":
		return pgType{oidNumeric, -1, -1}
	case "FLOAT":
		return pgType{oidFloat4, 4, -1}
	case "DOUBLE":
		return pgType{oidFloat8, 8, -1}
	case "VARCHAR":
		return pgType{oidText, -1, -1}
	case "DATE":
		return pgType{oidDate, 4, -1}
	case "TIME":
		return pgType{oidTime, 8, -1}
	case "TIMESTAMP", "TIMESTAMP_NS", "TIMESTAMP_MS", "TIMESTAMP_S":
		return pgType{oidTimestamp, 8, -1}
	case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
		return pgType{oidTimestampTZ, 8, -1}
	case "INTERVAL":
		return pgType{oidInterval, 16, -1}
	case "BLOB":
		return pgType{oidBytea, -1, -1}
	case "UUID":
		return pgType{oidUUID, 16, -1}
	}
	if p, s, ok := decimalParams(duck); ok {
		return pgType{oidNumeric, -1, int32(p<<16|s) + 4}
	}
	return pgType{oidText, -1, -1}
}

// decimalParams reads "DECIMAL(18,3)".
func decimalParams(duck string) (precision, scale int, ok bool) {
	rest, found := strings.CutPrefix(duck, "DECIMAL(")
	if !found {
		return 0, 0, false
	}
	rest, found = strings.CutSuffix(rest, ")")
	if !found {
		return 0, 0, false
	}
	ps, ss, found := strings.Cut(rest, ",")
	if !found {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(strings.TrimSpace(ps))
	s, err2 := strconv.Atoi(strings.TrimSpace(ss))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return p, s, true
}

// typeName is what pg_catalog.format_type would print for oid; used in
// error messages.
func typeName(oid uint32) string {
	switch oid {
	case oidBool:
		return "boolean"
	case oidBytea:
		return "bytea"
	case oidInt8:
		return "bigint"
	case oidInt2:
		return "smallint"
	case oidInt4:
		return "integer"
	case oidText:
		return "text"
	case oidFloat4:
		return "real"
	case oidFloat8:
		return "double precision"
	case oidVarchar:
		return "character varying"
	case oidDate:
		return "date"
	case oidTime:
		return "time without time zone"
	case oidTimestamp:
		return "timestamp without time zone"
	case oidTimestampTZ:
		return "timestamp with time zone"
	case oidInterval:
		return "interval"
	case oidNumeric:
		return "numeric"
	case oidUUID:
		return "uuid"
	}
	return "oid " + strconv.FormatUint(uint64(oid), 10)
}

// duckShape is a DuckDB nested type parsed from its name, enough to print
// a value the way DuckDB casts it to VARCHAR: STRUCT fields in declared
// order (database/sql hands a STRUCT over as a Go map, which has none).
type duckShape struct {
	kind   byte // 'l' list or array, 's' struct, 'm' map, 'u' union, 0 scalar
	name   string
	fields []string     // struct field names, in order
	elems  []*duckShape // list element; struct fields; map key and value
}

// parseShape parses a DuckDB type name such as
// `STRUCT("a" INTEGER, "b" VARCHAR[])[]`. It never fails: what it cannot
// read becomes a scalar, printed without field order.
func parseShape(name string) *duckShape {
	s, _ := parseShapeAt(name, 0, 0)
	return s
}

// maxShapeDepth bounds the recursion on hostile or absurd type names.
const maxShapeDepth = 32

func parseShapeAt(src string, i, depth int) (*duckShape, int) {
	start := i
	for i < len(src) && src[i] != '(' && src[i] != '[' && src[i] != ',' && src[i] != ')' {
		i++
	}
	head := strings.TrimSpace(src[start:i])
	sh := &duckShape{name: head}
	if i < len(src) && src[i] == '(' && depth < maxShapeDepth {
		switch head {
		case "STRUCT", "UNION":
			sh.kind = 's'
			if head == "UNION" {
				sh.kind = 'u'
			}
			i++
			for i < len(src) && src[i] != ')' {
				for i < len(src) && src[i] == ' ' {
					i++
				}
				var field string
				field, i = readFieldName(src, i)
				var child *duckShape
				child, i = parseShapeAt(src, i, depth+1)
				sh.fields = append(sh.fields, field)
				sh.elems = append(sh.elems, child)
				if i < len(src) && src[i] == ',' {
					i++
				}
			}
			i++
		case "MAP":
			sh.kind = 'm'
			i++
			var k, v *duckShape
			k, i = parseShapeAt(src, i, depth+1)
			if i < len(src) && src[i] == ',' {
				i++
			}
			v, i = parseShapeAt(src, i, depth+1)
			sh.elems = []*duckShape{k, v}
			i++
		default: // DECIMAL(18,3), ENUM(...): skip the parenthesis
			level := 0
			for ; i < len(src); i++ {
				if src[i] == '(' {
					level++
				} else if src[i] == ')' {
					level--
					if level == 0 {
						i++
						break
					}
				} else if src[i] == '\'' {
					for i++; i < len(src) && src[i] != '\''; i++ {
					}
				}
			}
			sh.name = strings.TrimSpace(src[start:i])
		}
	}
	for i < len(src) && src[i] == '[' {
		end := strings.IndexByte(src[i:], ']')
		if end < 0 {
			break
		}
		i += end + 1
		sh = &duckShape{kind: 'l', name: sh.name + "[]", elems: []*duckShape{sh}}
	}
	return sh, i
}

// readFieldName reads a struct field name, quoted ("a ""b""") or bare,
// and the space after it.
func readFieldName(src string, i int) (string, int) {
	if i < len(src) && src[i] == '"' {
		var b strings.Builder
		for i++; i < len(src); i++ {
			if src[i] == '"' {
				if i+1 < len(src) && src[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				i++
				break
			}
			b.WriteByte(src[i])
		}
		for i < len(src) && src[i] == ' ' {
			i++
		}
		return b.String(), i
	}
	start := i
	for i < len(src) && src[i] != ' ' {
		i++
	}
	name := src[start:i]
	for i < len(src) && src[i] == ' ' {
		i++
	}
	return name, i
}
