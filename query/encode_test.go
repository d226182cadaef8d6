package query_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/store"
)

// The exact output of every format for the golden table (see goldenTable).
var golden = []struct {
	f    query.Format
	tsf  query.TsFormat
	want string
}{
	{query.FormatCSV, query.TsRFC3339, `ts,sym,price,size,hot,venue
2023-11-14T22:13:20.000000000Z,AAPL,1.5,100,true,XNAS
2023-11-14T22:13:20.000001500Z,"A,B ""C""",,-7,false,X N=A
2023-11-14T22:13:22.000000000Z,MSFT,1234567.25,0,true,back\slash
2023-11-14T22:13:22.000000000Z,AAPL,1e-07,9223372036854775807,false,XNAS
`},
	{query.FormatCSV, query.TsNs, `ts,sym,price,size,hot,venue
1700000000000000000,AAPL,1.5,100,true,XNAS
1700000000000001500,"A,B ""C""",,-7,false,X N=A
1700000002000000000,MSFT,1234567.25,0,true,back\slash
1700000002000000000,AAPL,1e-07,9223372036854775807,false,XNAS
`},
	{query.FormatJSON, query.TsRFC3339, `{"ts":"2023-11-14T22:13:20.000000000Z","sym":"AAPL","price":1.5,"size":100,"hot":true,"venue":"XNAS"}
{"ts":"2023-11-14T22:13:20.000001500Z","sym":"A,B \"C\"","price":null,"size":-7,"hot":false,"venue":"X N=A"}
{"ts":"2023-11-14T22:13:22.000000000Z","sym":"MSFT","price":1234567.25,"size":0,"hot":true,"venue":"back\\slash"}
{"ts":"2023-11-14T22:13:22.000000000Z","sym":"AAPL","price":1e-07,"size":9223372036854775807,"hot":false,"venue":"XNAS"}
`},
	{query.FormatJSON, query.TsNs, `{"ts":1700000000000000000,"sym":"AAPL","price":1.5,"size":100,"hot":true,"venue":"XNAS"}
{"ts":1700000000000001500,"sym":"A,B \"C\"","price":null,"size":-7,"hot":false,"venue":"X N=A"}
{"ts":1700000002000000000,"sym":"MSFT","price":1234567.25,"size":0,"hot":true,"venue":"back\\slash"}
{"ts":1700000002000000000,"sym":"AAPL","price":1e-07,"size":9223372036854775807,"hot":false,"venue":"XNAS"}
`},
	{query.FormatILP, query.TsRFC3339, ilpGolden},
	{query.FormatILP, query.TsNs, ilpGolden},
	{query.FormatTable, query.TsRFC3339, `ts                              sym                    price          size  hot    venue
2023-11-14T22:13:20.000000000Z  AAPL                     1.5           100  true   XNAS
2023-11-14T22:13:20.000001500Z  A,B "C"                  NaN            -7  false  X N=A
2023-11-14T22:13:22.000000000Z  MSFT              1234567.25             0  true   back\slash
2023-11-14T22:13:22.000000000Z  AAPL                   1e-07  9223372036854775807  false  XNAS
`},
	{query.FormatTable, query.TsNs, `                 ts  sym                    price          size  hot    venue
1700000000000000000  AAPL                     1.5           100  true   XNAS
1700000000000001500  A,B "C"                  NaN            -7  false  X N=A
1700000002000000000  MSFT              1234567.25             0  true   back\slash
1700000002000000000  AAPL                   1e-07  9223372036854775807  false  XNAS
`},
}

// ilp ignores --ts: the timestamp is always ns.
const ilpGolden = `ticks,sym=AAPL,venue=XNAS price=1.5,size=100i,hot=t 1700000000000000000
ticks,sym=A\,B\ "C",venue=X\ N\=A size=-7i,hot=f 1700000000000001500
ticks,sym=MSFT,venue=back\\slash price=1234567.25,size=0i,hot=t 1700000002000000000
ticks,sym=AAPL,venue=XNAS price=1e-07,size=9223372036854775807i,hot=f 1700000002000000000
`

