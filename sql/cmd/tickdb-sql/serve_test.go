package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/sql/engine"
	"github.com/tickdb/tickdb/sql/pgwire"
)

// startSQL serves SQL over db on a free port of 127.0.0.1 (what
// tickdb-sql serve runs) until the test ends.
func startSQL(t testing.TB, db, token string) string {
	t.Helper()
	e, err := engine.Open(db, &engine.Options{MemoryLimit: "1GB", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := pgwire.NewServer(backend{e}, pgwire.Options{Token: token})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		e.Close()
	})
	return l.Addr().String()
}

func connect(t testing.TB, addr, token string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://grafana:%s@%s/tickdb?sslmode=disable", token, addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestLiveRows: rows tickdb serve answers 204 for are in the next SQL
// statement's answer, table and all (the table is created by the first
// write, after the SQL server started).
func TestLiveRows(t *testing.T) {
	db, live := testutil.DB(t)
	srv, err := ingest.Start(&ingest.Options{DB: db, ILPAddr: "off", HTTPAddr: "127.0.0.1:0", LiveRoot: live})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := connect(t, startSQL(t, db, "tok"), "tok")
	url := "http://" + srv.HTTPAddr().String() + "/write"
	client := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()
	for i := 1; i <= 50; i++ {
		ts := time.Now().UnixNano()
		resp, err := client.Post(url, "text/plain", strings.NewReader(fmt.Sprintf("trades,sym=S%d price=%d.5,size=%di %d\n", i%3, i, i, ts)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("write %d: %s", i, resp.Status)
		}
		var n, last int64
		if err := c.QueryRow(ctx, "SELECT count(*), max(epoch_ns(ts)) FROM trades").Scan(&n, &last); err != nil {
			t.Fatal(err)
		}
		if n != int64(i) || last != ts {
			t.Fatalf("after write %d (ts %d): SQL sees %d rows, newest %d", i, ts, n, last)
		}
	}
}

// TestGrafana runs the SQL Grafana's PostgreSQL data source sends, its
// macros expanded as Grafana expands them: a table response and a
// time-series one.
func TestGrafana(t *testing.T) {
	db := table(t)
	c := connect(t, startSQL(t, db, ""), "")
	ctx := context.Background()
	// $__timeFilter(ts) over 14:30:00-14:31:00.
	filter := "ts BETWEEN '2024-01-02T14:30:00Z' AND '2024-01-02T14:31:00Z'"

	// Table: SELECT ... WHERE $__timeFilter(ts).
	rows, err := c.Query(ctx, "SELECT ts AS \"time\", sym, price, size FROM trades WHERE "+filter+" ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var ts time.Time
		var sym string
		var price float64
		var size int64
		if err := rows.Scan(&ts, &sym, &price, &size); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %v %d", ts.UTC().Format(time.RFC3339Nano), sym, price, size))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Binary timestamps carry µs (Postgres's binary format): the ns digits go.
	want := []string{"2024-01-02T14:30:00Z AAPL 100.5 100", "2024-01-02T14:30:01Z MSFT 101.5 200", "2024-01-02T14:30:02Z AAPL 102.5 300"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("table response:\n%v\nwant\n%v", got, want)
	}

	// Time series: $__timeGroupAlias(ts, 1s) (Postgres: floor(extract(epoch ...)),
	// TimescaleDB: time_bucket), one value column per metric.
	for _, group := range []string{
		`floor(extract(epoch from ts)/1)*1 AS "time"`,
		`time_bucket('1s', ts::TIMESTAMP) AS "time"`,
	} {
		q := "SELECT " + group + ", sym AS metric, avg(price) AS value FROM trades WHERE " + filter + " GROUP BY 1, 2 ORDER BY 1, 2"
		rows, err := c.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		got = got[:0]
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprint(vals...))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(got) != 3 {
			t.Fatalf("%s: %d points: %v", q, len(got), got)
		}
	}
}

// TestPythonExample runs examples/python/tickdb_sql.py (pandas.read_sql
// through psycopg2) against the server: ns timestamps arrive intact,
// symbols as strings.
func TestPythonExample(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import psycopg2, pandas").Run(); err != nil {
		testutil.Need(t, "examples/python/tickdb_sql.py needs /usr/bin/python3 with psycopg2 and pandas (apt-get install python3-psycopg2 python3-pandas)")
	}
	db := table(t)
	addr := startSQL(t, db, "s3cret")
	host, port, _ := net.SplitHostPort(addr)
	script, err := filepath.Abs("../../../examples/python/tickdb_sql.py")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script, "--host", host, "--port", port, "--password", "s3cret", "--sym", "AAPL")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	want := "ts_ns,sym,price,size\n" +
		"1704205800000000000,AAPL,100.5,100\n" +
		"1704205802000000002,AAPL,102.5,300\n" +
		"\n" +
		"sym,vwap,volume\n" +
		"AAPL,102.0,400.0\n" +
		"MSFT,101.5,200.0\n"
	if string(out) != want {
		t.Fatalf("output:\n%s\nwant\n%s", out, want)
	}
}

