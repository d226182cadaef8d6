package servers

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the whole benchmark at a tiny size: tickdb serve built from
// this tree, and ClickHouse when it is installed (CI does not install it:
// then the report must say so). Every answer is checked by Run itself;
// here every figure must be there.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tickdb and starts real servers")
	}
	dir := t.TempDir()
	cfg := Config{N: 20_000, Batch: 3_000, Reps: 2, ColdReps: 1, Dir: dir}
	var log bytes.Buffer
	cfg.Log = &log
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	systems := []string{suite.TickDB}
	if FindClickHouse() != "" {
		systems = append(systems, "clickhouse")
	} else if !strings.Contains(rep.ClickHouse, "not installed") {
		t.Errorf("ClickHouse is not installed, and the report says %q", rep.ClickHouse)
	}
	bytesRead := map[string]bool{MStartBytes: true}
	for k := range numKinds {
		bytesRead[bytesMetric(k)] = true
	}
	_, err = os.ReadFile("/proc/self/io")
	hasIO := err == nil
	for _, s := range systems {
		for _, m := range metricOrder() {
			if (m == MShmIngest || m == MWriteApply) && s != suite.TickDB { // tickdb's own figures
				continue
			}
			x := rep.Find(m, s)
			if bytesRead[m] { // may be 0; needs /proc/<pid>/io
				if (x == nil && hasIO) || (x != nil && (x.Value < 0 || x.Unit != suite.UnitBytes)) {
					t.Errorf("%s, %s: %+v", m, s, x)
				}
				continue
			}
			if x == nil || x.Value <= 0 || len(x.Reps) == 0 {
				t.Errorf("%s, %s: %+v", m, s, x)
			}
		}
		for k := range numKinds {
			if x := rep.Find(queryMetric(k, false), s); x != nil && len(x.Reps) != cfg.Reps {
				t.Errorf("%s, %s: %d figures, want %d", queryMetric(k, false), s, len(x.Reps), cfg.Reps)
			}
			if x := rep.Find(queryMetric(k, true), s); x != nil && (len(x.Reps) != cfg.ColdReps || x.Rows <= 0) {
				t.Errorf("%s, %s: %d figures of %d rows, want %d figures", queryMetric(k, true), s, len(x.Reps), x.Rows, cfg.ColdReps)
			}
		}
	}
	if got := rep.Systems(); len(got) != len(systems) {
		t.Errorf("systems %v, want %v", got, systems)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "| "+MIngest+" | rows/s |") {
		t.Errorf("the table has no ingest row:\n%s", table.String())
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the run left %d entries in its directory", len(left))
	}
}

