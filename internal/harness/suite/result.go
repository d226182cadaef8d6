package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Limit is the System name of the machine's limits in a Report.
const Limit = "limit"

// TickDB is the System name of tickdb's own figures.
const TickDB = "tickdb"

// Result is one system's figure for one metric over the repetitions.
type Result struct {
	Metric string // id: "ingest", "window", "scan", ...
	System string // TickDB, Limit or a peer's name
	Unit   string // "rows/s", "ns", "ms", "MB/s", ...
	Lower  bool   // a lower value is better (a latency or a cost)

	Reps   []float64 // the figure of each repetition
	Value  float64   // median of Reps
	Best   float64   // the best of Reps (the max, or the min when Lower)
	Spread float64   // (max - min) / median of Reps

	Lat    *Latency `json:",omitempty"` // the latency distribution, all repetitions merged
	Allocs float64  // heap allocations per operation (-1: not measured)
	Rows   int64    `json:",omitempty"` // rows in each answer (queries), checked against the data
	Note   string   `json:",omitempty"`
}

// UnitBytes is the unit of a result whose distribution (Lat) holds bytes,
// not nanoseconds.
const UnitBytes = "B"

// Latency is a distribution's percentiles in nanoseconds (in bytes for a
// result in UnitBytes), from an HDR histogram (3 significant digits).
type Latency struct {
	Count                           int64
	Mean                            float64
	P50, P90, P99, P999, P9999, Max float64
	Curve                           []Point // the percentile curve, for plots
}

// Point is one point of a percentile curve: Value ns at Percentile
// (0-100).
type Point struct {
	Percentile float64
	Value      float64
}

// NewHist returns a histogram of nanosecond values from 1 ns to 100 s with
// 3 significant digits; recording into it does not allocate.
func NewHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 100_000_000_000, 3) }

// Record records v ns into h, clamped to h's range.
func Record(h *hdrhistogram.Histogram, v int64) {
	v = max(v, h.LowestTrackableValue())
	v = min(v, h.HighestTrackableValue())
	_ = h.RecordValue(v)
}

// LatencyOf summarises h; nil when it holds nothing.
func LatencyOf(h *hdrhistogram.Histogram) *Latency {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	l := &Latency{
		Count: h.TotalCount(), Mean: h.Mean(),
		P50: float64(h.ValueAtQuantile(50)), P90: float64(h.ValueAtQuantile(90)),
		P99: float64(h.ValueAtQuantile(99)), P999: float64(h.ValueAtQuantile(99.9)),
		P9999: float64(h.ValueAtQuantile(99.99)), Max: float64(h.Max()),
	}
	// The curve at 1 - 10^(-k/8): eight points per decade of "nines",
	// as HdrHistogram's percentile plots space them, up to the last
	// percentile the count resolves.
	top := math.Log10(float64(h.TotalCount()))
	for k := 0; float64(k)/8 <= top; k++ {
		p := 100 * (1 - math.Pow(10, -float64(k)/8))
		l.Curve = append(l.Curve, Point{Percentile: p, Value: float64(h.ValueAtQuantile(p))})
	}
	l.Curve = append(l.Curve, Point{Percentile: 100, Value: l.Max})
	return l
}

// NewResult summarises the repetitions' figures reps.
func NewResult(metric, system, unit string, lower bool, reps []float64) Result {
	r := Result{Metric: metric, System: system, Unit: unit, Lower: lower, Reps: reps, Allocs: -1}
	r.Value, r.Best, r.Spread = Summary(reps, lower)
	return r
}

// Summary is the median, the best (max, or min when lower) and the spread
// ((max - min) / median) of xs; zeros when xs is empty.
func Summary(xs []float64, lower bool) (median, best, spread float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		median = s[n/2]
	} else {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	best = s[n-1]
	if lower {
		best = s[0]
	}
	if median != 0 {
		spread = (s[n-1] - s[0]) / math.Abs(median)
	}
	return median, best, spread
}

// Times is how many times better a is than b on a metric where lower is
// (or is not) better: a/b for a throughput, b/a for a latency or cost. So
// 2 means "twice as fast" either way. Zero when either is not positive.
func Times(a, b float64, lower bool) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if lower {
		return b / a
	}
	return a / b
}

// Machine is what a report was measured on.
type Machine struct {
	CPU    string // model name
	Cores  int    // logical CPUs online
	Kernel string // uname release
	Go     string // Go version and GOMAXPROCS
	Commit string // the tree's commit ("" if unknown), with "+dirty" if modified
}

// Report is one suite run.
type Report struct {
	Machine Machine
	Started time.Time
	Took    time.Duration
	N       int    // ticks in the data set
	Reps    int    // repetitions of every measurement
	Mode    string // "max" or "rate=<rows/s>"
	Results []Result
}

// Find returns the result of system on metric, or nil.
func (r *Report) Find(metric, system string) *Result {
	for i := range r.Results {
		if r.Results[i].Metric == metric && r.Results[i].System == system {
			return &r.Results[i]
		}
	}
	return nil
}

// Metrics is the report's metric ids in first-seen order.
func (r *Report) Metrics() []string {
	var ms []string
	for _, x := range r.Results {
		if !slices.Contains(ms, x.Metric) {
			ms = append(ms, x.Metric)
		}
	}
	return ms
}

// Systems is the report's peer names (every system but TickDB and Limit)
// in first-seen order.
func (r *Report) Systems() []string {
	var ss []string
	for _, x := range r.Results {
		if x.System != TickDB && x.System != Limit && !slices.Contains(ss, x.System) {
			ss = append(ss, x.System)
		}
	}
	return ss
}

