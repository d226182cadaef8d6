// Package benchutil holds what the storage-core benchmarks (writer/ and
// reader/ bench_test.go) share: the size knobs, a ring of encoded tick rows,
// the one-per-process benchmark table with its brute-force expected answers,
// latency histogram reporting, re-executed child processes, and RSS.
//
// # Knobs
//
// TICKDB_BENCH_ROWS sets the rows of the query table (default 20M);
// TICKDB_BENCH_BIG=1 enables the 100M-row open/RSS benchmark, and
// TICKDB_BENCH_BIG_DB=/db/dir points it at an existing table named "ticks"
// there instead of building one (an existing table is never removed).
//
// # Concurrency
//
// Nothing here is safe for concurrent use; each benchmark owns its values.
package benchutil

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/limits"
	"github.com/tickdb/tickdb/store"
	"golang.org/x/sys/unix"
)

// Seed is the generator seed of every benchmark data set.
const Seed = 1

// Symbols is the number of symbols in every benchmark data set.
const Symbols = 100

// Rows is the query table's row count: TICKDB_BENCH_ROWS (plain digits,
// or with a k/M suffix), else def.
func Rows(def uint64) uint64 {
	if n, ok := parseCount(os.Getenv("TICKDB_BENCH_ROWS")); ok {
		return n
	}
	return def
}

// Rates is the offered rates (rows/s; 0: as fast as it goes) a
// benchmark that paces its ingest runs at: TICKDB_BENCH_RATES, a comma
// list of counts ("0,5M,2M"), or def.
func Rates(def ...uint64) []uint64 {
	env := os.Getenv("TICKDB_BENCH_RATES")
	if env == "" {
		return def
	}
	var rates []uint64
	for _, f := range strings.Split(env, ",") {
		if f = strings.TrimSpace(f); f == "0" {
			rates = append(rates, 0)
		} else if n, ok := parseCount(f); ok {
			rates = append(rates, n)
		}
	}
	return rates
}

// Big reports whether the opt-in 100M-row benchmarks should run
// (TICKDB_BENCH_BIG=1).
func Big() bool { return os.Getenv("TICKDB_BENCH_BIG") == "1" }

func parseCount(s string) (uint64, bool) {
	mul := uint64(1)
	switch {
	case strings.HasSuffix(s, "M"):
		mul, s = 1_000_000, s[:len(s)-1]
	case strings.HasSuffix(s, "k"):
		mul, s = 1_000, s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	return n * mul, true
}

// CountName renders n for a sub-benchmark name: 20000000 → "20M".
func CountName(n uint64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.FormatUint(n/1_000_000, 10) + "M"
	case n >= 1_000 && n%1_000 == 0:
		return strconv.FormatUint(n/1_000, 10) + "k"
	}
	return strconv.FormatUint(n, 10)
}

// Encode writes tick t as a row of store.TickSchema (sym id = t.Sym, which
// is the dictionary id when the symbols were added in generator order)
// into dst, leaving the check word to the writer.
func Encode(dst []byte, t gen.Tick) {
	le := binary.LittleEndian
	le.PutUint64(dst[0:], uint64(t.Ts))
	le.PutUint64(dst[8:], math.Float64bits(t.Price))
	le.PutUint64(dst[16:], uint64(t.Size))
	le.PutUint32(dst[24:], uint32(t.Sym))
	le.PutUint32(dst[28:], 0)
}

// Ring is a ring of encoded tick rows (store.TickSchema, 32 bytes) cycled
// by the append benchmarks. Every time it wraps, its timestamps move on by
// the ring's span, so the rows it hands out never go back in time. The
// rows sit in cache (2 MiB for the default size), like rows a feed handler
// has just decoded.
type Ring struct {
	rows []byte
	n    int // rows in the ring (a power of two)
	pos  int
	span int64
}

// NewRing generates n rows (n a power of two) with the fixed seed.
func NewRing(n int) *Ring {
	g := gen.New(gen.Options{Symbols: Symbols, Seed: Seed})
	r := &Ring{rows: make([]byte, n*32), n: n}
	var first, last int64
	for i := 0; i < n; i++ {
		t := g.Next()
		if i == 0 {
			first = t.Ts
		}
		last = t.Ts
		Encode(r.rows[i*32:], t)
	}
	r.span = last - first + 1000
	return r
}

// Next returns the next row (a view into the ring, valid until it wraps).
func (r *Ring) Next() []byte {
	if r.pos == r.n {
		r.wrap()
	}
	b := r.rows[r.pos*32 : r.pos*32+32]
	r.pos++
	return b
}

