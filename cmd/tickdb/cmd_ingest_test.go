package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// ingestRun runs "tickdb ingest" in-process with stdin and returns the
// exit status and the output, as run would.
func ingestRun(t testing.TB, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCmd()
	root.SetArgs(append([]string{"ingest"}, args...))
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	if err := root.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintf(&errb, "tickdb: %s\n", err)
		code = 1
	}
	return code, out.String(), errb.String()
}

// ingestFile writes a file under the test's temporary directory.
func ingestFile(t testing.TB, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ingestRows reads a table back: "ts col=value ..." per row, in schema
// order; nil when the table does not exist.
func ingestRows(t testing.TB, db, table string) []string {
	t.Helper()
	r, err := reader.Open(db, table, nil)
	if err != nil {
		if errors.Is(err, store.ErrNoTable) {
			return nil
		}
		t.Fatalf("open %s: %v", table, err)
	}
	defer r.Close()
	s := r.Schema()
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for it.Next() {
		row := it.Row()
		var b strings.Builder
		fmt.Fprint(&b, row.Ts())
		for i := 1; i < len(s.Cols); i++ {
			c := s.ColAt(i)
			fmt.Fprintf(&b, " %s=", s.Cols[i].Name)
			switch c.Type {
			case store.TypeSym:
				name, err := r.SymbolName(row.Sym(c))
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "%q", name)
			case store.TypeF64:
				fmt.Fprint(&b, row.F64(c))
			case store.TypeI64:
				fmt.Fprintf(&b, "%di", row.I64(c))
			case store.TypeBool:
				fmt.Fprint(&b, row.Bool(c))
			}
		}
		rows = append(rows, b.String())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func ingestSchema(t testing.TB, db, table string) string {
	t.Helper()
	r, err := reader.Open(db, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.Schema().String()
}

func wantRows(t *testing.T, db, table string, want ...string) {
	t.Helper()
	got := ingestRows(t, db, table)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("table %s:\n%s\nwant:\n%s", table, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	tablecheck.Verify(t, db, table, uint64(len(want)))
}

var summaryRE = regexp.MustCompile(`^tickdb ingest: [0-9,]+ rows? stored from [0-9]+ files? in .* rows/s\)`)

func TestIngestILP(t *testing.T) {
	db, live := testutil.DB(t)
	f := ingestFile(t, "ticks.lp", ""+
		"# a comment, then a blank line\n\n"+
		"trades,sym=AAPL price=189.5,size=100i 1000\n"+
		"trades,sym=My\\ Co\\,Ltd price=1e-3,size=7i 2000\r\n"+
		"quotes,sym=AAPL,venue=X bid=189.4,ask=189.6,firm=t 1500\n"+
		"trades,sym=AAPL size=5i 3000\n"+
		"events,sym=A note=\"say \\\"hi\\\", x=1\" 100\n"+ // string fields: symbols
		"events,sym=B note=\"two\\nlines\" 200\n"+
		"trades,sym=MSFT price=410.25 3000")
	code, out, errs := ingestRun(t, "", "--db", db, "--live-dir", live, f)
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	if !summaryRE.MatchString(errs) || !strings.Contains(errs, "7 rows stored from 1 file") || !strings.HasSuffix(errs, ": events 2, quotes 1, trades 4\n") {
		t.Errorf("summary %q", errs)
	}
	wantRows(t, db, "trades",
		`1000 sym="AAPL" price=189.5 size=100i`,
		`2000 sym="My Co,Ltd" price=0.001 size=7i`,
		`3000 sym="AAPL" price=NaN size=5i`,
		`3000 sym="MSFT" price=410.25 size=0i`)
	wantRows(t, db, "quotes", `1500 sym="AAPL" venue="X" bid=189.4 ask=189.6 firm=true`)
	wantRows(t, db, "events", `100 sym="A" note="say \"hi\", x=1"`, `200 sym="B" note="two\nlines"`)
	if s := ingestSchema(t, db, "events"); s != "ts:ts,sym:sym,note:sym" {
		t.Errorf("events schema %s", s)
	}

	// A line without a timestamp gets the time it is stored; --table puts
	// every line into one table whatever its measurement.
	before := time.Now().UnixNano()
	g := ingestFile(t, "more.ilp", "x,sym=A price=1,size=1i\ny,sym=B price=2,size=2i\n")
	if code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, "--table", "trades", g); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	rows := ingestRows(t, db, "trades")
	if len(rows) != 6 || !strings.HasSuffix(rows[4], ` sym="A" price=1 size=1i`) || !strings.HasSuffix(rows[5], ` sym="B" price=2 size=2i`) {
		t.Fatalf("rows %q", rows)
	}
	var ts int64
	fmt.Sscan(rows[4], &ts)
	if ts < before || ts > time.Now().UnixNano() {
		t.Errorf("a line without a timestamp stored at %d, ingest ran from %d", ts, before)
	}
	if ingestRows(t, db, "x") != nil || ingestRows(t, db, "y") != nil {
		t.Error("--table: the measurement made a table")
	}
}

// A file with bad lines stores nothing: not a new table, not a row of an
// existing one. Every bad line up to ten is printed with its position.
func TestIngestBadLinesStoreNothing(t *testing.T) {
	db, live := testutil.DB(t)
	f := ingestFile(t, "good.ilp", "trades,sym=A price=1 10\n")
	if code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, f); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	bad := ingestFile(t, "bad.ilp", ""+
		"trades,sym=B price=2 20\n"+ // 1: good
		"fresh,sym=A v=1 1\n"+ // 2: good, would create a table
		"trades,sym=B price=2,venue=1 30\n"+ // 3: good, would add column venue (f64)
		"trades,sym=B venue=t 35\n"+ // 4: a boolean for the f64 column line 3 adds
		"trades,sym=B price=\"x\" 40\n"+ // 5: a string (a symbol) for the f64 column
		"trades,sym=B price=3 5\n"+ // 6: before the last row
		"trades,sym=B price=1..5 50\n"+ // 7: malformed number
		"trades,sym=B price=4 60\n"+ // 8: good
		"trades,sym=B 70\n") // 9: tags alone
	code, out, errs := ingestRun(t, "", "--db", db, "--live-dir", live, bad)
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	want := []string{
		bad + `: line 4: field "venue": column "venue" of table trades is f64, got a boolean value`,
		bad + `: line 5: field "price": column "price" of table trades is f64, got a string value`,
		bad + `: line 6: timestamp 5 (1970-01-01T00:00:00.000000005Z) is before the last row of table trades (30, 1970-01-01T00:00:00.00000003Z)`,
		bad + `: line 7, byte 20: field "price": malformed number "1..5"`,
		bad + `: line 9, byte 14: no field after the tags ("70" would be the timestamp)`,
		`tickdb: ` + bad + `: 5 bad lines; nothing stored from it (--skip-bad stores the good lines)`,
	}
	if len(lines) != len(want) {
		t.Fatalf("stderr:\n%s", errs)
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("stderr line %d:\n%s\nwant prefix\n%s", i+1, lines[i], want[i])
		}
	}
	wantRows(t, db, "trades", `10 sym="A" price=1`)
	if _, err := os.Stat(filepath.Join(db, "fresh")); !os.IsNotExist(err) {
		t.Errorf("a failed file created a table: %v", err)
	}

	// Many bad lines: the first ten printed, all counted.
	var many strings.Builder
	for i := range 25 {
		fmt.Fprintf(&many, "trades,sym=A nope=%d,price=\"s\" %d\n", i, 100+i) // nope would be added; price is f64
	}
	m := ingestFile(t, "many.ilp", many.String())
	code, _, errs = ingestRun(t, "", "--db", db, "--live-dir", live, m)
	if code != 1 || strings.Count(errs, m+": line ") != 10 || !strings.Contains(errs, "25 bad lines (the first 10 printed); nothing stored") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}

	// With a good file and a bad one, the good one is stored.
	g := ingestFile(t, "later.ilp", "trades,sym=C price=9 90\n")
	code, _, errs = ingestRun(t, "", "--db", db, "--live-dir", live, bad, g)
	if code != 1 || !strings.Contains(errs, "tickdb ingest: 1 row stored from 1 file") ||
		!strings.Contains(errs, "tickdb: 1 of 2 files stored nothing: "+bad+": 5 bad lines") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	wantRows(t, db, "trades", `10 sym="A" price=1`, `90 sym="C" price=9`)

	// A line without a time is checked at the time it will be stored
	// with, so a later line timed before it is bad, and found before
	// anything is stored.
	stamped := ingestFile(t, "stamped.ilp", "trades,sym=D price=1\ntrades,sym=D price=2 100\n")
	code, _, errs = ingestRun(t, "", "--db", db, "--live-dir", live, stamped)
	if code != 1 || !strings.Contains(errs, stamped+": line 2: timestamp 100 (1970-01-01T00:00:00.0000001Z) is before the last row of table trades") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	wantRows(t, db, "trades", `10 sym="A" price=1`, `90 sym="C" price=9`)
}

