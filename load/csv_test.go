package load

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/store"
)

// splitAll splits data into records the way Parse does, without typing
// them: each record's fields unescaped, blank lines skipped. It stops at
// the first fault.
func splitAll(data []byte, atEOF bool) ([][]string, *csvFault) {
	data = bytes.Clone(data)
	p := newCSVParser("t")
	var recs [][]string
	for off := 0; ; {
		n, blank, fault := p.split(data[off:], atEOF)
		if fault != nil {
			return recs, fault
		}
		if n == 0 {
			return recs, nil
		}
		rec := data[off : off+n]
		off += n
		if blank {
			continue
		}
		var r []string
		for _, sp := range p.spans {
			cell := rec[sp.start:sp.end]
			if sp.esc {
				cell = unescapeCSV(cell)
			}
			r = append(r, string(cell))
		}
		recs = append(recs, r)
	}
}

func stdCSV(data []byte) ([][]string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	return r.ReadAll()
}

// The scanner reads what encoding/csv reads, and rejects what it rejects.
var csvSplitCases = []string{
	"a,b,c\n1,2,3\n",
	"a,b,c\r\n1,2,3\r\n",
	"a,b\n1,2",
	"a,b\n1,2\r",
	"a\n\n\nb\n",
	"a\r\n\r\nb\r\n",
	`"a,b",c` + "\n",
	`"a""b",c` + "\n",
	`"multi` + "\n" + `line","x"` + "\n" + "y,z\n",
	`"crlf` + "\r\n" + `inside"` + "\r\n",
	`"",""` + "\n",
	`x,"y"` + "\n",
	`"a",` + "\n",
	`"a",`,
	",,\n,\n",
	" a , b \n",
	"a\rb,c\n",
	"a\r\r\n",
	`"a"b` + "\n",
	`a"b` + "\n",
	`"abc`,
	`"abc` + "\n",
	`"a" ` + "\n",
	"\"a\"\r",
	"\"a\"\rb\n",
	`"""",x` + "\n",
	`a,"b` + "\n" + `c"` + "\r\n" + `d`,
	"",
	"\n",
	"é,ü\n",
}

func TestCSVSplitMatchesEncodingCSV(t *testing.T) {
	for i, in := range csvSplitCases {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkSplit(t, []byte(in)) })
	}
}

func FuzzCSVSplit(f *testing.F) {
	for _, in := range csvSplitCases {
		f.Add([]byte(in))
	}
	f.Fuzz(checkSplit)
}

// Parse takes any input without panicking, always moving on, and what it
// stores is what the cells say.
func FuzzCSVParse(f *testing.F) {
	for _, in := range csvSplitCases {
		f.Add([]byte("ts,sym,price,size,ok\n" + in))
	}
	f.Add([]byte("ts,sym,price,size,ok\n1,A,1.5,2,t\n2024-01-02T00:00:00Z,\"b\"\"\",NaN,-3,false\n"))
	s := store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64}, store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "ok", Type: store.TypeBool})
	f.Fuzz(func(t *testing.T, in []byte) {
		p := newCSVParser("t")
		n, err := p.Header(in, true)
		if err != nil || n == 0 {
			return
		}
		if p.UseSchema(s) != nil {
			return
		}
		var l lineproto.Line
		line := 0
		for data := in[n:]; len(data) > 0; {
			k, ok, err := p.Parse(data, true, &l)
			if k <= 0 || k > len(data) {
				t.Fatalf("Parse took %d of %d bytes", k, len(data))
			}
			if p.Line() <= line {
				t.Fatalf("line %d after %d", p.Line(), line)
			}
			line = p.Line()
			if ok && err != nil || err != nil && !errors.Is(err, lineproto.ErrBadLine) {
				t.Fatalf("ok %v err %v", ok, err)
			}
			if ok && len(l.Tags)+len(l.Fields) > 4 {
				t.Fatalf("line %+v", l)
			}
			data = data[k:]
		}
	})
}

