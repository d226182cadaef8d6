package servers

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

// The report's metric ids, in report order, with what they measure.
const (
	MIngest      = "ingest over HTTP"                    // rows/s: every tick, one request after another, until the last is acknowledged (tickdb: durable)
	MWriteReq    = "write request"                       // ns: one request of Batch rows, sent until acknowledged
	MWriteApply  = "write: tickdb's writer apply"        // ns: the writer goroutine's check and store of one request (its metrics)
	MIngestCPU   = "server CPU while ingesting"          // ns/row: the server process's CPU time (every thread) over the ingest
	MFormat      = "client formatting (not timed above)" // rows/s: building the request bodies (ILP for tickdb, CSV for ClickHouse)
	MDiskIngest  = "disk bytes/tick, after ingest"       // B/tick: st_blocks of the table's directory right after the last request
	MShmIngest   = "shared memory bytes/tick, after ingest"
	MDiskSettled = "disk bytes/tick, settled"         // B/tick: once the server's background work is done, still running; without files it will delete
	MDiskStopped = "disk bytes/tick, stopped"         // B/tick: after a clean stop; without files it will delete
	MStart       = "start after restart, until ready" // ns: exec until the readiness request answers, files evicted
	MStartBytes  = "bytes read by that start"         // B: read from the disk by the server process until then (/proc/<pid>/io)
)

// bytesMetric is the metric id of the bytes the server read from the disk
// for a query of kind k after a restart (/proc/<pid>/io read_bytes).
func bytesMetric(k kind) string {
	return "bytes read by " + [...]string{"that window", "that scan", "those bars", "that latest"}[k]
}

// queryMetric is the metric id of queries of kind k, while running or
// after a restart (cold).
func queryMetric(k kind, cold bool) string {
	name := [...]string{"one-symbol 1 % window", "one-symbol scan", "1-s OHLCV bars, one symbol", "latest row, every symbol"}[k]
	if cold {
		return name + " (after restart)"
	}
	return name + " (running)"
}

// metricOrder is the order of the report's rows.
func metricOrder() []string {
	ms := []string{MIngest, MWriteReq, MWriteApply, MIngestCPU, MFormat, MDiskIngest, MShmIngest, MDiskSettled, MDiskStopped}
	for k := range numKinds {
		ms = append(ms, queryMetric(k, false))
	}
	ms = append(ms, MStart, MStartBytes)
	for k := range numKinds {
		ms = append(ms, queryMetric(k, true), bytesMetric(k))
	}
	return ms
}

// Report is one run of the server benchmark.
type Report struct {
	Machine    suite.Machine
	Started    time.Time
	Took       time.Duration
	N          int      // ticks in the data set
	Batch      int      // rows per write request
	Reps       int      // queries of each kind while running
	ColdReps   int      // queries of each kind after restarts
	Load       []string // the machine's load averages (1, 5, 15 min) along the run
	TickDB     string   // serve's command line
	ClickHouse string   // its version and table, or why it did not run
	Results    []suite.Result
}

// Find returns the result of system on metric, or nil.
func (r *Report) Find(metric, system string) *suite.Result {
	for i := range r.Results {
		if r.Results[i].Metric == metric && r.Results[i].System == system {
			return &r.Results[i]
		}
	}
	return nil
}

// sample records one figure of system on metric.
func (x *run) sample(metric, system, unit string, lower bool, v float64) {
	key := metric + "\x00" + system
	if _, ok := x.samples[key]; !ok {
		x.rep.Results = append(x.rep.Results, suite.Result{Metric: metric, System: system, Unit: unit, Lower: lower, Allocs: -1})
	}
	x.samples[key] = append(x.samples[key], v)
}

// notef sets the note of system's result on metric (recorded already).
func (x *run) notef(metric, system, format string, args ...any) {
	if r := x.rep.Find(metric, system); r != nil {
		r.Note = fmt.Sprintf(format, args...)
	}
}

// results fills in every result's figures from its samples and puts the
// results in report order.
func (x *run) results() {
	for i := range x.rep.Results {
		r := &x.rep.Results[i]
		key := r.Metric + "\x00" + r.System
		*r = suite.Result{Metric: r.Metric, System: r.System, Unit: r.Unit, Lower: r.Lower, Allocs: -1, Note: r.Note,
			Reps: x.samples[key]}
		r.Value, r.Best, r.Spread = suite.Summary(r.Reps, r.Lower)
		if rows, ok := x.rows[key]; ok {
			r.Rows = rows[1]
			if rows[0] != rows[1] {
				r.Note = fmt.Sprintf("%d to %d rows an answer, all checked", rows[0], rows[1])
			} else {
				r.Note = fmt.Sprintf("%d row(s) an answer, all checked", rows[0])
			}
		}
	}
	order := metricOrder()
	slices.SortStableFunc(x.rep.Results, func(a, b suite.Result) int {
		return slices.Index(order, a.Metric) - slices.Index(order, b.Metric)
	})
}

