package query

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
)

// The reference encoders: what the fast paths of appendFloat, timeCache
// and nsCache must print, written the plain way (strconv's shortest
// form, package time) as the encoder did before it had them.

// refFloat is strconv's shortest form that parses back to v: plain
// decimal in [1e-6, 1e21), exponent form outside (zero, NaN and the
// infinities included).
func refFloat(v float64) string {
	if a := math.Abs(v); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// refRFC3339 is ts as rfc3339Fixed through package time.
func refRFC3339(ts int64) string { return time.Unix(0, ts).UTC().Format(rfc3339Fixed) }

// refTs is ts as an Encoder of TsFormat tsf prints it, unquoted.
func refTs(ts int64, tsf TsFormat) string {
	if tsf == TsNs {
		return strconv.FormatInt(ts, 10)
	}
	return refRFC3339(ts)
}

// randFloat draws the values a float encoder can meet: cent prices and
// other short decimals (the fast path's), every bit pattern (NaN,
// infinities, subnormals), values at the edges of the plain and the
// decimal ranges, and both signs.
func randFloat(rng *rand.Rand) float64 {
	var v float64
	switch rng.IntN(8) {
	case 0:
		v = math.Float64frombits(rng.Uint64())
	case 1:
		v = float64(rng.Int64N(1e9)) / 100 // cents
	case 2: // a decimal of up to 17 digits, k of them after the point
		k := rng.IntN(12)
		v = float64(rng.Int64N(1e17)>>rng.IntN(57)) / math.Pow10(k)
	case 3:
		v = rng.Float64() * math.Pow10(rng.IntN(30)-9)
	case 4:
		v = edgeFloats[rng.IntN(len(edgeFloats))]
	case 5: // next to an edge
		e := edgeFloats[rng.IntN(len(edgeFloats))]
		v = math.Nextafter(e, math.Inf(1-2*rng.IntN(2)))
	case 6:
		v = float64(rng.Int64N(1<<54) - 1<<53)
	default:
		v = float64(rng.IntN(20000)) / 10000 * math.Pow10(rng.IntN(16)-8)
	}
	if rng.IntN(2) == 0 {
		v = -v
	}
	return v
}

// edgeFloats are values at the edges of appendFloat's forms and fast path.
var edgeFloats = []float64{
	0, 1e-6, 1e-7, 9.99999e-7, 1e-5, 0.1, 0.3, 0.1 + 0.2, 1, 1.5, 99.99, 100, 187.23,
	1e7, 9999999.99999999, 9999999.999999999, 1e7 + 0.5, 123456789.12345678,
	1e15, 999999999999999, 1e16, 1 << 53, 1<<53 + 2, 1e20, 1e21, 1e22,
	math.MaxFloat64, math.SmallestNonzeroFloat64, 0x1p-1022, math.NaN(), math.Inf(1),
	1.0000000000000002, 0.30000000000000004, 5e-324, 2.5e-6, 1.00000001, 0.00000001,
}

// randTs draws timestamps: anywhere in int64 (1677 to 2262), near the
// epoch on both sides, before 1970 with every nanosecond digit set, and
// runs within one second (the caches' common case).
func randTs(rng *rand.Rand) int64 {
	switch rng.IntN(6) {
	case 0:
		return int64(rng.Uint64())
	case 1:
		return rng.Int64N(4e9) - 2e9
	case 2:
		return -rng.Int64N(1e18) - 123_456_789
	case 3:
		return []int64{0, -1, 1, 1e9 - 1, 1e9, -1e9, -1e9 + 1, -1e9 - 1, math.MinInt64, math.MaxInt64,
			-999_999_999, 999_999_999, 1_700_000_000_123_456_789, -1_234_567_891}[rng.IntN(14)]
	default:
		return 1_700_000_000e9 + rng.Int64N(3e9)
	}
}

// manyValues is how many random values a test of one value encoder
// draws: fewer under the race detector or -short.
func manyValues() int {
	if testutil.Race || testing.Short() {
		return 100_000
	}
	return 2_000_000
}

func TestAppendFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(v float64) {
		t.Helper()
		want := refFloat(v)
		if got := string(appendFloat([]byte("x,"), v)); got != "x,"+want {
			t.Fatalf("appendFloat(%b = %v): %q, want %q", v, v, got, "x,"+want)
		}
	}
	for _, v := range edgeFloats {
		check(v)
		check(-v)
	}
	for range manyValues() {
		check(randFloat(rng))
	}
}

