package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tickdb/tickdb/internal/gen"
	"github.com/tickdb/tickdb/internal/suite"
	"github.com/tickdb/tickdb/internal/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// testChildSeedEnv, in a demo test's environment, makes its reader process
// check against another seed, so that it must report a mismatch.
const testChildSeedEnv = "TICKDB_TEST_CHILD_SEED"

// TestMain serves two roles. With demoChildEnv set it is not running tests
// at all: the demo under test re-executed this binary (os.Executable) as
// its reader process, so it runs the CLI on its arguments and exits, just
// as the tickdb binary would. Otherwise it runs the package's tests and
// fails them if goroutines leak.
func TestMain(m *testing.M) {
	suite.MaybeChild() // bench's cross-process reader
	if os.Getenv(demoChildEnv) != "" {
		args := os.Args[1:]
		if seed := os.Getenv(testChildSeedEnv); seed != "" {
			args = append(args, "--seed", seed) // the last --seed wins
		}
		os.Exit(run(args, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// TestDemoInProcess runs the whole demo in this process (its reader is a
// second process: this test binary, re-executed) and checks the report.
func TestDemoInProcess(t *testing.T) {
	db, live := testutil.DB(t)
	const rows = 200_000
	var out, errb bytes.Buffer
	code := run([]string{"demo", "--db", db, "--live-dir", live, "--rows", "200000", "--symbols", "50", "--seed", "3"}, &out, &errb)
	report := out.String()
	if code != 0 {
		t.Fatalf("demo exit %d; stderr:\n%s\nstdout:\n%s", code, errb.String(), report)
	}
	t.Logf("report:\n%s", report)
	// Warnings are allowed (O_DIRECT refused by a tmpfs TMPDIR), errors not.
	if strings.Contains(errb.String(), "level=ERROR") {
		t.Errorf("stderr has errors:\n%s", errb.String())
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^tickdb demo: 200,000 ticks over 50 symbols \(seed 3\)$`),
		regexp.MustCompile(`(?m)^write$`),
		regexp.MustCompile(`(?m)^  throughput +[0-9,]+  ticks/s$`),
		regexp.MustCompile(`(?m)^reader process \(pid [0-9]+\)$`),
		regexp.MustCompile(`(?m)^  rows verified +200,000  every value, in order, no gaps$`),
		regexp.MustCompile(`(?m)^latency +samples +p50 +p99 +p99\.9 +max$`),
		regexp.MustCompile(`(?m)^  append, 1 in 64 +3,125 `),
		regexp.MustCompile(`(?m)^  publish → visible, 1 in 1024 +195 `),
		regexp.MustCompile(`(?m)^  publish → verified, 1 in 1024 +195 `),
		regexp.MustCompile(`(?m)^queries `),
		regexp.MustCompile(`(?m)^  all rows, all symbols +200,000 `),
		regexp.MustCompile(`(?m)^  symbol SPY, whole span +[0-9,]+ `),
		regexp.MustCompile(`(?m)^  Get\(seq\), random seq +1 `),
		regexp.MustCompile(`(?m)^writer stats$`),
		regexp.MustCompile(`(?m)^  rows durable +200,000$`),
		regexp.MustCompile(`(?m)^done in .*; data kept in ` + regexp.QuoteMeta(db) + `$`),
	} {
		if !want.MatchString(report) {
			t.Errorf("report has no line matching %s", want)
		}
	}
	// The latency table's columns line up (widths count runes: "µs", "→").
	var widths []int
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, "  append,") || strings.HasPrefix(l, "  batch:") || strings.HasPrefix(l, "  publish →") || strings.HasPrefix(l, "latency") {
			widths = append(widths, len([]rune(l)))
		}
	}
	if len(widths) != 5 || slices.Max(widths) != slices.Min(widths) {
		t.Errorf("latency table lines have rune widths %v, want 5 equal", widths)
	}
	// The writer closed: its live slots are gone, the table is complete.
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("live dir %s still there after the demo (%v)", live, err)
	}
	rep, err := reader.Verify(db, demoTable, nil)
	if err != nil || rep.Rows != rows {
		t.Errorf("verify: %d rows, %v; want %d rows, no damage", rep.Rows, err, rows)
	}
}

// TestDemoReaderMismatch: when the reader process finds a row it did not
// expect, the demo fails with its message, and cleans up.
func TestDemoReaderMismatch(t *testing.T) {
	t.Setenv(testChildSeedEnv, "99")
	db, live := testutil.DB(t)
	var out, errb bytes.Buffer
	code := run([]string{"demo", "--db", db, "--live-dir", live, "--rows", "20000"}, &out, &errb)
	if code != 1 {
		t.Fatalf("demo exit %d, want 1; stdout:\n%s", code, out.String())
	}
	want := regexp.MustCompile(`^tickdb: demo: reader process failed \(exit status 1\): demo reader: row 0: got ts=\d+ sym=\d+ price=\S+ size=\d+ check-ok=true, want ts=\d+ .*\n$`)
	if !want.MatchString(errb.String()) {
		t.Errorf("stderr %q, want a match for %s", errb.String(), want)
	}
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("live dir %s still there after the failed demo (%v)", live, err)
	}
}

// TestDemoBinary builds tickdb and runs "tickdb demo" as a user would: a
// temporary database (under the test's TMPDIR) and the default live
// directory, both removed at the end.
func TestDemoBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "tickdb")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	tmp := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "demo", "--rows", "100000")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	report := out.String()
	// Whatever happened, leave no live slots behind.
	if m := regexp.MustCompile(`live slots in (\S+)`).FindStringSubmatch(report); m != nil {
		live := m[1]
		t.Cleanup(func() { os.RemoveAll(live) })
		if _, serr := os.Stat(live); !os.IsNotExist(serr) {
			t.Errorf("live dir %s still there after the demo (%v)", live, serr)
		}
	}
	if err != nil {
		t.Fatalf("tickdb demo: %v\nstderr:\n%s\nstdout:\n%s", err, errb.String(), report)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  rows verified +100,000  every value, in order, no gaps$`),
		regexp.MustCompile(`(?m)^writer stats$`),
		regexp.MustCompile(`(?m)^done in .*; live slots removed; temporary database removed$`),
	} {
		if !want.MatchString(report) {
			t.Errorf("report has no line matching %s:\n%s", want, report)
		}
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Errorf("TMPDIR after the demo: %v, %v (want empty)", ents, err)
	}
}

// demoTable writes rows ticks of gen seed 1 into a fresh table and closes
// the writer; it returns the database directory.
func demoTestTable(t *testing.T, rows int) string {
	t.Helper()
	db, live := testutil.DB(t)
	w, err := writer.Open(db, demoTable, &writer.Options{Schema: store.TickSchema(), LiveDir: live, SegmentSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	g := gen.New(gen.Options{Symbols: 10, Seed: 1})
	ids := make([]uint32, len(g.Symbols()))
	for i, s := range g.Symbols() {
		if ids[i], err = w.SymbolString(s); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, rows*w.Schema().RowSize)
	demoEncode(buf, w.Schema(), g, ids)
	if _, n, err := w.AppendBatch(buf); err != nil || n != rows {
		t.Fatalf("AppendBatch: %d rows, %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// runReader runs the hidden demo-reader command in-process with stdin
// held open until the returned cancel, which then waits for it to end.
func runReader(t *testing.T, args ...string) (out *bytes.Buffer, done <-chan error, stop func()) {
	t.Helper()
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs(append([]string{"demo-reader"}, args...))
	out = &bytes.Buffer{}
	root.SetOut(out)
	root.SetErr(io.Discard)
	root.SetIn(pr)
	ch := make(chan error, 1)
	go func() { ch <- root.ExecuteContext(context.Background()) }()
	stop = func() { pw.Close() }
	t.Cleanup(stop)
	return out, ch, stop
}

func TestDemoReaderVerifies(t *testing.T) {
	const rows = 5000
	db := demoTestTable(t, rows)
	wait := func(ch <-chan error) error {
		select {
		case err := <-ch:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("demo-reader did not finish")
			return nil
		}
	}
	t.Run("match", func(t *testing.T) {
		out, ch, _ := runReader(t, "--db", db, "--rows", "5000", "--symbols", "10", "--seed", "1")
		if err := wait(ch); err != nil {
			t.Fatalf("demo-reader: %v", err)
		}
		var last demoMsg
		samples := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			last = demoMsg{}
			if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			if last.Seen != 0 {
				samples++
				if last.Visible == 0 || last.Visible > last.Seen {
					t.Errorf("sample %+v: visible must be set and not after seen", last)
				}
			}
		}
		if !last.Done || last.Rows != rows || samples != rows/demoSampleEvery {
			t.Errorf("last line %+v after %d samples; want done, %d rows, %d samples", last, samples, rows, rows/demoSampleEvery)
		}
	})
	t.Run("other seed", func(t *testing.T) {
		_, ch, _ := runReader(t, "--db", db, "--rows", "5000", "--symbols", "10", "--seed", "2")
		err := wait(ch)
		if err == nil || !strings.Contains(err.Error(), "row 0: got ts=") {
			t.Fatalf("demo-reader with the wrong seed: %v, want a row 0 mismatch", err)
		}
	})
	t.Run("stdin closed", func(t *testing.T) {
		// More rows than the table holds: it waits, until the demo (its
		// stdin) goes away.
		_, ch, stop := runReader(t, "--db", db, "--rows", "6000", "--symbols", "10", "--seed", "1")
		time.Sleep(50 * time.Millisecond)
		stop()
		err := wait(ch)
		if err == nil || !strings.Contains(err.Error(), "waiting for row 5000") {
			t.Fatalf("demo-reader after stdin closed: %v, want a cancelled wait at row 5000", err)
		}
	})
}

func TestDemoErrors(t *testing.T) {
	db := demoTestTable(t, 10)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no rows", []string{"demo", "--rows", "0"}, "tickdb: demo: --rows 0: want at least 1\n"},
		{"bad size", []string{"demo", "--segment-size", "12X"}, `tickdb: invalid argument "12X" for "--segment-size" flag: "12X" is not a size (bytes, or a number with K, M or G)` + "\n"},
		{"table exists", []string{"demo", "--db", db}, "tickdb: demo: table trades already exists in " + db + " (give a new --db, or omit it for a temporary one)\n"},
		{"extra arg", []string{"demo", "now"}, "tickdb: unknown command \"now\" for \"tickdb demo\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tc.args, &out, &errb); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if errb.String() != tc.want {
				t.Errorf("stderr %q, want %q", errb.String(), tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
}
