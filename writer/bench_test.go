package writer_test

// Storage-core write benchmarks. Each one reports domain units (ns/row,
// rows/s, p50-ns ... max-ns, MB/s) and, where there is one, the matching
// raw limit of this machine measured in the same benchmark run by
// internal/harness/limits, with the ratio x-raw = limit cost / our cost (1 = at the
// limit). Data: 100 symbols, random-walk prices, sizes in round lots, ts
// about 1 µs apart, fixed seed (internal/harness/gen via internal/harness/benchutil).
//
// Run (about 3 minutes on the 2-core reference machine):
//
//	go test -run '^$' -bench . -count 3 ./writer | tee writer.txt
//	benchstat writer.txt
//
// Every benchmark writes its table under b.TempDir() (the temp dir's file
// system is the durable one: its O_DIRECT rate is the flusher's limit) and
// its live slots under a fresh /dev/shm directory; Close and the test
// cleanups remove both. Appending flat out for -benchtime writes about
// benchtime × the disk's bandwidth to disk, because a writer that outruns
// the flusher by LiveSlots segments waits at the segment roll (reported as
// stall-ns/row).

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/limits"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
	"golang.org/x/sys/unix"
)

var flushModes = []struct {
	name string
	p    writer.FlushPolicy
}{
	{"interval", writer.FlushInterval},
	{"none", writer.FlushNone},
}

// benchWriter opens a new table "ticks" in a fresh temp database with the
// default options but flush and a /dev/shm live dir, and adds the 100
// benchmark symbols. The writer is closed by b's cleanup if the benchmark
// has not closed it.
func benchWriter(b *testing.B, db string, o writer.Options) *writer.Writer {
	b.Helper()
	s, _, _, _ := benchutil.TickSchema()
	o.Schema = s
	if o.LiveDir == "" {
		o.LiveDir = testutil.LiveDir(b)
	}
	w, err := writer.Open(db, "ticks", &o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Close() })
	benchutil.AddSymbols(b, w.SymbolString)
	return w
}

// segRows is the rows per segment of table "ticks" in db, as a reader
// sees it.
func segRows(b *testing.B, db string) uint64 {
	r, err := reader.Open(db, "ticks", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	return r.SegmentRows()
}

// rawStore is the raw store limit: 32-byte rows stored into a resident
// 256 MiB MAP_SHARED tmpfs mapping (the default 4 live slots of 64 MiB),
// measured now, before the writer starts.
func rawStore(b *testing.B) limits.Result {
	b.Helper()
	r, err := limits.NewRegion("", 4*64<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	rows := len(r.Bytes()) / limits.RowSize
	limits.StoreRows(r.Bytes(), 0, rows) // every line touched once
	return limits.StoreRows(r.Bytes(), 0, 2*rows)
}

// BenchmarkAppend is the steady-state append throughput: Append of one row
// (Publish every 64 rows) and AppendBatch of 64 rows (Publish after each),
// with the flusher writing every millisecond (flush=interval, the default)
// and only sealed segments (flush=none), after a warm-up through the first
// LiveSlots segments. ns/row is wall time; stall-ns/row is the part spent
// at segment rolls waiting for the flusher to free a slot (appending flat
// out outruns the disk after LiveSlots-1 segments of slack). cpu-ns/row is
// the appending thread's CPU time per row: the cost of the append path
// (page faults included, the time descheduled or asleep at a roll left
// out), which x-raw compares with the raw store rate's (raw-cpu-ns/row)
// measured just before.
func BenchmarkAppend(b *testing.B) {
	for _, fm := range flushModes {
		b.Run("flush="+fm.name, func(b *testing.B) {
			for _, batch := range []int{1, 64} {
				b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
					benchAppend(b, fm.p, batch)
				})
			}
		})
	}
}

// BenchmarkAppendLate is BenchmarkAppend (flush=interval) with one row in
// 100 a late row, 3 µs behind the newest, under a 1 ms late window: the
// cost of the window's slow path (late.idx) on the append rate. Compare
// with BenchmarkAppend/flush=interval in the same run.
func BenchmarkAppendLate(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			benchAppendMix(b, writer.FlushInterval, batch, 100)
		})
	}
}

func benchAppend(b *testing.B, flush writer.FlushPolicy, batch int) {
	benchAppendMix(b, flush, batch, 0)
}

