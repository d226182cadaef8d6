package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tickdb/tickdb/internal/harness/child"
	"github.com/tickdb/tickdb/internal/harness/suite"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
)

// testChildSeedEnv, in a demo test's environment, makes its reader process
// check against another seed, so that it must report a mismatch.
const testChildSeedEnv = "TICKDB_TEST_CHILD_SEED"

// cliRole is the child role (internal/harness/child) in which this test binary,
// re-executed, runs the CLI on its arguments, as the tickdb binary would.
const cliRole = "cli"

// TestMain serves two roles. Re-executed as a child (internal/harness/child), this
// binary is not running tests at all: it is the CLI (cliRole), or one of
// the suite's child processes (the demo's reader, bench's), just as the
// tickdb binary would be. Otherwise it runs the package's tests and fails
// them if goroutines leak.
func TestMain(m *testing.M) {
	if seed := os.Getenv(testChildSeedEnv); seed != "" && child.Role() != "" {
		os.Args = append(os.Args, "-seed", seed) // the demo reader's last -seed wins
	}
	roles := suite.Roles()
	roles[cliRole] = func() error {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
		return nil
	}
	child.Run(roles)
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
	// Warnings are allowed (O_DIRECT refused by a tmpfs TMPDIR), errors
	// not, nor the durable-lag warning: the report explains the lag.
	if strings.Contains(errb.String(), "level=ERROR") || strings.Contains(errb.String(), demoLagMsg) {
		t.Errorf("stderr has errors or lag warnings:\n%s", errb.String())
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^tickdb demo: 200,000 ticks over 50 symbols \(seed 3\)$`),
		regexp.MustCompile(`(?m)^write$`),
		regexp.MustCompile(`(?m)^  throughput +[0-9,]+  ticks/s$`),
		// What the throughput measures, and why it differs from the
		// store's own speed and from the README's figure.
		regexp.MustCompile(`(?m)^  median batch rate +[0-9,]+  ticks/s: 64 appends and a publish in \S+ \S+$`),
		regexp.MustCompile(`(?m)^  batches over 10 µs +[0-9,]+  \S+ \S+ of the append time$`),
		regexp.MustCompile(`(?m)^  Throughput is wall time over all 200,000 ticks; the median batch rate is the$`),
		regexp.MustCompile(`(?m)^  compaction on as here\) is a wall-clock rate like the throughput\.$`),
		// The durable lag, and what an alarm means.
		regexp.MustCompile(`(?m)^durability \(the durable lag: rows published, not yet durable\)$`),
		regexp.MustCompile(`(?m)^  largest durable lag +[0-9,]+  rows: \S+ \S+, [0-9.]+ segments, sampled every 1 ms$`),
		regexp.MustCompile(`(?m)^  time over one segment +\S+ \S+  durable-lag alarms: [0-9,]+ publishes$`),
		regexp.MustCompile(`(?m)^  flusher writes +[0-9,]+  \S+ \S+; a flusher with a CPU to itself writes about once a ms \([0-9,]+ ms of appends\)$`),
		regexp.MustCompile(`(?m)^  on CPUs it shares, so alarms here need no action\. The lag cannot pass 3$`),
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

func TestDemoErrors(t *testing.T) {
	db := t.TempDir()
	if err := os.Mkdir(filepath.Join(db, demoTable), 0o755); err != nil {
		t.Fatal(err)
	}
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

// TestDemoLogHandler: the demo's log drops the writer's durable-lag
// warning, which its report replaces, and keeps every other record,
// through WithAttrs and WithGroup too.
func TestDemoLogHandler(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(demoLogHandler{slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelWarn})})
	for _, l := range []*slog.Logger{log, log.With("table", "trades"), log.WithGroup("g")} {
		l.Warn(demoLagMsg, "lag_rows", 1)
		l.Warn("writer: something else")
	}
	if got := b.String(); strings.Contains(got, demoLagMsg) || strings.Count(got, "something else") != 3 {
		t.Fatalf("log:\n%s\nwant three other warnings and no lag warning", got)
	}
}
