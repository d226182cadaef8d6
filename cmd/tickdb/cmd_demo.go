//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/gen"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The demo's fixed shape.
const (
	demoTable = "trades"
	// demoPublishEvery is the writer's publish batch, in rows.
	demoPublishEvery = 64
	// demoSampleEvery is the cross-process latency sampling period in rows,
	// a multiple of demoPublishEvery (see demoLatency).
	demoSampleEvery = 1024
	// demoAppendSampleAt is the position, inside each publish batch, of
	// the one Append that is timed on its own. It is odd, so it is never
	// the first row of a segment (segments hold a power of two ≥ 16 rows):
	// roll costs show in the batch histogram instead.
	demoAppendSampleAt = 31
	// demoMaxPregen caps the rows generated ahead of the timed loop (8 Mi
	// rows, 256 MiB): larger runs generate in chunks of this size, and the
	// pause between chunks is not timed.
	demoMaxPregen = 1 << 23
	// demoSegmentSize is the default segment size: small enough that the
	// default run rolls through several segments and its four live slots
	// (64 MiB) fit a container's default /dev/shm.
	demoSegmentSize = 16 << 20
	// demoChildEnv is set in the reader process's environment. The tickdb
	// binary ignores it; a test binary's TestMain sees it and runs the CLI
	// instead of the tests, because under "go test" os.Executable is the
	// test binary. So the demo re-executes itself the same way in both.
	demoChildEnv = "TICKDB_DEMO_CHILD"
	// demoMaxLatency is the histograms' upper bound (ns); larger values
	// are recorded as this.
	demoMaxLatency = int64(10 * time.Second)
)

// demoIdle is the reader process's idle strategy: with spin a busy spin;
// else a backoff that spins about 5 µs, yields a little, then sleeps from
// 1 µs up to 100 µs, so an idle reader costs little CPU on a two-core
// machine yet catches a burst within microseconds.
func demoIdle(spin bool) (reader.IdleStrategy, string) {
	if spin {
		return reader.BusySpin{}, "busy-spin"
	}
	b := &reader.Backoff{Spins: 1000, Yields: 100, MinSleep: time.Microsecond, MaxSleep: 100 * time.Microsecond}
	return b, fmt.Sprintf("backoff (spin, yield, then sleep %s to %s)", fmtNs(int64(b.MinSleep)), fmtNs(int64(b.MaxSleep)))
}

type demoOpts struct {
	g       *globals
	rows    int
	symbols int
	seed    int64
	cpu     int
	segSize byteSize
	spin    bool
	liveDir string
}

