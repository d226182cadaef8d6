package suite

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/internal/harness/child"
	"github.com/tickdb/tickdb/internal/harness/limits"
	"github.com/tickdb/tickdb/internal/harness/loadgen"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// limits measures the machine's limits next to the figures they bound:
// 32-byte stores into a resident 256 MiB MAP_SHARED tmpfs mapping (the
// writer's four live slots; rows per second of the thread's CPU time), 1 MiB O_DIRECT|O_DSYNC writes to the table
// directory's file system, a sequential read of a resident mapping of
// the data set computing the queries' own checksum, random 32-byte reads
// and binary searches over it.
func (x *run) limits() error {
	store, err := bestOf(3, false, func() (float64, error) {
		r, err := limits.NewRegion("", 256<<20)
		if err != nil {
			return 0, err
		}
		defer r.Close()
		rows := len(r.Bytes()) / limits.RowSize
		limits.StoreRows(r.Bytes(), 0, rows) // every line touched once
		res := limits.StoreRows(r.Bytes(), 0, 2*rows)
		return float64(res.Ops) / res.CPU.Seconds(), nil
	})
	if err != nil {
		return err
	}
	// At a fixed offered rate, append's figure is the rate, not a cost: no
	// limit to compare it with.
	if x.cfg.Rate == 0 {
		x.add(MAppend, Limit, "rows/s", false, store)
	}

	odirect, err := bestOf(2, false, func() (float64, error) {
		r, err := limits.ODirect(x.cfg.Dir, 256<<20, 1<<20)
		return r.BytesPerSec() / 32, err
	})
	if err != nil {
		return err
	}
	x.add(MIngest, Limit, "rows/s", false, odirect)
	if x.cfg.Rate == 0 {
		x.add(MAppendF, Limit, "rows/s", false, odirect)
	}

	r, err := limits.NewRegion("", len(x.rows))
	if err != nil {
		return err
	}
	defer r.Close()
	area := r.Bytes()[:len(x.rows)]
	copy(area, x.rows)
	want := x.d.FullScan().Want
	scan, err := bestOf(3, false, func() (float64, error) {
		t0 := time.Now()
		got := SeqAnswer(area)
		el := time.Since(t0)
		if got != want {
			return 0, fmt.Errorf("raw scan: %d rows, checksum %#x; want %d, %#x", got.Rows, got.Sum, want.Rows, want.Sum)
		}
		return perSec(len(x.d.Ticks), el), nil
	})
	if err != nil {
		return err
	}
	x.add(MScan, Limit, "rows/s", false, scan)
	x.add(MBars, Limit, "rows/s", false, scan)

	seqs, _ := x.randomRows(1 << 20)
	areas := [][]byte{area}
	get, err := bestOf(3, true, func() (float64, error) {
		return limits.RandRead(areas, 40, 32, seqs).NsPerOp(), nil
	})
	if err != nil {
		return err
	}
	x.add(MGet, Limit, "ns", true, get)

	targets, _ := x.randomTimes(1 << 18)
	seek, err := bestOf(3, true, func() (float64, error) {
		return limits.Bsearch(areas, 40, 32, uint64(len(x.d.Ticks)), targets).NsPerOp(), nil
	})
	if err != nil {
		return err
	}
	x.add(MSeek, Limit, "ns", true, seek)
	return nil
}

// SeqAnswer is the Answer over every 32-byte tick row in b, read in place:
// the raw sequential read the full scan is compared with.
func SeqAnswer(b []byte) Answer {
	var a Answer
	for i := 0; i+32 <= len(b); i += 32 {
		a.Rows++
		a.Sum += Mix(int64(binary.LittleEndian.Uint64(b[i:])), math.Float64frombits(binary.LittleEndian.Uint64(b[i+8:])))
	}
	return a
}