// TestChecks: an answer that differs from the data in any way the checks
// see is an error, in either server's CSV dialect.
func TestChecks(t *testing.T) {
	d := suite.Generate(5_000)
	sym := d.BusySymbol()
	name := d.Symbols[sym]
	want := d.Expect(sym, minTs, maxTs)

	var rows [][]string // ts, sym, price, size of sym's ticks
	for _, tk := range d.Ticks {
		if tk.Sym == sym {
			rows = append(rows, []string{strconv.FormatInt(tk.Ts, 10), name, strconv.FormatFloat(tk.Price, 'f', -1, 64), strconv.FormatInt(tk.Size, 10)})
		}
	}
	csv := func(header string, rows [][]string, quoteSym bool) []byte {
		var b bytes.Buffer
		b.WriteString(header + "\n")
		for _, r := range rows {
			r = append([]string(nil), r...)
			if quoteSym {
				r[1] = `"` + r[1] + `"`
			}
			b.WriteString(strings.Join(r, ",") + "\n")
		}
		return b.Bytes()
	}
	edit := func(f func(rows [][]string) [][]string) [][]string {
		c := make([][]string, len(rows))
		for i := range rows {
			c[i] = append([]string(nil), rows[i]...)
		}
		return f(c)
	}
	for _, quoted := range []bool{false, true} {
		header := "ts,sym,price,size"
		if quoted {
			header = `"ts","sym","price","size"`
		}
		if _, err := checkRows(csv(header, rows, quoted), name, want); err != nil {
			t.Errorf("quoted %v: the right rows: %v", quoted, err)
		}
		for _, c := range []struct {
			name string
			rows [][]string
		}{
			{"a row missing", edit(func(r [][]string) [][]string { return r[1:] })},
			{"a price changed", edit(func(r [][]string) [][]string { r[3][2] += "1"; return r })},
			{"a ts changed", edit(func(r [][]string) [][]string { r[3][0] = r[4][0]; return r })},
			{"another symbol", edit(func(r [][]string) [][]string { r[0][1] = "ZZZZ"; return r })},
			{"out of order", edit(func(r [][]string) [][]string { r[0], r[len(r)-1] = r[len(r)-1], r[0]; return r })},
			{"a field missing", edit(func(r [][]string) [][]string { r[2] = r[2][:3]; return r })},
		} {
			if _, err := checkRows(csv(header, c.rows, quoted), name, want); err == nil {
				t.Errorf("quoted %v, %s: no error", quoted, c.name)
			}
		}
	}

	bars := expectBars(d, sym)
	barRows := func(f func(i int, r []string) []string) []byte {
		var b bytes.Buffer
		b.WriteString("ts,open,high,low,close,volume,count\n")
		for i, w := range bars {
			r := []string{fmt.Sprint(w.ts), fmt.Sprint(w.opens[0]), fmt.Sprint(w.high), fmt.Sprint(w.low),
				fmt.Sprint(w.closes[len(w.closes)-1]), fmt.Sprint(w.volume), fmt.Sprint(w.count)}
			b.WriteString(strings.Join(f(i, r), ",") + "\n")
		}
		return b.Bytes()
	}
	if _, err := checkBars(barRows(func(_ int, r []string) []string { return r }), bars); err != nil {
		t.Errorf("the right bars: %v", err)
	}
	for col, name := range []string{"ts", "open", "high", "low", "close", "volume", "count"} {
		body := barRows(func(i int, r []string) []string {
			if i == 0 {
				r[col] = "12345"
			}
			return r
		})
		if _, err := checkBars(body, bars); err == nil {
			t.Errorf("bars with a wrong %s: no error", name)
		}
	}

	latest := expectLatest(d)
	latestRows := func(skip int, price string) []byte {
		var b bytes.Buffer
		b.WriteString("ts,sym,price,size\n")
		for s, l := range latest {
			if len(l.price) == 0 || s == skip {
				continue
			}
			p := fmt.Sprint(l.price[len(l.price)-1])
			if s == 0 && price != "" {
				p = price
			}
			fmt.Fprintf(&b, "%d,%s,%s,%d\n", l.ts, d.Symbols[s], p, l.size[len(l.size)-1])
		}
		return b.Bytes()
	}
	if n, err := checkLatest(latestRows(-1, ""), d.Symbols, latest); err != nil || n != suite.NumSymbols {
		t.Errorf("the right latest rows: %d rows, %v", n, err)
	}
	if _, err := checkLatest(latestRows(7, ""), d.Symbols, latest); err == nil {
		t.Error("latest rows without a symbol: no error")
	}
	if _, err := checkLatest(latestRows(-1, "0.5"), d.Symbols, latest); err == nil {
		t.Error("latest rows with a wrong price: no error")
	}
}

// TestClickHouseConfig: the rewritten configuration uses the given ports
// on 127.0.0.1 only and the run's directory for every path.
func TestClickHouseConfig(t *testing.T) {
	if _, err := os.Stat(filepath.Join(ClickHouseConfigDir, "config.xml")); err != nil {
		t.Skip("no ClickHouse configuration to rewrite: ", err)
	}
	dir := t.TempDir()
	if err := writeClickHouseConfig(dir, 41001, 41002, 41003); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.xml"))
	if err != nil {
		t.Fatal(err)
	}
	// Comments aside, what the server reads.
	s := regexp.MustCompile(`(?s)<!--.*?-->`).ReplaceAllString(string(b), "")
	for _, want := range []string{"<http_port>41001</http_port>", "<tcp_port>41002</tcp_port>", "<interserver_http_port>41003</interserver_http_port>",
		"<listen_host>127.0.0.1</listen_host>", "<path>" + dir + "/data/</path>"} {
		if !strings.Contains(s, want) {
			t.Errorf("config.xml lacks %s", want)
		}
	}
	if n := strings.Count(s, "<listen_host>"); n != 1 {
		t.Errorf("config.xml has %d listen_host elements, want 1", n)
	}
	for _, bad := range []string{"8123", ":9000", ">9000<", ">9009<", "/var/lib/clickhouse", "/var/log/clickhouse-server"} {
		if strings.Contains(s, bad) {
			t.Errorf("config.xml still has %q", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "users.xml")); err != nil {
		t.Error(err)
	}
}
