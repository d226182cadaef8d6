package pgwire

import (
	"database/sql"
	"encoding/hex"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

func TestTypeFor(t *testing.T) {
	for duck, want := range map[string]pgType{
		"BOOLEAN": {16, 1, -1}, "TINYINT": {21, 2, -1}, "SMALLINT": {21, 2, -1}, "INTEGER": {23, 4, -1},
		"BIGINT": {20, 8, -1}, "HUGEINT": {1700, -1, -1}, "UBIGINT": {1700, -1, -1},
		"DECIMAL(18,3)": {1700, -1, 18<<16 | 3 + 4}, "FLOAT": {700, 4, -1}, "DOUBLE": {701, 8, -1},
		"VARCHAR": {25, -1, -1}, "DATE": {1082, 4, -1}, "TIME": {1083, 8, -1},
		"TIMESTAMP": {1114, 8, -1}, "TIMESTAMP_NS": {1114, 8, -1}, "TIMESTAMP_MS": {1114, 8, -1},
		"TIMESTAMP_S": {1114, 8, -1}, "TIMESTAMPTZ": {1184, 8, -1}, "TIMESTAMP WITH TIME ZONE": {1184, 8, -1},
		"INTERVAL": {1186, 16, -1}, "BLOB": {17, -1, -1}, "UUID": {2950, 16, -1},
		"INTEGER[]": {25, -1, -1}, `STRUCT("a" INTEGER)`: {25, -1, -1}, "MAP(VARCHAR, INTEGER)": {25, -1, -1},
		"ENUM": {25, -1, -1}, "JSON": {25, -1, -1}, "TIMETZ": {25, -1, -1}, "": {25, -1, -1},
	} {
		if got := typeFor(duck); got != want {
			t.Errorf("typeFor(%q) = %+v, want %+v", duck, got, want)
		}
	}
}

func TestAppendText(t *testing.T) {
	ts := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04:05.999999999", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		oid  uint32
		v    any
		want string
	}{
		{oidTimestamp, ts("2023-11-14 22:13:20.123456789"), "2023-11-14 22:13:20.123456789"},
		{oidTimestamp, ts("2023-11-14 22:13:20.12345679"), "2023-11-14 22:13:20.12345679"},
		{oidTimestamp, ts("2023-11-14 22:13:20.000000001"), "2023-11-14 22:13:20.000000001"},
		{oidTimestamp, ts("2023-11-14 22:13:20.5"), "2023-11-14 22:13:20.5"},
		{oidTimestamp, ts("2023-11-14 22:13:20"), "2023-11-14 22:13:20"},
		{oidTimestamp, time.Unix(0, -1).UTC(), "1969-12-31 23:59:59.999999999"},
		{oidTimestamp, time.Date(-43, 3, 15, 12, 0, 0, 0, time.UTC), "0044-03-15 12:00:00 BC"},
		{oidTimestampTZ, time.Date(2020, 1, 1, 5, 0, 0, 1000, time.FixedZone("x", 3600)), "2020-01-01 04:00:00.000001+00"},
		{oidDate, time.Date(2020, 2, 29, 0, 0, 0, 0, time.UTC), "2020-02-29"},
		{oidTime, time.Date(1, 1, 1, 1, 2, 3, 500000000, time.UTC), "01:02:03.5"},
		{oidInterval, duckdb.Interval{Months: 14, Days: 3, Micros: 14706789000}, "1 year 2 mons 3 days 04:05:06.789"},
		{oidInterval, duckdb.Interval{Days: -1, Micros: 7200000000}, "-1 days +02:00:00"},
		{oidInterval, duckdb.Interval{Micros: -10800000000}, "-03:00:00"},
		{oidInterval, duckdb.Interval{}, "00:00:00"},
		{oidInterval, duckdb.Interval{Months: 1, Days: 1}, "1 mon 1 day"},
		{oidBool, true, "t"}, {oidBool, false, "f"},
		{oidInt2, int8(-7), "-7"}, {oidInt4, uint16(65535), "65535"}, {oidInt8, uint32(4294967295), "4294967295"},
		{oidFloat8, 1e15, "1e+15"}, {oidFloat8, 123456789012345.0, "123456789012345"}, {oidFloat8, 0.0001, "0.0001"},
		{oidFloat8, 0.00001, "1e-05"}, {oidFloat8, 0.1, "0.1"}, {oidFloat8, math.Inf(-1), "-Infinity"},
		{oidFloat8, math.NaN(), "NaN"}, {oidFloat4, float32(0.1), "0.1"}, {oidFloat4, float32(1e6), "1e+06"},
		{oidFloat4, float32(123456), "123456"},
		{oidNumeric, duckdb.Decimal{Width: 5, Scale: 2, Value: big.NewInt(150)}, "1.50"},
		{oidNumeric, duckdb.Decimal{Width: 5, Scale: 3, Value: big.NewInt(-5)}, "-0.005"},
		{oidNumeric, uint64(math.MaxUint64), "18446744073709551615"},
		{oidBytea, []byte{0xab, 0}, `\xab00`},
		{oidUUID, []byte{0x3d, 0x8c, 0xcd, 0x0c, 0xef, 0x4a, 0x4c, 0x39, 0xb5, 0xe8, 0x1c, 0x43, 0xf7, 0xa7, 0xc4, 0xf5}, "3d8ccd0c-ef4a-4c39-b5e8-1c43f7a7c4f5"},
		{oidInt4, "42", "42"}, // a value of another type than described: converted
	} {
		got, err := appendText(nil, tc.oid, nil, tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("appendText(%s, %#v) = %q, %v; want %q", typeName(tc.oid), tc.v, got, err, tc.want)
		}
	}
	if _, err := appendText(nil, oidInt4, nil, "x"); err == nil {
		t.Error("appendText(integer, \"x\") did not fail")
	}
}