// NextBatch returns the next k rows laid end to end; k must divide the
// ring's size.
func (r *Ring) NextBatch(k int) []byte {
	if r.pos == r.n {
		r.wrap()
	}
	b := r.rows[r.pos*32 : (r.pos+k)*32]
	r.pos += k
	return b
}

// MakeLate moves every every-th row's ts back by by ns: late rows (a
// table with a late window of at least by + the rows' spacing stores
// them), the same on every lap.
func (r *Ring) MakeLate(every int, by int64) {
	le := binary.LittleEndian
	for i := every - 1; i < r.n; i += every {
		le.PutUint64(r.rows[i*32:], le.Uint64(r.rows[i*32:])-uint64(by))
	}
}

func (r *Ring) wrap() {
	le := binary.LittleEndian
	for i := 0; i < r.n; i++ {
		le.PutUint64(r.rows[i*32:], le.Uint64(r.rows[i*32:])+uint64(r.span))
	}
	r.pos = 0
}

// AddSymbols adds the generator's symbols to a table through add (the
// writer's SymbolString) in order and checks that they get ids 0..n-1.
func AddSymbols(tb testing.TB, add func(string) (uint32, error)) {
	tb.Helper()
	for i, s := range gen.Symbols(Symbols) {
		id, err := add(s)
		if err != nil {
			tb.Fatal(err)
		}
		if id != uint32(i) {
			tb.Fatalf("symbol %s got id %d, want %d", s, id, i)
		}
	}
}

// NewHist returns a histogram of nanosecond values from 1 ns to 100 s with
// 3 significant digits. Preallocate it before the timed loop: recording
// into it does not allocate.
func NewHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 100_000_000_000, 3) }

// Record records v (clamped into the histogram's range).
func Record(h *hdrhistogram.Histogram, v int64) {
	_ = h.RecordValue(min(max(v, 1), h.HighestTrackableValue()))
}

// ReportHist reports p50, p99, p99.9 and max of h, each divided by div (a
// batch size, or 1), as prefix+"p50-ns" and so on. An empty histogram
// reports nothing.
func ReportHist(b *testing.B, h *hdrhistogram.Histogram, prefix, unit string, div float64) {
	if h.TotalCount() == 0 {
		return
	}
	b.ReportMetric(float64(h.ValueAtQuantile(50))/div, prefix+"p50-"+unit)
	b.ReportMetric(float64(h.ValueAtQuantile(99))/div, prefix+"p99-"+unit)
	b.ReportMetric(float64(h.ValueAtQuantile(99.9))/div, prefix+"p999-"+unit)
	b.ReportMetric(float64(h.Max())/div, prefix+"max-"+unit)
}

// EncodeHist renders h as one line of text (HdrHistogram V2, compressed,
// base64) for a child process to print.
func EncodeHist(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	return string(b), err
}

// DecodeHist parses a line written by EncodeHist.
func DecodeHist(s string) (*hdrhistogram.Histogram, error) {
	return hdrhistogram.Decode([]byte(s))
}

// RSSKiB is this process's resident set size (VmRSS in /proc/self/status)
// in KiB, or -1 if unknown.
func RSSKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			var n int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &n); err == nil {
				return n
			}
		}
	}
	return -1
}

// TickSchema is store.TickSchema and the columns the benchmarks use.
func TickSchema() (s *store.Schema, sym, price, size store.Col) {
	s = store.TickSchema()
	sym, _ = s.Col("sym")
	price, _ = s.Col("price")
	size, _ = s.Col("size")
	return
}

// CPUTimer measures the CPU time of the benchmark goroutine's thread over
// a timed loop. On a machine shared with other work, wall time includes
// the time the thread was descheduled; thread CPU time does not, so it is
// the steadier figure to compare with a limit.
type CPUTimer struct{ start time.Duration }

// StartCPU locks the calling goroutine to its thread (until Stop) and
// starts the timer.
func StartCPU() CPUTimer {
	runtime.LockOSThread()
	return CPUTimer{start: limits.ThreadCPU()}
}

// Stop returns the thread CPU time since StartCPU and unlocks the thread.
func (c CPUTimer) Stop() time.Duration {
	d := limits.ThreadCPU() - c.start
	runtime.UnlockOSThread()
	return d
}

// ThreadFaults is the calling thread's page fault count so far, minor and
// major (getrusage RUSAGE_THREAD); lock the goroutine to its thread around
// the two readings of an interval.
func ThreadFaults() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Minflt + ru.Majflt
}

// ProcCPU is the CPU time the whole process has used so far
// (CLOCK_PROCESS_CPUTIME_ID): every goroutine's, for work spread over
// several, such as a column scan decoding on goroutines of its own. On a
// machine shared with other work it leaves out the time the process
// waited for a core, as thread CPU time does for one thread.
func ProcCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
