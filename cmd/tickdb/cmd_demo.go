//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/internal/harness/suite"
	"github.com/tickdb/tickdb/writer"
)

// demoTable is the demo's table.
const demoTable = "trades"

type demoOpts struct {
	g       *globals
	cfg     suite.DemoConfig
	segSize byteSize
}

func newDemoCmd(g *globals) *cobra.Command {
	// The default segment size is small enough that the default run rolls
	// through several segments and its four live slots (64 MiB) fit a
	// container's default /dev/shm.
	o := &demoOpts{g: g, segSize: 16 << 20}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Write synthetic ticks, verify them from a second process, query them, print throughput and latency",
		Long: `demo is tickdb's out-of-the-box run. It creates the table "trades"
(ts, sym, price, size) in a fresh database, generates realistic synthetic
trades for many symbols and appends them on a pinned writer thread, while a
second process tails the table and checks every row against the same
generator. Then it queries by time and by symbol and prints throughput
(and what it measures), append and cross-process latency percentiles, the
durable lag (and what its alarms mean), query timings and the writer's
counters. The workload is the benchmark suite's (see "tickdb
bench").

Without --db the database is a temporary directory removed at the end; with
--db it is kept (the table must not exist yet).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd, o) },
	}
	f := c.Flags()
	f.IntVar(&o.cfg.Rows, "rows", 5_000_000, "ticks to write")
	f.IntVar(&o.cfg.Symbols, "symbols", 100, "distinct symbols")
	f.Int64Var(&o.cfg.Seed, "seed", 1, "generator seed (the same seed gives the same ticks)")
	f.IntVar(&o.cfg.CPU, "cpu", -1, "pin the writer thread to this CPU (-1: no CPU affinity)")
	f.Var(&o.segSize, "segment-size", "segment size in bytes (suffixes K, M, G are powers of 1024)")
	f.BoolVar(&o.cfg.Spin, "spin", false, "the reader process busy-spins (burns a core) instead of backing off")
	f.StringVar(&o.cfg.LiveDir, "live-dir", "", "directory for the live segments (default: under /dev/shm/tickdb)")
	return c
}

func runDemo(cmd *cobra.Command, o *demoOpts) (err error) {
	out, c := cmd.OutOrStdout(), o.cfg
	began := time.Now()
	if c.Rows <= 0 {
		return fmt.Errorf("demo: --rows %d: want at least 1", c.Rows)
	}
	if c.Symbols <= 0 || c.Symbols > 1_000_000 {
		return fmt.Errorf("demo: --symbols %d: want 1 to 1,000,000", c.Symbols)
	}
	c.DB, c.Table, c.SegmentSize, c.Temporary = o.g.db, demoTable, int64(o.segSize), !cmd.Flags().Changed("db")
	// The writer's durable-lag warning is for a server's log; the demo
	// measures the lag itself and says what it means (demoDurability).
	c.Logger = slog.New(demoLogHandler{slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn})})
	kind, where := "kept", "data kept in "+c.DB
	if c.Temporary {
		if c.DB, err = os.MkdirTemp("", "tickdb-demo-"); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		kind, where = "temporary, removed at the end", "temporary database removed"
		defer func() {
			if e := os.RemoveAll(c.DB); e != nil && err == nil {
				err = fmt.Errorf("demo: remove temporary database: %w", e)
			}
		}()
	} else if _, err := os.Stat(filepath.Join(c.DB, demoTable)); err == nil {
		return fmt.Errorf("demo: table %s already exists in %s (give a new --db, or omit it for a temporary one)", demoTable, c.DB)
	}
	c.Started = func(s suite.DemoSetup) {
		pin := "thread-locked, no CPU affinity"
		if c.CPU >= 0 {
			pin = fmt.Sprintf("thread-locked, pinned to CPU %d", c.CPU)
		}
		note := ""
		if s.ShmNeed > 0 {
			note = fmt.Sprintf(" (/dev/shm has %s free, %s needed)", fmtBytes(s.ShmFree), fmtBytes(s.ShmNeed))
		}
		fmt.Fprintf(out, "tickdb demo: %s ticks over %s symbols (seed %d)\n", commas(int64(c.Rows)), commas(int64(c.Symbols)), c.Seed)
		fmt.Fprintf(out, "  %-10s %d CPUs, %s/%s, %s\n", "machine", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
		fmt.Fprintf(out, "  %-10s %s (%s)\n", "database", c.DB, kind)
		fmt.Fprintf(out, "  %-10s %s: %s, %d-byte rows\n", "table", demoTable, s.Schema, s.Schema.RowSize)
		fmt.Fprintf(out, "  %-10s %s rows each; live slots in %s%s\n", "segments", commas(int64(s.SegmentRows)), s.LiveDir, note)
		fmt.Fprintf(out, "  %-10s %s; publishes every %d rows\n", "writer", pin, suite.DemoPublishEvery)
		fmt.Fprintf(out, "  %-10s pid %d, a separate process tailing; idle strategy %s\n", "reader", s.ReaderPid, s.Idle)
	}
	rep, err := suite.Demo(cmd.Context(), c)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	printDemo(out, c.Rows, rep)
	fmt.Fprintf(out, "\ndone in %s; live slots removed; %s\n", fmtNs(int64(time.Since(began)/time.Millisecond*time.Millisecond)), where)
	return nil
}

// demoLagMsg is the writer's durable-lag warning (writer.LagAlarm).
const demoLagMsg = "writer: durable lag over limit"

// demoLogHandler drops the writer's durable-lag warnings: the demo
// appends flat out, a burst no feed sends, and reports the lag it
// measured with what it means instead of a WARN per second of it.
type demoLogHandler struct{ slog.Handler }

func (h demoLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == demoLagMsg {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h demoLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return demoLogHandler{h.Handler.WithAttrs(as)}
}

func (h demoLogHandler) WithGroup(name string) slog.Handler {
	return demoLogHandler{h.Handler.WithGroup(name)}
}

// printDemo prints what the demo measured after its header.
func printDemo(out io.Writer, rows int, rep *suite.DemoReport) {
	fmt.Fprintf(out, "\nwrite\n")
	kv(out, "ticks appended", commas(int64(rows)), "")
	kv(out, "append time", fmtNs(int64(rep.AppendTime)), "appends, publishes and timing; generation not timed")
	kv(out, "throughput", commas(int64(float64(rows)/rep.AppendTime.Seconds())), "ticks/s")
	if b := rep.BatchLat; b != nil && b.P50 > 0 {
		kv(out, "median batch rate", commas(int64(suite.DemoPublishEvery/b.P50*1e9)), fmt.Sprintf("ticks/s: %d appends and a publish in %s", suite.DemoPublishEvery, fmtNs(int64(b.P50))))
		kv(out, fmt.Sprintf("batches over %s", fmtNs(int64(suite.DemoSlowBatch))), commas(rep.SlowBatches),
			fmt.Sprintf("%s of the append time", fmtNs(int64(rep.SlowTime))))
		if st := rep.Stats; st.CompactRows > 0 {
			kv(out, "background compaction", commas(int64(st.CompactRows)), fmt.Sprintf("rows compressed in %s, on the same CPUs, while the demo ran", fmtNs(int64(st.CompactTime))))
		}
		fmt.Fprintf(out, "  Throughput is wall time over all %s ticks; the median batch rate is the\n", commas(int64(rows)))
		fmt.Fprintf(out, "  store's own speed. The gap is the slow batches: the writer thread off its\n")
		fmt.Fprintf(out, "  CPU (this machine's %d CPUs also run the reader process, the flusher and the\n", runtime.NumCPU())
		fmt.Fprintf(out, "  background compaction), or faulting in fresh shared memory, or at a\n")
		fmt.Fprintf(out, "  segment roll. The README's ingest figure (tickdb bench: AppendBatch in\n")
		fmt.Fprintf(out, "  batches of 1,000, no reader process, no timing inside, background\n")
		fmt.Fprintf(out, "  compaction on as here) is a wall-clock rate like the throughput.\n")
	}
	kv(out, "sync (every row durable)", fmtNs(int64(rep.SyncTime)), "")
	demoDurability(out, rep)

	fmt.Fprintf(out, "\nreader process (pid %d)\n", rep.ReaderPid)
	kv(out, "rows verified", commas(int64(rep.Verified)), "every value, in order, no gaps")
	if rep.ReadTime > 0 {
		kv(out, "read throughput", commas(int64(float64(rep.Verified)/rep.ReadTime.Seconds())), "rows/s, first row to last, paced by the writer")
	}
	if rep.Rereads > 0 {
		kv(out, "rows re-read", commas(int64(rep.Rereads)), "live slot recycled under the reader; the checked copy matched")
	}

	fmt.Fprintf(out, "\n")
	latLine(out, "latency", "samples", "p50", "p99", "p99.9", "max")
	for _, l := range []struct {
		label string
		lat   *suite.Latency
	}{
		{fmt.Sprintf("append, 1 in %d", suite.DemoPublishEvery), rep.AppendLat},
		{fmt.Sprintf("batch: %d appends + publish", suite.DemoPublishEvery), rep.BatchLat},
		{fmt.Sprintf("publish → visible, 1 in %d", suite.DemoSampleEvery), rep.VisibleLat},
		{fmt.Sprintf("publish → verified, 1 in %d", suite.DemoSampleEvery), rep.VerifiedLat},
	} {
		if l.lat == nil {
			latLine(out, "  "+l.label, "0", "-", "-", "-", "-")
			continue
		}
		ns := func(v float64) string { return fmtNs(int64(v)) }
		latLine(out, "  "+l.label, commas(l.lat.Count), ns(l.lat.P50), ns(l.lat.P99), ns(l.lat.P999), ns(l.lat.Max))
	}
	fmt.Fprintf(out, "  append and batch include one clock read (about %s). visible and verified are\n", fmtNs(int64(rep.TimerCost)))
	fmt.Fprintf(out, "  seen from the reader process; verified adds its backlog, which grows while a\n")
	fmt.Fprintf(out, "  busy machine keeps it off a CPU.\n")

	fmt.Fprintf(out, "\n")
	queryLine(out, fmt.Sprintf("queries (this process, median of %d runs)", suite.DemoRuns), "rows", "time", "rows/s")
	for _, q := range rep.Queries {
		rate := fmtRate(float64(q.Rows) / max(q.Time.Seconds(), 1e-9))
		if q.Point {
			rate = ""
		}
		queryLine(out, "  "+q.Label, commas(q.Rows), fmtNs(int64(q.Time)), rate, q.Note)
	}
	fmt.Fprintf(out, "  (every answer checked against a plain scan of the table)\n")
	demoStats(out, rep.Stats)
}

func demoStats(out io.Writer, st writer.Stats) {
	fmt.Fprintf(out, "\nwriter stats\n")
	kv(out, "rows appended", commas(int64(st.Appended)), "")
	kv(out, "rows visible", commas(int64(st.Visible)), "")
	kv(out, "rows durable", commas(int64(st.Durable)), "")
	kv(out, "segment rolls that waited", commas(int64(st.RollStalls)), fmtNs(int64(st.StallTime))+" waiting for the flusher and preparer")
	kv(out, "flushes (O_DIRECT writes)", commas(int64(st.Flushes)), fmtBytes(int64(st.FlushBytes)))
	kv(out, "durable-lag alarms", commas(int64(st.LagAlarms)), "publishes with the lag over one segment (see durability)")
	kv(out, "out-of-order rows", commas(int64(st.OutOfOrder)), "")
}

// demoDurability prints the durable lag the demo saw and what it means.
func demoDurability(out io.Writer, rep *suite.DemoReport) {
	lagText := func(rows uint64) string {
		return fmt.Sprintf("rows: %s, %.1f segments", fmtBytes(int64(rows)*int64(rep.RowSize)), float64(rows)/float64(max(rep.LagLimit, 1)))
	}
	fmt.Fprintf(out, "\ndurability (the durable lag: rows published, not yet durable)\n")
	kv(out, "durable at the last append", commas(int64(rep.DurableAtEnd)), "the sync made the rest durable")
	kv(out, "largest durable lag", commas(int64(rep.MaxLag)), lagText(rep.MaxLag)+fmt.Sprintf(", sampled every %s", fmtNs(int64(suite.DemoLagEvery))))
	kv(out, "time over one segment", fmtNs(int64(rep.LagOver)), fmt.Sprintf("durable-lag alarms: %s publishes", commas(int64(rep.Stats.LagAlarms))))
	if ms := rep.AppendTime.Milliseconds(); ms > 0 {
		kv(out, "flusher writes", commas(int64(rep.Stats.Flushes)), fmt.Sprintf("%s; a flusher with a CPU to itself writes about once a ms (%s ms of appends)",
			fmtBytes(int64(rep.Stats.FlushBytes)), commas(ms)))
	}
	fmt.Fprintf(out, "  The flusher writes published rows to the durable files (O_DIRECT) every\n")
	fmt.Fprintf(out, "  millisecond. Rows not yet durable are visible and survive a crash of this\n")
	fmt.Fprintf(out, "  process (they are in shared memory), not a power cut. A durable-lag alarm\n")
	fmt.Fprintf(out, "  (tickdb serve logs it as a WARN) means the lag passed one segment: the\n")
	fmt.Fprintf(out, "  disk, or the CPU the flusher gets, was slower than the appends (%s/s\n", fmtBytes(int64(float64(rep.Stats.Appended)*float64(rep.RowSize)/max(rep.AppendTime.Seconds(), 1e-9))))
	fmt.Fprintf(out, "  here; tickdb bench measures what this disk makes durable). Far fewer\n")
	fmt.Fprintf(out, "  flusher writes than ms of appends say it was the CPU: the demo's writer\n")
	fmt.Fprintf(out, "  and reader process keep the CPUs busy, and the flusher runs late with\n")
	fmt.Fprintf(out, "  large batches. The demo appends flat out, a burst far above a real feed,\n")
	fmt.Fprintf(out, "  on CPUs it shares, so")
	fmt.Fprintf(out, " alarms here need no action. The lag cannot pass %.0f\n", float64(rep.LagBound)/float64(max(rep.LagLimit, 1)))
	fmt.Fprintf(out, "  segments (live slots - 1): there the writer waits at the roll (\"segment\n")
	fmt.Fprintf(out, "  rolls that waited\" below). For a server, alarms that last at your feed's\n")
	fmt.Fprintf(out, "  rate mean the disk cannot keep up: see writer.Options.MaxLag and LagBlock.\n")
}

// latLine prints a line of the latency table.
func latLine(out io.Writer, cs ...string) { cells(out, []int{-34, 9, 9, 9, 9, 9}, cs...) }

// queryLine prints a line of the query table.
func queryLine(out io.Writer, cs ...string) { cells(out, []int{-46, 12, 10, 10}, cs...) }