func TestAppendBinary(t *testing.T) {
	for _, tc := range []struct {
		oid  uint32
		v    any
		want string // hex
	}{
		// 2000-01-01 00:00:00.000001999: microseconds, cut.
		{oidTimestamp, time.Date(2000, 1, 1, 0, 0, 0, 1999, time.UTC), "0000000000000001"},
		// One nanosecond before 2000: cut toward minus infinity, -1µs.
		{oidTimestamp, time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC), "ffffffffffffffff"},
		{oidTimestampTZ, time.Date(2000, 1, 1, 1, 0, 0, 0, time.FixedZone("x", 3600)), "0000000000000000"},
		{oidDate, time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), "ffffffff"},
		{oidTime, time.Date(1, 1, 1, 0, 0, 1, 500000, time.UTC), "00000000000f4434"},
		{oidInt2, int8(-2), "fffe"}, {oidInt4, int32(1), "00000001"}, {oidInt8, uint32(1), "0000000000000001"},
		{oidFloat8, 1.0, "3ff0000000000000"}, {oidFloat4, float32(1), "3f800000"}, {oidBool, true, "01"},
		{oidInterval, duckdb.Interval{Micros: 1, Days: 2, Months: 3}, "00000000000000010000000200000003"},
		// 12345.678: ndigits 3, weight 1, positive, dscale 3; 1 2345 6780.
		{oidNumeric, duckdb.Decimal{Width: 18, Scale: 3, Value: big.NewInt(12345678)}, "000300010000000300010929" + "1a7c"},
		// -0.005: ndigits 1, weight -1, negative, dscale 3; 50.
		{oidNumeric, duckdb.Decimal{Width: 5, Scale: 3, Value: big.NewInt(-5)}, "0001ffff40000003" + "0032"},
		{oidNumeric, duckdb.Decimal{Width: 5, Scale: 2, Value: big.NewInt(0)}, "0000000000000002"},
		{oidNumeric, uint64(100000000), "0001000200000000" + "0001"},
		{oidText, []any{int32(1), nil}, hex.EncodeToString([]byte("[1, NULL]"))},
	} {
		got, err := appendBinary(nil, tc.oid, nil, tc.v)
		if err != nil || hex.EncodeToString(got) != tc.want {
			t.Errorf("appendBinary(%s, %#v) = %x, %v; want %s", typeName(tc.oid), tc.v, got, err, tc.want)
		}
	}
	if _, err := appendBinary(nil, oidInt2, nil, int32(40000)); err == nil {
		t.Error("appendBinary(smallint, 40000) did not fail")
	}
}