func TestGolden(t *testing.T) {
	tb := goldenTable(t)
	for _, closed := range []bool{false, true} {
		name := "writer_open"
		if closed {
			tb.close(t)
			name = "writer_closed"
		}
		t.Run(name, func(t *testing.T) {
			r := tb.reader(t)
			for _, g := range golden {
				t.Run(g.f.String()+"/"+g.tsf.String(), func(t *testing.T) {
					got, n := run(t, r, query.Query{}, g.f, g.tsf)
					if n != 4 {
						t.Errorf("Run returned %d rows, want 4", n)
					}
					if got != g.want {
						t.Errorf("output:\n%s\nwant:\n%s", got, g.want)
					}
				})
			}
		})
	}
}

// The csv output parses with a standard reader back to the values,
// quoting included.
func TestCSVParses(t *testing.T) {
	recs, err := csv.NewReader(strings.NewReader(golden[0].want)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || len(recs[0]) != 6 {
		t.Fatalf("%d records of %d fields", len(recs), len(recs[0]))
	}
	if got := recs[2][1]; got != `A,B "C"` {
		t.Errorf("quoted symbol reads back as %q", got)
	}
	if got := recs[2][2]; got != "" {
		t.Errorf("NaN reads back as %q, want an empty field", got)
	}
}

// The json output is one valid JSON object per line with the values.
func TestJSONParses(t *testing.T) {
	for _, g := range golden[2:4] {
		rows, err := decodeNDJSON(g.want)
		if err != nil {
			t.Fatalf("%v: %v", g.tsf, err)
		}
		if len(rows) != 4 || rows[1]["sym"] != `A,B "C"` || rows[1]["price"] != nil || rows[2]["venue"] != `back\slash` {
			t.Errorf("%v: decoded %v", g.tsf, rows)
		}
	}
}

// ilpLine is one line-protocol line decoded by a small parser written
// from the protocol's description, independent of the encoder.
type ilpLine struct {
	meas   string
	tags   map[string]string
	fields map[string]string
	ts     string
}

// splitUnescaped splits s at every sep not preceded by an escaping
// backslash, leaving the escapes in place.
func splitUnescaped(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unescape drops each escaping backslash; \n and \r are LF and CR.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			c = s[i]
			switch c {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

func parseILP(t *testing.T, line string) ilpLine {
	t.Helper()
	parts := splitUnescaped(line, ' ')
	var l ilpLine
	switch len(parts) {
	case 3:
		l.fields = map[string]string{}
		for _, kv := range splitUnescaped(parts[1], ',') {
			p := splitUnescaped(kv, '=')
			if len(p) != 2 {
				t.Fatalf("line %q: field %q", line, kv)
			}
			l.fields[unescape(p[0])] = p[1]
		}
		l.ts = parts[2]
	case 2: // no field
		l.ts = parts[1]
	default:
		t.Fatalf("line %q has %d space-separated parts", line, len(parts))
	}
	head := splitUnescaped(parts[0], ',')
	l.meas, l.tags = unescape(head[0]), map[string]string{}
	for _, kv := range head[1:] {
		p := splitUnescaped(kv, '=')
		if len(p) != 2 {
			t.Fatalf("line %q: tag %q", line, kv)
		}
		l.tags[unescape(p[0])] = unescape(p[1])
	}
	return l
}

func TestILPParses(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(ilpGolden, "\n"), "\n")
	want := []struct {
		sym, venue string
		fields     map[string]string
	}{
		{"AAPL", "XNAS", map[string]string{"price": "1.5", "size": "100i", "hot": "t"}},
		{`A,B "C"`, "X N=A", map[string]string{"size": "-7i", "hot": "f"}},
		{"MSFT", `back\slash`, map[string]string{"price": "1234567.25", "size": "0i", "hot": "t"}},
		{"AAPL", "XNAS", map[string]string{"price": "1e-07", "size": "9223372036854775807i", "hot": "f"}},
	}
	for i, line := range lines {
		l := parseILP(t, line)
		w := want[i]
		if l.meas != "ticks" || len(l.tags) != 2 || l.tags["sym"] != w.sym || l.tags["venue"] != w.venue {
			t.Errorf("line %d: measurement %q tags %q", i, l.meas, l.tags)
		}
		if len(l.fields) != len(w.fields) {
			t.Errorf("line %d: fields %q, want %q", i, l.fields, w.fields)
		}
		for k, v := range w.fields {
			if l.fields[k] != v {
				t.Errorf("line %d: field %s = %q, want %q", i, k, l.fields[k], v)
			}
		}
	}
}

// A row whose fields are all missing gets its first f64 column as NaN,
// since a line needs a field (tickdb rejects tags alone); an empty symbol
// gets no tag; escapes in the measurement and keys.
func TestILPMissing(t *testing.T) {
	s := store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "bid px", Type: store.TypeF64},
		store.Column{Name: "a=b,c", Type: store.TypeF64},
	)
	tb := newTable(t, s)
	tb.add(t, 5, "X", math.NaN(), math.NaN())
	tb.add(t, 6, "", math.Inf(1), 2.0)
	tb.add(t, 7, "", math.NaN(), math.NaN())
	tb.publish()
	r := tb.reader(t)
	var buf bytes.Buffer
	enc := query.NewEncoder(&buf, query.FormatILP, query.TsRFC3339, s, "my table,x", r.SymbolName)
	if _, err := query.Run(context.Background(), r, query.Query{}, enc); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	want := `my\ table\,x,sym=X bid\ px=NaN 5
my\ table\,x a\=b\,c=2 6
my\ table\,x bid\ px=NaN 7
`
	if buf.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", buf.String(), want)
	}
	l := parseILP(t, strings.Split(want, "\n")[1])
	if l.meas != "my table,x" || l.fields["a=b,c"] != "2" {
		t.Errorf("parsed %+v", l)
	}
}

