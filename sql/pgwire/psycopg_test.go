package pgwire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// Debian's python3 with python3-psycopg2 and python3-pandas reads the
// trades table (testdata/psycopg_read.py). Without them the test skips,
// or fails when CI is set.

const python = "/usr/bin/python3"

func TestPsycopg(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		testutil.Need(t, python+" is missing; install python3, python3-psycopg2 and python3-pandas (Debian)")
	}
	if out, err := exec.Command(python, "-c", "import psycopg2, pandas").CombinedOutput(); err != nil {
		testutil.Need(t, fmt.Sprintf("%s cannot import psycopg2 and pandas (%v: %s); install python3-psycopg2 and python3-pandas (Debian)",
			python, err, bytes.TrimSpace(out)))
	}
	b := newTestBackend(t)
	srv := startServer(t, b, Options{Token: testToken})
	host, port, _ := strings.Cut(srv.Addr().String(), ":")
	dsn := fmt.Sprintf("host=%s port=%s user=u password=%s dbname=db connect_timeout=10 sslmode=disable", host, port, testToken)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/psycopg_read.py", dsn)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PYTHONDONTWRITEBYTECODE=1"}
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("psycopg_read.py: %v\nstderr:\n%s", err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Logf("psycopg_read.py stderr:\n%s", stderr.Bytes())
	}
	var got struct {
		WholeSecond string `json:"datetime_whole_second"`
		Nanos       string `json:"datetime_nanos"`
		NanosError  string `json:"datetime_nanos_error"`
		EpochNS     int64  `json:"epoch_ns"`
		Dtypes      map[string]string
		TsNS        []int64 `json:"ts_ns"`
		Sym         []string
		SymTypes    []string `json:"sym_types"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("psycopg_read.py printed %q: %v", stdout.Bytes(), err)
	}
	// With the typecaster: every nanosecond, as written.
	if want := []int64{tradeNanos[3], tradeNanos[0], tradeNanos[1], tradeNanos[2]}; !reflect.DeepEqual(got.TsNS, want) {
		t.Errorf("pandas ts = %v, want %v", got.TsNS, want)
	}
	if got.Dtypes["ts"] != "datetime64[ns]" || got.Dtypes["sym"] != "object" {
		t.Errorf("dtypes %v, want ts datetime64[ns], sym object", got.Dtypes)
	}
	if !reflect.DeepEqual(got.Sym, []string{"OLD", "AAPL", "MSFT", `A,"B"`}) || !reflect.DeepEqual(got.SymTypes, []string{"str"}) {
		t.Errorf("sym = %q of types %v, want strings", got.Sym, got.SymTypes)
	}
	if got.EpochNS != tradeNanos[0] {
		t.Errorf("epoch_ns(ts) = %d, want %d", got.EpochNS, tradeNanos[0])
	}
	// Without it psycopg2 makes datetimes, which hold microseconds: a
	// whole second reads fine, nine fraction digits make it raise.
	if got.WholeSecond != "2023-11-14 22:13:21" {
		t.Errorf("psycopg2 datetime = %q, want 2023-11-14 22:13:21", got.WholeSecond)
	}
	if got.Nanos != "" || got.NanosError != "microsecond must be in 0..999999" {
		t.Errorf("psycopg2 on a nanosecond timestamp: %q, error %q; want the ValueError", got.Nanos, got.NanosError)
	}
}