// randomRows is k row numbers drawn from the fixed seed and the sum of
// Mix over their ticks.
func (x *run) randomRows(k int) ([]uint64, uint64) {
	rng := rand.New(rand.NewPCG(Seed, 5))
	seqs := make([]uint64, k)
	var sum uint64
	for i := range seqs {
		seqs[i] = rng.Uint64N(uint64(len(x.d.Ticks)))
		t := &x.d.Ticks[seqs[i]]
		sum += Mix(t.Ts, t.Price)
	}
	return seqs, sum
}

// The random rows of Get's passes and the random times of SeekTime's:
// getRows and seekTimes a pass, fewer when a probe of probeOps says a
// pass would take more than probePass (on compressed history a Get
// decodes a block a row, some 100 µs, and SeekTime a block a step of its
// search, where raw rows cost tens of ns).
const (
	getRows   = 1 << 20
	seekTimes = 1 << 18
	probeOps  = 1_000
	probePass = 2 * time.Second
)

// sized is how many operations of a pass: at most most, at least
// probeOps, about probePass at the cost per operation of probe's
// probeOps.
func sized(most int, probe func() error) (int, error) {
	t0 := time.Now()
	if err := probe(); err != nil {
		return 0, err
	}
	per := time.Since(t0) / probeOps
	if per <= 0 {
		return most, nil
	}
	return min(max(int(probePass/per), probeOps), most), nil
}