// benchAppendMix is benchAppend with one row in lateEvery late (0: none).
func benchAppendMix(b *testing.B, flush writer.FlushPolicy, batch, lateEvery int) {
	raw := rawStore(b)
	db := b.TempDir()
	o := writer.Options{Flush: flush}
	ring := benchutil.NewRing(1 << 16)
	if lateEvery > 0 {
		o.LateWindow = time.Millisecond
		ring.MakeLate(lateEvery, 3000)
	}
	w := benchWriter(b, db, o)
	// Warm up past the first LiveSlots segments, so the timed loop appends
	// into recycled, resident slots (steady state), and start it with
	// every row durable.
	warm := 4 * segRows(b, db)
	for w.Len() < warm {
		if _, _, err := w.AppendBatch(ring.NextBatch(64)); err != nil {
			b.Fatal(err)
		}
		w.Publish()
	}
	if err := w.Sync(); err != nil {
		b.Fatal(err)
	}
	st0 := w.Stats()
	b.ReportAllocs()
	cpu := benchutil.StartCPU()
	flt := benchutil.ThreadFaults()
	if batch == 1 {
		var i uint64
		for b.Loop() {
			if _, err := w.Append(ring.Next()); err != nil {
				b.Fatal(err)
			}
			if i++; i&63 == 0 {
				w.Publish()
			}
		}
	} else {
		for b.Loop() {
			if _, _, err := w.AppendBatch(ring.NextBatch(batch)); err != nil {
				b.Fatal(err)
			}
			w.Publish()
		}
	}
	flt = benchutil.ThreadFaults() - flt
	ct := cpu.Stop()
	el := b.Elapsed()
	st := w.Stats()
	rows := float64(st.Appended - st0.Appended)
	ns := float64(el.Nanoseconds()) / rows
	c := float64(ct.Nanoseconds()) / rows
	b.ReportMetric(ns, "ns/row")
	b.ReportMetric(rows/el.Seconds(), "rows/s")
	b.ReportMetric(float64((st.StallTime-st0.StallTime).Nanoseconds())/rows, "stall-ns/row")
	b.ReportMetric(c, "cpu-ns/row")
	b.ReportMetric(raw.NsPerOp(), "raw-ns/row")
	b.ReportMetric(raw.CPUNsPerOp(), "raw-cpu-ns/row")
	b.ReportMetric(raw.CPUNsPerOp()/c, "x-raw")
	b.ReportMetric(float64(flt)/rows*1e6, "faults/Mrow")
	if lateEvery > 0 {
		if st.Late-st0.Late < uint64(rows)/uint64(lateEvery)/2 || st.OutOfOrder != 0 {
			b.Fatalf("%d late rows stored, %d rejected, in %v rows", st.Late-st0.Late, st.OutOfOrder, rows)
		}
		b.ReportMetric(float64(st.Late-st0.Late)/rows*100, "late-%")
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAppendLatency times batches of 32 single-row Appends with the
// monotonic clock into preallocated histograms and reports per-row
// latency (batch time / 32): p50/p99/p99.9/max for the steady state (rows
// past the first LiveSlots segments, which go to recycled, resident slots)
// and, prefixed first-, for the first LiveSlots segments (fresh slots,
// which the preparer pre-faults in the background), and the steady mean
// (mean-ns). Publish runs after each batch, outside the timed part. One op
// is one row.
func BenchmarkAppendLatency(b *testing.B) {
	for _, fm := range flushModes {
		b.Run("flush="+fm.name, func(b *testing.B) {
			b.Run("batch=32", func(b *testing.B) {
				const batch = 32
				db := b.TempDir()
				w := benchWriter(b, db, writer.Options{Flush: fm.p})
				firstRows := 4 * segRows(b, db) // default LiveSlots
				ring := benchutil.NewRing(1 << 16)
				first, steady := benchutil.NewHist(), benchutil.NewHist()
				b.ReportAllocs()
				k := 0
				var t0 int64
				for b.Loop() {
					if k == 0 {
						t0 = benchutil.Nanotime()
					}
					if _, err := w.Append(ring.Next()); err != nil {
						b.Fatal(err)
					}
					if k++; k == batch {
						d := benchutil.Nanotime() - t0
						if w.Len() <= firstRows {
							benchutil.Record(first, d)
						} else {
							benchutil.Record(steady, d)
						}
						w.Publish()
						k = 0
					}
				}
				benchutil.ReportHist(b, steady, "", "ns", batch)
				// The mean of the same batches: mean-ns − p50-ns is what
				// the slow batches (interrupts, faults, preemption) add.
				b.ReportMetric(steady.Mean()/batch, "mean-ns")
				benchutil.ReportHist(b, first, "first-", "ns", batch)
				b.ReportMetric(float64(steady.TotalCount()*batch), "steady-rows")
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkPublishObserve is the publish-to-observe latency across
// processes: a child process (this test binary re-executed, running
// TestBenchChildObserve) maps the table with reader.Open and busy-spins on
// Count(); this process appends and publishes one row at a time, its ts
// set to time.Now().UnixNano() just before Append, so the figure includes
// Append and Publish. The child records CLOCK_REALTIME now - ts when it
// sees the row and sends its histogram back on stdout. One op is one
// published row. Between rows the writer waits 20 µs either spinning on
// the clock (wait=spin: the pinned-writer setup, but on a 2-core machine
// the two spinning threads leave no core for the flusher or anything
// else) or in nanosleep (wait=sleep: the writer's core is free between
// rows; ns/op shows the pace the kernel's timer slack gives).
func BenchmarkPublishObserve(b *testing.B) {
	for _, spin := range []bool{true, false} {
		name := "wait=sleep"
		if spin {
			name = "wait=spin"
		}
		b.Run(name, func(b *testing.B) {
			b.Run("pace=20us", func(b *testing.B) { benchObserve(b, spin) })
		})
	}
}

func benchObserve(b *testing.B, spin bool) {
	const pace = 20_000 // ns
	db, live := b.TempDir(), testutil.LiveDir(b)
	w := benchWriter(b, db, writer.Options{LiveDir: live, OutOfOrder: writer.OutOfOrderStamp})
	child := testutil.StartChild(b, "TestBenchChildObserve", "observe",
		&testutil.ChildOptions{Env: []string{"TICKDB_BENCH_DB=" + db, "TICKDB_BENCH_LIVE=" + live}})
	child.Expect(b, "READY", 30*time.Second, nil)
	_, sym, price, size := benchutil.TickSchema()
	row := store.Row(make([]byte, 32))
	row.SetSym(sym, 0)
	row.SetF64(price, 100)
	next := benchutil.Nanotime()
	publish := func(marker int64) {
		if spin {
			now := benchutil.Nanotime()
			for now < next {
				now = benchutil.Nanotime()
			}
			next = max(next, now-pace) + pace
		} else {
			// time.Sleep rounds to about 1 ms here; nanosleep does not.
			_ = unix.Nanosleep(&unix.Timespec{Nsec: pace}, nil)
		}
		row.SetI64(size, marker)
		row.SetTs(time.Now().UnixNano())
		if _, err := w.Append(row); err != nil {
			b.Fatal(err)
		}
		w.Publish()
	}
	for range 2000 { // warm-up: the child maps the live slot
		publish(0)
	}
	b.ReportAllocs()
	for b.Loop() {
		publish(1)
	}
	publish(-1)
	line := strings.Join(child.Expect(b, "HIST", 60*time.Second, nil), "")
	if err := child.Wait(time.Minute); err != nil {
		b.Fatal(err)
	}
	h, err := benchutil.DecodeHist(line)
	if err != nil {
		b.Fatal(err)
	}
	if h.TotalCount() != int64(b.N) {
		b.Fatalf("child observed %d rows, %d published", h.TotalCount(), b.N)
	}
	benchutil.ReportHist(b, h, "", "ns", 1)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// TestBenchChildObserve is BenchmarkPublishObserve's reader process; it
// skips unless run as that child.
func TestBenchChildObserve(t *testing.T) {
	testutil.ChildRole(t, "observe")
	r, err := reader.Open(os.Getenv("TICKDB_BENCH_DB"), "ticks", &reader.Options{LiveDir: os.Getenv("TICKDB_BENCH_LIVE")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, _, _, size := benchutil.TickSchema()
	h := benchutil.NewHist()
	last := r.Len()
	testutil.Report("READY")
	quiet := time.Now()
	for spins := 0; ; spins++ {
		c := r.Len()
		if c == last {
			if spins&(1<<22-1) == 0 && time.Since(quiet) > time.Minute {
				t.Fatal("no row published for a minute")
			}
			continue
		}
		now := time.Now().UnixNano()
		done := false
		for s := last; s < c; s++ {
			row, err := r.Get(s)
			if err != nil {
				t.Fatal(err)
			}
			switch row.I64(size) {
			case 1:
				benchutil.Record(h, now-row.Ts())
			case -1:
				done = true
			}
		}
		last, quiet = c, time.Now()
		if done {
			break
		}
	}
	line, err := benchutil.EncodeHist(h)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Report("HIST %s", line)
}

// BenchmarkFlusher is the flusher's throughput while the writer appends
// flat out (AppendBatch of 64 rows and Publish, FlushInterval): the rows
// made durable per second (durable-MB/s = rows × 32 B / time until a final
// Sync returns) against the raw O_DIRECT|O_DSYNC 1 MiB sequential write
// bandwidth of the same file system (raw-MB/s, the mean of runs just
// before and just after).
// write-amp is the bytes the flusher wrote per row byte (tail blocks are
// rewritten).
func BenchmarkFlusher(b *testing.B) {
	b.Run("flush=interval", func(b *testing.B) {
		db := b.TempDir()
		raw1, err := limits.ODirect(db, 256<<20, 1<<20)
		if err != nil {
			b.Skip(err)
		}
		w := benchWriter(b, db, writer.Options{})
		ring := benchutil.NewRing(1 << 16)
		st0 := w.Stats()
		t0 := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := w.AppendBatch(ring.NextBatch(64)); err != nil {
				b.Fatal(err)
			}
			w.Publish()
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
		el := time.Since(t0)
		st := w.Stats()
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		// The disk is shared and its rate drifts: take the limit's mean
		// from just before and just after.
		raw2, err := limits.ODirect(db, 256<<20, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		rawMBs := (raw1.BytesPerSec() + raw2.BytesPerSec()) / 2 / 1e6
		bytes := float64(st.Durable-st0.Durable) * 32
		mbs := bytes / el.Seconds() / 1e6
		b.ReportMetric(mbs, "durable-MB/s")
		b.ReportMetric(rawMBs, "raw-MB/s")
		b.ReportMetric(mbs/rawMBs, "x-raw")
		b.ReportMetric(float64(st.FlushBytes-st0.FlushBytes)/bytes, "write-amp")
	})
}

// BenchmarkSync is the latency of Sync after appending a few rows: the
// rows are appended, then Sync (publish, wake the flusher, O_DIRECT|O_DSYNC
// pwrite of the tail, wait) is timed into a histogram. raw-p50-ns and
// raw-p99-ns are the same run's 4 KiB O_DIRECT|O_DSYNC pwrite latency on
// the same file system with the same block-rewrite pattern: the floor.
func BenchmarkSync(b *testing.B) {
	for _, rows := range []int{1, 100} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			db := b.TempDir()
			perBlock := max(1, format.BlockSize/(rows*32))
			lat, err := limits.DSyncWrites(db, 300, perBlock, nil)
			if err != nil {
				b.Skip(err)
			}
			rawH := benchutil.NewHist()
			for _, d := range lat {
				benchutil.Record(rawH, d.Nanoseconds())
			}
			w := benchWriter(b, db, writer.Options{})
			ring := benchutil.NewRing(1 << 16)
			h := benchutil.NewHist()
			b.ReportAllocs()
			for b.Loop() {
				for range rows {
					if _, err := w.Append(ring.Next()); err != nil {
						b.Fatal(err)
					}
				}
				t := benchutil.Nanotime()
				if err := w.Sync(); err != nil {
					b.Fatal(err)
				}
				benchutil.Record(h, benchutil.Nanotime()-t)
			}
			benchutil.ReportHist(b, h, "", "ns", 1)
			b.ReportMetric(float64(rawH.ValueAtQuantile(50)), "raw-p50-ns")
			b.ReportMetric(float64(rawH.ValueAtQuantile(99)), "raw-p99-ns")
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkDurableLag offers rows at a fixed rate of 2M rows/s (each Append
// and Publish waits, spinning on the clock, for its slot in the schedule,
// so queueing is not hidden) with the default flusher, and samples the
// durable lag every millisecond: in rows (published - durable) and in µs
// (how long ago the oldest row not yet durable was appended; 0 shows as
// the histogram's floor, 1 ns). One op is one row; rows/s is the rate
// achieved and late-max-us how far the writer fell behind schedule (the
// writer thread descheduled, or waiting at a roll).
func BenchmarkDurableLag(b *testing.B) {
	b.Run("rate=2M", func(b *testing.B) {
		const interval = 500 // ns between rows
		w := benchWriter(b, b.TempDir(), writer.Options{})
		ring := benchutil.NewRing(1 << 16)
		lagRows, lagNs := benchutil.NewHist(), benchutil.NewHist()
		// When each row was appended, by seq (a ring of 4M: 2 s of rows).
		const ringRows = 1 << 22
		appended := make([]int64, ringRows)
		var late int64
		b.ReportAllocs()
		t0 := benchutil.Nanotime()
		sample := t0 + 1e6
		var i int64
		now := t0
		for b.Loop() {
			due := t0 + i*interval
			for now = benchutil.Nanotime(); now < due; now = benchutil.Nanotime() {
			}
			late = max(late, now-due)
			if _, err := w.Append(ring.Next()); err != nil {
				b.Fatal(err)
			}
			w.Publish()
			appended[i&(ringRows-1)] = now
			i++
			if now >= sample {
				d := int64(w.Stats().Durable)
				benchutil.Record(lagRows, i-d)
				if d < i && i-d < ringRows {
					benchutil.Record(lagNs, now-appended[d&(ringRows-1)])
				} else if d < i {
					benchutil.Record(lagNs, now-(t0+d*interval))
				} else {
					benchutil.Record(lagNs, 0)
				}
				sample += 1e6
			}
		}
		benchutil.ReportHist(b, lagRows, "lag-", "rows", 1)
		benchutil.ReportHist(b, lagNs, "lag-", "us", 1000)
		b.ReportMetric(float64(i)/(float64(now-t0)/1e9), "rows/s")
		b.ReportMetric(float64(late)/1000, "late-max-us")
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	})
}
