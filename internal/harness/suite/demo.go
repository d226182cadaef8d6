package suite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/child"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The demo workload (`tickdb demo`): a pinned writer appends generated
// ticks flat out, publishing in batches, while a reader in another process
// (demoReaderChild) tails the table and checks every row against the same
// generator; the writer times appends and publish batches, and the two
// processes' wall clocks time publish → visible and publish → verified.
// Then queries from the writer's process, each answer checked.
const (
	// DemoPublishEvery is the writer's publish batch, in rows.
	DemoPublishEvery = 64
	// DemoSampleEvery is the cross-process latency sampling period in
	// rows, a multiple of DemoPublishEvery (see demoLatency).
	DemoSampleEvery = 1024
	// demoAppendSampleAt is the position, inside each publish batch, of
	// the one Append that is timed on its own. It is odd, so it is never
	// the first row of a segment (segments hold a power of two ≥ 16 rows):
	// roll costs show in the batch histogram instead.
	demoAppendSampleAt = 31
	// demoMaxPregen caps the rows generated ahead of the timed loop (8 Mi
	// rows, 256 MiB): larger runs generate in chunks of this size, and the
	// pause between chunks is not timed.
	demoMaxPregen = 1 << 23
)

// DemoConfig configures Demo.
type DemoConfig struct {
	DB, Table   string // the table must not exist yet
	Rows        int    // ticks to write
	Symbols     int    // the generator's symbols
	Seed        int64  // the generator's seed
	CPU         int    // pin the writer to this CPU; negative: thread-locked only
	SegmentSize int64
	// LiveDir is the writer's live slot directory; "" picks the writer's
	// default (/dev/shm) when it has room, else the table's directory.
	LiveDir string
	Spin    bool         // the reader process busy-spins instead of backing off
	Logger  *slog.Logger // the writer's (nil: none)
	// Temporary says the database is removed after the run: a writer that
	// fails to close then has its live slots removed too, instead of kept
	// for a warm restart.
	Temporary bool
	// Started, if set, is called once the reader process tails the table,
	// before the first row is appended.
	Started func(DemoSetup)
}

// DemoSetup is the shape of a demo run, known before its first row.
type DemoSetup struct {
	Schema      *store.Schema
	SegmentRows uint64
	LiveDir     string // where the writer's live slots are
	// ShmFree and ShmNeed, when ShmNeed is not 0, say why the live slots
	// are in the table's directory: /dev/shm had ShmFree bytes free.
	ShmFree, ShmNeed int64
	ReaderPid        int
	Idle             string // the reader process's idle strategy
}

// DemoReport is what a demo run measured. Every latency is nil when it has
// no samples.
type DemoReport struct {
	AppendTime time.Duration // the timed loops: appends, publishes, sampling
	SyncTime   time.Duration // Sync after the last row
	TimerCost  time.Duration // one clock read, part of each append and batch sample

	ReaderPid int
	Verified  uint64        // rows the reader process checked
	ReadTime  time.Duration // its first row to its last
	Rereads   int           // rows it read again through a checked copy

	AppendLat, BatchLat     *Latency // one Append of each batch; each batch with its Publish
	VisibleLat, VerifiedLat *Latency // publish → seen by the reader process, and checked by it

	Queries []DemoQuery
	Stats   writer.Stats // the writer's counters before it closed

	// SlowBatches are the publish batches slower than DemoSlowBatch, and
	// SlowTime their total time: where AppendTime goes beyond what the
	// median batch's rate would take (the writer thread preempted or
	// faulting in fresh shared memory, a segment roll).
	SlowBatches int64
	SlowTime    time.Duration
	// The durable lag (published rows not yet durable) as sampled every
	// DemoLagEvery while the rows were appended: its largest value, and
	// the time it was over LagLimit, the writer's MaxLag (one segment: a
	// durable-lag alarm), which is below LagBound, the most it can reach
	// ((live slots - 1) segments) before the writer waits at a roll.
	MaxLag, LagLimit, LagBound uint64
	LagOver                    time.Duration
	// DurableAtEnd is the rows durable when the last row was appended,
	// before the Sync.
	DurableAtEnd uint64
	RowSize      int // the table's row, in bytes
}

// DemoSlowBatch is the publish batch time above which a batch counts as
// slow in DemoReport; DemoLagEvery the durable lag's sampling period.
const (
	DemoSlowBatch = 10 * time.Microsecond
	DemoLagEvery  = time.Millisecond
)

// DemoQuery is one timed query of the demo.
type DemoQuery struct {
	Label string
	Rows  int64         // rows in the answer (1 for a point read)
	Time  time.Duration // the median run, or per call for a point read
	Point bool          // a point read: Time is per call, no rate
	Note  string
}