// A line naming a tag or field its table lacks adds the column, in a file
// for a table that exists and in one that creates it; the rows before
// read it as missing.
func TestIngestAddsColumns(t *testing.T) {
	db, live := testutil.DB(t)
	f := ingestFile(t, "first.ilp", "cpu,host=a usage=2.5 1\n")
	if code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, f); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	g := ingestFile(t, "more.ilp", ""+
		"cpu,host=a usage=2.5,temp=40i 2\n"+
		"cpu,host=a,dc=x usage=1 3\n"+
		"cpu,host=a usage=1,note=\"halted\" 4\n"+
		"cpu,host=b temp=7i 5\n")
	if code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, g); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	wantRows(t, db, "cpu",
		`1 host="a" usage=2.5 temp=0i dc="" note=""`,
		`2 host="a" usage=2.5 temp=40i dc="" note=""`,
		`3 host="a" usage=1 temp=0i dc="x" note=""`,
		`4 host="a" usage=1 temp=0i dc="" note="halted"`,
		`5 host="b" usage=NaN temp=7i dc="" note=""`)
}

func TestIngestSkipBad(t *testing.T) {
	db, live := testutil.DB(t)
	f := ingestFile(t, "mixed.ilp", ""+
		"trades,sym=A price=1,size=1i 10\n"+
		"trades,sym=A price=oops 20\n"+
		"trades,sym=B price=2,size=2i 30\n"+
		"trades,sym=B price=3,size=3i,x=1 40\n"+ // adds column x
		"trades,sym=C price=4,size=4i 25\n"+
		"trades,sym=C price=5,size=5i,x=t 45\n"+ // a boolean for the f64 column x
		"trades,sym=C price=6,size=6i,y=1i 35\n"+ // late: adds no column
		"trades,sym=C price=5,size=5i 50\n")
	code, out, errs := ingestRun(t, "", "--db", db, "--live-dir", live, "--skip-bad", f)
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q:\n%s", code, out, errs)
	}
	for _, want := range []string{f + ": line 2, byte ", f + ": line 5: timestamp 25 (1970-01-01T00:00:00.000000025Z) is before",
		f + `: line 6: field "x": column "x" of table trades is f64, got a boolean value`, f + ": line 7: timestamp 35 (1970-01-01T00:00:00.000000035Z) is before",
		"tickdb ingest: 4 rows stored from 1 file", ", 4 bad lines skipped: trades 4\n"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr has no %q:\n%s", want, errs)
		}
	}
	wantRows(t, db, "trades",
		`10 sym="A" price=1 size=1i x=NaN`,
		`30 sym="B" price=2 size=2i x=NaN`,
		`40 sym="B" price=3 size=3i x=1`,
		`50 sym="C" price=5 size=5i x=NaN`)
}

