package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// knownT0 is 2024-01-02T14:30:00Z, the first row of the known table.
const knownT0 = int64(1_704_205_800_000_000_000)

// knownRow is one row of the known table (store.TickSchema).
type knownRow struct {
	dt    time.Duration // after knownT0
	sym   string
	price float64
	size  int64
}

// knownRows: two rows share a ts, a price is NaN (an empty csv field, a
// JSON null, an omitted ilp field), one symbol needs csv quoting.
var knownRows = []knownRow{
	{0, "AAPL", 185.25, 100},
	{time.Second, "MSFT", 410.5, 7},
	{2 * time.Second, "AAPL", 185.5, 300},
	{2 * time.Second, "BRK,B", 470, 1},
	{3500 * time.Millisecond, "MSFT", 0.000001, -50},
}

// writeKnown creates table name in db holding knownRows, with its live
// slots under live, and closes the writer.
func writeKnown(t *testing.T, db, live, name string) {
	t.Helper()
	w, err := writer.Open(db, name, &writer.Options{Schema: store.TickSchema(), LiveDir: live + "/" + name, SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	s := w.Schema()
	sym, _ := s.Col("sym")
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	row := w.NewRow()
	for _, k := range knownRows {
		id, err := w.SymbolString(k.sym)
		if err != nil {
			t.Fatal(err)
		}
		row.SetTs(knownT0 + int64(k.dt))
		row.SetSym(sym, id)
		row.SetF64(price, k.price)
		row.SetI64(size, k.size)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// mustNoSymSchema is a schema without a sym column: ts, v f64.
func mustNoSymSchema() *store.Schema {
	return store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "v", Type: store.TypeF64})
}

// TestQueryExactOutput checks the csv, json, ilp and table output of the
// known table byte for byte.
func TestQueryExactOutput(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"csv", []string{"--format", "csv"}, `ts,sym,price,size
2024-01-02T14:30:00.000000000Z,AAPL,185.25,100
2024-01-02T14:30:01.000000000Z,MSFT,410.5,7
2024-01-02T14:30:02.000000000Z,AAPL,185.5,300
2024-01-02T14:30:02.000000000Z,"BRK,B",470,1
2024-01-02T14:30:03.500000000Z,MSFT,0.000001,-50
`},
		{"csv-ns", []string{"--format", "csv", "--ts", "ns"}, `ts,sym,price,size
1704205800000000000,AAPL,185.25,100
1704205801000000000,MSFT,410.5,7
1704205802000000000,AAPL,185.5,300
1704205802000000000,"BRK,B",470,1
1704205803500000000,MSFT,0.000001,-50
`},
		{"json", []string{"--format", "json"}, `{"ts":"2024-01-02T14:30:00.000000000Z","sym":"AAPL","price":185.25,"size":100}
{"ts":"2024-01-02T14:30:01.000000000Z","sym":"MSFT","price":410.5,"size":7}
{"ts":"2024-01-02T14:30:02.000000000Z","sym":"AAPL","price":185.5,"size":300}
{"ts":"2024-01-02T14:30:02.000000000Z","sym":"BRK,B","price":470,"size":1}
{"ts":"2024-01-02T14:30:03.500000000Z","sym":"MSFT","price":0.000001,"size":-50}
`},
		{"json-ns", []string{"--format", "json", "--ts", "ns", "--limit", "1"}, `{"ts":1704205800000000000,"sym":"AAPL","price":185.25,"size":100}
`},
		{"ilp", []string{"--format", "ilp"}, `trades,sym=AAPL price=185.25,size=100i 1704205800000000000
trades,sym=MSFT price=410.5,size=7i 1704205801000000000
trades,sym=AAPL price=185.5,size=300i 1704205802000000000
trades,sym=BRK\,B price=470,size=1i 1704205802000000000
trades,sym=MSFT price=0.000001,size=-50i 1704205803500000000
`},
		{"table", []string{"--format", "table", "--limit", "2"}, `ts                              sym                    price          size
2024-01-02T14:30:00.000000000Z  AAPL                  185.25           100
2024-01-02T14:30:01.000000000Z  MSFT                   410.5             7
`},
		// Not a terminal and no --format: csv.
		{"default", []string{"--limit", "1"}, "ts,sym,price,size\n2024-01-02T14:30:00.000000000Z,AAPL,185.25,100\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"query", "--db", db, "--table", "trades"}, tc.args...)...)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if out != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", out, tc.want)
			}
		})
	}
}