// DemoIdle is the reader process's idle strategy and its description:
// with spin a busy spin; else a backoff that spins about 5 µs, yields a
// little, then sleeps from 1 µs up to 100 µs, so an idle reader costs
// little CPU on a two-core machine yet catches a burst within
// microseconds.
func DemoIdle(spin bool) (reader.IdleStrategy, string) {
	if spin {
		return reader.BusySpin{}, "busy-spin"
	}
	b := &reader.Backoff{Spins: 1000, Yields: 100, MinSleep: time.Microsecond, MaxSleep: 100 * time.Microsecond}
	return b, fmt.Sprintf("backoff (spin, yield, then sleep %d µs to %d µs)", b.MinSleep.Microseconds(), b.MaxSleep.Microseconds())
}

// Demo runs the demo workload on a new table and closes its writer (the
// live slots removed); the table stays in c.DB. A wrong row or answer is
// an error.
func Demo(ctx context.Context, c DemoConfig) (rep *DemoReport, err error) {
	if c.Rows <= 0 || c.Symbols <= 0 {
		return nil, fmt.Errorf("demo: %d rows of %d symbols: want at least 1 of each", c.Rows, c.Symbols)
	}
	schema := store.TickSchema()
	live, free, need := demoLiveDir(c, schema)
	wo := &writer.Options{Schema: schema, SegmentSize: c.SegmentSize, LiveDir: live, Logger: c.Logger}
	if c.CPU >= 0 {
		wo.CPU, wo.PinCPU = c.CPU, true
	}
	w, err := writer.Open(c.DB, c.Table, wo)
	if err != nil {
		return nil, err
	}
	defer func() {
		if w == nil {
			return
		}
		// A writer that failed keeps its live slots for a warm restart;
		// a temporary database has no restart coming.
		if w.Close() != nil && c.Temporary {
			_ = os.RemoveAll(w.LiveDir())
		}
	}()
	g := gen.New(gen.Options{Symbols: c.Symbols, Seed: c.Seed})
	names := g.Symbols()
	ids := make([]uint32, len(names))
	for i, s := range names {
		if ids[i], err = w.SymbolString(s); err != nil {
			return nil, fmt.Errorf("add symbol %s: %w", s, err)
		}
	}

	// The reader process starts once the symbols are published and before
	// the first row, and says when it is tailing.
	args := []string{"-db", c.DB, "-table", c.Table, "-rows", strconv.Itoa(c.Rows),
		"-symbols", strconv.Itoa(c.Symbols), "-seed", strconv.FormatInt(c.Seed, 10)}
	if c.Spin {
		args = append(args, "-spin")
	}
	rc, err := child.Start(roleDemoReader, &child.Options{Args: args})
	if err != nil {
		return nil, err
	}
	defer rc.Kill()
	if err := demoExpect(ctx, rc, "ready", 30*time.Second); err != nil {
		return nil, err
	}
	r, err := reader.Open(c.DB, c.Table, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if c.Started != nil {
		_, idle := DemoIdle(c.Spin)
		c.Started(DemoSetup{Schema: schema, SegmentRows: r.SegmentRows(), LiveDir: w.LiveDir(), ShmFree: free, ShmNeed: need, ReaderPid: rc.Pid, Idle: idle})
	}

	// Append on a goroutine of its own: Pin locks it to an OS thread (and
	// a CPU with CPU), and when it returns still locked the runtime
	// retires that thread, so the affinity never leaks to other goroutines.
	// The channel hands the writer back to this goroutine.
	done := make(chan demoWrite, 1)
	lagc := make(chan demoLag, 1)
	stopLag := make(chan struct{})
	limit := r.SegmentRows() // the writer's default MaxLag
	go func() { lagc <- sampleLag(r, limit, stopLag) }()
	go func() { done <- demoAppend(ctx, w, g, ids, c.Rows) }()
	wr := <-done
	close(stopLag)
	lag := <-lagc
	if wr.err != nil {
		return nil, fmt.Errorf("write: %w", wr.err)
	}
	rep = &DemoReport{AppendTime: wr.appendTime, SyncTime: wr.syncTime, TimerCost: wr.timerCost, ReaderPid: rc.Pid,
		AppendLat: LatencyOf(wr.appendLat), BatchLat: LatencyOf(wr.batchLat),
		MaxLag: lag.max, LagOver: lag.over, LagLimit: limit, LagBound: uint64(demoLiveSlots-1) * limit, DurableAtEnd: wr.durableAtEnd,
		RowSize: schema.RowSize}
	for _, b := range wr.batchLat.Distribution() {
		if b.From >= int64(DemoSlowBatch) && b.Count > 0 {
			rep.SlowBatches += b.Count
			rep.SlowTime += time.Duration(b.Count * (b.From + b.To) / 2)
		}
	}

	// The reader process has seen every row or failed.
	res, err := demoReaderResult(ctx, rc, c.Rows)
	if err != nil {
		return nil, err
	}
	rep.Verified, rep.ReadTime, rep.Rereads = res.rows, res.elapsed, res.rereads
	vis, seen := demoLatency(wr.stamps, res.samples)
	rep.VisibleLat, rep.VerifiedLat = LatencyOf(vis), LatencyOf(seen)

	if rep.Queries, err = demoQueries(r, wr.firstTs, w.LastTs(), names, ids, c.Seed); err != nil {
		return nil, err
	}
	rep.Stats = w.Stats()
	err, w = w.Close(), nil
	if err != nil {
		return nil, fmt.Errorf("close writer: %w", err)
	}
	return rep, nil
}

// demoLiveDir picks the live slot directory: c.LiveDir, else the writer's
// default (/dev/shm) when it has room for the table's live slots, else the
// table's own directory on disk (slower to populate, same semantics), with
// the bytes /dev/shm has free and the bytes needed.
func demoLiveDir(c DemoConfig, s *store.Schema) (dir string, free, need int64) {
	if c.LiveDir != "" {
		return c.LiveDir, 0, 0
	}
	var fs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &fs); err != nil {
		return "", 0, 0
	}
	const slots = demoLiveSlots
	need = slots * (c.SegmentSize + int64(s.RowSize) + 2*format.BlockSize)
	if free = int64(fs.Bavail) * fs.Bsize; free < need+need/8 {
		return filepath.Join(c.DB, c.Table, "live"), free, need
	}
	return "", 0, 0
}