// BenchmarkLiveVisible: a row written to tickdb serve, then read through
// SQL: the time from its 204 to the answer of a count over the table that
// includes it (each iteration checks the row is there).
func BenchmarkLiveVisible(b *testing.B) {
	db, live := testutil.DB(b)
	srv, err := ingest.Start(&ingest.Options{DB: db, ILPAddr: "off", HTTPAddr: "127.0.0.1:0", LiveRoot: live})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	addr := startSQL(b, db, "")
	url := "http://" + srv.HTTPAddr().String() + "/write"
	client := &http.Client{Timeout: 10 * time.Second}
	write := func(i int) {
		resp, err := client.Post(url, "text/plain", strings.NewReader(fmt.Sprintf("trades,sym=S price=%d.5,size=1i %d\n", i, time.Now().UnixNano())))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			b.Fatal(resp.Status)
		}
	}
	write(0)
	c := connect(b, addr, "")
	ctx := context.Background()
	var lat []time.Duration
	for i := 1; b.Loop(); i++ {
		write(i)
		t0 := time.Now()
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM trades").Scan(&n); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if n != i+1 {
			b.Fatalf("%d rows, want %d", n, i+1)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}

// TestServeCommand runs tickdb-sql serve as a process of its own (this
// test binary again, as main): it prints its address, answers a client
// with the token as password, refuses one without, and exits 0 on SIGTERM.
func TestServeCommand(t *testing.T) {
	db := table(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TICKDB_SQL_MAIN=serve --db "+db+" --addr 127.0.0.1:0 --token tok --memory-limit 512MB")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		var acc string
		for {
			n, err := stderr.Read(buf)
			acc += string(buf[:n])
			for {
				i := strings.IndexByte(acc, '\n')
				if i < 0 {
					break
				}
				lines <- acc[:i]
				acc = acc[i+1:]
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	var addr string
	deadline := time.After(30 * time.Second)
	for addr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("serve exited before it printed its address")
			}
			// tickdb-sql: serving SQL over DIR on 127.0.0.1:PORT (...)
			if i := strings.Index(l, "serving SQL over "); i >= 0 {
				if j := strings.Index(l[i:], " on "); j >= 0 {
					addr = strings.Fields(l[i+j+4:])[0]
				}
			}
		case <-deadline:
			t.Fatal("no address printed in 30 s")
		}
	}
	go func() { // the rest of its log
		for range lines {
		}
	}()
	c := connect(t, addr, "tok")
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM trades").Scan(&n); err != nil || n != 3 {
		t.Fatalf("count %d, %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pgx.Connect(ctx, "postgres://u:wrong@"+addr+"/tickdb?sslmode=disable"); err == nil || !strings.Contains(err.Error(), "28P01") {
		t.Fatalf("a wrong password: %v, want SQLSTATE 28P01", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit within 30 s of SIGTERM")
	}
}

func TestMain(m *testing.M) {
	if args := os.Getenv("TICKDB_SQL_MAIN"); args != "" {
		os.Exit(run(strings.Fields(args), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
