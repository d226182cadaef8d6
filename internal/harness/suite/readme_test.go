package suite

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../../.."

func readmeInputs(t *testing.T) (readme []byte, rep, peers *Report) {
	t.Helper()
	var err error
	if rep, err = LoadReport(filepath.Join(root, ReadmeReport)); err != nil {
		t.Fatal(err)
	}
	if peers, err = LoadReport(filepath.Join(root, ReadmePeersReport)); err != nil {
		t.Fatal(err)
	}
	if readme, err = os.ReadFile(filepath.Join(root, "README.md")); err != nil {
		t.Fatal(err)
	}
	return readme, rep, peers
}

// The README's figures are what the committed reports generate, so they
// cannot go stale silently: a new report, or an edit by hand, fails
// here until the tables are generated again.
func TestReadme(t *testing.T) {
	readme, rep, peers := readmeInputs(t)
	if rep.Machine.Commit == "" || rep.Machine.CPU == "" || rep.Machine.Cores == 0 {
		t.Errorf("%s does not name its tree and machine: %+v", ReadmeReport, rep.Machine)
	}
	got, err := Readme(readme, rep, peers)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, readme) {
		have, want := strings.Split(string(readme), "\n"), strings.Split(string(got), "\n")
		line := 0
		for line < min(len(have), len(want)) && have[line] == want[line] {
			line++
		}
		h, w := "(end)", "(end)"
		if line < len(have) {
			h = have[line]
		}
		if line < len(want) {
			w = want[line]
		}
		t.Fatalf("README.md's figures differ from what %s and %s generate: run %q (from the repository's root).\nline %d is\n\t%s\nwant\n\t%s",
			ReadmeReport, ReadmePeersReport, ReadmeRegen, line+1, h, w)
	}
	// The headline figures are in the README, the special option in a
	// row of its own.
	for _, m := range []string{MIngest, MObserve, MWindow, MWindowFirst, MDiskBytes, MDiskBytesCmp} {
		if rep.Find(m, TickDB) == nil {
			t.Errorf("%s has no %s figure", ReadmeReport, m)
		}
	}
	if !bytes.Contains(readme, []byte("| **special option** `CloseCompacted(0)`")) {
		t.Error("README: no labelled row for CloseCompacted")
	}
}

// Readme replaces exactly its regions, every figure from the report.
func TestReadmeRegions(t *testing.T) {
	_, rep, peers := readmeInputs(t)
	doc := []byte("intro\n<!-- bench:summary begin -->\nold\n<!-- bench:summary end -->\nmiddle\n" +
		"<!-- bench:tickdb begin -->\n<!-- bench:tickdb end -->\n<!-- bench:peers begin -->\nx\n<!-- bench:peers end -->\ntail\n")
	got, err := Readme(doc, rep, peers)
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if !strings.HasPrefix(s, "intro\n") || !strings.HasSuffix(s, "<!-- bench:peers end -->\ntail\n") ||
		!strings.Contains(s, "\nmiddle\n") || strings.Contains(s, "\nold\n") {
		t.Fatalf("regions replaced wrongly:\n%s", s)
	}
	if again, err := Readme(got, rep, peers); err != nil || !bytes.Equal(again, got) {
		t.Fatalf("a second pass changed the result (%v)", err)
	}
	// A figure of the report is the figure in the table: change the
	// median of ingest and the table changes with it.
	obs := rep.Find(MObserve, TickDB)
	if obs == nil || obs.Lat == nil {
		t.Fatalf("no %s latency", MObserve)
	}
	if !strings.Contains(s, Dur(obs.Lat.P50)) || !strings.Contains(s, Dur(obs.Lat.P99)) {
		t.Errorf("the p50 %s and p99 %s of %s are not in:\n%s", Dur(obs.Lat.P50), Dur(obs.Lat.P99), MObserve, s)
	}
	in := rep.Find(MIngest, TickDB)
	old := in.Value
	in.Value = 123.4e6
	changed, err := Readme(got, rep, peers)
	in.Value = old
	if err != nil || bytes.Equal(changed, got) || !strings.Contains(string(changed), "| 123 M |") {
		t.Fatalf("ingest at 123.4 M rows/s did not change the table (%v):\n%s", err, changed)
	}
	for _, bad := range []string{
		"no markers\n",
		"<!-- bench:summary end -->\n<!-- bench:summary begin -->\n",
		"<!-- bench:summary begin -->\n<!-- bench:summary begin -->\n<!-- bench:summary end -->\n",
	} {
		if _, err := Readme([]byte(bad), rep, peers); err == nil || !strings.Contains(err.Error(), `region "summary"`) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
