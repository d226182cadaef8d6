package suite

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
)

func TestMain(m *testing.M) {
	MaybeChild(wrongChildPeer, wrongAfterPeer) // the cross-process reader of TestRunSmall, the user protocol's fresh process
	os.Exit(m.Run())
}

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(5000), Generate(5000)
	g := gen.New(gen.Options{Symbols: NumSymbols, Seed: Seed})
	for i := range a.Ticks {
		if a.Ticks[i] != b.Ticks[i] {
			t.Fatalf("tick %d differs between two runs: %+v, %+v", i, a.Ticks[i], b.Ticks[i])
		}
		if want := g.Next(); a.Ticks[i] != want {
			t.Fatalf("tick %d is %+v, the generator gives %+v", i, a.Ticks[i], want)
		}
		if i > 0 && a.Ticks[i].Ts < a.Ticks[i-1].Ts {
			t.Fatalf("tick %d goes back in time", i)
		}
	}
	if c := Generate(4000); c.Ticks[3999] != a.Ticks[3999] {
		t.Fatal("a shorter data set is not a prefix of a longer one")
	}
	total := 0
	for s := range NumSymbols {
		total += a.SymCount(s)
	}
	if total != len(a.Ticks) {
		t.Fatalf("per-symbol counts add up to %d, want %d", total, len(a.Ticks))
	}
}

// bruteForce is the answer by a pass over every tick.
func bruteForce(d *Data, sym int, from, to int64) Answer {
	var a Answer
	for _, tk := range d.Ticks {
		if (sym == AllSymbols || tk.Sym == sym) && tk.Ts >= from && tk.Ts < to {
			a.Add(tk.Ts, tk.Price)
		}
	}
	return a
}

func TestExpectMatchesBruteForce(t *testing.T) {
	d := Generate(20_000)
	rng := rand.New(rand.NewPCG(1, 2))
	first, last := d.First(), d.Last()
	for i := range 500 {
		sym := rng.IntN(NumSymbols+1) - 1
		from := first - 10 + rng.Int64N(last-first+20)
		to := from + rng.Int64N(last-first)/(1+rng.Int64N(100))
		if i%7 == 0 {
			from, to = to, from // empty or inverted
		}
		if i%11 == 0 {
			from, to = math.MinInt64, math.MaxInt64
		}
		if got, want := d.Expect(sym, from, to), bruteForce(d, sym, from, to); got != want {
			t.Fatalf("Expect(%d, %d, %d) = %+v, brute force %+v", sym, from, to, got, want)
		}
	}
	for _, q := range append(d.Windows(20), d.SymbolScan(), d.FullScan()) {
		if want := bruteForce(d, q.Sym, q.From, q.To); q.Want != want {
			t.Fatalf("query %+v: want field %+v, brute force %+v", q, q.Want, want)
		}
	}
	ws := d.Windows(20)
	if ws[0].Want.Rows == 0 || ws[0].To-ws[0].From != (last-first)/100 {
		t.Fatalf("window %+v: want about N/10,000 rows over 1%% of the span", ws[0])
	}
	busy := d.BusySymbol()
	for s := range NumSymbols {
		if abs(d.SymCount(s)-len(d.Ticks)/100) < abs(d.SymCount(busy)-len(d.Ticks)/100) {
			t.Fatalf("symbol %d has %d ticks, nearer 1%% than BusySymbol %d with %d", s, d.SymCount(s), busy, d.SymCount(busy))
		}
	}
}

func abs(x int) int { return max(x, -x) }

func TestSelfAsOfMatchesBruteForce(t *testing.T) {
	x := &run{d: Generate(3000)}
	var want Answer
	tk := x.d.Ticks
	for i := range tk {
		m := -1 // the last tick of the symbol at or before tk[i].Ts
		for j := range tk {
			if tk[j].Sym == tk[i].Sym && tk[j].Ts <= tk[i].Ts {
				m = j
			}
		}
		want.Add(tk[m].Ts, tk[m].Price)
	}
	if got := x.selfAsOf(); got != want {
		t.Fatalf("selfAsOf = %+v, brute force %+v", got, want)
	}
}

