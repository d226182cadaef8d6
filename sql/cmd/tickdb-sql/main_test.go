package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// table writes a small trades table into a new database directory.
func table(t *testing.T) string {
	t.Helper()
	db := t.TempDir()
	schema := store.TickSchema()
	w, err := writer.Open(db, "trades", &writer.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	sym, _ := schema.Col("sym")
	price, _ := schema.Col("price")
	size, _ := schema.Col("size")
	base := time.Date(2024, 1, 2, 14, 30, 0, 0, time.UTC).UnixNano()
	row := w.NewRow()
	for i, s := range []string{"AAPL", "MSFT", "AAPL"} {
		id, _ := w.SymbolString(s)
		row.SetTs(base + int64(i)*1_000_000_001)
		row.SetSym(sym, id)
		row.SetF64(price, 100.5+float64(i))
		row.SetI64(size, int64(100*(i+1)))
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	w.Publish()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestQueryFormats(t *testing.T) {
	db := table(t)
	q := "SELECT ts, sym, price, size, price > 101 AS up, NULL::DOUBLE AS none FROM trades ORDER BY ts"
	for _, c := range []struct{ format, want string }{
		{"csv", "ts,sym,price,size,up,none\n" +
			"2024-01-02T14:30:00.000000000Z,AAPL,100.5,100,false,\n" +
			"2024-01-02T14:30:01.000000001Z,MSFT,101.5,200,true,\n" +
			"2024-01-02T14:30:02.000000002Z,AAPL,102.5,300,true,\n"},
		{"json", `{"ts":"2024-01-02T14:30:00.000000000Z","sym":"AAPL","price":100.5,"size":100,"up":false,"none":null}` + "\n" +
			`{"ts":"2024-01-02T14:30:01.000000001Z","sym":"MSFT","price":101.5,"size":200,"up":true,"none":null}` + "\n" +
			`{"ts":"2024-01-02T14:30:02.000000002Z","sym":"AAPL","price":102.5,"size":300,"up":true,"none":null}` + "\n"},
		{"table", "ts                              sym   price  size  up     none\n" +
			"2024-01-02T14:30:00.000000000Z  AAPL  100.5  100   false  \n" +
			"2024-01-02T14:30:01.000000001Z  MSFT  101.5  200   true   \n" +
			"2024-01-02T14:30:02.000000002Z  AAPL  102.5  300   true   \n"},
	} {
		out, errs, code := runCLI(t, "query", "--db", db, "--format", c.format, q)
		if code != 0 || out != c.want {
			t.Errorf("--format %s: exit %d, stderr %q, out\n%s\nwant\n%s", c.format, code, errs, out, c.want)
		}
	}
}

func TestQueryErrors(t *testing.T) {
	db := table(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "--db", db, "SELECT * FORM trades"}, "syntax error"},
		{[]string{"query", "--db", db, "DELETE FROM trades"}, "read-only: DELETE statements are not allowed"},
		{[]string{"query", "--db", db, "SELECT * FROM nosuch"}, "nosuch"},
		{[]string{"query", "--db", db, "--format", "xml", "SELECT 1"}, `--format "xml": want table, csv or json`},
		{[]string{"query", "--db", db + "/missing", "SELECT 1"}, "not a database directory"},
	} {
		_, errs, code := runCLI(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stderr %q, want one that says %q", c.args, code, errs, c.want)
		}
	}
}