// demoExpect waits for the reader process's report word, giving up with
// ctx.
func demoExpect(ctx context.Context, c *child.Child, word string, timeout time.Duration) error {
	stop := context.AfterFunc(ctx, c.Kill)
	defer stop()
	_, err := expectReader(c, word, timeout)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// expectReader is expect with the demo's error: a reader process that
// failed is reported with its exit status and message.
func expectReader(c *child.Child, word string, timeout time.Duration) (string, error) {
	l, err := c.Next(timeout)
	switch {
	case errors.Is(err, child.ErrExited) || err == nil && strings.HasPrefix(l, "error "):
		msg := strings.TrimPrefix(l, "error ")
		if err != nil {
			msg = c.LastLog()
		}
		if msg == "" {
			msg = "no message"
		}
		if werr := c.Wait(time.Minute); werr != nil {
			return "", fmt.Errorf("reader process failed (%v): %s", werr, msg)
		}
		return "", fmt.Errorf("reader process ended before %q: %s", word, msg)
	case err != nil:
		return "", fmt.Errorf("reader process: %w", err)
	}
	rest, ok := strings.CutPrefix(l, word)
	if !ok {
		return "", fmt.Errorf("reader process said %q, want %q", l, word)
	}
	return strings.TrimPrefix(rest, " "), nil
}

// demoReaderRes is what the reader process reported.
type demoReaderRes struct {
	rows    uint64
	elapsed time.Duration
	rereads int
	samples map[uint64]demoSample // by seq
}

// demoSample is the reader process's two wall-clock sightings of a
// sampled row (see demoLatency).
type demoSample struct{ visible, seen int64 }

// demoReaderResult takes the reader process's reports up to "done":
// "sample <seq> <visible ns> <seen ns>" lines, then "done <rows>
// <elapsed ns> <rereads>"; it must have verified rows rows and exited.
func demoReaderResult(ctx context.Context, c *child.Child, rows int) (*demoReaderRes, error) {
	stop := context.AfterFunc(ctx, c.Kill)
	defer stop()
	res := &demoReaderRes{samples: map[uint64]demoSample{}}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l, err := expectReader(c, "", time.Until(deadline))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, err
		}
		f := strings.Fields(l)
		var v [3]int64
		for i := 1; i < len(f) && i <= 3; i++ {
			if v[i-1], err = strconv.ParseInt(f[i], 10, 64); err != nil {
				break
			}
		}
		switch {
		case err != nil || len(f) != 4:
			return nil, fmt.Errorf("reader process said %q", l)
		case f[0] == "sample":
			res.samples[uint64(v[0])] = demoSample{visible: v[1], seen: v[2]}
			continue
		case f[0] != "done":
			return nil, fmt.Errorf("reader process said %q", l)
		}
		res.rows, res.elapsed, res.rereads = uint64(v[0]), time.Duration(v[1]), int(v[2])
		if err := c.Wait(time.Minute); err != nil {
			return nil, fmt.Errorf("reader process: %w: %s", err, c.LastLog())
		}
		if res.rows != uint64(rows) {
			return nil, fmt.Errorf("reader process verified %d of %d rows", res.rows, rows)
		}
		return res, nil
	}
}

// demoLiveSlots is the demo writer's live slots: writer.Options.LiveSlots'
// default.
const demoLiveSlots = 4