func newDemoCmd(g *globals) *cobra.Command {
	o := &demoOpts{g: g, segSize: demoSegmentSize}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Write synthetic ticks, verify them from a second process, query them, print throughput and latency",
		Long: `demo is tickdb's out-of-the-box run. It creates the table "trades"
(ts, sym, price, size) in a fresh database, generates realistic synthetic
trades for many symbols and appends them on a pinned writer thread, while a
second process tails the table and checks every row against the same
generator. Then it queries by time and by symbol and prints throughput,
append and cross-process latency percentiles, query timings and the
writer's counters.

Without --db the database is a temporary directory removed at the end; with
--db it is kept (the table must not exist yet).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd, o) },
	}
	f := c.Flags()
	f.IntVar(&o.rows, "rows", 5_000_000, "ticks to write")
	f.IntVar(&o.symbols, "symbols", 100, "distinct symbols")
	f.Int64Var(&o.seed, "seed", 1, "generator seed (the same seed gives the same ticks)")
	f.IntVar(&o.cpu, "cpu", -1, "pin the writer thread to this CPU (-1: no CPU affinity)")
	f.Var(&o.segSize, "segment-size", "segment size in bytes (suffixes K, M, G are powers of 1024)")
	f.BoolVar(&o.spin, "spin", false, "the reader process busy-spins (burns a core) instead of backing off")
	f.StringVar(&o.liveDir, "live-dir", "", "directory for the live segments (default: under /dev/shm/tickdb)")
	return c
}

// demoWrite is what the writer goroutine measured.
type demoWrite struct {
	appendTime time.Duration // timed loops: appends, publishes, sampling
	syncTime   time.Duration
	timerCost  time.Duration  // cost of one clock read, for the reader of the report
	appendLat  *hdr.Histogram // one Append in every publish batch
	batchLat   *hdr.Histogram // every publish batch: its appends and Publish
	stamps     []int64        // wall clock just before each sampled Publish
	firstTs    int64          // first tick's ts
	err        error
}

func runDemo(cmd *cobra.Command, o *demoOpts) (err error) {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	began := time.Now()
	if o.rows <= 0 {
		return fmt.Errorf("demo: --rows %d: want at least 1", o.rows)
	}
	if o.symbols <= 0 || o.symbols > 1_000_000 {
		return fmt.Errorf("demo: --symbols %d: want 1 to 1,000,000", o.symbols)
	}
	db, temp := o.g.db, !cmd.Flags().Changed("db")
	if temp {
		if db, err = os.MkdirTemp("", "tickdb-demo-"); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer func() {
			if e := os.RemoveAll(db); e != nil && err == nil {
				err = fmt.Errorf("demo: remove temporary database: %w", e)
			}
		}()
	} else if _, err := os.Stat(filepath.Join(db, demoTable)); err == nil {
		return fmt.Errorf("demo: table %s already exists in %s (give a new --db, or omit it for a temporary one)", demoTable, db)
	}

	schema := store.TickSchema()
	liveDir, liveNote := demoLiveDir(o, db, schema)
	wo := &writer.Options{
		Schema:      schema,
		SegmentSize: int64(o.segSize),
		LiveDir:     liveDir,
		Logger:      slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if o.cpu >= 0 {
		wo.CPU, wo.PinCPU = o.cpu, true
	}
	w, err := writer.Open(db, demoTable, wo)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	wOpen := true
	defer func() {
		if wOpen {
			// A writer that failed keeps its live slots for a warm
			// restart; a temporary database has no restart coming.
			if w.Close() != nil && temp {
				os.RemoveAll(w.LiveDir())
			}
		}
	}()

	g := gen.New(gen.Options{Symbols: o.symbols, Seed: o.seed})
	names := g.Symbols()
	ids := make([]uint32, len(names))
	for i, s := range names {
		if ids[i], err = w.SymbolString(s); err != nil {
			return fmt.Errorf("demo: add symbol %s: %w", s, err)
		}
	}

	// The reader process starts once the symbols are published and before
	// the first row, and says when it is tailing.
	child, err := startDemoChild(ctx, db, o)
	if err != nil {
		return err
	}
	defer child.kill()
	if err := child.waitReady(ctx, 30*time.Second); err != nil {
		return err
	}

	// This process's reader, for the header and the queries.
	r, err := reader.Open(db, demoTable, nil)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer r.Close()
	kind := "kept"
	if temp {
		kind = "temporary, removed at the end"
	}
	pin := "thread-locked, no CPU affinity"
	if o.cpu >= 0 {
		pin = fmt.Sprintf("thread-locked, pinned to CPU %d", o.cpu)
	}
	_, idleName := demoIdle(o.spin)
	fmt.Fprintf(out, "tickdb demo: %s ticks over %s symbols (seed %d)\n", commas(int64(o.rows)), commas(int64(o.symbols)), o.seed)
	fmt.Fprintf(out, "  %-10s %d CPUs, %s/%s, %s\n", "machine", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(out, "  %-10s %s (%s)\n", "database", db, kind)
	fmt.Fprintf(out, "  %-10s %s: %s, %d-byte rows\n", "table", demoTable, schema, schema.RowSize)
	fmt.Fprintf(out, "  %-10s %s rows each; live slots in %s%s\n", "segments", commas(int64(r.SegmentRows())), w.LiveDir(), liveNote)
	fmt.Fprintf(out, "  %-10s %s; publishes every %d rows\n", "writer", pin, demoPublishEvery)
	fmt.Fprintf(out, "  %-10s pid %d, a separate process tailing; idle strategy %s\n", "reader", child.pid(), idleName)

	// Append on a goroutine of its own: Pin locks it to an OS thread (and
	// a CPU with --cpu), and when it returns still locked the runtime
	// retires that thread, so the affinity never leaks to other goroutines.
	// The channel hands the writer back to this goroutine.
	done := make(chan demoWrite, 1)
	go func() { done <- demoAppend(ctx, w, g, ids, o.rows) }()
	wr := <-done
	if wr.err != nil {
		return fmt.Errorf("demo: write: %w", wr.err)
	}
	fmt.Fprintf(out, "\nwrite\n")
	kv(out, "ticks appended", commas(int64(o.rows)), "")
	kv(out, "append time", fmtNs(int64(wr.appendTime)), "appends, publishes and timing; generation not timed")
	kv(out, "throughput", commas(int64(float64(o.rows)/wr.appendTime.Seconds())), "ticks/s")
	kv(out, "sync (every row durable)", fmtNs(int64(wr.syncTime)), "")

	// The reader process has seen every row or failed.
	res, err := child.wait(ctx, 2*time.Minute)
	if err != nil {
		return err
	}
	if !res.Done || res.Rows != uint64(o.rows) {
		return fmt.Errorf("demo: reader process verified %d of %d rows", res.Rows, o.rows)
	}
	fmt.Fprintf(out, "\nreader process (pid %d)\n", child.pid())
	kv(out, "rows verified", commas(int64(res.Rows)), "every value, in order, no gaps")
	if el := time.Duration(res.Elapsed); el > 0 {
		kv(out, "read throughput", commas(int64(float64(res.Rows)/el.Seconds())), "rows/s, first row to last, paced by the writer")
	}
	if res.Rereads > 0 {
		kv(out, "rows re-read", commas(int64(res.Rereads)), "live slot recycled under the reader; the checked copy matched")
	}

	vis, seen := demoLatency(wr.stamps, res.samples)
	fmt.Fprintf(out, "\n")
	latLine(out, "latency", "samples", "p50", "p99", "p99.9", "max")
	demoLatencyRow(out, fmt.Sprintf("append, 1 in %d", demoPublishEvery), wr.appendLat)
	demoLatencyRow(out, fmt.Sprintf("batch: %d appends + publish", demoPublishEvery), wr.batchLat)
	demoLatencyRow(out, fmt.Sprintf("publish → visible, 1 in %d", demoSampleEvery), vis)
	demoLatencyRow(out, fmt.Sprintf("publish → verified, 1 in %d", demoSampleEvery), seen)
	fmt.Fprintf(out, "  append and batch include one clock read (about %s). visible and verified are\n", fmtNs(int64(wr.timerCost)))
	fmt.Fprintf(out, "  seen from the reader process; verified adds its backlog, which grows while a\n")
	fmt.Fprintf(out, "  busy machine keeps it off a CPU.\n")

	if err := demoQueries(out, r, wr.firstTs, w.LastTs(), names, ids, o.seed); err != nil {
		return err
	}
	demoStats(out, w.Stats())

	wOpen = false
	if err := w.Close(); err != nil {
		return fmt.Errorf("demo: close writer: %w", err)
	}
	where := "temporary database removed"
	if !temp {
		where = "data kept in " + db
	}
	fmt.Fprintf(out, "\ndone in %s; live slots removed; %s\n", fmtNs(int64(time.Since(began)/time.Millisecond*time.Millisecond)), where)
	return nil
}

func demoStats(out io.Writer, st writer.Stats) {
	fmt.Fprintf(out, "\nwriter stats\n")
	kv(out, "rows appended", commas(int64(st.Appended)), "")
	kv(out, "rows visible", commas(int64(st.Visible)), "")
	kv(out, "rows durable", commas(int64(st.Durable)), "")
	kv(out, "segment rolls that waited", commas(int64(st.RollStalls)), fmtNs(int64(st.StallTime))+" waiting for the flusher and preparer")
	kv(out, "flushes (O_DIRECT writes)", commas(int64(st.Flushes)), fmtBytes(int64(st.FlushBytes)))
	kv(out, "durable-lag alarms", commas(int64(st.LagAlarms)), "")
	kv(out, "out-of-order rows", commas(int64(st.OutOfOrder)), "")
}

// demoLiveDir picks the live slot directory: --live-dir, else the writer's
// default (/dev/shm) when it has room for the table's live slots, else the
// table's own directory on disk (slower to populate, same semantics).
func demoLiveDir(o *demoOpts, db string, s *store.Schema) (dir, note string) {
	if o.liveDir != "" {
		return o.liveDir, ""
	}
	var fs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &fs); err != nil {
		return "", ""
	}
	const slots = 4 // writer.Options.LiveSlots default
	need := slots * (int64(o.segSize) + int64(s.RowSize) + 2*format.BlockSize)
	if avail := int64(fs.Bavail) * fs.Bsize; avail < need+need/8 {
		return filepath.Join(db, demoTable, "live"), fmt.Sprintf(" (/dev/shm has %s free, %s needed)", fmtBytes(avail), fmtBytes(need))
	}
	return "", ""
}

// demoAppend runs on its own goroutine: it pins it, then appends rows
// ticks from g, publishing every demoPublishEvery rows, and syncs.
//
// Timing: the loop reads the monotonic clock once per publish batch (batch
// histogram) and twice more around one Append per batch (append
// histogram); before each demoSampleEvery-th row's Publish it reads the
// wall clock for the cross-process samples. Rows are generated and encoded
// before the timed loop, so it allocates nothing and measures only the
// store.
func demoAppend(ctx context.Context, w *writer.Writer, g *gen.Gen, ids []uint32, rows int) (r demoWrite) {
	if r.err = w.Pin(); r.err != nil {
		return r
	}
	s := w.Schema()
	rs := s.RowSize
	chunk := min(rows, demoMaxPregen)
	buf := make([]byte, chunk*rs)
	r.appendLat = hdr.New(1, demoMaxLatency, 3)
	r.batchLat = hdr.New(1, demoMaxLatency, 3)
	r.stamps = make([]int64, rows/demoSampleEvery)
	r.timerCost = clockCost()
	cancelled := ctx.Done()
	base := time.Now()
	for done := 0; done < rows; {
		n := min(chunk, rows-done)
		demoEncode(buf[:n*rs], s, g, ids)
		if done == 0 {
			r.firstTs = store.Row(buf).Ts()
		}
		start := time.Since(base)
		prev := start
		for b := 0; b < n; b += demoPublishEvery {
			e := min(b+demoPublishEvery, n)
			for j := b; j < e; j++ {
				row := store.Row(buf[j*rs : j*rs+rs])
				var err error
				if j-b == demoAppendSampleAt {
					t0 := time.Since(base)
					_, err = w.Append(row)
					record(r.appendLat, int64(time.Since(base)-t0))
				} else {
					_, err = w.Append(row)
				}
				if err != nil {
					r.err = fmt.Errorf("append row %d: %w", done+j, err)
					return r
				}
			}
			if k := done + e; k%demoSampleEvery == 0 {
				select {
				case <-cancelled:
					r.err = ctx.Err()
					return r
				default:
				}
				r.stamps[k/demoSampleEvery-1] = time.Now().UnixNano()
			}
			w.Publish()
			now := time.Since(base)
			record(r.batchLat, int64(now-prev))
			prev = now
		}
		r.appendTime += prev - start
		done += n
	}
	t := time.Now()
	r.err = w.Sync()
	r.syncTime = time.Since(t)
	return r
}

// demoEncode fills buf, a whole number of rows of the tick schema s, with
// the next ticks of g; ids maps the generator's symbols to dictionary ids.
// The check words are left for the writer.
func demoEncode(buf []byte, s *store.Schema, g *gen.Gen, ids []uint32) {
	symC, _ := s.Col("sym")
	priceC, _ := s.Col("price")
	sizeC, _ := s.Col("size")
	for off := 0; off < len(buf); off += s.RowSize {
		t := g.Next()
		row := store.Row(buf[off : off+s.RowSize])
		row.SetTs(t.Ts)
		row.SetSym(symC, ids[t.Sym])
		row.SetF64(priceC, t.Price)
		row.SetI64(sizeC, t.Size)
	}
}

// demoLatency turns the writer's publish stamps and the reader's sightings
// into cross-process latencies.
//
// Method: for every demoSampleEvery-th row (the last row of a publish
// batch), the writer reads the wall clock (CLOCK_REALTIME, which all
// processes on a machine share) just before the Publish that makes the row
// visible. The reader process reads the wall clock twice for that row: when
// it first loads a published count that covers it (it loads the count
// every demoPublishEvery rows it works through, and at every sampled row),
// and when its tail hands it the row to verify. visible - stamp is the
// store's publish-to-visibility latency across processes (the publish, the
// cache-line transfer, the reader's idle strategy); seen - stamp adds the
// reader's backlog (it verifies every row in order), i.e. what a consumer
// of the stream experiences. The writer keeps its stamps in memory and the
// reader prints its sightings as JSON lines at the end, so no clock read or
// message sits on the other side's path. A negative difference (a
// wall-clock step) counts as 0.
func demoLatency(stamps []int64, samples map[uint64]demoMsg) (visible, seen *hdr.Histogram) {
	visible = hdr.New(1, demoMaxLatency, 3)
	seen = hdr.New(1, demoMaxLatency, 3)
	for k, st := range stamps {
		m, ok := samples[uint64((k+1)*demoSampleEvery-1)]
		if !ok || st == 0 {
			continue
		}
		if m.Visible != 0 {
			record(visible, max(m.Visible-st, 0))
		}
		record(seen, max(m.Seen-st, 0))
	}
	return visible, seen
}

func demoLatencyRow(out io.Writer, label string, h *hdr.Histogram) {
	if h.TotalCount() == 0 {
		latLine(out, "  "+label, "0", "-", "-", "-", "-")
		return
	}
	latLine(out, "  "+label, commas(h.TotalCount()),
		fmtNs(h.ValueAtQuantile(50)), fmtNs(h.ValueAtQuantile(99)), fmtNs(h.ValueAtQuantile(99.9)), fmtNs(h.Max()))
}

// demoQueries times reads from this process while the writer is still open
// (recent segments are read from the live slots, older ones from disk), and
// checks every answer against one plain scan of the table.
func demoQueries(out io.Writer, r *reader.Reader, firstTs, lastTs int64, names []string, ids []uint32, seed int64) error {
	s := r.Schema()
	symC, _ := s.Col("sym")
	priceC, _ := s.Col("price")
	sizeC, _ := s.Col("size")
	n := r.Len()
	span := lastTs - firstTs + 1
	from := firstTs + span/2 - span/200
	to := from + max(span/100, 1)
	busy, quiet := 0, len(names)-1
	var it reader.Iter

	// The expected answers, from a scan by sequence number.
	var all, window, busyWindow, busyAll, quietAll int
	if err := r.RangeSeq(0, n, &it); err != nil {
		return err
	}
	for it.Next() {
		row := it.Row()
		ts, sym := row.Ts(), row.Sym(symC)
		in := ts >= from && ts < to
		all++
		window += b2i(in)
		busyWindow += b2i(in && sym == ids[busy])
		busyAll += b2i(sym == ids[busy])
		quietAll += b2i(sym == ids[quiet])
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("demo: scan: %w", err)
	}

	// scan iterates it, returning rows and the volume-weighted price.
	scan := func() (rows int, vwap float64, err error) {
		var pv, v float64
		for it.Next() {
			row := it.Row()
			sz := float64(row.I64(sizeC))
			pv += row.F64(priceC) * sz
			v += sz
			rows++
		}
		if v > 0 {
			vwap = pv / v
		}
		return rows, vwap, it.Err()
	}
	const runs = 5
	fmt.Fprintf(out, "\n")
	queryLine(out, fmt.Sprintf("queries (this process, median of %d runs)", runs), "rows", "time", "rows/s")
	for _, q := range []struct {
		label string
		sym   int // -1: all symbols
		from  int64
		to    int64
		want  int
		vwap  bool
	}{
		{"all rows, all symbols", -1, firstTs, lastTs + 1, all, false},
		{"1% of the time span, all symbols", -1, from, to, window, false},
		// The busiest and the quietest symbol: the cost follows the
		// symbol's rows, not the table's.
		{fmt.Sprintf("symbol %s, 1%% of the span", names[busy]), busy, from, to, busyWindow, true},
		{fmt.Sprintf("symbol %s, whole span", names[busy]), busy, firstTs, lastTs + 1, busyAll, true},
		{fmt.Sprintf("symbol %s, whole span", names[quiet]), quiet, firstTs, lastTs + 1, quietAll, true},
	} {
		ds := make([]time.Duration, runs)
		var rows int
		var vwap float64
		for i := range ds {
			t := time.Now()
			var err error
			if q.sym < 0 {
				err = r.Range(q.from, q.to, &it)
			} else {
				err = r.RangeSym(q.from, q.to, ids[q.sym], &it)
			}
			if err == nil {
				rows, vwap, err = scan()
			}
			ds[i] = time.Since(t)
			if err != nil {
				return fmt.Errorf("demo: query %s: %w", q.label, err)
			}
		}
		if rows != q.want {
			return fmt.Errorf("demo: query %s returned %d rows, a scan finds %d", q.label, rows, q.want)
		}
		slices.Sort(ds)
		d := ds[runs/2]
		extra := ""
		if q.vwap {
			extra = fmt.Sprintf("vwap %.2f", vwap)
		}
		queryLine(out, "  "+q.label, commas(int64(rows)), fmtNs(int64(d)), fmtRate(float64(rows)/max(d.Seconds(), 1e-9)), extra)
	}

	// Point reads at random positions: the median over batches, per call
	// (the loop and the random-position load included).
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	const batches, perBatch = 101, 1000
	seqs := make([]uint64, perBatch)
	tss := make([]int64, perBatch)
	for i := range seqs {
		seqs[i] = rng.Uint64N(n)
		tss[i] = firstTs + rng.Int64N(span)
	}
	perCall := func(batch func() error) (time.Duration, error) {
		ds := make([]time.Duration, batches)
		for b := range ds {
			t := time.Now()
			if err := batch(); err != nil {
				return 0, err
			}
			ds[b] = time.Since(t)
		}
		slices.Sort(ds)
		return ds[batches/2] / perBatch, nil
	}
	var sink int64
	getNs, err := perCall(func() error {
		for _, seq := range seqs {
			row, err := r.Get(seq)
			if err != nil {
				return err
			}
			sink += row.Ts()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("demo: get: %w", err)
	}
	found := make([]uint64, perBatch)
	seekNs, err := perCall(func() error {
		for i, ts := range tss {
			seq, err := r.SeekTime(ts)
			if err != nil {
				return err
			}
			found[i] = seq
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("demo: seek: %w", err)
	}
	// SeekTime's answer is the first row at or after ts.
	for i, seq := range found {
		if err := demoCheckSeek(r, tss[i], seq, n); err != nil {
			return err
		}
	}
	_ = sink
	note := fmt.Sprintf("per call, median of %d batches of %d", batches, perBatch)
	queryLine(out, "  Get(seq), random seq", "1", fmtNs(int64(getNs)), "", note)
	queryLine(out, "  SeekTime(ts), random ts", "1", fmtNs(int64(seekNs)), "", note)
	fmt.Fprintf(out, "  (every answer checked against a plain scan of the table)\n")
	return nil
}

// demoCheckSeek checks that seq is the first of n rows with ts >= t.
func demoCheckSeek(r *reader.Reader, t int64, seq, n uint64) error {
	if seq < n {
		row, err := r.Get(seq)
		if err != nil {
			return fmt.Errorf("demo: seek check: %w", err)
		}
		if row.Ts() < t {
			return fmt.Errorf("demo: SeekTime(%d) = row %d, whose ts %d is earlier", t, seq, row.Ts())
		}
	}
	if seq > 0 {
		row, err := r.Get(seq - 1)
		if err != nil {
			return fmt.Errorf("demo: seek check: %w", err)
		}
		if row.Ts() >= t {
			return fmt.Errorf("demo: SeekTime(%d) = row %d, but row %d has ts %d", t, seq, seq-1, row.Ts())
		}
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// clockCost is the median cost of one monotonic clock read.
func clockCost() time.Duration {
	base := time.Now()
	var ds [31]time.Duration
	for i := range ds {
		t0 := time.Since(base)
		for j := 0; j < 99; j++ {
			_ = time.Since(base)
		}
		ds[i] = (time.Since(base) - t0) / 100
	}
	slices.Sort(ds[:])
	return ds[len(ds)/2]
}

func record(h *hdr.Histogram, v int64) {
	_ = h.RecordValue(min(max(v, 0), demoMaxLatency))
}

// demoChild is the reader process and its output. It belongs to the
// goroutine that started it (its output reader is internal).
type demoChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser // held open: the child stops when it reads EOF
	stderr bytes.Buffer   // read only after cmd.Wait
	ready  chan struct{}  // closed when the child says it is tailing
	done   chan struct{}  // closed when its stdout ends; res is then final
	res    demoChildResult
	waited bool
}

// demoChildResult is what the reader process reported.
type demoChildResult struct {
	demoMsg
	samples map[uint64]demoMsg // by seq: the sample lines
	err     error              // unreadable output
}

// demoMsg is one JSON line of the reader process's stdout: first
// {"ready":true}, then one {"seq":..,"visible_ns":..,"seen_ns":..} per
// sampled row (wall-clock times, see demoLatency), then
// {"done":true,"rows":..,...}.
type demoMsg struct {
	Ready   bool   `json:"ready,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	Visible int64  `json:"visible_ns,omitempty"`
	Seen    int64  `json:"seen_ns,omitempty"`
	Done    bool   `json:"done,omitempty"`
	Rows    uint64 `json:"rows,omitempty"`
	Elapsed int64  `json:"elapsed_ns,omitempty"`
	Rereads int    `json:"rereads,omitempty"`
}