// A table of sym columns alone (one made from tags and string fields):
// each row's last sym column is a string field, so that the line has one;
// an empty symbol there is an empty string.
func TestILPSymbolsOnly(t *testing.T) {
	s := store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "note", Type: store.TypeSym},
	)
	tb := newTable(t, s)
	tb.add(t, 10, "A", "halted")
	tb.add(t, 11, "B", "")
	tb.add(t, 12, "", `say "hi"`+"\n")
	tb.publish()
	got, n := run(t, tb.reader(t), query.Query{}, query.FormatILP, query.TsNs)
	want := `ticks,sym=A note="halted" 10
ticks,sym=B note="" 11
ticks note="say \"hi\"\n" 12
`
	if n != 3 || got != want {
		t.Errorf("%d rows:\n%s\nwant:\n%s", n, got, want)
	}
}

// A symbol with a line break is written with it as \n (or \r), which
// tickdb's parser reads back as the break and InfluxDB accepts.
func TestILPLineBreak(t *testing.T) {
	tb := newTable(t, store.TickSchema())
	tb.add(t, 1, "OK", 1.0, 1)
	tb.add(t, 2, "A\nB\r", 1.0, 1)
	tb.publish()
	r := tb.reader(t)
	var buf bytes.Buffer
	enc := query.NewEncoder(&buf, query.FormatILP, query.TsNs, r.Schema(), "ticks", r.SymbolName)
	n, err := query.Run(context.Background(), r, query.Query{}, enc)
	if err != nil || n != 2 {
		t.Fatalf("Run = %d, %v; want 2 rows", n, err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "ticks,sym=OK price=1,size=1i 1\nticks,sym=A\\nB\\r price=1,size=1i 2\n"; buf.String() != want {
		t.Errorf("output %q, want %q", buf.String(), want)
	}
	if l := parseILP(t, strings.Split(buf.String(), "\n")[1]); l.tags["sym"] != "A\nB\r" {
		t.Errorf("parsed back sym %q", l.tags["sym"])
	}
}

// JSON escapes control characters, invalid UTF-8 and U+2028; the table
// format quotes them.
func TestEscapes(t *testing.T) {
	tb := newTable(t, store.TickSchema())
	tb.add(t, 1, "a\tb\x01\xff\u2028é", math.Inf(-1), 1)
	tb.publish()
	r := tb.reader(t)
	got, _ := run(t, r, query.Query{}, query.FormatJSON, query.TsNs)
	want := `{"ts":1,"sym":"a\tb\u0001\ufffd\u2028é","price":null,"size":1}` + "\n"
	if got != want {
		t.Errorf("json %q, want %q", got, want)
	}
	var v any
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Error(err)
	}
	got, _ = run(t, r, query.Query{}, query.FormatTable, query.TsNs)
	if line := strings.Split(got, "\n")[1]; !strings.Contains(line, `"a\tb\x01\xff\u2028é"`) || !strings.Contains(line, "-Inf") {
		t.Errorf("table line %q", line)
	}
	got, _ = run(t, r, query.Query{}, query.FormatCSV, query.TsNs)
	if want := "ts,sym,price,size\n1,a\tb\x01\xff\u2028é,-Inf,1\n"; got != want {
		t.Errorf("csv %q, want %q", got, want)
	}
}

// Zero rows still make a well-formed document: the csv header, the
// table's header line, no json or ilp at all.
func TestEmptyOutput(t *testing.T) {
	tb := goldenTable(t)
	r := tb.reader(t)
	want := map[query.Format]string{
		query.FormatCSV:   "ts,sym,price,size,hot,venue\n",
		query.FormatJSON:  "",
		query.FormatILP:   "",
		query.FormatTable: "ts                              sym                    price          size  hot    venue\n",
	}
	for f, w := range want {
		got, n := run(t, r, query.Query{Sym: "NOPE"}, f, query.TsRFC3339)
		if n != 0 || got != w {
			t.Errorf("%v: %d rows, %q; want %q", f, n, got, w)
		}
	}
	// Flushed before any row (tail), then closed: csv has its header
	// out at the Flush, json nothing at all.
	var buf bytes.Buffer
	enc := query.NewEncoder(&buf, query.FormatCSV, query.TsNs, r.Schema(), "ticks", r.SymbolName)
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "ts,sym,price,size,hot,venue\n"; buf.String() != want || enc.Written() != int64(len(want)) {
		t.Errorf("after Flush: %q, Written %d", buf.String(), enc.Written())
	}
	buf.Reset()
	enc = query.NewEncoder(&buf, query.FormatJSON, query.TsNs, r.Schema(), "ticks", r.SymbolName)
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "" || enc.Written() != 0 {
		t.Errorf("json after Flush and Close: %q", buf.String())
	}
	if err := enc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	row := r.Schema().NewRow()
	if err := enc.Row(row); err == nil {
		t.Error("Row after Close: no error")
	}
}

// Nothing reaches the writer before Flush, Close or 32 KiB.
func TestBuffering(t *testing.T) {
	tb := goldenTable(t)
	r := tb.reader(t)
	var buf bytes.Buffer
	enc := query.NewEncoder(&buf, query.FormatCSV, query.TsNs, r.Schema(), "ticks", r.SymbolName)
	row, err := r.Get(0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := enc.Row(row); err != nil {
			t.Fatal(err)
		}
	}
	if buf.Len() != 0 || enc.Written() != 0 {
		t.Fatalf("%d bytes written before any flush", buf.Len())
	}
	for i := 0; i < 1000; i++ {
		if err := enc.Row(row); err != nil {
			t.Fatal(err)
		}
	}
	if buf.Len() < 32<<10 || int64(buf.Len()) != enc.Written() {
		t.Fatalf("%d bytes written (Written %d) after 1100 rows", buf.Len(), enc.Written())
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 1101 {
		t.Errorf("%d lines, want 1101", lines)
	}
	if err := enc.Row(r.Schema().NewRow()[:3]); err == nil {
		t.Error("Row of 3 bytes: no error")
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk on fire")
}

// A write error is sticky.
func TestWriteError(t *testing.T) {
	s := store.TickSchema()
	w := &failWriter{}
	enc := query.NewEncoder(w, query.FormatCSV, query.TsNs, s, "ticks", func(uint32) (string, error) { return "A", nil })
	row := s.NewRow()
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		err = enc.Row(row)
	}
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Row: %v", err)
	}
	if err2 := enc.Row(row); !errors.Is(err2, err) && err2.Error() != err.Error() {
		t.Errorf("next Row: %v", err2)
	}
	if err2 := enc.Close(); err2 == nil || w.n != 1 {
		t.Errorf("Close: %v after %d writes", err2, w.n)
	}
}

// A failed symbol lookup is an error naming the id, and leaves nothing of
// the row behind.
func TestSymbolLookupError(t *testing.T) {
	s := store.TickSchema()
	var buf bytes.Buffer
	enc := query.NewEncoder(&buf, query.FormatJSON, query.TsNs, s, "ticks", func(id uint32) (string, error) {
		if id == 7 {
			return "", errors.New("no such id")
		}
		return "S", nil
	})
	row := s.NewRow()
	sym, _ := s.Col("sym")
	if err := enc.Row(row); err != nil {
		t.Fatal(err)
	}
	row.SetSym(sym, 7)
	if err := enc.Row(row); err == nil || !strings.Contains(err.Error(), "symbol 7") {
		t.Fatalf("Row: %v", err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := decodeNDJSON(buf.String()); err != nil || len(v) != 1 {
		t.Errorf("output %q: %v", buf.String(), err)
	}
	nilSyms := query.NewEncoder(&buf, query.FormatCSV, query.TsNs, s, "ticks", nil)
	if err := nilSyms.Row(row); err == nil {
		t.Error("Row with a sym column and no lookup: no error")
	}
}

// Encoder.Row allocates nothing once each symbol has been seen (STYLE
// §5), in every format.
func TestEncoderAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	tb := goldenTable(t)
	r := tb.reader(t)
	var rows []store.Row
	for seq := uint64(0); seq < 4; seq++ {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	for _, f := range []query.Format{query.FormatCSV, query.FormatILP, query.FormatJSON, query.FormatTable} {
		for _, tsf := range []query.TsFormat{query.TsRFC3339, query.TsNs} {
			enc := query.NewEncoder(discard{}, f, tsf, r.Schema(), "ticks", r.SymbolName)
			for _, row := range rows { // warm-up: every symbol cached
				if err := enc.Row(row); err != nil {
					t.Fatal(err)
				}
			}
			// Enough runs to pass the 32 KiB flush point several times.
			allocs := testing.AllocsPerRun(2000, func() {
				for _, row := range rows {
					if err := enc.Row(row); err != nil {
						t.Fatal(err)
					}
				}
			})
			if allocs != 0 {
				t.Errorf("%v/%v: %v allocations per 4 rows", f, tsf, allocs)
			}
			if enc.Written() == 0 {
				t.Errorf("%v/%v: never flushed", f, tsf)
			}
		}
	}
}

// decodeNDJSON decodes one JSON object per line.
func decodeNDJSON(s string) ([]map[string]any, error) {
	var rows []map[string]any
	for line := range strings.Lines(s) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return rows, fmt.Errorf("line %q: %w", line, err)
		}
		rows = append(rows, m)
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		return rows, fmt.Errorf("output does not end in a line break")
	}
	return rows, nil
}

// discard is io.Discard without the interface conversion cost question.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Computed rows: a second ts column, symbols of two dictionaries, every
// type, missing values; the exact output of every format, and no
// allocation per row once the symbols are cached.
func TestValuesEncoder(t *testing.T) {
	cols := []query.Column{
		{Name: "ts", Type: store.TypeTs},
		{Name: "sym", Type: store.TypeSym},
		{Name: "q_ts", Type: store.TypeTs},
		{Name: "venue", Type: store.TypeSym, Dict: 1},
		{Name: "px", Type: store.TypeF64},
		{Name: "n", Type: store.TypeI64},
		{Name: "ok", Type: store.TypeBool},
	}
	left := func(id uint32) (string, error) { return []string{"AAPL", "BRK A"}[id], nil }
	right := func(id uint32) (string, error) { return []string{"XNAS", "X,Y"}[id], nil }
	rows := []struct {
		v    []uint64
		null []bool
	}{
		{[]uint64{uint64(T0 + 1500), 0, uint64(T0), 1, math.Float64bits(1.5), uint64(1 << 63), 1}, nil},
		{[]uint64{uint64(T0 + 2000), 1, 0, 0, 0, 0, 0}, []bool{false, false, true, true, true, true, true}},
		{[]uint64{uint64(T0 + 3000), 1, uint64(T0 + 2999), 0, math.Float64bits(math.NaN()), 7, 0}, []bool{false, false, false, false, false, false, false}},
	}
	for _, c := range []struct {
		f    query.Format
		tsf  query.TsFormat
		want string
	}{
		{query.FormatCSV, query.TsNs, `ts,sym,q_ts,venue,px,n,ok
1700000000000001500,AAPL,1700000000000000000,"X,Y",1.5,-9223372036854775808,true
1700000000000002000,BRK A,,,,,
1700000000000003000,BRK A,1700000000000002999,XNAS,,7,false
`},
		{query.FormatJSON, query.TsRFC3339, `{"ts":"2023-11-14T22:13:20.000001500Z","sym":"AAPL","q_ts":"2023-11-14T22:13:20.000000000Z","venue":"X,Y","px":1.5,"n":-9223372036854775808,"ok":true}
{"ts":"2023-11-14T22:13:20.000002000Z","sym":"BRK A","q_ts":null,"venue":null,"px":null,"n":null,"ok":null}
{"ts":"2023-11-14T22:13:20.000003000Z","sym":"BRK A","q_ts":"2023-11-14T22:13:20.000002999Z","venue":"XNAS","px":null,"n":7,"ok":false}
`},
		{query.FormatILP, query.TsRFC3339, `m,sym=AAPL,venue=X\,Y q_ts=1700000000000000000i,px=1.5,n=-9223372036854775808i,ok=t 1700000000000001500
m,sym=BRK\ A px=NaN 1700000000000002000
m,sym=BRK\ A,venue=XNAS q_ts=1700000000000002999i,n=7i,ok=f 1700000000000003000
`},
		{query.FormatTable, query.TsRFC3339, `ts                              sym           q_ts                            venue                     px             n  ok
2023-11-14T22:13:20.000001500Z  AAPL          2023-11-14T22:13:20.000000000Z  X,Y                      1.5  -9223372036854775808  true
2023-11-14T22:13:20.000002000Z  BRK A
2023-11-14T22:13:20.000003000Z  BRK A         2023-11-14T22:13:20.000002999Z  XNAS                     NaN             7  false
`},
	} {
		t.Run(c.f.String(), func(t *testing.T) {
			var buf bytes.Buffer
			enc, err := query.NewValuesEncoder(&buf, c.f, c.tsf, cols, "m", left, right)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if err := enc.Values(r.v, r.null); err != nil {
					t.Fatal(err)
				}
			}
			if err := enc.Close(); err != nil {
				t.Fatal(err)
			}
			if buf.String() != c.want {
				t.Errorf("output:\n%s\nwant:\n%s", buf.String(), c.want)
			}
			if testutil.Race {
				return
			}
			enc, _ = query.NewValuesEncoder(discard{}, c.f, c.tsf, cols, "m", left, right)
			allocs := testing.AllocsPerRun(2000, func() {
				for _, r := range rows {
					if err := enc.Values(r.v, r.null); err != nil {
						t.Fatal(err)
					}
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per 3 rows", allocs)
			}
		})
	}
	// Misuse: wrong counts, a missing time, bad column lists, Row on it.
	enc, _ := query.NewValuesEncoder(discard{}, query.FormatCSV, query.TsNs, cols, "m", left, right)
	if err := enc.Values(make([]uint64, 3), nil); err == nil {
		t.Error("3 values for 7 columns: no error")
	}
	if err := enc.Values(make([]uint64, 7), []bool{true, false, false, false, false, false, false}); err == nil {
		t.Error("missing ts: no error")
	}
	if err := enc.Row(store.TickSchema().NewRow()); err == nil {
		t.Error("Row on a values encoder: no error")
	}
	for _, bad := range [][]query.Column{
		nil,
		{{Name: "x", Type: store.TypeF64}},
		{{Name: "ts", Type: store.TypeTs}, {Name: "ts", Type: store.TypeF64}},
		{{Name: "ts", Type: store.TypeTs}, {Name: "s", Type: store.TypeSym, Dict: 2}},
	} {
		if _, err := query.NewValuesEncoder(discard{}, query.FormatCSV, query.TsNs, bad, "m", left, right); err == nil {
			t.Errorf("columns %v: no error", bad)
		}
	}
	if err := query.NewEncoder(discard{}, query.FormatCSV, query.TsNs, store.TickSchema(), "m", left).Values(make([]uint64, 4), nil); err == nil {
		t.Error("Values on a table-row encoder: no error")
	}
}

// The hot encode loop allocates nothing, for the rows a feed carries and
// for the values off its fast paths: csv and json, both ts formats,
// table rows (Row) and computed rows (Values), once each symbol is cached
// and the buffer has grown to its largest.
func TestEncodeLoopAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	const n = 1000
	s, flat, symName := benchTicks(n, 100)
	// Values off the fast paths: NaN, the infinities, exponent forms,
	// floats of many digits, negative and large integers, times before
	// 1970 and near the epoch.
	for i, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e-7, 1e21, -0.1 - 0.2, math.Pi, 0} {
		r := store.Row(flat[i*3*s.RowSize : (i*3+1)*s.RowSize])
		r.SetF64(s.ColAt(2), v)
		r.SetI64(s.ColAt(3), math.MinInt64+int64(i))
		r.SetTs(-1_234_567_891 * int64(i))
	}
	cols := []query.Column{{Name: "ts", Type: store.TypeTs}, {Name: "sym", Type: store.TypeSym},
		{Name: "px", Type: store.TypeF64}, {Name: "n", Type: store.TypeI64}, {Name: "t2", Type: store.TypeTs}}
	vals := make([]uint64, len(cols))
	null := []bool{false, false, false, false, true}
	for _, f := range []query.Format{query.FormatCSV, query.FormatJSON} {
		for _, tsf := range []query.TsFormat{query.TsRFC3339, query.TsNs} {
			enc := query.NewEncoder(discard{}, f, tsf, s, "ticks", symName)
			venc, err := query.NewValuesEncoder(discard{}, f, tsf, cols, "ticks", symName)
			if err != nil {
				t.Fatal(err)
			}
			loop := func() {
				for off := 0; off < len(flat); off += s.RowSize {
					r := store.Row(flat[off : off+s.RowSize])
					if err := enc.Row(r); err != nil {
						t.Fatal(err)
					}
					vals[0], vals[1], vals[2] = uint64(r.Ts()), uint64(r.Sym(s.ColAt(1))), math.Float64bits(r.F64(s.ColAt(2)))
					vals[3], vals[4] = uint64(r.I64(s.ColAt(3))), uint64(r.Ts())
					null[4] = !null[4]
					if err := venc.Values(vals, null); err != nil {
						t.Fatal(err)
					}
				}
			}
			for range 20 { // every symbol cached, the buffers grown to their largest (n rows: over 32 KiB of output)
				loop()
			}
			if allocs := testing.AllocsPerRun(50, loop); allocs != 0 {
				t.Errorf("%v/%v: %v allocations per %d rows", f, tsf, allocs, 2*n)
			}
		}
	}
}