func TestIngestCSV(t *testing.T) {
	db, live := testutil.DB(t)
	// A new table: its columns are the header's, in its order, typed by
	// their cells; ts anywhere, as RFC 3339 or ns; quoted symbols.
	f := ingestFile(t, "ticks.csv", "\xef\xbb\xbf"+
		"sym,ts,price,size,odd,note\r\n"+
		"\"A,B \"\"x\"\"\",2024-01-02T09:30:00.5Z,100,7,true,\r\n"+
		"MSFT,1704187800600000000,100.25,,FALSE,\"two\nlines\"\r\n"+
		",2024-01-02T10:30:00.7+01:00,,3,,\r\n")
	code, out, errs := ingestRun(t, "", "--db", db, "--live-dir", live, "--table", "ticks", f)
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q:\n%s", code, out, errs)
	}
	if got := ingestSchema(t, db, "ticks"); got != "ts:ts,sym:sym,price:f64,size:i64,odd:bool,note:sym" {
		t.Errorf("schema %s", got)
	}
	wantRows(t, db, "ticks",
		`1704187800500000000 sym="A,B \"x\"" price=100 size=7i odd=true note=""`,
		`1704187800600000000 sym="MSFT" price=100.25 size=0i odd=false note="two\nlines"`,
		`1704187800700000000 sym="" price=NaN size=3i odd=false note=""`)

	// An existing table: the header names some of its columns, in any
	// order; cells are read by the schema's types (an integer into f64).
	g := ingestFile(t, "more.csv", "size,ts,sym\n9,1704187801000000000,IBM\n10,2024-01-02 09:30:02Z,\"x y\"\n")
	if code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, "--table", "ticks", g); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	rows := ingestRows(t, db, "ticks")
	if len(rows) != 5 || rows[3] != `1704187801000000000 sym="IBM" price=NaN size=9i odd=false note=""` ||
		rows[4] != `1704187802000000000 sym="x y" price=NaN size=10i odd=false note=""` {
		t.Fatalf("rows %q", rows)
	}

	// A cell of the wrong type is a bad line; nothing of the file stored.
	h := ingestFile(t, "bad.csv", "ts,size,price\n1704187803000000000,1,2\n1704187804000000000,1.5,\"3\"\n")
	code, _, errs = ingestRun(t, "", "--db", db, "--live-dir", live, "--table", "ticks", h)
	if code != 1 || !strings.Contains(errs, h+`: line 3, byte 21: column "size" (i64): "1.5" is not an integer`) {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	tablecheck.Verify(t, db, "ticks", 5)
}

