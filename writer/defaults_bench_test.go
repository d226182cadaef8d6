package writer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/writer"
)

// BenchmarkIngestDefaults is a table written the way an embedding program
// writes one by default: writer.Options{Schema: s} and nothing else
// (background compaction on, hot copies on), batches of 1,024 generated
// ticks (100 symbols) appended and published, then a plain Close. Each op
// writes a fresh table of rows=N (TICKDB_BENCH_ROWS, default 20 M) at
// full speed ("rate=max") or paced to 5 M rows/s ("rate=5M": a sustained
// feed, which the background compaction should keep up with). It reports
// the ingest rate, the append+publish latency of a batch (p99, p99.9,
// max, per batch), the segments the background compaction compressed a
// second while the rows went in and its own throughput meanwhile (rows
// over the time it spent on them, Stats.CompactTime), the rolls that
// waited for it (Options.RawBacklog) and the share of the ingest's time
// they took, the raw backlog at its largest and after the last append
// (sealed segments not compressed, the newest sealed one included until
// the next one's first rows are durable), the Close time, the next
// writer's open (reopen-ms: the last segment decompressed again), and the
// table's allocated bytes a row after Close: all its files, the raw
// segment files among them, and the index files (postings, time index,
// late rows), and the same table's after a reopen and CloseCompacted(0)
// (every segment compressed: the smallest it gets). TICKDB_BENCH_RATES
// sets other rates ("2M": a 1-day feed's pace).
//
//	go test -run '^$' -bench BenchmarkIngestDefaults -benchtime 1x -timeout 30m ./writer
//	TICKDB_BENCH_ROWS=50M TICKDB_BENCH_RATES=2M go test -run '^$' -bench BenchmarkIngestDefaults -benchtime 1x -timeout 30m ./writer
func BenchmarkIngestDefaults(b *testing.B) {
	n := int(benchutil.Rows(20_000_000))
	const batch = 1024 // divides the ring
	ring := benchutil.NewRing(1 << 20)
	for _, r := range benchutil.Rates(0, 5_000_000) {
		rate := int(r)
		name := "rate=max"
		if rate > 0 {
			name = "rate=" + benchutil.CountName(r)
		}
		b.Run(fmt.Sprintf("rows=%s/%s", benchutil.CountName(uint64(n)), name), func(b *testing.B) {
			b.ReportAllocs()
			db, live := testutil.DB(b)
			s, _, _, _ := benchutil.TickSchema()
			hist := benchutil.NewHist()
			var ingest, closing, reopen, cmpTime, stallTime time.Duration
			var cmpRows, stalls uint64
			var maxBacklog, closeBacklog, compacted uint64
			var disk, index, raw, full int64
			i := 0
			for b.Loop() {
				dir := fmt.Sprintf("t%d", i)
				i++
				w, err := writer.Open(db, dir, &writer.Options{Schema: s, LiveDir: filepath.Join(live, dir)})
				if err != nil {
					b.Fatal(err)
				}
				benchutil.AddSymbols(b, w.SymbolString)
				t0 := time.Now()
				for j := 0; j < n; j += batch {
					if rate > 0 {
						// Paced: batch j is due j/rate after the start. The
						// wait sleeps, as a feed's writer waits for input,
						// leaving the core to the background work, then
						// spins the last stretch (a sleep overshoots).
						due := t0.Add(time.Duration(int64(j) * int64(time.Second) / int64(rate)))
						if d := time.Until(due); d > 100*time.Microsecond {
							time.Sleep(d - 80*time.Microsecond)
						}
						for time.Now().Before(due) {
						}
					}
					a := time.Now()
					if _, _, err := w.AppendBatch(ring.NextBatch(batch)); err != nil {
						b.Fatal(err)
					}
					w.Publish()
					benchutil.Record(hist, int64(time.Since(a)))
					if j%(64*batch) == 0 {
						maxBacklog = max(maxBacklog, w.Stats().RawSegs)
					}
				}
				ingest += time.Since(t0)
				st := w.Stats()
				compacted += st.CompactedSegs
				cmpRows += st.CompactRows
				cmpTime += st.CompactTime
				stalls += st.BacklogStalls
				stallTime += st.BacklogWait
				closeBacklog = max(closeBacklog, st.RawSegs)
				maxBacklog = max(maxBacklog, st.RawSegs)
				c0 := time.Now()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				closing += time.Since(c0)
				b.StopTimer()
				disk += allocated(b, filepath.Join(db, dir))
				for _, f := range []string{format.PostName, format.TimeIdxName, format.LateIdxName} {
					index += allocated(b, filepath.Join(db, dir, f))
				}
				segs, _ := filepath.Glob(filepath.Join(db, dir, "seg-*.dat")) // the raw ones
				for _, f := range segs {
					raw += allocated(b, f)
				}
				// The same table fully compacted, for comparison; the
				// open is what the next writer waits for (the last
				// segment decompressed back into a raw file, when Close
				// compressed it).
				o0 := time.Now()
				if w, err = writer.Open(db, dir, &writer.Options{LiveDir: filepath.Join(live, dir)}); err != nil {
					b.Fatal(err)
				}
				reopen += time.Since(o0)
				if _, err := w.CloseCompacted(0); err != nil {
					b.Fatal(err)
				}
				full += allocated(b, filepath.Join(db, dir))
				if err := os.RemoveAll(filepath.Join(db, dir)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			rows := float64(b.N) * float64(n)
			b.ReportMetric(rows/ingest.Seconds(), "rows/s")
			b.ReportMetric(rows/(ingest+closing).Seconds(), "rows+close/s")
			b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms")
			b.ReportMetric(float64(reopen.Microseconds())/1e3/float64(b.N), "reopen-ms")
			b.ReportMetric(float64(compacted)/ingest.Seconds(), "compacted-segs/s")
			if cmpTime > 0 {
				// The compaction's own throughput, beside the ingest.
				b.ReportMetric(float64(cmpRows)/cmpTime.Seconds(), "compact-rows/s")
			}
			// Rolls that waited for the compaction (Options.RawBacklog),
			// and the share of the ingest's time they waited.
			b.ReportMetric(float64(stalls)/float64(b.N), "backlog-stalls")
			b.ReportMetric(100*stallTime.Seconds()/ingest.Seconds(), "backlog-wait-%")
			b.ReportMetric(float64(maxBacklog), "max-raw-segs")
			b.ReportMetric(float64(closeBacklog), "close-raw-segs")
			b.ReportMetric(float64(disk)/rows, "disk-B/row")
			b.ReportMetric(float64(full)/rows, "compacted-disk-B/row")
			b.ReportMetric(float64(raw)/rows, "raw-disk-B/row")
			b.ReportMetric(float64(index)/rows, "index-disk-B/row")
			benchutil.ReportHist(b, hist, "batch-", "ns", 1)
			b.ReportMetric(0, "ns/op")
		})
	}
}