// Systems is the report's systems, tickdb first.
func (r *Report) Systems() []string {
	ss := []string{suite.TickDB}
	for _, x := range r.Results {
		if !slices.Contains(ss, x.System) {
			ss = append(ss, x.System)
		}
	}
	return ss
}

// WriteTable writes the report as Markdown: the machine, load and set-up,
// then one row per metric with each system's median and its range over
// the repetitions (min–max), and tickdb ÷ ClickHouse as "times better"
// (> 1: tickdb ahead, on latencies and costs too), then the notes.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	commit := m.Commit
	if commit == "" {
		commit = "unknown"
	}
	fmt.Fprintf(&b, "machine: %s, %d cores, kernel %s, %s; commit %s\n", m.CPU, m.Cores, m.Kernel, m.Go, commit)
	fmt.Fprintf(&b, "load average (1, 5, 15 min): %s\n", strings.Join(r.Load, "; "))
	fmt.Fprintf(&b, "data: %s ticks of %d symbols (seed %d), requests of %s rows, one client on 127.0.0.1; %d queries of each kind running, %d after restarts; %s at %s\n",
		suite.Count(int64(r.N)), suite.NumSymbols, suite.Seed, suite.Count(int64(r.Batch)), r.Reps, r.ColdReps,
		r.Took.Round(time.Second), r.Started.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "tickdb: tickdb %s, fed ILP over POST /write\n", r.TickDB)
	fmt.Fprintf(&b, "clickhouse: %s\n\n", r.ClickHouse)
	ss := r.Systems()
	b.WriteString("| metric | unit |")
	for _, s := range ss {
		b.WriteString(" " + s + " p50 (min–max) |")
	}
	ratio := len(ss) > 1
	if ratio {
		fmt.Fprintf(&b, " tickdb ÷ %s |", ss[1])
	}
	b.WriteString("\n|---|---|")
	for range ss {
		b.WriteString("---:|")
	}
	if ratio {
		b.WriteString("---:|")
	}
	b.WriteByte('\n')
	var notes []string
	for _, metric := range metricOrder() {
		var unit string
		var row []*suite.Result
		var said []string // the notes, one per system
		for _, s := range ss {
			x := r.Find(metric, s)
			row = append(row, x)
			if x != nil {
				unit = x.Unit
				if x.Note != "" {
					said = append(said, fmt.Sprintf("- %s, %s: %s", metric, s, x.Note))
				}
			}
		}
		if unit == "" {
			continue
		}
		// A note every system shares (the rows of a checked answer) is
		// said once.
		if len(said) > 1 && len(said) == len(ss) && all(row, func(x *suite.Result) bool { return x.Note == row[0].Note }) {
			said = []string{fmt.Sprintf("- %s: %s", metric, row[0].Note)}
		}
		notes = append(notes, said...)
		fmt.Fprintf(&b, "| %s | %s |", metric, unit)
		for _, x := range row {
			fmt.Fprintf(&b, " %s |", cell(x))
		}
		if ratio {
			if t, c := row[0], row[1]; t != nil && c != nil && suite.Times(t.Value, c.Value, t.Lower) > 0 {
				fmt.Fprintf(&b, " %s× |", suite.Num(suite.Times(t.Value, c.Value, t.Lower)))
			} else {
				b.WriteString("  |")
			}
		}
		b.WriteByte('\n')
	}
	b.WriteString("\ntickdb ÷ other: how many times better tickdb is (> 1: tickdb ahead; for latencies, bytes and CPU it is the other's over tickdb's).\n")
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// all reports whether f holds for every x of xs.
func all(xs []*suite.Result, f func(*suite.Result) bool) bool {
	for _, x := range xs {
		if x == nil || !f(x) {
			return false
		}
	}
	return true
}

// cell is a result's median with its range when it has several figures.
func cell(x *suite.Result) string {
	if x == nil {
		return ""
	}
	f := suite.Num
	switch x.Unit {
	case "ns":
		f = suite.Dur
	case suite.UnitBytes:
		f = bytesString
	}
	s := f(x.Value)
	if len(x.Reps) > 1 {
		lo, hi := slices.Min(x.Reps), slices.Max(x.Reps)
		s += " (" + f(lo) + "–" + f(hi) + ")"
	}
	return s
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// bytesString is a byte count with three significant digits: "13.5 MB".
func bytesString(v float64) string {
	s := suite.Num(v)
	if n := len(s) - 1; n > 0 && strings.ContainsRune("kMG", rune(s[n])) {
		return s[:n] + " " + s[n:] + "B"
	}
	return s + " B"
}