// getCount is the random rows of Get's passes and the sum of their
// figures (randomRows), sized on r.
func (x *run) getCount(r *reader.Reader) ([]uint64, uint64, error) {
	probe, _ := x.randomRows(probeOps)
	k, err := sized(getRows, func() error {
		for _, s := range probe {
			if _, err := r.Get(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	seqs, want := x.randomRows(k)
	return seqs, want, nil
}

// seekCount is the random times of SeekTime's passes and the sum of
// their answers (randomTimes), sized on r.
func (x *run) seekCount(r *reader.Reader) ([]int64, uint64, error) {
	probe, _ := x.randomTimes(probeOps)
	k, err := sized(seekTimes, func() error {
		for _, ts := range probe {
			if _, err := r.SeekTime(ts); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	ts, want := x.randomTimes(k)
	return ts, want, nil
}

// randomTimes is k timestamps drawn from the fixed seed over the data's
// span and the sum of the first row at or after each.
func (x *run) randomTimes(k int) ([]int64, uint64) {
	rng := rand.New(rand.NewPCG(Seed, 7))
	first, span := x.d.First(), x.d.Last()-x.d.First()+1
	ts := make([]int64, k)
	var sum uint64
	for i := range ts {
		ts[i] = first + rng.Int64N(span)
		sum += uint64(sort.Search(len(x.d.Ticks), func(j int) bool { return x.d.Ticks[j].Ts >= ts[i] }))
	}
	return ts, sum
}

// appendFlatOut appends every row of the data set, AppendBatch of 64
// rows and Publish after each, without a flusher (MAppend) and with the
// O_DIRECT flusher (MAppendF), into fresh tables after a warm-up through
// the live slots; the latency recorded is each batch's time over 64 (ns
// per row). With Config.Rate it appends one
// row at a time at that offered rate instead and records each row's
// latency from its intended time.
func (x *run) appendFlatOut() error {
	for _, m := range []struct {
		metric string
		p      writer.FlushPolicy
	}{{MAppend, writer.FlushNone}, {MAppendF, writer.FlushInterval}} {
		if err := x.appendOnce(m.metric, m.p); err != nil {
			return err
		}
	}
	return nil
}

func (x *run) appendOnce(metric string, p writer.FlushPolicy) (err error) {
	dir, live, err := x.scratch()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer os.RemoveAll(live)
	// 8 MiB segments, so that the warm-up through the four live slots
	// (first touch of their pages, about 5 µs a page on a VM) is short.
	// No background compaction: these figures are the append path's
	// (its CPU, its allocations, the flusher's pace), and the process's
	// allocation count would take in the encodings, which the default
	// backlog bound (Options.RawBacklog) makes the loop wait for. The
	// defaults' ingest, compaction included, is the user protocol's
	// (MUserIngest) and BenchmarkIngestDefaults'.
	w, err := openWriter(dir, live, x.d, writer.Options{Flush: p, SegmentSize: appendSegment, CompactAge: -1})
	if err != nil {
		return err
	}
	defer func() {
		if e := w.Close(); err == nil {
			err = e
		}
	}()
	slots, err := slotCount(dir)
	if err != nil {
		return err
	}
	if err := x.warmUp(w, slots); err != nil {
		return err
	}
	h := x.hist(metric, TickDB)
	if x.cfg.Rate > 0 {
		return x.appendPaced(metric, w, h)
	}
	const batch = 64
	rows := x.rows[:len(x.rows)/(32*batch)*(32*batch)]
	m0 := mallocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := limits.ThreadCPU()
	start := time.Now()
	t0 := start
	for i := 0; i < len(rows); i += 32 * batch {
		if _, _, err := w.AppendBatch(rows[i : i+32*batch]); err != nil {
			return fmt.Errorf("append at row %d: %w", i/32, err)
		}
		w.Publish()
		t1 := time.Now()
		Record(h, t1.Sub(t0).Nanoseconds()/batch)
		t0 = t1
	}
	el, cpu := time.Since(start), limits.ThreadCPU()-cpu0
	calls := len(rows) / (32 * batch)
	x.allocs(metric, TickDB, float64(mallocs()-m0)/float64(calls))
	if metric == MAppend {
		// Rows per second of the appending thread's CPU time: flat out,
		// the writer outruns the disk and sleeps at segment rolls until
		// the flusher frees a slot, and on a shared machine it is
		// descheduled; neither is the append path's cost.
		x.add(metric, TickDB, "rows/s", false, perSec(len(rows)/32, cpu))
		x.note(metric, TickDB, 0, "AppendBatch of 64 rows + Publish, rows per second of the writer thread's CPU time (the limit's likewise); latency = batch time / 64")
	} else {
		x.add(metric, TickDB, "rows/s", false, perSec(len(rows)/32, el))
		x.note(metric, TickDB, 0, "AppendBatch of 64 rows + Publish, wall time with the flusher on (bound by the disk once the live slots are full); latency = batch time / 64")
	}
	return nil
}

// appendSegment is the segment size of the append measurements.
const appendSegment = 8 << 20

// slotCount is the live slots of the table in dir (the live ones and the
// hot ones).
func slotCount(dir string) (int, error) {
	r, err := reader.Open(dir, Table, nil)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	st, err := r.Stat()
	return st.LiveSlots, err
}

// warmUp appends rows through every live slot once (a segment each, dated
// just before the data set), so the timed appends that follow run on
// resident slots, as a writer does in steady state (a writer with a hot
// budget recycles a slot after that many segments), like the raw store
// limit they are compared with.
func (x *run) warmUp(w *writer.Writer, slots int) error {
	const batch = 64
	b := make([]byte, 32*batch)
	copy(b, x.rows)
	for i := 0; i < batch; i++ {
		binary.LittleEndian.PutUint64(b[32*i:], uint64(x.d.First()-1))
	}
	for n := 0; n < slots*appendSegment/32; n += batch {
		if _, _, err := w.AppendBatch(b); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		w.Publish()
	}
	return nil
}

// appendPaced appends rows one at a time at Config.Rate rows/s for at
// most 5 seconds, each published, and records each row's latency from
// its intended start (so a stall is charged to every row it delays).
func (x *run) appendPaced(metric string, w *writer.Writer, h *hdrhistogram.Histogram) error {
	n := min(len(x.d.Ticks), 5*x.cfg.Rate)
	row := store.Row(make([]byte, 32))
	gap := 1e9 / float64(x.cfg.Rate)
	m0 := mallocs()
	start := time.Now()
	for i := 0; i < n; i++ {
		due := start.Add(time.Duration(float64(i) * gap))
		for time.Now().Before(due) {
		}
		copy(row, x.rows[32*i:32*i+32])
		if _, err := w.Append(row); err != nil {
			return fmt.Errorf("append at row %d: %w", i, err)
		}
		w.Publish()
		Record(h, time.Since(due).Nanoseconds())
	}
	el := time.Since(start)
	x.allocs(metric, TickDB, float64(mallocs()-m0)/float64(n))
	x.add(metric, TickDB, "rows/s", false, perSec(n, el))
	x.note(metric, TickDB, 0, fmt.Sprintf("Append + Publish of one row at %s rows/s offered; latency from each row's intended time", Count(int64(x.cfg.Rate))))
	return nil
}

// observeChild is the publish → reader workload's reader process (role
// roleObserve, args -db and -live): it opens the table, reports "ready",
// spins on the published row count and records, for each new row whose
// size is 1, now - its ts; a row of size -1 ends it, and it reports the
// histogram as "hist <base64>".
func observeChild() error {
	fs := flag.NewFlagSet(roleObserve, flag.ContinueOnError)
	db := fs.String("db", "", "database directory")
	live := fs.String("live", "", "live directory")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	r, err := reader.Open(*db, Table, &reader.Options{LiveDir: *live})
	if err != nil {
		return err
	}
	defer r.Close()
	size, _ := r.Schema().Col("size")
	h := NewHist()
	last := r.Len()
	child.Report("ready")
	quiet := time.Now()
	for spins := 0; ; spins++ {
		c := r.Len()
		if c == last {
			if spins&(1<<20-1) == 0 && time.Since(quiet) > time.Minute {
				return errors.New("no row published for a minute")
			}
			continue
		}
		now := time.Now().UnixNano()
		for s := last; s < c; s++ {
			row, err := r.Get(s)
			if err != nil {
				return err
			}
			switch row.I64(size) {
			case 1:
				Record(h, now-row.Ts())
			case -1:
				enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
				if err != nil {
					return err
				}
				child.Report("hist %s", enc)
				return nil
			}
		}
		last, quiet = c, time.Now()
	}
}

// observe publishes Config.Observe rows one at a time, at Config.Rate or
// 50,000 rows/s, each stamped with the wall clock, to a reader spinning
// in another process, which records how long after its stamp it saw each.
func (x *run) observe() (err error) {
	dir, live, err := x.scratch()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer os.RemoveAll(live)
	w, err := openWriter(dir, live, x.d, writer.Options{OutOfOrder: writer.OutOfOrderStamp})
	if err != nil {
		return err
	}
	defer func() {
		if e := w.Close(); err == nil {
			err = e
		}
	}()
	c, err := child.Start(roleObserve, &child.Options{Args: []string{"-db", dir, "-live", live}})
	if err != nil {
		return err
	}
	defer c.Kill()
	if _, err := expect(c, "ready", 2*time.Minute); err != nil {
		return err
	}
	size, _ := w.Schema().Col("size")
	row := w.NewRow()
	rate := x.cfg.Rate
	if rate <= 0 {
		rate = 50_000
	}
	gap := time.Duration(1e9 / rate)
	next := time.Now()
	publish := func(marker int64) error {
		for time.Now().Before(next) {
		}
		next = next.Add(gap)
		row.SetI64(size, marker)
		row.SetTs(time.Now().UnixNano())
		if _, err := w.Append(row); err != nil {
			return err
		}
		w.Publish()
		return nil
	}
	for range 2000 { // warm-up: the reader maps the live slot
		if err := publish(0); err != nil {
			return err
		}
	}
	m0 := mallocs()
	for range x.cfg.Observe {
		if err := publish(1); err != nil {
			return err
		}
	}
	x.allocs(MObserve, TickDB, float64(mallocs()-m0)/float64(x.cfg.Observe))
	if err := publish(-1); err != nil {
		return err
	}
	enc, err := expect(c, "hist", 2*time.Minute)
	if err != nil {
		return err
	}
	got, err := hdrhistogram.Decode([]byte(enc))
	if err != nil {
		return err
	}
	if got.TotalCount() != int64(x.cfg.Observe) {
		return fmt.Errorf("the reader process saw %d rows, %d were published", got.TotalCount(), x.cfg.Observe)
	}
	x.hist(MObserve, TickDB).Merge(got)
	x.add(MObserve, TickDB, "ns", true, float64(got.ValueAtQuantile(50)))
	x.note(MObserve, TickDB, 0, fmt.Sprintf("one row at a time at %s rows/s; the figure is the p50", Count(int64(rate))))
	return nil
}

// ilp sends Config.ILPLines line-protocol lines (the data set's first
// ticks, with their timestamps) over one TCP connection to an ingest
// server on 127.0.0.1, and stops the clock when the last row is visible
// to a reader; then checks every row.
func (x *run) ilp() (err error) {
	n := min(x.cfg.ILPLines, len(x.d.Ticks))
	lines, err := loadgen.Ticks("ilp", n, NumSymbols, Seed, true)
	if err != nil {
		return err
	}
	dir, live, err := x.scratch()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer os.RemoveAll(live)
	srv, err := ingest.Start(&ingest.Options{DB: dir, ILPAddr: "127.0.0.1:0", HTTPAddr: "off", LiveRoot: live, Writer: writer.Options{LateWindow: ingest.DefaultLateWindow}})
	if err != nil {
		return err
	}
	defer func() {
		if e := srv.Close(); err == nil {
			err = e
		}
	}()
	start := time.Now()
	if err := loadgen.Send(srv.ILPAddr().String(), [][]byte{lines}, 256<<10); err != nil {
		return err
	}
	var r *reader.Reader
	for r == nil {
		if r, err = reader.Open(dir, "ilp", &reader.Options{LiveDir: filepath.Join(live, "ilp")}); err != nil {
			if time.Since(start) > time.Minute {
				return err
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	defer r.Close()
	for r.Len() < uint64(n) {
		if time.Since(start) > 5*time.Minute {
			return fmt.Errorf("%d of %d rows visible after 5 minutes", r.Len(), n)
		}
		time.Sleep(20 * time.Microsecond)
	}
	el := time.Since(start)
	var want, got Answer
	for i := range n {
		want.Add(x.d.Ticks[i].Ts, x.d.Ticks[i].Price)
	}
	price, _ := r.Schema().Col("price")
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		return err
	}
	for it.Next() {
		got.Add(it.Row().Ts(), it.Row().F64(price))
	}
	if it.Err() != nil || got != want {
		return fmt.Errorf("ilp table: %d rows, checksum %#x (%v); sent %d rows, checksum %#x", got.Rows, got.Sum, it.Err(), want.Rows, want.Sum)
	}
	x.add(MILP, TickDB, "rows/s", false, perSec(n, el))
	x.note(MILP, TickDB, int64(n), "one connection, lines with timestamps, until the last row is visible")
	return nil
}

// reads runs the reader workloads on tickdb's sealed table: Get of
// random rows, SeekTime of random times, bars of every symbol and the
// as-of join of the table with itself.
func (x *run) reads(t *tickdbSystem) error {
	r := t.r
	price := t.price
	seqs, want, err := x.getCount(r)
	if err != nil {
		return err
	}
	m0 := mallocs()
	get, err := bestOf(3, true, func() (float64, error) {
		var sum uint64
		t0 := time.Now()
		for _, s := range seqs {
			row, err := r.Get(s)
			if err != nil {
				return 0, err
			}
			sum += Mix(row.Ts(), row.F64(price))
		}
		el := time.Since(t0)
		return nsPer(el, len(seqs)), checkSum("get", sum, want)
	})
	if err != nil {
		return err
	}
	x.allocs(MGet, TickDB, float64(mallocs()-m0)/float64(3*len(seqs)))
	x.add(MGet, TickDB, "ns", true, get)
	x.note(MGet, TickDB, 0, fmt.Sprintf("%s random rows a pass, best of 3", Count(int64(len(seqs)))))

	targets, want, err := x.seekCount(r)
	if err != nil {
		return err
	}
	m0 = mallocs()
	seek, err := bestOf(3, true, func() (float64, error) {
		var sum uint64
		t0 := time.Now()
		for _, ts := range targets {
			s, err := r.SeekTime(ts)
			if err != nil {
				return 0, err
			}
			sum += s
		}
		el := time.Since(t0)
		return nsPer(el, len(targets)), checkSum("seek", sum, want)
	})
	if err != nil {
		return err
	}
	x.allocs(MSeek, TickDB, float64(mallocs()-m0)/float64(3*len(targets)))
	x.add(MSeek, TickDB, "ns", true, seek)
	x.note(MSeek, TickDB, 0, fmt.Sprintf("%s random times a pass, best of 3", Count(int64(len(targets)))))

	var vol int64
	for i := range x.d.Ticks {
		vol += x.d.Ticks[i].Size
	}
	n := len(x.d.Ticks)
	bars, err := bestOf(3, false, func() (float64, error) {
		var rows, v int64
		t0 := time.Now()
		_, err := query.Bars(context.Background(), r, query.BarsQuery{Table: Table, Interval: time.Second}, func(b *query.Bar) error {
			rows += b.Count
			v += int64(b.Volume)
			return nil
		})
		el := time.Since(t0)
		if err == nil && (rows != int64(n) || v != vol) {
			err = fmt.Errorf("bars: %d rows, volume %d; the data holds %d rows, volume %d", rows, v, n, vol)
		}
		return perSec(n, el), err
	})
	if err != nil {
		return err
	}
	x.add(MBars, TickDB, "rows/s", false, bars)
	x.note(MBars, TickDB, int64(n), "1-second OHLCV bars of every symbol")

	right, err := reader.Open(t.dir, Table, &reader.Options{LiveDir: t.live})
	if err != nil {
		return err
	}
	defer right.Close()
	wantAsOf := x.selfAsOf()
	asof, err := bestOf(2, false, func() (float64, error) {
		var got Answer
		t0 := time.Now()
		_, err := query.AsOf(context.Background(), r, right, query.AsOfQuery{Left: Table, Right: Table}, func(_, m store.Row) error {
			if m != nil {
				got.Add(m.Ts(), m.F64(price))
			}
			return nil
		})
		el := time.Since(t0)
		if err == nil && got != wantAsOf {
			err = fmt.Errorf("asof: %d matches, checksum %#x; the data gives %d, %#x", got.Rows, got.Sum, wantAsOf.Rows, wantAsOf.Sum)
		}
		return perSec(n, el), err
	})
	if err != nil {
		return err
	}
	x.add(MAsOf, TickDB, "rows/s", false, asof)
	x.note(MAsOf, TickDB, int64(n), "every row joined with the table itself, every symbol")
	return nil
}

// selfAsOf is the answer of the as-of join of the data with itself: each
// tick's match is the last tick of its symbol with the same ts (the
// latest row at or before it), summed as an Answer.
func (x *run) selfAsOf() Answer {
	var a Answer
	for _, pos := range x.d.bySym {
		for i := 0; i < len(pos); {
			j := i
			for j+1 < len(pos) && x.d.Ticks[pos[j+1]].Ts == x.d.Ticks[pos[i]].Ts {
				j++
			}
			m := &x.d.Ticks[pos[j]]
			for ; i <= j; i++ {
				a.Add(m.Ts, m.Price)
			}
		}
	}
	return a
}
