package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

// smallBench is a bench command line that runs in a few seconds.
func smallBench(dir string, more ...string) []string {
	return append([]string{"bench", "-q", "--dir", dir, "--rows", "20000", "--reps", "2",
		"--windows", "10", "--observe", "1000", "--ilp-lines", "5000"}, more...)
}

func TestBenchJSONGuard(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	guard := filepath.Join(dir, "guard.json")
	// The repository's own thresholds must load; the checks themselves
	// are timing ratios, so this test only asks that they ran.
	g, err := suite.LoadGuard(filepath.Join("..", "..", ".ci", "bench-guard.json"))
	if err != nil {
		t.Fatal(err)
	}
	loose := `{"about": "test", "rules": [{"metric": "get", "min_vs_limit": 0.0001, "max_allocs": 0.5}]}`
	if err := os.WriteFile(guard, []byte(loose), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(smallBench(work, "--json", "--guard", guard)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep suite.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.N != 20000 || rep.Reps != 2 || rep.Machine.Cores < 1 || rep.Machine.CPU == "" {
		t.Fatalf("report header: %+v", rep)
	}
	for _, m := range []string{suite.MIngest, suite.MAppend, suite.MObserve, suite.MGet, suite.MWindow, suite.MScan, suite.MBars, suite.MAsOf, suite.MILP} {
		if x := rep.Find(m, suite.TickDB); x == nil || len(x.Reps) != 2 || x.Value <= 0 {
			t.Errorf("%s: %+v", m, x)
		}
	}
	if l := rep.Find(suite.MWindow, suite.TickDB).Lat; l == nil || l.Count != 20 || l.P9999 < l.P50 {
		t.Errorf("window latency: %+v", l)
	}
	if _, ok := g.Check(&rep); len(g.Rules) == 0 || !strings.Contains(errs, "guard ok") {
		t.Errorf("guard lines missing (ok=%v):\n%s", ok, errs)
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("bench left %d entries in --dir", len(left))
	}

	// The table form names the machine and the limits.
	code, out, errs = runCLI(smallBench(work, "--reps", "1")...)
	if code != 0 || !strings.Contains(out, "| append | rows/s |") || !strings.Contains(out, "tickdb ÷ limit") || !strings.Contains(out, "kernel") {
		t.Fatalf("exit %d, table:\n%s\n%s", code, out, errs)
	}
}

func TestBenchGuardFails(t *testing.T) {
	dir := t.TempDir()
	guard := filepath.Join(dir, "guard.json")
	// No machine appends at 1,000 times its raw store rate.
	strict := `{"about": "test", "rules": [{"metric": "append", "min_vs_limit": 1000}]}`
	if err := os.WriteFile(guard, []byte(strict), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(smallBench(work, "--reps", "1", "--guard", guard)...)
	if code != 1 || !strings.Contains(errs, "guard FAIL append") || !strings.Contains(errs, "regression guard: 1 of 1 checks failed") {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--rows", "10"}, "want at least 10000"},
		{[]string{"bench", "--reps", "0"}, "must be positive"},
		{[]string{"bench", "--guard", "/nonexistent/guard.json"}, "no such file"},
		{[]string{"bench", "--plot", "x.svg"}, "unknown flag: --plot"}, // plots: the bench module
	} {
		code, _, errs := runCLI(c.args...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}

// --rate appends one row at a time at the offered rate and times each row
// from its intended start; the figure is the rate achieved, with no limit.
func TestBenchRate(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(smallBench(dir, "--reps", "1", "--rate", "200000", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep suite.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	a := rep.Find(suite.MAppend, suite.TickDB)
	if rep.Mode != "rate=200k rows/s" || a == nil || a.Lat == nil || a.Lat.Count != 20000 || rep.Find(suite.MAppend, suite.Limit) != nil {
		t.Fatalf("mode %q, append %+v", rep.Mode, a)
	}
	// Paced, the achieved rate cannot exceed the offered one by more
	// than the clock's granularity allows.
	if a.Value > 200000*1.05 || !strings.Contains(a.Note, "offered") {
		t.Fatalf("append at 200k rows/s offered: %v rows/s, note %q", a.Value, a.Note)
	}
}

// bench readme rewrites a README's regions from the reports, and
// --check fails on a README that differs, naming the command.
func TestBenchReadme(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	doc := "# x\n<!-- bench:summary begin -->\n<!-- bench:summary end -->\n<!-- bench:tickdb begin -->\nstale\n<!-- bench:tickdb end -->\n" +
		"<!-- bench:peers begin -->\n<!-- bench:peers end -->\n"
	if err := os.WriteFile(readme, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"bench", "readme", "--readme", readme,
		"--report", filepath.Join("..", "..", suite.ReadmeReport), "--peers", filepath.Join("..", "..", suite.ReadmePeersReport)}
	code, _, errs := runCLI(append(args, "--check")...)
	if code == 0 || !strings.Contains(errs, "differs") || !strings.Contains(errs, suite.ReadmeRegen) {
		t.Fatalf("--check of a stale README: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(readme); string(b) != doc {
		t.Fatal("--check changed the README")
	}
	if code, _, errs := runCLI(args...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(readme)
	if strings.Contains(string(b), "stale") || !strings.Contains(string(b), "| **special option** `CloseCompacted(0)`") {
		t.Fatalf("rewritten:\n%s", b)
	}
	if code, _, errs := runCLI(append(args, "--check")...); code != 0 || !strings.Contains(errs, "up to date") {
		t.Fatalf("--check after the rewrite: exit %d: %s", code, errs)
	}
	if err := os.WriteFile(readme, []byte("# no regions\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(args...); code == 0 || !strings.Contains(errs, `region "summary"`) {
		t.Fatalf("a README without regions: exit %d: %s", code, errs)
	}
}