// VsBestPeer is how many times better tickdb's median is than the best
// peer's median on metric (Times), and that peer; 0 and "" without both.
// A peer at 0 on a lower-is-better metric (bytes read: none) is the best
// and leaves no ratio: 0 and that peer.
func (r *Report) VsBestPeer(metric string) (float64, string) {
	t := r.Find(metric, TickDB)
	if t == nil {
		return 0, ""
	}
	best, name := 0.0, ""
	for _, p := range r.Systems() {
		x := r.Find(metric, p)
		if x != nil && x.Value == 0 && t.Lower && len(x.Reps) > 0 {
			return 0, p
		}
		if x == nil || x.Value <= 0 {
			continue
		}
		if name == "" || Times(x.Value, best, t.Lower) > 1 {
			best, name = x.Value, p
		}
	}
	if name == "" {
		return 0, ""
	}
	return Times(t.Value, best, t.Lower), name
}

// VsLimit is tickdb's median over the limit's median on metric as a
// fraction of the limit (Times; 1 = at the limit), 0 without both.
func (r *Report) VsLimit(metric string) float64 {
	t, l := r.Find(metric, TickDB), r.Find(metric, Limit)
	if t == nil || l == nil {
		return 0
	}
	return Times(t.Value, l.Value, t.Lower)
}

// WriteTable writes the report as Markdown: the machine, then one row per
// metric with the limit, tickdb, each peer, tickdb ÷ best peer and tickdb
// ÷ limit (both "times better": > 1 is tickdb ahead), then the latency
// percentiles.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "machine: %s, %d cores, kernel %s, %s; commit %s\n", m.CPU, m.Cores, m.Kernel, m.Go, orUnknown(m.Commit))
	reps := "repetitions"
	if r.Reps == 1 {
		reps = "repetition"
	}
	fmt.Fprintf(&b, "data: %s ticks of %d symbols (seed %d), %d %s, mode %s, %s at %s\n\n",
		Count(int64(r.N)), NumSymbols, Seed, r.Reps, reps, r.Mode, r.Took.Round(time.Second), r.Started.UTC().Format(time.RFC3339))
	peers := r.Systems()
	b.WriteString("| metric | unit | limit | tickdb (spread) |")
	for _, p := range peers {
		b.WriteString(" " + p + " |")
	}
	b.WriteString(" tickdb ÷ best peer | tickdb ÷ limit |\n|---|---|---:|---:|")
	for range peers {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|\n")
	for _, metric := range r.Metrics() {
		t := r.Find(metric, TickDB)
		unit := ""
		for _, x := range r.Results {
			if x.Metric == metric {
				unit = x.Unit
				break
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |", metric, unit, cell(r.Find(metric, Limit), false), cell(t, true))
		for _, p := range peers {
			fmt.Fprintf(&b, " %s |", cell(r.Find(metric, p), false))
		}
		if x, name := r.VsBestPeer(metric); x > 0 {
			fmt.Fprintf(&b, " %s× (%s) |", Num(x), name)
		} else {
			b.WriteString("  |")
		}
		if x := r.VsLimit(metric); x > 0 {
			fmt.Fprintf(&b, " %s |", Num(x))
		} else {
			b.WriteString("  |")
		}
		b.WriteByte('\n')
	}
	b.WriteString("\n| latency | system | count | p50 | p90 | p99 | p99.9 | p99.99 | max |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Results {
		if l := x.Lat; l != nil {
			f := Dur
			if x.Unit == UnitBytes { // bytes read per query, not a latency
				f = func(v float64) string { return Num(v) + " B" }
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Metric, x.System, Count(l.Count),
				f(l.P50), f(l.P90), f(l.P99), f(l.P999), f(l.P9999), f(l.Max))
		}
	}
	var notes []string
	for _, x := range r.Results {
		if x.Note != "" {
			notes = append(notes, fmt.Sprintf("- %s, %s: %s", x.Metric, x.System, x.Note))
		}
		if x.Allocs > 0 {
			notes = append(notes, fmt.Sprintf("- %s, %s: %s allocations per operation", x.Metric, x.System, Num(x.Allocs)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// cell is a result's median, with its spread when spread is set.
func cell(x *Result, spread bool) string {
	if x == nil {
		return ""
	}
	s := Num(x.Value)
	if x.Unit == "ns" {
		s = Dur(x.Value)
	}
	if spread && len(x.Reps) > 1 {
		s += fmt.Sprintf(" (±%.0f%%)", 50*x.Spread)
	}
	return s
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Num formats x with three significant digits and a k/M/G suffix.
func Num(x float64) string {
	a := math.Abs(x)
	switch {
	case a >= 1e9:
		return sig3(x/1e9) + "G"
	case a >= 1e6:
		return sig3(x/1e6) + "M"
	case a >= 1e4:
		return sig3(x/1e3) + "k"
	}
	return sig3(x)
}

func sig3(x float64) string {
	a := math.Abs(x)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	case a >= 1:
		return fmt.Sprintf("%.2f", x)
	case a == 0:
		return "0"
	}
	return fmt.Sprintf("%.3g", x)
}

// Count formats a count with a k/M suffix.
func Count(n int64) string { return Num(float64(n)) }

// Dur formats ns nanoseconds as a duration with three significant digits.
func Dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return sig3(ns/1e9) + " s"
	case ns >= 1e6:
		return sig3(ns/1e6) + " ms"
	case ns >= 1e3:
		return sig3(ns/1e3) + " µs"
	}
	return sig3(ns) + " ns"
}
