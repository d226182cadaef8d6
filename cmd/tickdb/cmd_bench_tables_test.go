//go:build linux

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/scaletables"
)

// bench tables runs serve (this test binary as the CLI) for each count,
// writes every table in turn and reads them back: a small run, its JSON
// and its table.
func TestBenchTables(t *testing.T) {
	benchTablesRole = cliRole
	t.Cleanup(func() { benchTablesRole = "" })
	args := []string{"bench", "tables", "-q", "--dir", t.TempDir(), "--tables", "1,12", "--rows", "2",
		"--rate", "60", "--duration", "1s", "--rows-per-write", "3", "--clients", "4"}
	code, out, errs := runCLI(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rs []scaletables.Result
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rs) != 2 || rs[0].Tables != 1 || rs[1].Tables != 12 {
		t.Fatalf("results %+v", rs)
	}
	for _, r := range rs {
		want := uint64(r.Tables*2) + uint64(r.Writes)*3
		if r.Writes != 60 || r.Errors != 0 || r.Verified != want || r.P50 <= 0 || r.Max < r.P99 {
			t.Fatalf("%d tables: %d writes, %d errors, %d rows read back (want %d), p50 %v p99 %v max %v",
				r.Tables, r.Writes, r.Errors, r.Verified, want, r.P50, r.P99, r.Max)
		}
		if r.Idle.Threads == 0 || r.Idle.Files == 0 || r.Idle.RSS == 0 || r.Written.Files < r.Start.Files {
			t.Fatalf("%d tables: serve's figures %+v", r.Tables, r)
		}
	}
	code, out, errs = runCLI(args...)
	if code != 0 || !strings.Contains(out, "open files idle/wr") || !strings.Contains(out, "      12 ") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if code, _, errs := runCLI("bench", "tables", "--tables", "0"); code == 0 || !strings.Contains(errs, "--tables") {
		t.Fatalf("--tables 0: exit %d: %s", code, errs)
	}
}