func TestAppendTs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var rc timeCache
	var nc nsCache
	var prev int64
	for i := range manyValues() {
		ts := randTs(rng)
		if i%3 == 0 { // the same second again, either side of it
			ts = prev + rng.Int64N(2e9) - 1e9
		}
		prev = ts
		if got, want := string(rc.append([]byte("x,"), ts)), "x,"+refRFC3339(ts); got != want {
			t.Fatalf("rfc3339 of %d: %q, want %q", ts, got, want)
		}
		if got, want := string(nc.append([]byte("x,"), ts)), "x,"+strconv.FormatInt(ts, 10); got != want {
			t.Fatalf("ns of %d: %q, want %q", ts, got, want)
		}
	}
}

// randName draws a symbol name: letters, and the bytes the formats
// quote or escape (comma, quote, blanks at either end, line breaks,
// backslash, control characters, U+2028, invalid UTF-8), or empty.
func randName(rng *rand.Rand) string {
	parts := []string{"A", "B", "Z", ",", `"`, " ", "\t", "\n", "\r", `\`, "=", "é", "\u2028", "\xff", "\x01", "\x7f", "{", "}"}
	var b strings.Builder
	for range rng.IntN(8) {
		if rng.IntN(3) == 0 {
			b.WriteString(parts[rng.IntN(len(parts))])
		} else {
			b.WriteByte(byte('A' + rng.IntN(26)))
		}
	}
	return b.String()
}

// refRow is one row as csv or json prints it, from the reference
// encoders. Symbol names go through appendCSV and appendJSONString,
// which the fast paths did not change (TestEscapes and the golden
// outputs pin them).
func refRow(f Format, tsf TsFormat, cols []Column, v []uint64, null []bool, names []string) string {
	var b []byte
	for i, c := range cols {
		missing := null != nil && null[i]
		if f == FormatJSON {
			if i == 0 {
				b = append(b, '{')
			} else {
				b = append(b, ',')
			}
			b = appendJSONString(b, c.Name)
			b = append(b, ':')
		} else if i > 0 {
			b = append(b, ',')
		}
		if missing {
			if f == FormatJSON {
				b = append(b, "null"...)
			}
			continue
		}
		switch c.Type {
		case store.TypeTs:
			s := refTs(int64(v[i]), tsf)
			if f == FormatJSON && tsf == TsRFC3339 {
				s = `"` + s + `"`
			}
			b = append(b, s...)
		case store.TypeSym:
			name := ""
			if uint32(v[i]) != store.NoSym {
				name = names[v[i]]
			}
			if f == FormatJSON {
				b = appendJSONString(b, name)
			} else {
				b = appendCSV(b, name)
			}
		case store.TypeF64:
			x := math.Float64frombits(v[i])
			switch {
			case math.IsNaN(x) && f == FormatCSV:
			case (math.IsNaN(x) || math.IsInf(x, 0)) && f == FormatJSON:
				b = append(b, "null"...)
			default:
				b = append(b, refFloat(x)...)
			}
		case store.TypeI64:
			b = strconv.AppendInt(b, int64(v[i]), 10)
		case store.TypeBool:
			b = strconv.AppendBool(b, v[i] != 0)
		}
	}
	if f == FormatJSON {
		b = append(b, '}')
	}
	return string(append(b, '\n'))
}

// The encoder prints random rows, table rows (Row) and computed rows
// with missing values (Values), exactly as the reference encoders do, in
// csv and json and both ts formats; the csv parses back to as many
// fields, the json lines are valid JSON.
func TestEncoderMatchesReference(t *testing.T) {
	cols := []Column{
		{Name: "ts", Type: store.TypeTs},
		{Name: "sym", Type: store.TypeSym},
		{Name: "price", Type: store.TypeF64},
		{Name: "size", Type: store.TypeI64},
		{Name: "hot", Type: store.TypeBool},
		{Name: "venue", Type: store.TypeSym},
		{Name: "q_ts", Type: store.TypeTs}, // computed rows only: a table has one ts
		{Name: "bid", Type: store.TypeF64},
	}
	schemaCols := make([]store.Column, 0, len(cols))
	for _, c := range cols {
		if c.Name != "q_ts" {
			schemaCols = append(schemaCols, store.Column{Name: c.Name, Type: c.Type})
		}
	}
	s := store.MustSchema(schemaCols...)
	rng := rand.New(rand.NewPCG(5, 6))
	names := make([]string, 50)
	for i := range names {
		names[i] = randName(rng)
	}
	names[0] = "AAPL"
	symName := func(id uint32) (string, error) { return names[id], nil }
	const n = 20_000
	rows := make([][]uint64, n)
	nulls := make([][]bool, n)
	for i := range rows {
		v := make([]uint64, len(cols))
		null := make([]bool, len(cols))
		for j, c := range cols {
			switch c.Type {
			case store.TypeTs:
				v[j] = uint64(randTs(rng))
				if j == 0 && i > 0 && rng.IntN(2) == 0 { // ticks: the same second as the row before
					v[j] = rows[i-1][0] + uint64(rng.Int64N(1e6))
				}
			case store.TypeSym:
				v[j] = uint64(rng.IntN(len(names)))
				if rng.IntN(50) == 0 {
					v[j] = uint64(store.NoSym)
				}
			case store.TypeF64:
				v[j] = math.Float64bits(randFloat(rng))
			case store.TypeI64:
				v[j] = rng.Uint64() >> rng.IntN(64)
			case store.TypeBool:
				v[j] = uint64(rng.IntN(2))
			}
			null[j] = j > 0 && rng.IntN(10) == 0
		}
		rows[i], nulls[i] = v, null
	}
	for _, f := range []Format{FormatCSV, FormatJSON} {
		for _, tsf := range []TsFormat{TsRFC3339, TsNs} {
			t.Run(f.String()+"/"+tsf.String(), func(t *testing.T) {
				// Table rows: every column of the schema, none missing.
				var got bytes.Buffer
				enc := NewEncoder(&got, f, tsf, s, "ticks", symName)
				var want strings.Builder
				if f == FormatCSV {
					want.WriteString("ts,sym,price,size,hot,venue,bid\n")
				}
				row := s.NewRow()
				for i, v := range rows {
					var sv []uint64
					var sc []Column
					for j, c := range cols {
						if c.Name == "q_ts" {
							continue
						}
						sv, sc = append(sv, v[j]), append(sc, c)
						col := s.ColAt(len(sv) - 1)
						switch c.Type {
						case store.TypeTs:
							row.SetTs(int64(v[j]))
						case store.TypeSym:
							row.SetSym(col, uint32(v[j]))
						case store.TypeBool:
							row.SetBool(col, v[j] != 0)
						default:
							row.SetI64(col, int64(v[j]))
						}
					}
					if err := enc.Row(row); err != nil {
						t.Fatalf("row %d: %v", i, err)
					}
					want.WriteString(refRow(f, tsf, sc, sv, nil, names))
				}
				if err := enc.Close(); err != nil {
					t.Fatal(err)
				}
				compareLines(t, "Row", got.String(), want.String())
				parses(t, f, got.String(), len(cols)-1)

				// Computed rows: a second ts column and missing values.
				got.Reset()
				venc, err := NewValuesEncoder(&got, f, tsf, cols, "ticks", symName)
				if err != nil {
					t.Fatal(err)
				}
				want.Reset()
				if f == FormatCSV {
					want.WriteString("ts,sym,price,size,hot,venue,q_ts,bid\n")
				}
				for i := range rows {
					if err := venc.Values(rows[i], nulls[i]); err != nil {
						t.Fatalf("row %d: %v", i, err)
					}
					want.WriteString(refRow(f, tsf, cols, rows[i], nulls[i], names))
				}
				if err := venc.Close(); err != nil {
					t.Fatal(err)
				}
				compareLines(t, "Values", got.String(), want.String())
				parses(t, f, got.String(), len(cols))
			})
		}
	}
}

// compareLines fails at the first line where got and want differ.
func compareLines(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Fatalf("%s: line %d:\n got %q\nwant %q", what, i+1, g[i], w[i])
		}
	}
	t.Fatalf("%s: %d lines, want %d", what, len(g), len(w))
}

// parses checks that csv output reads back as records of ncols fields
// and that every json line is valid JSON.
func parses(t *testing.T, f Format, out string, ncols int) {
	t.Helper()
	if f == FormatCSV {
		r := csv.NewReader(strings.NewReader(out))
		r.FieldsPerRecord = ncols
		if _, err := r.ReadAll(); err != nil {
			t.Fatalf("csv: %v", err)
		}
		return
	}
	for line := range strings.Lines(out) {
		if !json.Valid([]byte(line)) {
			t.Fatalf("json: invalid line %q", line)
		}
	}
}

// put8 writes every value below 10^8 as its eight digits, and putUint
// as strconv does.
func TestPutDigits(t *testing.T) {
	var b, want [8]byte
	var ref []byte
	step := uint32(1)
	if testutil.Race || testing.Short() {
		step = 11 // every last digit still, a tenth of the time
	}
	for v := uint32(0); v < 1e8; v += step {
		put8(b[:], v)
		for i, x := 7, v; i >= 0; i, x = i-1, x/10 {
			want[i] = byte('0' + x%10)
		}
		if b != want {
			t.Fatalf("put8(%d): %q, want %q", v, b[:], want[:])
		}
		if v%97 == 0 || v < 1e5 {
			ref = strconv.AppendUint(ref[:0], uint64(v), 10)
			if got := b[:putUint(b[:], v)]; !bytes.Equal(got, ref) {
				t.Fatalf("putUint(%d): %q, want %q", v, got, ref)
			}
		}
	}
}