// demoLag is what sampleLag saw.
type demoLag struct {
	max  uint64
	over time.Duration
}

// sampleLag samples the durable lag of r's table every DemoLagEvery
// until stop: its largest value, and for how long it was over limit. The
// two counts are read from the control file, as another process would.
func sampleLag(r *reader.Reader, limit uint64, stop <-chan struct{}) (l demoLag) {
	t := time.NewTicker(DemoLagEvery)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return l
		case <-t.C:
		}
		d := r.Durable()
		v := r.Len()
		now := time.Now()
		if v > d {
			lag := v - d
			l.max = max(l.max, lag)
			if lag > limit {
				l.over += now.Sub(last)
			}
		}
		last = now
	}
}

// demoWrite is what the writer goroutine measured.
type demoWrite struct {
	appendTime time.Duration
	syncTime   time.Duration
	timerCost  time.Duration
	appendLat  *hdrhistogram.Histogram // one Append in every publish batch
	batchLat   *hdrhistogram.Histogram // every publish batch: its appends and Publish
	stamps     []int64                 // wall clock just before each sampled Publish
	firstTs    int64                   // first tick's ts
	// durableAtEnd is the rows durable when the last one was appended.
	durableAtEnd uint64
	err          error
}

// demoAppend runs on its own goroutine: it pins it, then appends rows
// ticks from g, publishing every DemoPublishEvery rows, and syncs.
//
// Timing: the loop reads the monotonic clock once per publish batch (batch
// histogram) and twice more around one Append per batch (append
// histogram); before each DemoSampleEvery-th row's Publish it reads the
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
	r.appendLat, r.batchLat = NewHist(), NewHist()
	r.stamps = make([]int64, rows/DemoSampleEvery)
	r.timerCost = clockCost()
	cancelled := ctx.Done()
	base := time.Now()
	for done := 0; done < rows; {
		n := min(chunk, rows-done)
		DemoEncode(buf[:n*rs], s, g, ids)
		if done == 0 {
			r.firstTs = store.Row(buf).Ts()
		}
		start := time.Since(base)
		prev := start
		for b := 0; b < n; b += DemoPublishEvery {
			e := min(b+DemoPublishEvery, n)
			for j := b; j < e; j++ {
				row := store.Row(buf[j*rs : j*rs+rs])
				var err error
				if j-b == demoAppendSampleAt {
					t0 := time.Since(base)
					_, err = w.Append(row)
					Record(r.appendLat, int64(time.Since(base)-t0))
				} else {
					_, err = w.Append(row)
				}
				if err != nil {
					r.err = fmt.Errorf("append row %d: %w", done+j, err)
					return r
				}
			}
			if k := done + e; k%DemoSampleEvery == 0 {
				select {
				case <-cancelled:
					r.err = ctx.Err()
					return r
				default:
				}
				r.stamps[k/DemoSampleEvery-1] = time.Now().UnixNano()
			}
			w.Publish()
			now := time.Since(base)
			Record(r.batchLat, int64(now-prev))
			prev = now
		}
		r.appendTime += prev - start
		done += n
	}
	r.durableAtEnd = w.Stats().Durable
	t := time.Now()
	r.err = w.Sync()
	r.syncTime = time.Since(t)
	return r
}

// DemoEncode fills buf, a whole number of rows of the tick schema s, with
// the next ticks of g; ids maps the generator's symbols to dictionary ids.
// The check words are left for the writer.
func DemoEncode(buf []byte, s *store.Schema, g *gen.Gen, ids []uint32) {
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
// Method: for every DemoSampleEvery-th row (the last row of a publish
// batch), the writer reads the wall clock (CLOCK_REALTIME, which all
// processes on a machine share) just before the Publish that makes the row
// visible. The reader process reads the wall clock twice for that row: when
// it first loads a published count that covers it (it loads the count
// every DemoPublishEvery rows it works through, and at every sampled row),
// and when its tail hands it the row to verify. visible - stamp is the
// store's publish-to-visibility latency across processes (the publish, the
// cache-line transfer, the reader's idle strategy); seen - stamp adds the
// reader's backlog (it verifies every row in order), i.e. what a consumer
// of the stream experiences. The writer keeps its stamps in memory and the
// reader reports its sightings at the end, so no clock read or message
// sits on the other side's path. A negative difference (a wall-clock step)
// counts as 0.
func demoLatency(stamps []int64, samples map[uint64]demoSample) (visible, seen *hdrhistogram.Histogram) {
	visible, seen = NewHist(), NewHist()
	for k, st := range stamps {
		m, ok := samples[uint64((k+1)*DemoSampleEvery-1)]
		if !ok || st == 0 {
			continue
		}
		if m.visible != 0 {
			Record(visible, max(m.visible-st, 0))
		}
		Record(seen, max(m.seen-st, 0))
	}
	return visible, seen
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