func TestSummaryAndTimes(t *testing.T) {
	for _, c := range []struct {
		xs                   []float64
		lower                bool
		median, best, spread float64
	}{
		{[]float64{3, 1, 2}, false, 2, 3, 1},
		{[]float64{3, 1, 2}, true, 2, 1, 1},
		{[]float64{4, 1, 2, 3}, false, 2.5, 4, 1.2},
		{[]float64{5}, false, 5, 5, 0},
		{nil, false, 0, 0, 0},
	} {
		m, b, s := Summary(c.xs, c.lower)
		if m != c.median || b != c.best || math.Abs(s-c.spread) > 1e-12 {
			t.Errorf("Summary(%v, %v) = %v, %v, %v; want %v, %v, %v", c.xs, c.lower, m, b, s, c.median, c.best, c.spread)
		}
	}
	if got := Times(40e6, 1e6, false); got != 40 {
		t.Errorf("throughput 40M vs 1M: %v times, want 40", got)
	}
	if got := Times(50, 1000, true); got != 20 {
		t.Errorf("latency 50 vs 1000: %v times, want 20", got)
	}
	if got := Times(0, 1, false); got != 0 {
		t.Errorf("Times with a zero: %v", got)
	}
	r := NewResult("m", TickDB, "rows/s", false, []float64{10, 30, 20})
	if r.Value != 20 || r.Best != 30 || r.Spread != 1 || r.Allocs != -1 {
		t.Errorf("NewResult = %+v", r)
	}
}

func TestLatencyOf(t *testing.T) {
	h := NewHist()
	for v := int64(1); v <= 10_000; v++ {
		Record(h, v*1000) // 1 µs .. 10 ms, uniform
	}
	Record(h, -5) // clamped, not lost
	l := LatencyOf(h)
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > want*0.002 {
			t.Errorf("%s = %v, want %v (±0.2 %%)", name, got, want)
		}
	}
	if l.Count != 10_001 {
		t.Errorf("count %d, want 10001", l.Count)
	}
	near("p50", l.P50, 5e6)
	near("p90", l.P90, 9e6)
	near("p99", l.P99, 9.9e6)
	near("p99.9", l.P999, 9.99e6)
	near("max", l.Max, 10e6)
	for i := 1; i < len(l.Curve); i++ {
		if l.Curve[i].Percentile <= l.Curve[i-1].Percentile || l.Curve[i].Value < l.Curve[i-1].Value {
			t.Fatalf("curve not increasing at %d: %+v", i, l.Curve[i-1:i+1])
		}
	}
	if c := l.Curve[len(l.Curve)-1]; c.Percentile != 100 || c.Value != l.Max {
		t.Errorf("curve ends at %+v, want the max at 100", c)
	}
	if LatencyOf(NewHist()) != nil {
		t.Error("an empty histogram has a latency")
	}
}

func guardReport(appendScale, allocs float64) *Report {
	t := NewResult(MAppend, TickDB, "rows/s", false, []float64{20e6 / appendScale, 30e6 / appendScale, 25e6 / appendScale})
	t.Allocs = allocs
	return &Report{Results: []Result{
		t,
		NewResult(MAppend, Limit, "rows/s", false, []float64{100e6, 150e6, 90e6}),
		NewResult(MGet, TickDB, "ns", true, []float64{50, 60, 45}),
		NewResult(MGet, Limit, "ns", true, []float64{25, 30, 30}),
	}}
}

