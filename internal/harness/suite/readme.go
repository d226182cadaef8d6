package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// The README's figure tables are generated from committed reports, so
// that a figure cannot outlive the run that measured it: Readme rewrites
// the regions between "<!-- bench:NAME begin -->" and "<!-- bench:NAME
// end -->" lines, and a test fails when README.md differs from what the
// committed reports generate.
const (
	// ReadmeReport is the tickdb bench report the README's headline
	// figures come from (paths relative to the repository's root).
	ReadmeReport = "docs/bench/readme.json"
	// ReadmePeersReport is the bench module's report with the peers.
	ReadmePeersReport = "docs/bench-peers.json"
	// ReadmeRegen is the command that regenerates the tables from them.
	ReadmeRegen = "go run ./cmd/tickdb bench readme"
	// ReadmeMeasure is the command that measures ReadmeReport again.
	ReadmeMeasure = "go run ./cmd/tickdb bench --rows 20000000 --json > " + ReadmeReport
)

// The README's generated regions.
const (
	RegionSummary = "summary" // the first screen's figures
	RegionTickDB  = "tickdb"  // the headline table: tickdb, the machine's limits, published figures
	RegionPeers   = "peers"   // tickdb and the peers (the bench module's run)
)

// LoadReport reads a report written by WriteJSON.
func LoadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Results) == 0 {
		return nil, fmt.Errorf("%s: a report with no results", path)
	}
	return &r, nil
}

// Readme returns readme with its generated regions rewritten from rep
// (tickdb bench's report) and peers (the bench module's); it fails if a
// region's markers are missing or out of order.
func Readme(readme []byte, rep, peers *Report) ([]byte, error) {
	for _, g := range []struct {
		name string
		body string
	}{
		{RegionSummary, summary(rep)},
		{RegionTickDB, headline(rep)},
		{RegionPeers, peerTable(peers, rep)},
	} {
		var err error
		if readme, err = replaceRegion(readme, g.name, g.body); err != nil {
			return nil, err
		}
	}
	return readme, nil
}

// replaceRegion replaces the lines between region name's markers with
// body.
func replaceRegion(doc []byte, name, body string) ([]byte, error) {
	begin := []byte("<!-- bench:" + name + " begin -->\n")
	end := []byte("<!-- bench:" + name + " end -->")
	i := bytes.Index(doc, begin)
	j := bytes.Index(doc, end)
	if i < 0 || j < 0 || j < i+len(begin) || bytes.Count(doc, begin) != 1 || bytes.Count(doc, end) != 1 {
		return nil, fmt.Errorf("README: region %q: want one %q line, then one %q line", name, strings.TrimSpace(string(begin)), end)
	}
	var b bytes.Buffer
	b.Write(doc[:i+len(begin)])
	b.WriteString(body)
	b.Write(doc[j:])
	return b.Bytes(), nil
}

// fig is one figure of a report: the median of system on metric, or its
// latency percentile p (50, 99, 99.9) when p > 0; ok is false when the
// report lacks it.
func fig(r *Report, metric, system string, p float64) (float64, bool) {
	x := r.Find(metric, system)
	if x == nil || len(x.Reps) == 0 {
		return 0, false
	}
	if p == 0 {
		return x.Value, true
	}
	if x.Lat == nil {
		return 0, false
	}
	switch p {
	case 50:
		return x.Lat.P50, true
	case 90:
		return x.Lat.P90, true
	case 99:
		return x.Lat.P99, true
	case 99.9:
		return x.Lat.P999, true
	}
	return 0, false
}

const missing = "–"

// rate is a rows/s figure: "12.3 M".
func rate(r *Report, metric, system string) string {
	v, ok := fig(r, metric, system, 0)
	if !ok {
		return missing
	}
	return spaced(Num(v))
}

// spaced puts a space before Num's k/M/G suffix.
func spaced(s string) string {
	if n := len(s); n > 1 && strings.ContainsAny(s[n-1:], "kMG") {
		return s[:n-1] + " " + s[n-1:]
	}
	return s
}

// dur is a duration figure in ns (a median, or percentile p).
func dur(r *Report, metric, system string, p float64) string {
	v, ok := fig(r, metric, system, p)
	if !ok {
		return missing
	}
	return Dur(v)
}

// perRow is a rows/s figure as the time per row.
func perRow(r *Report, metric, system string) string {
	v, ok := fig(r, metric, system, 0)
	if !ok || v <= 0 {
		return missing
	}
	return Dur(1e9 / v)
}