// TestNumericRoundTrip encodes numbers in binary and decodes them back.
func TestNumericRoundTrip(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "10000", "9999.9999", "0.0001", "123456789012345678901234567890.12345",
		"-0.000000001", "100000000", "1.50", "0.00", "NaN"} {
		b, err := appendNumeric(nil, s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		got, ok := numericFromBinary(b)
		if !ok || got != s {
			t.Errorf("%s -> %x -> %q, %v", s, b, got, ok)
		}
	}
}

// TestDuckStrings prints nested values as DuckDB's own VARCHAR cast does,
// checked against DuckDB.
func TestDuckStrings(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, expr := range []string{
		"[1, 2, NULL]",
		"['a,b', 'x y', '', 'it''s', '[q]', ' lead', 'a=b', 'c:d', '{e}', 'plain']",
		"{'k y': 'v,w', 'n': NULL, 'f': 2.0::DOUBLE, 'b': true, 'ts': TIMESTAMP_NS '2023-11-14 22:13:20.123456789', 'd': DATE '2020-01-02', 'dec': 1.50::DECIMAL(5,2), 'fl': 1.5::FLOAT, 'big': 1e20::DOUBLE, 'i': INTERVAL 3 DAY, 'u': '3d8ccd0c-ef4a-4c39-b5e8-1c43f7a7c4f5'::UUID}",
		"MAP {'a b': [1, 2], 'c': []}",
		"[MAP {1: 'x'}]",
		"{'z': {'b': [1]}, 'a': 2}",
		"[1.5, 2]::DOUBLE[2]",
		"[[]]",
		"[{'x': 'y'}, NULL]",
		"'x'::ENUM('x', 'y')",
		"[INTERVAL '1 year 2 months 3 days 04:05:06.789']",
	} {
		var v any
		var want string
		var typ string
		rows, err := db.Query("SELECT " + expr + ", (" + expr + ")::VARCHAR")
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		cts, _ := rows.ColumnTypes()
		typ = cts[0].DatabaseTypeName()
		if !rows.Next() {
			t.Fatalf("%s: no row: %v", expr, rows.Err())
		}
		if err := rows.Scan(&v, &want); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		got, err := appendText(nil, typeFor(typ).oid, parseShape(typ), v)
		if err != nil || string(got) != want {
			t.Errorf("%s (%s):\n got %s, %v\nwant %s", expr, typ, got, err, want)
		}
	}
}

func TestParseShape(t *testing.T) {
	sh := parseShape(`STRUCT("b ""q""" INTEGER, a VARCHAR[], "m" MAP(VARCHAR, DECIMAL(18,3)))[]`)
	if sh.kind != 'l' || sh.elems[0].kind != 's' {
		t.Fatalf("shape %+v", sh)
	}
	st := sh.elems[0]
	if len(st.fields) != 3 || st.fields[0] != `b "q"` || st.fields[1] != "a" || st.fields[2] != "m" {
		t.Errorf("fields %q", st.fields)
	}
	if st.elems[1].kind != 'l' || st.elems[2].kind != 'm' || st.elems[2].elems[1].name != "DECIMAL(18,3)" {
		t.Errorf("children %+v %+v", st.elems[1], st.elems[2])
	}
}