// TestQueryFilters checks --sym, --from, --to and --limit, alone and
// together, in both time spellings (rows as "dt/sym" pairs in the order
// printed).
func TestQueryFilters(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	const t2 = "1704205802000000000" // knownT0 + 2 s, two rows stamped so
	for _, tc := range []struct {
		name string
		args []string
		want []int // indexes into knownRows
	}{
		{"all", nil, []int{0, 1, 2, 3, 4}},
		{"sym", []string{"--sym", "AAPL"}, []int{0, 2}},
		{"sym quoted", []string{"--sym", "BRK,B"}, []int{3}},
		{"sym unknown", []string{"--sym", "NOPE"}, nil},
		{"from inclusive", []string{"--from", t2}, []int{2, 3, 4}},
		{"to exclusive", []string{"--to", t2}, []int{0, 1}},
		{"from to rfc3339", []string{"--from", "2024-01-02T14:30:01Z", "--to", "2024-01-02T14:30:03.5Z"}, []int{1, 2, 3}},
		{"from offset", []string{"--from", "2024-01-02T15:30:02+01:00"}, []int{2, 3, 4}},
		{"date", []string{"--from", "2024-01-02", "--to", "2024-01-03"}, []int{0, 1, 2, 3, 4}},
		{"empty range", []string{"--from", t2, "--to", t2}, nil},
		{"limit", []string{"--limit", "3"}, []int{0, 1, 2}},
		{"limit 0 is none", []string{"--limit", "0"}, []int{0, 1, 2, 3, 4}},
		{"sym from limit", []string{"--sym", "MSFT", "--from", "1704205800000000001", "--limit", "1"}, []int{1}},
		{"sym to", []string{"--sym", "MSFT", "--to", "1704205803500000000"}, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"query", "--db", db, "--table", "trades", "--format", "csv", "--ts", "ns"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if lines[0] != "ts,sym,price,size" {
				t.Fatalf("header %q", lines[0])
			}
			var got []int
			for _, l := range lines[1:] {
				got = append(got, knownIndex(t, l))
			}
			if !equalInts(got, tc.want) {
				t.Errorf("rows %v, want %v\n%s", got, tc.want, out)
			}
		})
	}
}