// bytesOf is a byte count: "0.70 MB".
func bytesOf(r *Report, metric, system string) string {
	v, ok := fig(r, metric, system, 0)
	if !ok {
		return missing
	}
	switch {
	case v >= 1e9:
		return sig3(v/1e9) + " GB"
	case v >= 1e6:
		return sig3(v/1e6) + " MB"
	case v >= 1e3:
		return sig3(v/1e3) + " kB"
	}
	return sig3(v) + " B"
}

func plain(r *Report, metric, system string) string {
	v, ok := fig(r, metric, system, 0)
	if !ok {
		return missing
	}
	return sig3(v)
}

func join(sep string, cells ...string) string { return strings.Join(cells, sep) }

// provenance says which run a report is: the machine, the tree, the
// data, when.
func provenance(r *Report) string {
	m := r.Machine
	commit := m.Commit
	if commit == "" {
		commit = "not recorded"
	}
	return fmt.Sprintf("%s ticks of %d symbols, medians of %d repetitions; %s, %d cores, kernel %s, %s; tree %s; %s, took %s",
		spaced(Count(int64(r.N))), NumSymbols, r.Reps, m.CPU, m.Cores, m.Kernel, m.Go, commit,
		r.Started.UTC().Format("2006-01-02"), r.Took.Round(time.Second))
}

// summary is the first screen's figures, from rep.
func summary(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured in one run with default options on %d shared cores (%s; tree %s, %s; the tables under Benchmarks):\n\n",
		r.Machine.Cores, r.Machine.CPU, orUnknown(r.Machine.Commit), r.Started.UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "* a reader in another process sees a published row after %s at p50, %s at p99;\n",
		dur(r, MObserve, TickDB, 50), dur(r, MObserve, TickDB, 99))
	fmt.Fprintf(&b, "* ingest: %s rows/s in batches of 1,000; %s rows/s into a fresh table until durable;\n",
		rate(r, MIngest, TickDB), rate(r, MUserIngest, TickDB))
	fmt.Fprintf(&b, "* one symbol over 1 %% of the span: %s cached; %s as a fresh process's first query, its files out of the page cache (a whole-symbol scan: %s cached, %s cold).\n",
		dur(r, MWindow, TickDB, 0), dur(r, MWindowFirst, TickDB, 0), dur(r, MSymScan, TickDB, 0), dur(r, MScanFirst, TickDB, 0))
	return b.String()
}