func TestIngestCSVErrors(t *testing.T) {
	db, live := testutil.DB(t)
	f := ingestFile(t, "a.csv", "ts,sym,price\n1,A,1.5\n")
	if code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, "--table", "t", f); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	for _, tc := range []struct {
		name, text string
		args       []string
		err        string
	}{
		{"unknown column", "ts,sym,venue,bid\n2,A,X,1\n", nil,
			`tickdb: FILE: line 1: header columns "venue", "bid": table t has no such column (its columns: ts, sym, price)`},
		{"no ts", "sym,price\nA,1\n", nil, `tickdb: FILE: line 1: header "sym,price" has no ts column`},
		{"empty", "", nil, "tickdb: FILE: line 1: no header row: the file is empty"},
		{"no table", "ts,sym\n", []string{"--table="}, "tickdb: FILE: CSV needs --table"},
		{"bad table", "ts,sym\n", []string{"--table=a/b"}, "tickdb: --table: "},
		{"wrong type", "ts,price\n2,abc\n", nil, `FILE: line 2, byte 3: column "price" (f64): "abc" is not a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ingestFile(t, "x.csv", tc.text)
			args := append([]string{"--db", db, "--live-dir", live, "--table", "t"}, tc.args...)
			code, _, errs := ingestRun(t, "", append(args, p)...)
			if want := strings.ReplaceAll(tc.err, "FILE", p); code != 1 || !strings.Contains(errs, want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant %s", code, errs, want)
			}
		})
	}
	wantRows(t, db, "t", `1 sym="A" price=1.5`)
	if code, _, errs := ingestRun(t, "", "--db", db, filepath.Join(t.TempDir(), "x.dat")); code != 1 || !strings.Contains(errs, "x.dat: cannot tell the format from the extension") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
}

func TestIngestStdin(t *testing.T) {
	db, live := testutil.DB(t)
	code, _, errs := ingestRun(t, "s,sym=A v=1 1\ns,sym=B v=2 2\n", "--db", db, "--live-dir", live, "-")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	wantRows(t, db, "s", `1 sym="A" v=1`, `2 sym="B" v=2`)
	code, _, errs = ingestRun(t, "ts,sym,v\n3,C,3\nbad,D,4\n", "--db", db, "--live-dir", live, "--format", "csv", "--table", "s", "-")
	if code != 1 || !strings.Contains(errs, "stdin: line 3, byte 1: column \"ts\": time \"bad\"") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	wantRows(t, db, "s", `1 sym="A" v=1`, `2 sym="B" v=2`)
	tmp, _ := filepath.Glob(filepath.Join(os.TempDir(), "tickdb-ingest-stdin-*"))
	for _, p := range tmp {
		if st, err := os.Stat(p); err == nil && time.Since(st.ModTime()) < time.Minute {
			t.Logf("temporary file left (maybe another test's): %s", p)
		}
	}
}

// ingestChunk is the bytes of a file that one batch of package load reads
// (load/pipeline.go, chunk).
const ingestChunk = 128 << 10

// Files larger than a batch, with records across batch boundaries,
// escapes and quoted line ends, and records longer than a batch.
func TestIngestLargeFiles(t *testing.T) {
	db, live := testutil.DB(t)
	const n = 30_000
	var ilp, csv strings.Builder
	csv.WriteString("ts,sym,price,note\n")
	for i := range n {
		fmt.Fprintf(&ilp, "big,sym=S\\ %d price=%d %d\n", i%97, i, i+1)
		fmt.Fprintf(&csv, "%d,\"S,%d\",%d,\"a\"\"\nb\"\n", i+1, i%97, i)
		if i == n/2 { // a record longer than a batch: a bad line, skipped
			fmt.Fprintf(&ilp, "big,sym=%s price=1 %d\n", strings.Repeat("x", 3*ingestChunk), i+1)
			fmt.Fprintf(&csv, "%d,%s,1,x\n", i+1, strings.Repeat("x", 3*ingestChunk))
		}
	}
	f := ingestFile(t, "big.ilp", ilp.String())
	g := ingestFile(t, "big.csv", csv.String())
	code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, "--skip-bad", f)
	if code != 0 || !strings.Contains(errs, fmt.Sprintf("%s: line %d: tag \"sym\": value is %d bytes", f, n/2+2, 3*ingestChunk)) {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	code, _, errs = ingestRun(t, "", "--db", db, "--live-dir", live, "--skip-bad", "--table", "bigcsv", g)
	if code != 0 || !strings.Contains(errs, fmt.Sprintf("%s: line %d: tag \"sym\": value is %d bytes", g, 2+2*(n/2+1), 3*ingestChunk)) {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	for _, table := range []string{"big", "bigcsv"} {
		rows := ingestRows(t, db, table)
		if len(rows) != n {
			t.Fatalf("%s: %d rows, want %d", table, len(rows), n)
		}
		for i := 0; i < n; i += 1237 {
			want := fmt.Sprintf(`%d sym="S %d" price=%d`, i+1, i%97, i)
			if table == "bigcsv" {
				want = fmt.Sprintf(`%d sym="S,%d" price=%di note="a\"\nb"`, i+1, i%97, i)
			}
			if rows[i] != want {
				t.Fatalf("%s row %d: %s, want %s", table, i, rows[i], want)
			}
		}
		tablecheck.Verify(t, db, table, n)
	}
}

// ingest as a real process, reading a pipe: stdout stays empty, the
// summary goes to stderr, the rows are durable when it exits.
func TestIngestSubprocess(t *testing.T) {
	db, live := testutil.DB(t)
	var in strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&in, "p,sym=S%d price=%d.5,size=%di %d\n", i%7, i, i, 1000+i)
	}
	var out, errb bytes.Buffer
	args := []string{"ingest", "--db", db, "--live-dir", live, "-"}
	c := startCLIChild(t, args, strings.NewReader(in.String()), &out, &errb)
	if err := c.Wait(time.Minute); err != nil {
		t.Fatalf("ingest: %v\n%s", err, errb.String())
	}
	if out.Len() != 0 || !strings.HasPrefix(errb.String(), "tickdb ingest: 1,000 rows stored from 1 file in ") {
		t.Fatalf("stdout %q, stderr %q", out.String(), errb.String())
	}
	rows := ingestRows(t, db, "p")
	if len(rows) != 1000 || rows[999] != `1999 sym="S5" price=999.5 size=999i` {
		t.Fatalf("%d rows, last %q", len(rows), rows[len(rows)-1])
	}
	r, err := reader.Open(db, "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Durable() != 1000 {
		t.Fatalf("durable %d of 1000", r.Durable())
	}
	tablecheck.Verify(t, db, "p", 1000)

	// A bad line: exit status 1, and one last line saying why.
	errb.Reset()
	c = startCLIChild(t, args, strings.NewReader("p,sym=A price=1 5000\np,sym=A price=x 5001\n"), nil, &errb)
	err = c.Wait(time.Minute)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.HasSuffix(errb.String(), "tickdb: stdin: 1 bad line; nothing stored from it (--skip-bad stores the good lines)\n") {
		t.Fatalf("exit %v, stderr %q", err, errb.String())
	}
}

// BenchmarkIngestCSV is "tickdb ingest" of a CSV file of ticks (ts, sym,
// price, size; 500 symbols) into a new table, end to end: both passes (or
// the one pass of --skip-bad), the table's creation and its close, which
// makes every row durable. One op is one file.
//
//	go test -run '^$' -bench IngestCSV -count 10 ./cmd/tickdb | benchstat -
func BenchmarkIngestCSV(b *testing.B) {
	const rows = 1_000_000
	for _, ts := range []string{"ns", "rfc3339"} {
		f := ingestBenchFile(b, rows, ts)
		st, err := os.Stat(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []string{"check", "skip-bad"} {
			b.Run(fmt.Sprintf("rows=%d/ts=%s/mode=%s", rows, ts, mode), func(b *testing.B) {
				root := b.TempDir()
				b.SetBytes(st.Size())
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					db := filepath.Join(root, fmt.Sprint("db", i))
					live := filepath.Join(root, fmt.Sprint("live", i))
					args := []string{"--db", db, "--live-dir", live, "--table", "ticks", f}
					if mode == "skip-bad" {
						args = append(args, "--skip-bad")
					}
					if code, _, errs := ingestRun(b, "", args...); code != 0 {
						b.Fatalf("exit %d:\n%s", code, errs)
					}
					os.RemoveAll(db)
					os.RemoveAll(live)
					i++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*rows), "ns/row")
				b.ReportMetric(float64(i*rows)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// ingestBenchFile writes a CSV file of n ticks, with ts as ns or RFC 3339.
func ingestBenchFile(b *testing.B, n int, ts string) string {
	var buf bytes.Buffer
	buf.WriteString("ts,sym,price,size\n")
	t0 := time.Date(2024, 1, 2, 9, 30, 0, 0, time.UTC).UnixNano()
	for i := range n {
		at := t0 + int64(i)*1234567
		if ts == "ns" {
			fmt.Fprint(&buf, at)
		} else {
			buf.WriteString(time.Unix(0, at).UTC().Format(time.RFC3339Nano))
		}
		fmt.Fprintf(&buf, ",SYM%03d,%d.%02d,%d\n", (i*7919)%500, 100+i%1000, i%100, 1+i%300)
	}
	p := filepath.Join(b.TempDir(), "ticks.csv")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// TestIngestLateWindow: with --late-window a row behind its table's
// newest is stored (queries return it in ts order); further behind, or
// without the flag, it is a bad line.
func TestIngestLateWindow(t *testing.T) {
	db, live := testutil.DB(t)
	f := ingestFile(t, "late.lp", "t,sym=A v=1 1000\nt,sym=A v=2 900\nt,sym=A v=3 2000\n")
	code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, f)
	if code != 1 || !strings.Contains(errs, "line 2: timestamp 900 (1970-01-01T00:00:00.0000009Z) is before") {
		t.Fatalf("without a window: exit %d\n%s", code, errs)
	}
	code, _, errs = ingestRun(t, "", "--db", db, "--live-dir", live, "--late-window", "200ns", f)
	if code != 0 {
		t.Fatalf("with a window: exit %d\n%s", code, errs)
	}
	wantRows(t, db, "t", `900 sym="A" v=2`, `1000 sym="A" v=1`, `2000 sym="A" v=3`)
	g := ingestFile(t, "later.lp", "t,sym=A v=4 1500\n")
	code, _, errs = ingestRun(t, "", "--db", db, "--live-dir", live, "--late-window", "200ns", g)
	if code != 1 || !strings.Contains(errs, "by more than the late window (200ns)") {
		t.Fatalf("past the window: exit %d\n%s", code, errs)
	}
}

// tickdb ingest applies serve's time rule: far-future and wrong-unit rows
// are bad lines naming the fix, in ILP and CSV; --ts-unit reads the
// file's unit, --allow-1970 and --max-future 0 opt out.
func TestIngestTimeRule(t *testing.T) {
	db, live := testutil.DB(t)
	now := time.Now().UnixNano()
	sec, ms := now/1e9, now/1e6
	run := func(args ...string) (int, string) {
		t.Helper()
		code, _, errs := ingestRun(t, "", append([]string{"--db", db, "--live-dir", live}, args...)...)
		return code, errs
	}
	bad := ingestFile(t, "bad.ilp", fmt.Sprintf("t,sym=A v=1 %d\nt,sym=A v=2 %d\nt,sym=A v=3 %d\n", now-int64(time.Hour), sec, int64(math.MaxInt64)))
	code, errs := run(bad)
	for _, want := range []string{
		fmt.Sprintf("bad.ilp: line 2: timestamp %d read as nanoseconds is 1970-01-01T00:00:01.", sec), "give --ts-unit s (data really from the first weeks of 1970: --allow-1970)",
		"bad.ilp: line 3: timestamp 9223372036854775807 (2262-04-11T23:47:16.854775807Z) is 235 years ahead", "2 bad lines; nothing stored",
	} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr has no %q:\n%s", code, want, errs)
		}
	}
	if code, errs := run("--skip-bad", bad); code != 0 || !strings.Contains(errs, "2 bad lines skipped") {
		t.Errorf("--skip-bad: exit %d\n%s", code, errs)
	}
	wantRows(t, db, "t", fmt.Sprintf(`%d sym="A" v=1`, now-int64(time.Hour)))

	secs := ingestFile(t, "s.ilp", fmt.Sprintf("s,sym=A v=1 %d\ns,sym=A v=2\n", sec))
	if code, errs := run("--ts-unit", "s", secs); code != 0 {
		t.Fatalf("--ts-unit s: exit %d\n%s", code, errs)
	}
	if rows := ingestRows(t, db, "s"); len(rows) != 2 || !strings.HasPrefix(rows[0], fmt.Sprint(sec*1e9, " ")) || rows[1] < fmt.Sprint(now) {
		t.Errorf("--ts-unit s: rows %q, want %d, then one at the load's time", rows, sec*1e9)
	}

	csv := ingestFile(t, "c.csv", fmt.Sprintf("ts,sym,v\n%d,A,1\n", ms))
	if code, errs := run("--table", "c", csv); code != 1 || !strings.Contains(errs, "c.csv: line 2: timestamp") || !strings.Contains(errs, "give --ts-unit ms") {
		t.Errorf("CSV in ms: exit %d\n%s", code, errs)
	}
	if code, errs := run("--table", "c", "--ts-unit", "ms", csv); code != 0 {
		t.Errorf("CSV with --ts-unit ms: exit %d\n%s", code, errs)
	}
	wantRows(t, db, "c", fmt.Sprintf(`%d sym="A" v=1i`, ms*1e6))
	if code, errs := run("--table", "old", "--allow-1970", csv); code != 0 {
		t.Errorf("--allow-1970: exit %d\n%s", code, errs)
	}
	wantRows(t, db, "old", fmt.Sprintf(`%d sym="A" v=1i`, ms))

	ahead := now + int64(time.Hour)
	fut := ingestFile(t, "f.ilp", fmt.Sprintf("f,sym=A v=1 %d\n", ahead))
	if code, errs := run(fut); code != 1 || !strings.Contains(errs, "is 1h0m0s ahead of the server's clock") && !strings.Contains(errs, "is 59m59s ahead") {
		t.Errorf("an hour ahead: exit %d\n%s", code, errs)
	}
	if code, errs := run("--max-future", "2h", fut); code != 0 {
		t.Errorf("--max-future 2h: exit %d\n%s", code, errs)
	}
	if code, errs := run("--max-future", "0", "--table", "f0", fut); code != 0 {
		t.Errorf("--max-future 0: exit %d\n%s", code, errs)
	}
	wantRows(t, db, "f0", fmt.Sprintf(`%d sym="A" v=1`, ahead))
	for _, c := range []struct{ flag, val, want string }{{"--ts-unit", "min", "want s, ms, us or ns"}, {"--max-future", "-1s", "negative"}} {
		if code, errs := run(c.flag, c.val, fut); code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%s %s: exit %d\n%s", c.flag, c.val, code, errs)
		}
	}
}

// A table that already holds a far-future row (loaded with --max-future
// 0, as any table could be before the check): a later load is refused
// with a message naming the row and the way out, and an error at open;
// the way out, with existing commands, copies its other rows into a new
// table of the same name, which then takes real-time rows.
func TestIngestFarRowWayOut(t *testing.T) {
	db, live := testutil.DB(t)
	t0 := time.Now().Add(-time.Hour).UnixNano()
	f := ingestFile(t, "bk.ilp", fmt.Sprintf("bk,sym=A v=1,n=1i %d\nbk,sym=B v=2.5,n=2i %d\nbk,sym=A v=3,n=3i %d\n", t0, t0+1, int64(math.MaxInt64)))
	if code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, "--max-future", "0", f); code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	now := ingestFile(t, "now.ilp", fmt.Sprintf("bk,sym=C v=4,n=4i %d\n", time.Now().UnixNano()))
	code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, now)
	for _, want := range []string{
		"level=ERROR", "table holds a row far ahead of the clock", "table=bk", "seq=2", "ts=9223372036854775807", // at open
		"now.ilp: line 1: timestamp ", "is before the last row of table bk", "table bk holds row seq 2, ts 9223372036854775807 (2262-04-11T23:47:16.854775807Z)",
		"the way out: stop the server, then tickdb query --db " + db + " --table bk --to ",
	} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr has no %q:\n%s", code, want, errs)
		}
	}
	// The way out.
	code, dump, errs := runCLI("query", "--db", db, "--table", "bk", "--to", time.Now().UTC().Format(time.RFC3339), "--format", "ilp")
	if code != 0 {
		t.Fatalf("query: exit %d\n%s", code, errs)
	}
	if err := os.Rename(filepath.Join(db, "bk"), filepath.Join(t.TempDir(), "bk")); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, ingestFile(t, "bk-copy.ilp", dump)); code != 0 {
		t.Fatalf("ingest of the copy: exit %d\n%s", code, errs)
	}
	good := []string{fmt.Sprintf(`%d sym="A" v=1 n=1i`, t0), fmt.Sprintf(`%d sym="B" v=2.5 n=2i`, t0+1)}
	wantRows(t, db, "bk", good...)
	if code, _, errs := ingestRun(t, "", "--db", db, "--live-dir", live, now); code != 0 {
		t.Fatalf("a real-time row after the way out: exit %d\n%s", code, errs)
	}
	if rows := ingestRows(t, db, "bk"); len(rows) != 3 || strings.Join(rows[:2], "\n") != strings.Join(good, "\n") {
		t.Fatalf("rows %q", rows)
	}
}