// knownIndex finds the known row a csv --ts ns line prints.
func knownIndex(t *testing.T, line string) int {
	t.Helper()
	want := strings.Split(strings.TrimSpace(`
1704205800000000000,AAPL,185.25,100
1704205801000000000,MSFT,410.5,7
1704205802000000000,AAPL,185.5,300
1704205802000000000,"BRK,B",470,1
1704205803500000000,MSFT,0.000001,-50`), "\n")
	for i, w := range want {
		if w == line {
			return i
		}
	}
	t.Fatalf("line %q is no known row", line)
	return -1
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestQueryErrors: each bad invocation exits 1 with one line on stderr
// that says what is wrong, and prints no rows.
func TestQueryErrors(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	writeKnown(t, db, live, "quotes")
	w, err := writer.Open(db, "nosym", &writer.Options{
		Schema: mustNoSymSchema(), LiveDir: live + "/nosym", SegmentSize: 4096,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing table", []string{"--table", "trade"}, `tickdb: no table "trade" in ` + db + `; tables: nosym, quotes, trades`},
		{"no table", nil, `tickdb: no table given (--table); tables in ` + db + `: nosym, quotes, trades`},
		{"bad time", []string{"--table", "trades", "--from", "yesterday"}, `time "yesterday" is not RFC 3339 (2024-01-02T15:04:05Z, 2024-01-02T15:04:05.5+02:00), a date (2024-01-02) or integer ns since the epoch`},
		{"bad to", []string{"--table", "trades", "--to", "2024-02-30"}, `"2024-02-30"`},
		{"negative limit", []string{"--table", "trades", "--limit", "-1"}, "limit -1 is negative"},
		{"bad format", []string{"--table", "trades", "--format", "xml"}, `unknown format "xml" (want table, csv, json or ilp)`},
		{"bad ts", []string{"--table", "trades", "--ts", "ms"}, `unknown ts format "ms" (want rfc3339 or ns)`},
		{"sym without sym column", []string{"--table", "nosym", "--sym", "X"}, "table nosym has no sym column"},
		{"bad table name", []string{"--table", "../etc"}, `table name "../etc"`},
		{"argument", []string{"--table", "trades", "extra"}, `unknown command "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"query", "--db", db}, tc.args...)...)
			if code != 1 || out != "" {
				t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "tickdb: ") || !strings.Contains(errs, tc.want) {
				t.Errorf("stderr %q, want one line with %q", errs, tc.want)
			}
		})
	}
}

// TestQueryProcess runs query as its own process: the same bytes as in
// process, and an error's exit status and single line.
func TestQueryProcess(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	args := []string{"query", "--db", db, "--table", "trades", "--sym", "MSFT", "--format", "json"}
	_, want, _ := runCLI(args...)
	code, out, errs := execCLI(t, args...)
	if code != 0 || errs != "" || out != want {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errs, out, want)
	}
	code, out, errs = execCLI(t, "query", "--db", db, "--table", "nope")
	if code != 1 || out != "" || errs != `tickdb: no table "nope" in `+db+"; tables: trades\n" {
		t.Fatalf("missing table: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// A bare integer --from, --to or --at that reads as seconds, ms or µs of
// now is an error with the hint (what it is as ns, what it would be in
// that unit, how to write it), in every command that takes times; small
// integers (1970 in every unit) are still ns.
func TestTimeFlagHints(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "k")
	now := time.Now()
	sec := now.Unix()
	for _, c := range []struct{ val, unit string }{
		{fmt.Sprint(sec), "seconds"}, {fmt.Sprint(now.UnixMilli()), "milliseconds"}, {fmt.Sprint(now.UnixMicro()), "microseconds"},
	} {
		for _, args := range [][]string{
			{"query", "--table", "k", "--from", c.val},
			{"query", "--table", "k", "--to", c.val},
			{"bars", "--table", "k", "--sym", "AAPL", "--interval", "1m", "--from", c.val},
			{"asof", "--left", "k", "--right", "k", "--to", c.val},
			{"export", "--table", "k", "--format", "csv", "--out", t.TempDir(), "--from", c.val},
			{"latest", "--table", "k", "--at", c.val},
		} {
			code, out, errs := runCLI(append(args, "--db", db)...)
			want := fmt.Sprintf("time %q is integer ns, 1970-01-", c.val)
			if code == 0 || out != "" || !strings.Contains(errs, want) || !strings.Contains(errs, "as "+c.unit+" it is "+now.UTC().Format("2006-01-02T15")) ||
				!strings.Contains(errs, ": write ") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want the %s hint", args, code, out, errs, c.unit)
			}
		}
	}
	code, _, errs := runCLI("query", "--db", db, "--table", "k", "--from", fmt.Sprint(sec), "--to", "1000")
	if want := fmt.Sprintf(": write %d (ns) or %s", sec*1e9, time.Unix(sec, 0).UTC().Format(time.RFC3339)); code == 0 || !strings.Contains(errs, want) {
		t.Errorf("stderr %q, want %q", errs, want)
	}
	if code, out, errs := runCLI("query", "--db", db, "--table", "k", "--from", "5", "--to", "1000", "--format", "csv"); code != 0 || out != "ts,sym,price,size\n" {
		t.Errorf("--from 5 --to 1000: exit %d, %q %q", code, out, errs)
	}
}