// headline is the README's main table: tickdb with default options, the
// machine's limits in the same run, and figures others published (their
// machines, their data; not re-measured) in a column of their own.
func headline(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Generated from [%s](%s) (`%s`; %s). Default options throughout: plain `Close()`, the writer's defaults, the line-protocol server with `ingest.Options` defaults and serve's 10 s late window; a special option has its own labelled row.\n\n",
		ReadmeReport, ReadmeReport, strings.TrimPrefix(ReadmeMeasure, "go run ./cmd/"), provenance(r))
	b.WriteString("| | tickdb, defaults | machine limit, same run | published by others (their machines, not re-measured) |\n|---|---|---|---|\n")
	row := func(what, tickdb, limit, vendor string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", what, tickdb, limit, vendor)
	}
	withLimit := func(metric, what string, cell func(*Report, string, string) string) string {
		if _, ok := fig(r, metric, Limit, 0); !ok {
			return ""
		}
		return cell(r, metric, Limit) + " " + what
	}
	row("ingest, batches of 1,000 (rows/s)", rate(r, MIngest, TickDB),
		withLimit(MIngest, "raw O_DIRECT write", rate),
		"Chronicle Queue ~5 M msg/s, 96 B (i7-4790; Chronicle-Queue README)")
	row("ingest until durable and queryable (rows/s)", rate(r, MSealed, TickDB), "",
		"kdb+/tick 0.5 M rows/s, 100-row updates (KX tick-profiling whitepaper, 2014)")
	row("ingest into a fresh table, to durable (rows/s; user protocol)", rate(r, MUserIngest, TickDB), "", "")
	row("append, CPU per row (batches of 64)", perRow(r, MAppend, TickDB),
		withLimit(MAppend, "raw store", perRow),
		"tstorage `InsertRows` 306 ns (i7-8559U; tstorage README)")
	row("append latency p50 / p99 / p99.9", join(" / ", dur(r, MAppend, TickDB, 50), dur(r, MAppend, TickDB, 99), dur(r, MAppend, TickDB, 99.9)), "", "")
	row("publish → seen in another process, p50 / p99", join(" / ", dur(r, MObserve, TickDB, 50), dur(r, MObserve, TickDB, 99)), "",
		"Chronicle Queue p99 0.78 µs, 40 B (Chronicle-Queue README)")
	row("line protocol over TCP, one connection, to visible (rows/s)", rate(r, MILP, TickDB), "",
		"QuestDB ILP/TCP 1.03 M rows/s (TSBS, 4 workers, laptop; questdb PR #4034)")
	row("`Get` / `SeekTime` at random, history compressed by `Close()`", join(" / ", dur(r, MGet, TickDB, 0), dur(r, MSeek, TickDB, 0)),
		join(" / ", dur(r, MGet, Limit, 0), dur(r, MSeek, Limit, 0))+" random read / binary search", "")
	row("full scan, history compressed (rows/s)", rate(r, MScan, TickDB), withLimit(MScan, "sequential read", rate), "")
	row("one symbol, 1 % of the span / whole span, cached", join(" / ", dur(r, MWindow, TickDB, 0), dur(r, MSymScan, TickDB, 0)), "", "")
	row("the same two, files evicted from the page cache", join(" / ", dur(r, MWindowCold, TickDB, 0), dur(r, MSymScanCold, TickDB, 0)), "", "")
	row("one symbol, 1 % of the span, right after ingest (writer open), p50", dur(r, MAfterIngest, TickDB, 0), "", "")
	row("fresh process, files evicted: open / first window / first symbol scan",
		join(" / ", dur(r, MOpenFresh, TickDB, 0), dur(r, MWindowFirst, TickDB, 0), dur(r, MScanFirst, TickDB, 0)), "", "")
	row("fresh process: later windows / symbol scans, p50", join(" / ", dur(r, MWindowRandom, TickDB, 0), dur(r, MScanRandom, TickDB, 0)), "", "")
	row("bytes read from disk by that first symbol scan", bytesOf(r, MBytesScan, TickDB), "", "")
	row("disk per tick after `Close()` (bytes; a tick is 32)", plain(r, MDiskBytes, TickDB), "",
		"Prometheus 1–2 B per float sample (Prometheus storage docs)")
	row("**special option** `CloseCompacted(0)`: disk per tick (bytes)", plain(r, MDiskBytesCmp, TickDB), "", "")
	return b.String()
}

// peerTable is tickdb beside the peers, from the bench module's report
// peers, labelled with its own run, and a warning when that run is not
// rep's tree.
func peerTable(p, rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Generated from [%s](%s) (`cd bench && go run . --rows 20M -o ../%s`; %s).",
		ReadmePeersReport, ReadmePeersReport, ReadmePeersReport, provenance(p))
	if p.Machine.Commit == "" || p.Machine.Commit != rep.Machine.Commit {
		b.WriteString(" **Not the tree of the table above**: its tickdb column is that older tree's.")
	}
	b.WriteString("\n\n| | tickdb |")
	peers := p.Systems()
	for _, s := range peers {
		if s == "bufio" {
			s = "bufio file (page cache only)"
		}
		b.WriteString(" " + s + " |")
	}
	b.WriteString("\n|---|---|")
	b.WriteString(strings.Repeat("---|", len(peers)))
	b.WriteString("\n")
	line := func(what string, cell func(system string) string) {
		b.WriteString("| " + what + " | " + cell(TickDB) + " |")
		for _, s := range peers {
			b.WriteString(" " + cell(s) + " |")
		}
		b.WriteString("\n")
	}
	line("ingest, batches of 1,000 (rows/s)", func(s string) string { return rate(p, MIngest, s) })
	line("ingest until durable (rows/s)", func(s string) string { return rate(p, MSealed, s) })
	line("full scan (rows/s)", func(s string) string { return rate(p, MScan, s) })
	line("one symbol, 1 % of the span, cached p50", func(s string) string { return dur(p, MWindow, s, 0) })
	line("one symbol, whole span, cached", func(s string) string { return dur(p, MSymScan, s, 0) })
	line("the same two, cold (evicted, reopened)", func(s string) string {
		return join(" / ", dur(p, MWindowCold, s, 0), dur(p, MSymScanCold, s, 0))
	})
	return b.String()
}