func TestGuard(t *testing.T) {
	zero := 0.5
	path := filepath.Join(t.TempDir(), "guard.json")
	body := `{"about": "test", "rules": [
		{"metric": "append", "min_vs_limit": 0.12, "max_allocs": 0.5},
		{"metric": "get", "min_vs_limit": 0.3}]}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := LoadGuard(path)
	if err != nil {
		t.Fatal(err)
	}
	if vs, ok := g.Check(guardReport(1, 0)); !ok || len(vs) != 3 {
		t.Fatalf("healthy figures: ok=%v %+v", ok, vs)
	} else if got := vs[0].Got; math.Abs(got-25.0/90) > 1e-9 { // the best repetition: 25M/90M
		t.Fatalf("append ratio %v, want the best repetition's 25M/90M", got)
	}
	// A 3× slowdown of append fails, and says which rule.
	vs, ok := g.Check(guardReport(3, 0))
	if ok || vs[0].OK || !vs[1].OK || !vs[2].OK || !strings.Contains(vs[0].Msg, "append") {
		t.Fatalf("3× slower append: ok=%v %+v", ok, vs)
	}
	// A new allocation per operation fails.
	if vs, ok := g.Check(guardReport(1, 1)); ok || vs[1].OK {
		t.Fatalf("1 allocation per append: ok=%v %+v", ok, vs)
	}
	// A rule on a metric the report lacks fails rather than passing.
	g.Rules = append(g.Rules, Rule{Metric: "nope", MaxAllocs: &zero})
	if _, ok := g.Check(guardReport(1, 0)); ok {
		t.Fatal("a rule on a missing metric passed")
	}
	for _, bad := range []string{`{"rules": []}`, `{"rules": [{"metric": "x", "min": 1}]}`, `not json`} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadGuard(path); err == nil {
			t.Errorf("LoadGuard(%s) = nil error", bad)
		}
	}
}

// wrongPeer is tickdb answering one row short: a fast wrong answer.
var wrongPeer = Peer{Name: "wrong", Open: func(dir string, d *Data) (System, error) {
	s, err := TickDBPeer.Open(dir, d)
	return wrong{s}, err
}}

type wrong struct{ System }

func (w wrong) Query(q Query) (Answer, error) {
	a, err := w.System.Query(q)
	a.Rows--
	return a, err
}

func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite on a small data set (a few seconds)")
	}
	cfg := Config{N: 30_000, Reps: 2, Dir: t.TempDir(), Windows: 20, ILPLines: 10_000, Observe: 2000}
	r, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{MIngest, MSealed, MAppend, MAppendF, MObserve, MGet, MSeek, MWindow, MSymScan, MScan, MBars, MAsOf, MILP} {
		x := r.Find(m, TickDB)
		if x == nil || len(x.Reps) != 2 || x.Value <= 0 {
			t.Fatalf("%s: tickdb result %+v", m, x)
		}
	}
	for _, m := range []string{MIngest, MAppend, MAppendF, MGet, MSeek, MScan, MBars} {
		if x := r.Find(m, Limit); x == nil || x.Value <= 0 {
			t.Fatalf("%s: limit result %+v", m, x)
		}
	}
	for _, m := range []string{MWindow, MObserve, MAppend} {
		if r.Find(m, TickDB).Lat == nil {
			t.Errorf("%s: no latency distribution", m)
		}
	}
	if r.Find(MObserve, TickDB).Lat.Count != 2*2000 {
		t.Errorf("publish→reader saw %d rows, want %d", r.Find(MObserve, TickDB).Lat.Count, 2*2000)
	}
	// The hot paths allocate nothing per operation: the counts are the
	// process's, so the flusher's and preparer's few allocations over the
	// whole loop show up as a small fraction; one per operation would be
	// at least 1. (Not under -race, whose sync.Pool drops what it holds
	// at random: the decoders' pooled buffers of compressed segments are
	// made again.)
	for _, m := range []string{MAppend, MAppendF, MObserve, MGet, MSeek, MWindow, MSymScan, MScan} {
		if a := r.Find(m, TickDB).Allocs; !testutil.Race && (a < 0 || a >= 0.5) {
			t.Errorf("%s: %v allocations per operation", m, a)
		}
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| window |") || !strings.Contains(b.String(), "p99.99") {
		t.Errorf("table:\n%s", b.String())
	}
	left, _ := os.ReadDir(cfg.Dir)
	if len(left) != 0 {
		t.Errorf("the run left %d entries in its directory", len(left))
	}

	// A peer answering wrong fails the run.
	cfg.Reps, cfg.Peers = 1, []Peer{wrongPeer}
	_, err = Run(cfg)
	if err == nil || !strings.Contains(err.Error(), "wrong") || !strings.Contains(err.Error(), "the data holds") {
		t.Fatalf("a wrong peer: %v", err)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		t.Fatalf("wrong peer: unexpected path error %v", err)
	}
}
