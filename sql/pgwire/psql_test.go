package pgwire

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// psql 15 (Debian's postgresql-client) against the server: its catalog
// queries (\dt, \d NAME, \d, \l), a query, an error excerpt, \copy.
// Without psql the test skips, or fails when CI is set.

const psqlTimeout = 30 * time.Second

func psqlPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/psql"); err == nil {
		return "/usr/bin/psql"
	}
	testutil.Need(t, "psql is not on PATH; install postgresql-client (Debian) to run the psql tests")
	return ""
}

// runPsql runs psql -c cmd and returns its stdout, stderr and error.
func runPsql(t *testing.T, psql string, srv *Server, cmd string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), psqlTimeout)
	defer cancel()
	_, port, _ := strings.Cut(srv.Addr().String(), ":")
	c := exec.CommandContext(ctx, psql, "-h", "127.0.0.1", "-p", port, "-U", "u", "-d", "db", "-X",
		"-v", "ON_ERROR_STOP=1", "-c", cmd)
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "PGPASSWORD=" + testToken, "PGCONNECT_TIMEOUT=10",
		"PAGER=cat", "PSQL_PAGER=cat", "LANG=C.UTF-8", "COLUMNS=200", "HOME=" + t.TempDir()}
	c.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	return stdout.String(), stderr.String(), err
}

func TestPsql(t *testing.T) {
	psql := psqlPath(t)
	b := newTestBackend(t)
	srv := startServer(t, b, Options{Token: testToken})
	for _, tc := range []struct {
		name, cmd string
		want      []string // lines stdout must have, spaces squeezed
	}{
		{"dt", `\dt`, []string{"main | big_trades | view | tickdb", "main | trades | table | tickdb", "(2 rows)"}},
		{"d", `\d`, []string{"main | big_trades | view | tickdb", "main | trades | table | tickdb"}},
		{"d-table", `\d trades`, []string{`Table "main.trades"`, "ts | timestamp_ns | | |", "sym | varchar | | |",
			"price | float8 | | |", "size | int8 | | |", "flag | bool | | |"}},
		{"d-view", `\d big_trades`, []string{`View "main.big_trades"`, "ts | timestamp_ns | | |", "flag | bool | | |"}},
		{"l", `\l`, []string{"memory | tickdb | UTF8 | C | C | | libc |"}},
		{"select", `SELECT sym, size, ts FROM trades WHERE size > 0 ORDER BY ts`, []string{
			"AAPL | 100 | 2023-11-14 22:13:20.123456789", "MSFT | 250 | 2023-11-14 22:13:20.12345679", "(2 rows)"}},
		{"copy", `\copy (SELECT ts, sym, price, size, flag FROM trades ORDER BY ts) TO STDOUT WITH CSV HEADER`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := runPsql(t, psql, srv, tc.cmd)
			if err != nil || stderr != "" {
				t.Fatalf("psql -c %q: %v\nstderr:\n%s\nstdout:\n%s", tc.cmd, err, stderr, stdout)
			}
			if tc.name == "copy" {
				want := "ts,sym,price,size,flag\n" +
					"1969-12-31 23:59:59.999999999,OLD,-1.5,-7,t\n" +
					"2023-11-14 22:13:20.123456789,AAPL,189.5,100,t\n" +
					"2023-11-14 22:13:20.12345679,MSFT,370.25,250,f\n" +
					"2023-11-14 22:13:21,\"A,\"\"B\"\"\",,,\n"
				if stdout != want {
					t.Errorf("\\copy wrote\n%s\nwant\n%s", stdout, want)
				}
				return
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(stdout, "\n") {
				lines[strings.Join(strings.Fields(l), " ")] = true
			}
			for _, w := range tc.want {
				if !lines[w] {
					t.Errorf("no line %q in\n%s", w, stdout)
				}
			}
		})
	}

	t.Run("syntax-error", func(t *testing.T) {
		stdout, stderr, err := runPsql(t, psql, srv, "SELECT * FORM trades")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("psql exited with %v, want a failure\nstdout: %s", err, stdout)
		}
		// DuckDB's parser reads "* FORM" as a star with an alias, so the
		// error is at the next word, where the caret points.
		want := "ERROR:  syntax error at or near \"trades\"\n" +
			"LINE 1: SELECT * FORM trades\n" +
			"                      ^\n"
		if stderr != want {
			t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
		}
		_, stderr, _ = runPsql(t, psql, srv, "SELECT 1 AS one,\n       nosuch AS two\nFROM trades")
		want = "ERROR:  Referenced column \"nosuch\" not found in FROM clause!\n" +
			"LINE 2:        nosuch AS two\n" +
			"               ^\n"
		if !strings.HasPrefix(stderr, want) {
			t.Errorf("stderr:\n%s\nwant it to start with:\n%s", stderr, want)
		}
	})
}