func checkSplit(t *testing.T, in []byte) {
	want, werr := stdCSV(in)
	got, fault := splitAll(in, true)
	if (werr != nil) != (fault != nil) {
		t.Fatalf("%q: encoding/csv err %v, ours %+v", in, werr, fault)
	}
	if werr != nil {
		return
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("%q:\n got  %q\n want %q", in, got, want)
	}
	// Fed a byte at a time (more data until a whole record), the same.
	p := newCSVParser("t")
	data := bytes.Clone(in)
	var recs [][]string
	for off, end := 0, 0; off < len(data); {
		n, blank, fault := p.split(data[off:end], end == len(data))
		if fault != nil {
			t.Fatalf("%q: fault %+v fed bytewise", in, fault)
		}
		if n == 0 {
			end++
			continue
		}
		rec := data[off : off+n]
		off += n
		if !blank {
			var r []string
			for _, sp := range p.spans {
				cell := rec[sp.start:sp.end]
				if sp.esc {
					cell = unescapeCSV(cell)
				}
				r = append(r, string(cell))
			}
			recs = append(recs, r)
		}
	}
	if fmt.Sprintf("%q", recs) != fmt.Sprintf("%q", want) {
		t.Fatalf("%q fed bytewise:\n got  %q\n want %q", in, recs, want)
	}
}

// parseCSV parses a whole file for table t (existing schema s, or nil to
// infer) into printable rows and errors.
func parseCSV(t *testing.T, s *store.Schema, text string) (rows, errs []string) {
	t.Helper()
	data := []byte(text)
	p := newCSVParser("t")
	n, err := p.Header(data, true)
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	data = data[n:]
	if s != nil {
		if err := p.UseSchema(s); err != nil {
			t.Fatal(err)
		}
	} else if !p.Infer(data, true) {
		t.Fatal("infer wants more at EOF")
	}
	var l lineproto.Line
	for len(data) > 0 {
		n, ok, err := p.Parse(data, true, &l)
		if n == 0 {
			t.Fatalf("no progress at %q", data)
		}
		data = data[n:]
		switch {
		case err != nil:
			errs = append(errs, err.Error())
		case ok:
			rows = append(rows, lineString(&l))
		}
	}
	return rows, errs
}

// lineString prints a line: ts (or "now"), then its tags and fields.
func lineString(l *lineproto.Line) string {
	var b strings.Builder
	if l.HasTs {
		fmt.Fprint(&b, l.Ts)
	} else {
		b.WriteString("now")
	}
	for _, tg := range l.Tags {
		fmt.Fprintf(&b, " %s=%q", tg.Key, tg.Value)
	}
	for _, f := range l.Fields {
		switch f.Kind {
		case lineproto.KindFloat:
			fmt.Fprintf(&b, " %s=%v", f.Key, f.F)
		case lineproto.KindInt:
			fmt.Fprintf(&b, " %s=%di", f.Key, f.I)
		case lineproto.KindBool:
			fmt.Fprintf(&b, " %s=%v", f.Key, f.B)
		}
	}
	return b.String()
}

func TestCSVParseTyped(t *testing.T) {
	s := store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64}, store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "ok", Type: store.TypeBool})
	rows, errs := parseCSV(t, s, ""+
		"price,ts,sym,size,ok\n"+
		"1.5,1000,AAPL,10,true\n"+
		"2,2024-01-02T00:00:00.5Z,\"A,B \"\"C\"\"\",-3,F\n"+
		"NaN,,,,\n"+
		",2024-01-02 01:00:00+01:00,x,,1\n"+
		"abc,1,x,1,t\n"+
		"1,1,x,1.5,t\n"+
		"1,1,x,99999999999999999999,t\n"+
		"1,1,x,1,yes\n"+
		"1,yesterday,x,1,t\n"+
		"1,1,x\n"+
		"1,1,x,1,\"t\"x\n"+
		"-Inf,3,\"multi\nline\",7,0\n")
	want := []string{
		`1000 sym="AAPL" price=1.5 size=10i ok=true`,
		`1704153600500000000 sym="A,B \"C\"" price=2 size=-3i ok=false`,
		`now price=NaN`,
		`1704153600000000000 sym="x" ok=true`,
		`3 sym="multi\nline" price=-Inf size=7i ok=false`,
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	wantErrs := []string{
		`line 6, byte 1: column "price" (f64): "abc" is not a number`,
		`line 7, byte 7: column "size" (i64): "1.5" is not an integer`,
		`line 8, byte 7: column "size" (i64): "99999999999999999999" overflows i64`,
		`line 9, byte 9: column "ok" (bool): "yes" is not true, false, t, f, 1 or 0`,
		`line 10, byte 3: column "ts": time "yesterday" is not RFC 3339`,
		`line 11: 3 fields, the header has 5`,
		`line 12, byte 12: text after a quoted field's closing quote`,
	}
	if len(errs) != len(wantErrs) {
		t.Fatalf("errors:\n%s", strings.Join(errs, "\n"))
	}
	for i := range errs {
		if !strings.HasPrefix(errs[i], wantErrs[i]) {
			t.Errorf("error %d: %s\nwant prefix %s", i, errs[i], wantErrs[i])
		}
	}
}

