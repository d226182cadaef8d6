package main

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// barsT0 is 2024-01-02T14:30:00Z.
const barsT0 = int64(1_704_205_800_000_000_000)

// cliRow is one row for writeCLITable: ts after barsT0, then one value
// per column after ts (string for sym, float64, int64).
type cliRow struct {
	dt   time.Duration
	vals []any
}

// writeCLITable creates table name in db with schema s holding rows, and
// closes its writer.
func writeCLITable(t *testing.T, db, live, name string, s *store.Schema, rows []cliRow) {
	t.Helper()
	w, err := writer.Open(db, name, &writer.Options{Schema: s, LiveDir: filepath.Join(live, name), SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	row := w.NewRow()
	for _, r := range rows {
		clear(row)
		row.SetTs(barsT0 + int64(r.dt))
		for i, v := range r.vals {
			c := s.ColAt(i + 1)
			switch v := v.(type) {
			case string:
				id, err := w.SymbolString(v)
				if err != nil {
					t.Fatal(err)
				}
				row.SetSym(c, id)
			case float64:
				row.SetF64(c, v)
			case int:
				row.SetI64(c, int64(v))
			default:
				t.Fatalf("value %v of type %T", v, v)
			}
		}
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// The trades and quotes the bars and asof tests read: ties on ts within
// quotes and across the tables, a NaN price, a symbol only quoted.
var (
	cliTrades = []cliRow{
		{0, []any{"AAPL", 185.25, 100}},
		{time.Second, []any{"MSFT", 410.5, 7}},
		{2 * time.Second, []any{"AAPL", 185.5, 300}},
		{time.Minute - 1, []any{"AAPL", 184.0, 50}},
		{time.Minute, []any{"AAPL", 186.0, 10}},
		{90 * time.Second, []any{"MSFT", math.NaN(), 5}},
	}
	cliQuotesSchema = store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "bid", Type: store.TypeF64},
		store.Column{Name: "ask", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
	)
	cliQuotes = []cliRow{
		{-time.Second, []any{"AAPL", 185.0, 185.5, 10}},
		{0, []any{"GOOG", 140.0, 140.5, 1}},
		{time.Second, []any{"MSFT", 410.0, 411.0, 3}},
		{1500 * time.Millisecond, []any{"AAPL", 185.25, 185.75, 20}},
		{1500 * time.Millisecond, []any{"AAPL", 185.3, 185.8, 21}},
	}
)

// cliDB makes a database holding tables trades and quotes.
func cliDB(t *testing.T) string {
	t.Helper()
	db, live := testutil.DB(t)
	writeCLITable(t, db, live, "trades", store.TickSchema(), cliTrades)
	writeCLITable(t, db, live, "quotes", cliQuotesSchema, cliQuotes)
	return db
}

// The exact output of bars for the known trades.
func TestBarsCommand(t *testing.T) {
	db := cliDB(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"csv", []string{"--sym", "AAPL", "--interval", "1m", "--format", "csv"}, `ts,open,high,low,close,volume,count
2024-01-02T14:30:00.000000000Z,185.25,185.5,184,184,450,3
2024-01-02T14:31:00.000000000Z,186,186,186,186,10,1
`},
		{"json-ns", []string{"--sym", "AAPL", "--interval", "1m", "--format", "json", "--ts", "ns"}, `{"ts":1704205800000000000,"open":185.25,"high":185.5,"low":184,"close":184,"volume":450,"count":3}
{"ts":1704205860000000000,"open":186,"high":186,"low":186,"close":186,"volume":10,"count":1}
`},
		{"json", []string{"--sym", "MSFT", "--interval", "1h", "--format", "json"}, `{"ts":"2024-01-02T14:00:00.000000000Z","open":410.5,"high":410.5,"low":410.5,"close":410.5,"volume":12,"count":2}
`},
		{"nan only", []string{"--sym", "MSFT", "--interval", "30s", "--from", "2024-01-02T14:30:30Z"}, `ts,open,high,low,close,volume,count
2024-01-02T14:31:30.000000000Z,,,,,5,1
`},
		// 7 s buckets since the epoch: 1704205800 = 7*243457971 + 3.
		{"7s from to", []string{"--sym", "AAPL", "--interval", "7s", "--to", "2024-01-02T14:31:00Z", "--ts", "ns"}, `ts,open,high,low,close,volume,count
1704205797000000000,185.25,185.5,185.25,185.5,400,2
1704205853000000000,184,184,184,184,50,1
`},
		{"field volume", []string{"--sym", "AAPL", "--interval", "1m", "--field", "size", "--volume", "price", "--ts", "ns"}, `ts,open,high,low,close,volume,count
1704205800000000000,100,300,50,50,554.75,3
1704205860000000000,10,10,10,10,186,1
`},
		{"ilp", []string{"--sym", "AAPL", "--interval", "1m", "--format", "ilp"}, `trades_bars,sym=AAPL open=185.25,high=185.5,low=184,close=184,volume=450i,count=3i 1704205800000000000
trades_bars,sym=AAPL open=186,high=186,low=186,close=186,volume=10i,count=1i 1704205860000000000
`},
		{"unknown sym", []string{"--sym", "NOPE", "--interval", "1m"}, "ts,open,high,low,close,volume,count\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"bars", "--db", db, "--table", "trades"}, tc.args...)...)
			// A symbol the table does not hold gets a note on stderr.
			note := ""
			if slices.Contains(tc.args, "NOPE") {
				note = `tickdb: bars: no symbol "NOPE" in table trades; `
			}
			if code != 0 || !strings.HasPrefix(errs, note) || (note == "") != (errs == "") {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if out != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", out, tc.want)
			}
		})
	}
}

// Errors: one line on stderr naming what is wrong, exit 1, nothing on
// stdout.
func TestBarsErrors(t *testing.T) {
	db := cliDB(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no table", []string{"--table", "nope", "--sym", "A", "--interval", "1m"}, []string{`no table "nope"`, "tables: quotes, trades"}},
		{"no sym", []string{"--table", "trades", "--interval", "1m"}, []string{"--sym"}},
		{"no interval", []string{"--table", "trades", "--sym", "AAPL"}, []string{"--interval", "1m, 5s, 250ms"}},
		{"bad interval", []string{"--table", "trades", "--sym", "AAPL", "--interval", "1 minute"}, []string{`"1 minute" is not a duration`, "1h30m", "integer ns"}},
		{"zero interval", []string{"--table", "trades", "--sym", "AAPL", "--interval", "0"}, []string{"--interval", "positive duration"}},
		{"negative interval", []string{"--table", "trades", "--sym", "AAPL", "--interval", "-1m"}, []string{"negative"}},
		{"bad from", []string{"--table", "trades", "--sym", "AAPL", "--interval", "1m", "--from", "yesterday"}, []string{`"yesterday"`, "RFC 3339", "integer ns"}},
		{"bad field", []string{"--table", "trades", "--sym", "AAPL", "--interval", "1m", "--field", "px"}, []string{`no column "px"`}},
		{"sym field", []string{"--table", "trades", "--sym", "AAPL", "--interval", "1m", "--field", "sym"}, []string{`"sym" is sym, not f64 or i64`}},
		{"bad format", []string{"--table", "trades", "--sym", "AAPL", "--interval", "1m", "--format", "xml"}, []string{"xml", "table, csv, json or ilp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"bars", "--db", db}, tc.args...)...)
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q", code, out)
			}
			if !strings.HasPrefix(errs, "tickdb: ") || strings.Count(errs, "\n") != 1 {
				t.Errorf("stderr %q is not one tickdb: line", errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q does not name %q", errs, w)
				}
			}
		})
	}
}

// bars as a real process: rows on stdout, exit 0; an error: one line on
// stderr, exit 1.
func TestBarsProcess(t *testing.T) {
	db := cliDB(t)
	code, out, errs := execCLI(t, "bars", "--db", db, "--table", "trades", "--sym", "AAPL", "--interval", "1m", "--ts", "ns")
	want := "ts,open,high,low,close,volume,count\n1704205800000000000,185.25,185.5,184,184,450,3\n1704205860000000000,186,186,186,186,10,1\n"
	if code != 0 || out != want || errs != "" {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %q\nwant stdout:\n%s", code, out, errs, want)
	}
	code, out, errs = execCLI(t, "bars", "--db", db, "--table", "trade", "--sym", "AAPL", "--interval", "1m")
	if code != 1 || out != "" || errs != "tickdb: no table \"trade\" in "+db+"; tables: quotes, trades\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
