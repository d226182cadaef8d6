package suite

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickdb/tickdb/writer"
)

// Config configures Run. Zero values give the defaults.
type Config struct {
	N    int // ticks in the data set (default 2,000,000)
	Reps int // repetitions of every measurement (default 3)
	// Rate, when positive, is the offered rate in rows/s of the append
	// latency and publish → reader measurements (a fixed offered rate,
	// latencies from each row's intended time, so a stall counts for
	// every row it delays); 0 measures append flat out.
	Rate    int
	Dir     string // where tables go (default os.TempDir(): a disk)
	Windows int    // window queries per repetition (default 200)
	// ILPLines is the lines sent over TCP per repetition (default
	// min(N, 2,000,000)).
	ILPLines int
	// Observe is the rows published one at a time to the cross-process
	// reader per repetition (default 100,000, 50,000 rows/s without Rate).
	Observe int
	Peers   []Peer    // the systems run after tickdb, on the same work
	Log     io.Writer // progress lines (nil: none)
	// UserOnly runs the user protocol only (user.go): no limits and none
	// of the other workloads.
	UserOnly bool
	// TickDBClose is how tickdb closes its writer in the user protocol
	// ("": ClosePlain).
	TickDBClose CloseMode
	// TickDBSegment, when set, is the segment size of tickdb's table in
	// the workloads other than the user protocol, written with the
	// compaction off (0: the writer's defaults). The regression guard
	// sets 64 MiB, the default its thresholds were calibrated with: its
	// 1 M-row table then stays one raw segment (which a default Close
	// would compress), and the guard keeps measuring the raw read paths
	// (random Get of a compressed, clustered segment decodes a block a
	// row).
	TickDBSegment int64
}

func (c *Config) withDefaults() Config {
	r := *c
	if r.N <= 0 {
		r.N = 2_000_000
	}
	if r.Reps <= 0 {
		r.Reps = 3
	}
	if r.Dir == "" {
		r.Dir = os.TempDir()
	}
	if r.Windows <= 0 {
		r.Windows = 200
	}
	if r.ILPLines <= 0 {
		r.ILPLines = min(r.N, 2_000_000)
	}
	if r.Observe <= 0 {
		r.Observe = 100_000
	}
	if r.Log == nil {
		r.Log = io.Discard
	}
	return r
}

// The metric ids of a report, with what they measure.
const (
	MIngest      = "ingest"             // rows/s: every tick in batches of 1,000 until the last batch returns; limit: raw O_DIRECT write
	MSealed      = "ingest+seal"        // rows/s: the same until everything is durable and queryable
	MAppend      = "append"             // rows/s of CPU time: AppendBatch of 64 encoded rows + Publish, no flusher; limit: raw stores
	MAppendF     = "append+flush"       // rows/s: the same with the O_DIRECT flusher; limit: raw O_DIRECT write
	MObserve     = "publish→reader"     // ns: one row published until another process reads it
	MGet         = "get"                // ns: Get of a random row; limit: a random 32-byte read
	MSeek        = "seek"               // ns: SeekTime of a random ts; limit: binary search over raw rows
	MWindow      = "window"             // ns, p50 of the repetition: one symbol over 1 % of the span, warm
	MWindowCold  = "window (cold)"      // ns: one window query with the store's files evicted from the page cache
	MSymScanCold = "symbol scan (cold)" // ns: the symbol scan with the store's files evicted
	MSymScan     = "symbol scan"        // ns: every row of one symbol (about 1 % of the rows)
	MScan        = "scan"               // rows/s: every row; limit: raw sequential read
	MBars        = "bars"               // rows/s: 1-second OHLCV bars of every symbol; limit: raw sequential read
	MAsOf        = "asof"               // left rows/s: as-of join of the table with itself, every symbol
	MILP         = "ilp"                // rows/s: line protocol over TCP to visible rows
)

// metricOrder is the order of a report's rows.
var metricOrder = []string{MIngest, MSealed, MAppend, MAppendF, MILP, MObserve, MGet, MSeek,
	MWindowCold, MSymScanCold, MWindow, MSymScan, MScan, MBars, MAsOf,
	MUserIngest, MUserIngestCl, MAfterIngest, MClose, MDiskBytes, MDiskBytesCmp, MOpenFresh, MWindowFirst, MScanFirst, MWindowRandom, MScanRandom,
	MBytesOpen, MBytesWindow, MBytesScan, MBytesWindows, MBytesScans}

// run is one Run's state: the figures gathered so far.
type run struct {
	cfg  Config
	d    *Data
	rows []byte   // d's ticks encoded as tick rows
	plan userPlan // the user protocol's queries
	rep  int

	order []string // "metric\x00system" in first-seen order
	reps  map[string][]float64
	hists map[string]*hdrhistogram.Histogram
	alloc map[string]float64
	meta  map[string]Result // unit, lower, rows, note
}