// Positions count lines inside quoted fields, and columns from the line
// where the bad cell is.
func TestCSVErrorPositions(t *testing.T) {
	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "a", Type: store.TypeSym}, store.Column{Name: "b", Type: store.TypeF64})
	_, errs := parseCSV(t, s, "\n\nts,a,b\n1,\"x\ny\nz\",bad\n2,\"q\",\"bad\"\n3,a\"b,1\n4,\"open")
	want := []string{
		`line 6, byte 4: column "b" (f64): "bad" is not a number`,
		`line 7, byte 7: column "b" (f64): "bad" is not a number`,
		`line 8, byte 4: a " inside a field`,
		`line 9, byte 3: quoted field not closed`,
	}
	if len(errs) != len(want) {
		t.Fatalf("errors:\n%s", strings.Join(errs, "\n"))
	}
	for i := range errs {
		if !strings.HasPrefix(errs[i], want[i]) {
			t.Errorf("error %d: %s\nwant prefix %s", i, errs[i], want[i])
		}
	}
}

func TestCSVHeader(t *testing.T) {
	for _, tc := range []struct{ name, in, err string }{
		{"bom", "\xef\xbb\xbfts,a\n", ""},
		{"quoted", "\"ts\",\"a,b\"\n", ""},
		{"empty file", "", "no header row"},
		{"blank lines only", "\n\r\n", "no header row"},
		{"no ts", "sym,price\n", "has no ts column"},
		{"twice", "ts,a,a\n", `line 1, byte 6: header names column "a" twice`},
		{"empty name", "ts,,a\n", "header column 2 has no name"},
		{"bad quote", "ts,a\"\n", `a " inside a field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newCSVParser("t")
			n, err := p.Header([]byte(tc.in), true)
			if tc.err == "" {
				if err != nil || n != len(tc.in) {
					t.Fatalf("n %d err %v", n, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, lineproto.ErrBadLine) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
	p := newCSVParser("t")
	if n, err := p.Header([]byte("ts,sym"), false); n != 0 || err != nil {
		t.Fatalf("partial header: %d %v", n, err)
	}
	if n, err := p.Header([]byte("\n\"ts\",\"sym\n"), false); n != 0 || err != nil {
		t.Fatalf("partial quoted header: %d %v", n, err)
	}
	// Called again with the whole row, it counts the blank line once.
	if n, err := p.Header([]byte("\n\"ts\",\"sym\n\"\n1,A\n"), false); n != 13 || err != nil || p.Line() != 2 {
		t.Fatalf("header: %d %v, line %d", n, err, p.Line())
	}
}

func TestCSVUseSchemaUnknown(t *testing.T) {
	p := newCSVParser("trades")
	if _, err := p.Header([]byte("ts,sym,foo,bar\n"), true); err != nil {
		t.Fatal(err)
	}
	err := p.UseSchema(store.TickSchema())
	if err == nil || !strings.Contains(err.Error(), `header columns "foo", "bar": table trades has no such column (its columns: ts, sym,`) {
		t.Fatalf("err %v", err)
	}
}

func TestCSVInfer(t *testing.T) {
	p := newCSVParser("t")
	in := []byte("ts,a,b,c,d,e,f,g,h,i,j\n1,,1.5,7,TRUE,x,\"q\"\"\",,1,1,true\n\n2,B,,,,,,,2.5,x,1\nbad\n")
	n, err := p.Header(in, true)
	if err != nil {
		t.Fatal(err)
	}
	if p.Infer(in[n:n+10], false) {
		t.Fatal("inferred from a partial file")
	}
	if !p.Infer(in[n:], true) {
		t.Fatal("infer at EOF")
	}
	s, err := p.Schema()
	if err != nil {
		t.Fatal(err)
	}
	// Column by column: the types of the non-empty cells, widened.
	want := "ts:ts,a:sym,b:f64,c:i64,d:bool,e:sym,f:sym,g:f64,h:f64,i:sym,j:sym"
	if got := s.String(); got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
}

var timeCases = []string{
	"2024-01-02T15:04:05Z", "2024-01-02T15:04:05.123456789Z", "2024-01-02T15:04:05.1z",
	"2024-01-02t15:04:05+02:00", "2024-01-02 15:04:05-07:30", "2024-01-02T15:04:05",
	"2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-02T24:00:00Z",
	"2024-01-02T15:04:60Z", "2024-01-02T15:04:05.Z", "2024-01-02T15:04:05.1234567891Z",
	"2024-01-02T15:04:05+24:00", "2024-01-02T15:04:05+02", "1969-12-31T23:59:59.999999999Z",
	"1700-01-01T00:00:00Z", "2200-12-31T23:59:59Z", "1677-09-21T00:12:43.145224192Z",
	"2262-04-11T23:47:16.854775807Z", "2262-04-11T23:47:16.854775808Z", "2024-01-02",
	"2024-01-02T15:04:05,5Z", "2024-01-02T1x:04:05Z", "+2024-01-02T15:04:05Z", "0",
	"-5", "9223372036854775807", "9223372036854775808", "2000-01-01T00:00:00-00:00",
}

// parseCSVTime agrees with query.ParseTime, fast path or not.
func TestCSVTime(t *testing.T) {
	for _, s := range timeCases {
		checkTime(t, s)
	}
	if _, ok := parseTimeFast([]byte("2024-01-02T15:04:05.5+01:00")); !ok {
		t.Error("fast path missed an RFC 3339 time")
	}
}

func FuzzCSVTime(f *testing.F) {
	for _, s := range timeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s != "" {
			checkTime(t, s)
		}
	})
}

func checkTime(t *testing.T, s string) {
	want, werr := query.ParseTime(s)
	got, msg := parseCSVTime([]byte(s))
	if (werr != nil) != (msg != "") || got != want {
		t.Fatalf("%q: got %d %q, ParseTime %d %v", s, got, msg, want, werr)
	}
	if fast, ok := parseTimeFast([]byte(s)); ok && (werr != nil || fast != want) {
		t.Fatalf("%q: fast path %d, ParseTime %d %v", s, fast, want, werr)
	}
}

func TestCSVParseAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocations are not meaningful under -race")
	}
	data := []byte("ts,sym,price,size\n2024-01-02T15:04:05.123456789Z,\"AAPL\",189.5,100\n1704207845123456789,MSFT,1,2\n")
	p := newCSVParser("t")
	n, err := p.Header(data, true)
	if err != nil {
		t.Fatal(err)
	}
	p.Infer(data[n:], true)
	var l lineproto.Line
	rows := data[n:]
	allocs := testing.AllocsPerRun(100, func() {
		for off := 0; off < len(rows); {
			k, ok, err := p.Parse(rows[off:], true, &l)
			if !ok || err != nil {
				t.Fatal(err)
			}
			off += k
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per run", allocs)
	}
}

// A CSV file checked whole against a new table planned from its header,
// whose first row leaves a column empty; then created and stored.
func TestLoaderPlanCreate(t *testing.T) {
	db, live := testutil.DB(t)
	ld := ingest.NewLoader(&ingest.Options{DB: db, LiveRoot: live})
	text := "ts,sym,price,size\n1,A,,5\n2,B,1.5,\n"
	p := newCSVParser("c")
	n, err := p.Header([]byte(text), true)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(text[n:])
	p.Infer(body, true)
	s, err := p.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var lines []lineproto.Line
	for off := 0; off < len(body); {
		var l lineproto.Line
		k, ok, err := p.Parse(body[off:], true, &l)
		if err != nil || !ok {
			t.Fatal(err)
		}
		lines = append(lines, l)
		off += k
	}
	ld.Plan("c", s)
	now := time.Now().UnixNano() // the clock max-future is measured from
	for i := range lines {
		if err := ld.CheckAt(&lines[i], now); err != nil {
			t.Fatalf("check line %d: %v", i, err)
		}
	}
	if _, err := os.Stat(filepath.Join(db, "c")); !os.IsNotExist(err) {
		t.Fatalf("table created by a check: %v", err)
	}
	if err := ld.Create("c", s); err != nil {
		t.Fatal(err)
	}
	if n, err := ld.AppendLines(lines, now); n != 2 || err != nil {
		t.Fatalf("append: %d %v", n, err)
	}
	late := lines[:1]
	if n, err := ld.AppendLines(late, now); n != 0 || !errors.Is(err, lineproto.ErrBadLine) {
		t.Fatalf("late row: %d %v", n, err)
	}
	if err := ld.Create("c", store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs})); err == nil {
		t.Fatal("Create with another schema")
	}
	if err := ld.Close(); err != nil {
		t.Fatal(err)
	}
	rows := tableRows(t, db, "c", 2)
	if rows[0] != "1 sym=A price=NaN size=5" || rows[1] != "2 sym=B price=1.5 size=0" {
		t.Fatalf("rows %q", rows)
	}
	tablecheck.VerifyAll(t, db)
}

// BenchmarkCSVParse is the CSV scanner and converter alone, per row:
//
//	go test -run '^$' -bench CSVParse -count 10 ./load | benchstat -
func BenchmarkCSVParse(b *testing.B) {
	for _, ts := range []string{"rfc3339", "ns"} {
		b.Run("ts="+ts, func(b *testing.B) {
			const n = 100_000
			var buf bytes.Buffer
			buf.WriteString("ts,sym,price,size\n")
			csvBenchRows(&buf, ts, n)
			data := buf.Bytes()
			p := newCSVParser("t")
			h, err := p.Header(data, true)
			if err != nil {
				b.Fatal(err)
			}
			p.Infer(data[h:], true)
			rows := data[h:]
			var l lineproto.Line
			b.SetBytes(int64(len(rows)))
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				for off := 0; off < len(rows); {
					m, _, err := p.Parse(rows[off:], true, &l)
					if err != nil {
						b.Fatal(err)
					}
					off += m
				}
				k += n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(k), "ns/row")
			b.ReportMetric(float64(k)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkCSVParseStdlib is the same rows through encoding/csv and
// strconv/time (the fields split, then each converted as the scanner's
// converter does): the measured reason the scanner is kept
// (docs/BENCHMARKS.md "CSV ingest").
//
//	go test -run '^$' -bench 'CSVParse' -count 5 ./load | benchstat -
func BenchmarkCSVParseStdlib(b *testing.B) {
	for _, ts := range []string{"rfc3339", "ns"} {
		b.Run("ts="+ts, func(b *testing.B) {
			const n = 100_000
			var buf bytes.Buffer
			csvBenchRows(&buf, ts, n)
			data := buf.Bytes()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			k := 0
			var sink float64
			for b.Loop() {
				r := csv.NewReader(bytes.NewReader(data))
				r.ReuseRecord = true
				for {
					rec, err := r.Read()
					if err != nil {
						break
					}
					var t int64
					if ts == "ns" {
						t, err = strconv.ParseInt(rec[0], 10, 64)
					} else {
						var at time.Time
						at, err = time.Parse(time.RFC3339Nano, rec[0])
						t = at.UnixNano()
					}
					price, err2 := strconv.ParseFloat(rec[2], 64)
					size, err3 := strconv.ParseInt(rec[3], 10, 64)
					if err != nil || err2 != nil || err3 != nil || len(rec[1]) == 0 {
						b.Fatal(err, err2, err3)
					}
					sink += float64(t%7) + price + float64(size)
				}
				k += n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(k), "ns/row")
			b.ReportMetric(float64(k)/b.Elapsed().Seconds(), "rows/s")
			if sink == 0 {
				b.Fatal("nothing parsed")
			}
		})
	}
}

// csvBenchRows writes the CSV benchmarks' n rows (ts,sym,price,size) to
// buf, timestamps in RFC 3339 or (ts "ns") integer nanoseconds.
func csvBenchRows(buf *bytes.Buffer, ts string, n int) {
	t0 := time.Date(2024, 1, 2, 9, 30, 0, 0, time.UTC)
	for i := range n {
		at := t0.Add(time.Duration(i) * 1234567)
		if ts == "ns" {
			fmt.Fprintf(buf, "%d", at.UnixNano())
		} else {
			buf.WriteString(at.Format(time.RFC3339Nano))
		}
		fmt.Fprintf(buf, ",SYM%03d,%.2f,%d\n", i%500, 100+float64(i%1000)/100, i%300)
	}
}