// startDemoChild starts "<this executable> demo-reader ..." (see
// demoChildEnv for how that works under go test).
func startDemoChild(ctx context.Context, db string, o *demoOpts) (*demoChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("demo: find own executable for the reader process: %w", err)
	}
	args := []string{"demo-reader", "--db", db, "--table", demoTable,
		"--rows", strconv.Itoa(o.rows), "--symbols", strconv.Itoa(o.symbols),
		"--seed", strconv.FormatInt(o.seed, 10)}
	if o.spin {
		args = append(args, "--spin")
	}
	c := &demoChild{ready: make(chan struct{}), done: make(chan struct{})}
	c.res.samples = map[uint64]demoMsg{}
	c.cmd = exec.CommandContext(ctx, exe, args...)
	c.cmd.Env = append(os.Environ(), demoChildEnv+"=1")
	c.cmd.Stderr = &c.stderr
	c.cmd.WaitDelay = 5 * time.Second
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("demo: reader process: %w", err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("demo: reader process: %w", err)
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("demo: start reader process: %w", err)
	}
	go c.readOutput(stdout)
	return c, nil
}

func (c *demoChild) readOutput(stdout io.Reader) {
	defer close(c.done)
	dec := json.NewDecoder(stdout)
	readySeen := false
	for {
		var m demoMsg
		if err := dec.Decode(&m); err != nil {
			if !errors.Is(err, io.EOF) {
				c.res.err = err
				// Keep the pipe drained so the child can still exit.
				_, _ = io.Copy(io.Discard, stdout)
			}
			return
		}
		switch {
		case m.Ready && !readySeen:
			readySeen = true
			close(c.ready)
		case m.Done:
			c.res.demoMsg = m
		case m.Seen != 0:
			c.res.samples[m.Seq] = m
		}
	}
}

