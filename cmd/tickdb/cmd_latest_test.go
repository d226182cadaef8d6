package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/writer"
)

// TestLatestOutput: latest on the known table, byte for byte: every
// symbol's newest row, at a time between rows, before the first, the
// symbols listed, in each format.
func TestLatestOutput(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"newest", nil, `ts,sym,price,size
1704205802000000000,AAPL,185.5,300
1704205802000000000,"BRK,B",470,1
1704205803500000000,MSFT,0.000001,-50
`},
		{"at between rows", []string{"--at", "2024-01-02T14:30:01.5Z"}, `ts,sym,price,size
1704205800000000000,AAPL,185.25,100
1704205801000000000,MSFT,410.5,7
`},
		{"at a row, inclusive", []string{"--at", "1704205802000000000"}, `ts,sym,price,size
1704205802000000000,AAPL,185.5,300
1704205802000000000,"BRK,B",470,1
1704205801000000000,MSFT,410.5,7
`},
		{"before the first row", []string{"--at", "1704205799999999999"}, "ts,sym,price,size\n"},
		{"listed", []string{"--sym", "MSFT", "--sym", "BRK,B", "--sym", "NOPE", "--sym", "MSFT"}, `ts,sym,price,size
1704205802000000000,"BRK,B",470,1
1704205803500000000,MSFT,0.000001,-50
`},
		{"json", []string{"--format", "json", "--ts", "rfc3339", "--sym", "AAPL"}, `{"ts":"2024-01-02T14:30:02.000000000Z","sym":"AAPL","price":185.5,"size":300}
`},
		{"ilp", []string{"--format", "ilp", "--at", "2024-01-02T14:30:01Z"}, `trades,sym=AAPL price=185.25,size=100i 1704205800000000000
trades,sym=MSFT price=410.5,size=7i 1704205801000000000
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"latest", "--db", db, "--table", "trades", "--format", "csv", "--ts", "ns"}, tc.args...)
			code, out, errs := runCLI(args...)
			// A symbol the table does not hold gets a note on stderr.
			note := ""
			if slices.Contains(tc.args, "NOPE") {
				note = `tickdb: latest: no symbol "NOPE" in table trades; `
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

// TestLatestErrors: a bad invocation exits 1 with one line on stderr and
// prints no rows.
func TestLatestErrors(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	w, err := writer.Open(db, "nosym", &writer.Options{Schema: mustNoSymSchema(), LiveDir: live + "/nosym", SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing table", []string{"--table", "trade"}, `tickdb: no table "trade" in ` + db + `; tables: nosym, trades`},
		{"bad at", []string{"--table", "trades", "--at", "yesterday"}, `time "yesterday" is not RFC 3339`},
		{"bad format", []string{"--table", "trades", "--format", "xml"}, `unknown format "xml"`},
		{"no sym column", []string{"--table", "nosym"}, "table nosym has no sym column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"latest", "--db", db}, tc.args...)...)
			if code != 1 || out != "" {
				t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "tickdb: ") || !strings.Contains(errs, tc.want) {
				t.Errorf("stderr %q, want one line with %q", errs, tc.want)
			}
		})
	}
}

// TestLatestProcess runs latest as its own process, with the writer
// still running: the same bytes as in process.
func TestLatestProcess(t *testing.T) {
	t.Parallel() // its time goes to starting a process
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	w, err := writer.Open(db, "trades", &writer.Options{LiveDir: live + "/trades"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	args := []string{"latest", "--db", db, "--table", "trades", "--format", "json"}
	_, want, _ := runCLI(args...)
	code, out, errs := execCLI(t, args...)
	if code != 0 || errs != "" || out != want || strings.Count(out, "\n") != 3 {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errs, out, want)
	}
}