// Run generates the data set, then, Reps times: measures the limits,
// runs tickdb and every peer on the same work (ingest, seal, window
// queries, the symbol scan, the full scan; each answer checked against
// the data), and tickdb's own workloads (append, publish → reader, Get,
// SeekTime, bars, as-of, line protocol over TCP); then the user protocol
// (user.go) on tickdb and every peer that can open an existing store. A
// wrong answer is an error: a fast wrong answer cannot win.
func Run(c Config) (*Report, error) {
	cfg := c.withDefaults()
	if _, err := closeWith(cfg.TickDBClose); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	start := time.Now()
	x := &run{cfg: cfg, reps: map[string][]float64{}, hists: map[string]*hdrhistogram.Histogram{},
		alloc: map[string]float64{}, meta: map[string]Result{}}
	x.logf("generating %s ticks", Count(int64(cfg.N)))
	x.d = Generate(cfg.N)
	x.rows = EncodeAll(x.d)
	var err error
	if x.plan, err = x.d.userPlan(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	systems := append([]Peer{TickDBPeer}, cfg.Peers...)
	for x.rep = 0; x.rep < cfg.Reps; x.rep++ {
		type step struct {
			name string
			f    func() error
		}
		var steps []step
		if !cfg.UserOnly {
			steps = []step{
				{"limits", x.limits},
				{"append", x.appendFlatOut},
				{"publish→reader", x.observe},
				{"ilp", x.ilp},
			}
			for _, p := range systems {
				steps = append(steps, step{p.Name, func() error { return x.system(p) }})
			}
		}
		for _, p := range systems {
			steps = append(steps, step{p.Name + " (user)", func() error { return x.user(p) }})
		}
		for _, s := range steps {
			x.logf("rep %d/%d: %s", x.rep+1, cfg.Reps, s.name)
			if err := s.f(); err != nil {
				return nil, fmt.Errorf("bench: %s, repetition %d: %w", s.name, x.rep+1, err)
			}
			runtime.GC()
		}
	}
	rep := &Report{Machine: Describe(), Started: start, Took: time.Since(start), N: cfg.N, Reps: cfg.Reps, Mode: "max"}
	if cfg.Rate > 0 {
		rep.Mode = fmt.Sprintf("rate=%s rows/s", Count(int64(cfg.Rate)))
	}
	// Metrics in metricOrder, then systems as they ran.
	slices.SortStableFunc(x.order, func(a, b string) int {
		return slices.Index(metricOrder, x.meta[a].Metric) - slices.Index(metricOrder, x.meta[b].Metric)
	})
	for _, k := range x.order {
		m := x.meta[k]
		r := NewResult(m.Metric, m.System, m.Unit, m.Lower, x.reps[k])
		r.Rows, r.Note = m.Rows, m.Note
		if a, ok := x.alloc[k]; ok {
			r.Allocs = a
		}
		r.Lat = LatencyOf(x.hists[k])
		rep.Results = append(rep.Results, r)
	}
	return rep, nil
}

func (x *run) logf(format string, args ...any) {
	fmt.Fprintf(x.cfg.Log, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// add records one repetition's figure v of system on metric.
func (x *run) add(metric, system, unit string, lower bool, v float64) {
	k := metric + "\x00" + system
	if _, ok := x.meta[k]; !ok {
		x.order = append(x.order, k)
		x.meta[k] = Result{Metric: metric, System: system, Unit: unit, Lower: lower}
	}
	x.reps[k] = append(x.reps[k], v)
}

// note sets the answer size and a note of system on metric.
func (x *run) note(metric, system string, rows int64, note string) {
	k := metric + "\x00" + system
	m := x.meta[k]
	m.Rows, m.Note = rows, note
	x.meta[k] = m
}

// hist is the merged latency histogram of system on metric.
func (x *run) hist(metric, system string) *hdrhistogram.Histogram {
	k := metric + "\x00" + system
	h := x.hists[k]
	if h == nil {
		h = NewHist()
		x.hists[k] = h
	}
	return h
}

// allocs records allocations per op of system on metric: the worst
// repetition's.
func (x *run) allocs(metric, system string, perOp float64) {
	k := metric + "\x00" + system
	x.alloc[k] = max(x.alloc[k], perOp)
}

// mallocs is the process's heap allocation count so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// tempDir makes a fresh directory under the configured one.
func (x *run) tempDir() (string, error) { return os.MkdirTemp(x.cfg.Dir, "tickdb-bench-*") }

// scratch makes a fresh table directory and a fresh live directory; the
// caller removes both.
func (x *run) scratch() (dir, live string, err error) {
	if dir, err = x.tempDir(); err != nil {
		return "", "", err
	}
	if live, err = liveDir(); err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return dir, live, nil
}

// system runs one system on the shared work: ingest in batches of 1,000,
// seal; one window query and one symbol scan cold (the store's files
// evicted from the page cache and the store reopened first); then warm: the full scan (whose
// first run warms the page cache), the window queries and the symbol
// scan. Every answer is checked. For tickdb it runs the reader workloads
// on the sealed table too.
func (x *run) system(p Peer) (err error) {
	dir, err := x.tempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	open := p.Open
	if p.Name == TickDB && x.cfg.TickDBSegment > 0 {
		open = func(dir string, d *Data) (System, error) {
			return openTickDBWith(dir, d, writer.Options{Flush: writer.FlushInterval, SegmentSize: x.cfg.TickDBSegment, CompactAge: -1})
		}
	}
	s, err := open(dir, x.d)
	if err != nil {
		return err
	}
	defer func() {
		if e := s.Close(); err == nil {
			err = e
		}
	}()
	const batch = 1000
	ticks := x.d.Ticks
	start := time.Now()
	for i := 0; i < len(ticks); i += batch {
		if err := s.Ingest(ticks[i:min(i+batch, len(ticks))]); err != nil {
			return fmt.Errorf("ingest at tick %d: %w", i, err)
		}
	}
	ingest := time.Since(start)
	if err := s.Seal(); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	sealed := time.Since(start)
	n := float64(len(ticks))
	x.add(MIngest, p.Name, "rows/s", false, n/ingest.Seconds())
	x.add(MSealed, p.Name, "rows/s", false, n/sealed.Seconds())

	check := checkAnswer
	// Cold: the store's files out of the page cache and the store
	// reopened (its own caches gone), one window and one symbol scan.
	for _, c := range []struct {
		metric string
		q      Query
	}{{MWindowCold, x.d.Windows(1)[0]}, {MSymScanCold, x.d.SymbolScan()}} {
		if err := Evict(dir); err != nil {
			return err
		}
		if err := s.Reopen(); err != nil {
			return fmt.Errorf("reopen: %w", err)
		}
		t0 := time.Now()
		got, err := s.Query(c.q)
		el := time.Since(t0)
		if err != nil {
			return fmt.Errorf("%s: %w", c.metric, err)
		}
		if err := check(c.metric, c.q, got); err != nil {
			return err
		}
		x.add(c.metric, p.Name, "ns", true, float64(el.Nanoseconds()))
		x.note(c.metric, p.Name, c.q.Want.Rows, "")
	}

	for _, sc := range []struct {
		metric string
		q      Query
		k      int
	}{{MScan, x.d.FullScan(), 3}, {MSymScan, x.d.SymbolScan(), 5}} {
		// Warm-up passes first, as for the windows below: a reader's
		// first pass over compressed segments grows its decoding
		// buffers (a block a symbol, and each decoding goroutine's
		// own, grown by the first block it happens to take), which
		// later passes reuse.
		for range 3 {
			if _, err := s.Query(sc.q); err != nil {
				return fmt.Errorf("%s: %w", sc.metric, err)
			}
		}
		var best time.Duration
		m0 := mallocs()
		for i := 0; i < sc.k; i++ {
			t0 := time.Now()
			got, err := s.Query(sc.q)
			el := time.Since(t0)
			if err != nil {
				return fmt.Errorf("%s: %w", sc.metric, err)
			}
			if err := check(sc.metric, sc.q, got); err != nil {
				return err
			}
			if i == 0 || el < best {
				best = el
			}
		}
		x.allocs(sc.metric, p.Name, float64(mallocs()-m0)/float64(sc.k))
		if sc.metric == MScan {
			x.add(sc.metric, p.Name, "rows/s", false, float64(sc.q.Want.Rows)/best.Seconds())
		} else {
			x.add(sc.metric, p.Name, "ns", true, float64(best.Nanoseconds()))
		}
		x.note(sc.metric, p.Name, sc.q.Want.Rows, "")
	}
	// Windows: a warm-up pass over a few, then every query timed.
	wins := x.d.Windows(x.cfg.Windows)
	for _, q := range wins[:min(8, len(wins))] {
		if _, err := s.Query(q); err != nil {
			return err
		}
	}
	h := NewHist()
	m0 := mallocs()
	for _, q := range wins {
		t0 := time.Now()
		got, err := s.Query(q)
		Record(h, time.Since(t0).Nanoseconds())
		if err != nil {
			return fmt.Errorf("window: %w", err)
		}
		if err := check("window", q, got); err != nil {
			return err
		}
	}
	x.allocs(MWindow, p.Name, float64(mallocs()-m0)/float64(len(wins)))
	x.add(MWindow, p.Name, "ns", true, float64(h.ValueAtQuantile(50)))
	x.hist(MWindow, p.Name).Merge(h)
	x.note(MWindow, p.Name, wins[0].Want.Rows, "")

	if t, ok := s.(*tickdbSystem); ok {
		return x.reads(t)
	}
	return nil
}

// bestOf runs f k times and returns the best (the fastest) result:
// noise on a shared machine only ever slows a run down.
func bestOf(k int, lower bool, f func() (float64, error)) (float64, error) {
	var vs []float64
	for range k {
		v, err := f()
		if err != nil {
			return 0, err
		}
		vs = append(vs, v)
	}
	if lower {
		return slices.Min(vs), nil
	}
	return slices.Max(vs), nil
}

// perSec is n over d in units per second.
func perSec(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

// nsPer is d over n in ns.
func nsPer(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / float64(n) }

// checkSum compares a computed checksum with the data's.
func checkSum(what string, got, want uint64) error {
	if got != want {
		return fmt.Errorf("%s: checksum %#x, the data gives %#x", what, got, want)
	}
	return nil
}