func (c *demoChild) pid() int { return c.cmd.Process.Pid }

// waitReady waits for the child to report that it is tailing the table.
func (c *demoChild) waitReady(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.ready:
		return nil
	case <-c.done:
		_, err := c.wait(ctx, timeout)
		if err == nil {
			err = errors.New("demo: reader process ended before it started tailing")
		}
		return err
	case <-t.C:
		c.kill()
		return fmt.Errorf("demo: reader process not tailing after %s", timeout)
	case <-ctx.Done():
		c.kill()
		return ctx.Err()
	}
}

// wait waits for the child to finish and returns its report; a non-zero
// exit becomes an error carrying the child's last stderr line.
func (c *demoChild) wait(ctx context.Context, timeout time.Duration) (*demoChildResult, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.kill()
		return nil, fmt.Errorf("demo: reader process still running %s after the writer finished", timeout)
	case <-ctx.Done():
		c.kill()
		return nil, ctx.Err()
	}
	c.waited = true
	err := c.cmd.Wait()
	if err != nil {
		msg := strings.TrimSpace(c.stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		msg = strings.TrimPrefix(msg, "tickdb: ")
		if msg == "" {
			msg = "no message"
		}
		return nil, fmt.Errorf("demo: reader process failed (%v): %s", err, msg)
	}
	if c.res.err != nil {
		return nil, fmt.Errorf("demo: reader process output: %w", c.res.err)
	}
	return &c.res, nil
}

// kill ends the child if it has not been waited for, and reaps it.
func (c *demoChild) kill() {
	if c.waited {
		return
	}
	c.waited = true
	_ = c.cmd.Process.Kill()
	<-c.done
	_ = c.cmd.Wait()
}

// latLine prints a line of the latency table.
func latLine(out io.Writer, cs ...string) { cells(out, []int{-34, 9, 9, 9, 9, 9}, cs...) }

// queryLine prints a line of the query table.
func queryLine(out io.Writer, cs ...string) { cells(out, []int{-46, 12, 10, 10}, cs...) }
