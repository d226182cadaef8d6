package main

import (
	"strings"
	"testing"
)

// The exact output of asof for the known trades and quotes (see
// cliTrades, cliQuotes): a quote tie on ts (the later wins), a trade tied
// with its quote, the tolerance inclusive, a symbol never traded.
func TestAsOfCommand(t *testing.T) {
	db := cliDB(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"csv", []string{"--left", "trades", "--right", "quotes", "--format", "csv"}, `ts,sym,price,size,quotes_ts,bid,ask,quotes_size
2024-01-02T14:30:00.000000000Z,AAPL,185.25,100,2024-01-02T14:29:59.000000000Z,185,185.5,10
2024-01-02T14:30:01.000000000Z,MSFT,410.5,7,2024-01-02T14:30:01.000000000Z,410,411,3
2024-01-02T14:30:02.000000000Z,AAPL,185.5,300,2024-01-02T14:30:01.500000000Z,185.3,185.8,21
2024-01-02T14:30:59.999999999Z,AAPL,184,50,2024-01-02T14:30:01.500000000Z,185.3,185.8,21
2024-01-02T14:31:00.000000000Z,AAPL,186,10,2024-01-02T14:30:01.500000000Z,185.3,185.8,21
2024-01-02T14:31:30.000000000Z,MSFT,,5,2024-01-02T14:30:01.000000000Z,410,411,3
`},
		{"tolerance", []string{"--left", "trades", "--right", "quotes", "--tolerance", "1s", "--ts", "ns"}, `ts,sym,price,size,quotes_ts,bid,ask,quotes_size
1704205800000000000,AAPL,185.25,100,1704205799000000000,185,185.5,10
1704205801000000000,MSFT,410.5,7,1704205801000000000,410,411,3
1704205802000000000,AAPL,185.5,300,1704205801500000000,185.3,185.8,21
1704205859999999999,AAPL,184,50,,,,
1704205860000000000,AAPL,186,10,,,,
1704205890000000000,MSFT,,5,,,,
`},
		{"json sym from", []string{"--left", "trades", "--right", "quotes", "--sym", "AAPL", "--from", "2024-01-02T14:30:30Z", "--format", "json", "--ts", "ns"}, `{"ts":1704205859999999999,"sym":"AAPL","price":184,"size":50,"quotes_ts":1704205801500000000,"bid":185.3,"ask":185.8,"quotes_size":21}
{"ts":1704205860000000000,"sym":"AAPL","price":186,"size":10,"quotes_ts":1704205801500000000,"bid":185.3,"ask":185.8,"quotes_size":21}
`},
		{"json no match", []string{"--left", "trades", "--right", "quotes", "--sym", "MSFT", "--to", "1704205890000000001", "--tolerance", "30000000000", "--format", "json"}, `{"ts":"2024-01-02T14:30:01.000000000Z","sym":"MSFT","price":410.5,"size":7,"quotes_ts":"2024-01-02T14:30:01.000000000Z","bid":410,"ask":411,"quotes_size":3}
{"ts":"2024-01-02T14:31:30.000000000Z","sym":"MSFT","price":null,"size":5,"quotes_ts":null,"bid":null,"ask":null,"quotes_size":null}
`},
		{"reversed", []string{"--left", "quotes", "--right", "trades", "--ts", "ns"}, `ts,sym,bid,ask,size,trades_ts,price,trades_size
1704205799000000000,AAPL,185,185.5,10,,,
1704205800000000000,GOOG,140,140.5,1,,,
1704205801000000000,MSFT,410,411,3,1704205801000000000,410.5,7
1704205801500000000,AAPL,185.25,185.75,20,1704205800000000000,185.25,100
1704205801500000000,AAPL,185.3,185.8,21,1704205800000000000,185.25,100
`},
		{"ilp", []string{"--left", "quotes", "--right", "trades", "--format", "ilp", "--to", "1704205801000000001"}, `quotes,sym=AAPL bid=185,ask=185.5,size=10i 1704205799000000000
quotes,sym=GOOG bid=140,ask=140.5,size=1i 1704205800000000000
quotes,sym=MSFT bid=410,ask=411,size=3i,trades_ts=1704205801000000000i,price=410.5,trades_size=7i 1704205801000000000
`},
		{"sym only on the right", []string{"--left", "trades", "--right", "quotes", "--sym", "GOOG"}, "ts,sym,price,size,quotes_ts,bid,ask,quotes_size\n"},
		{"sym only on the left", []string{"--left", "quotes", "--right", "trades", "--sym", "GOOG", "--ts", "ns"}, "ts,sym,bid,ask,size,trades_ts,price,trades_size\n1704205800000000000,GOOG,140,140.5,1,,,\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"asof", "--db", db}, tc.args...)...)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if out != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", out, tc.want)
			}
		})
	}
}

func TestAsOfErrors(t *testing.T) {
	db := cliDB(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no left", []string{"--right", "quotes"}, []string{"no table given", "quotes, trades"}},
		{"missing right", []string{"--left", "trades", "--right", "quote"}, []string{`no table "quote"`, "tables: quotes, trades"}},
		{"bad tolerance", []string{"--left", "trades", "--right", "quotes", "--tolerance", "soon"}, []string{`"soon" is not a duration`, "250ms", "integer ns"}},
		{"negative tolerance", []string{"--left", "trades", "--right", "quotes", "--tolerance", "-1s"}, []string{"negative"}},
		{"bad to", []string{"--left", "trades", "--right", "quotes", "--to", "2024-13-01"}, []string{`"2024-13-01"`, "month out of range"}},
		{"args", []string{"--left", "trades", "--right", "quotes", "extra"}, []string{"unknown command"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"asof", "--db", db}, tc.args...)...)
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

// asof as a real process.
func TestAsOfProcess(t *testing.T) {
	db := cliDB(t)
	code, out, errs := execCLI(t, "asof", "--db", db, "--left", "trades", "--right", "quotes", "--sym", "MSFT", "--format", "json", "--ts", "ns")
	want := `{"ts":1704205801000000000,"sym":"MSFT","price":410.5,"size":7,"quotes_ts":1704205801000000000,"bid":410,"ask":411,"quotes_size":3}
{"ts":1704205890000000000,"sym":"MSFT","price":null,"size":5,"quotes_ts":1704205801000000000,"bid":410,"ask":411,"quotes_size":3}
`
	if code != 0 || out != want || errs != "" {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %q\nwant stdout:\n%s", code, out, errs, want)
	}
	code, out, errs = execCLI(t, "asof", "--db", db, "--left", "trades", "--right", "quotes", "--tolerance", "1 sec")
	if code != 1 || out != "" || !strings.HasPrefix(errs, "tickdb: ") || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
