package query_test

// Bars benchmarks over one generated table (100 symbols, ts about 1 µs
// apart, fixed seed; internal/benchutil's benchmark table): one symbol's
// bars (the symbol with about 1% of the rows, read through its postings)
// and every symbol's bars in one pass. Each run checks that its bars count
// every selected row.
//
// 20M rows by default (640 MB under the temp dir, built once per process
// in about 3 s and removed at the end), TICKDB_BENCH_ROWS=N for another
// size. op=scan and op=symscan are the floors: the reader's iterators
// alone over the same rows.
//
//	go test -run '^$' -bench BenchmarkBars -count 5 ./query/ | tee bars.txt
//	benchstat bars.txt
//
// cpu-... metrics divide by the benchmark thread's CPU time, which does
// not count time the thread was descheduled: the steadier figure on a
// shared machine.

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/benchutil"
	"github.com/tickdb/tickdb/internal/gen"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
)

func BenchmarkBars(b *testing.B) {
	n := benchutil.Rows(20_000_000)
	db := b.TempDir()
	tab, err := benchutil.BuildTable(b, db, "ticks", n, true)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d rows in %v", n, tab.Build)
	r, err := reader.Open(db, "ticks", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	warm(b, r, n)
	id, symRows := tab.SymNear(n / 100)
	sym := gen.Symbols(benchutil.Symbols)[id]
	bars := func(b *testing.B, q query.BarsQuery, wantRows int64) {
		b.ReportAllocs()
		var rows, nbars int64
		cpu := benchutil.StartCPU()
		for b.Loop() {
			var count int64
			k, err := query.Bars(context.Background(), r, q, func(bar *query.Bar) error {
				count += bar.Count
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			if count != wantRows {
				b.Fatalf("bars count %d rows, want %d", count, wantRows)
			}
			rows += count
			nbars += k
		}
		c := cpu.Stop()
		ops := float64(b.N)
		b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(rows)/c.Seconds(), "cpu-rows/s")
		b.ReportMetric(float64(c.Nanoseconds())/float64(rows), "cpu-ns/row")
		b.ReportMetric(float64(c.Nanoseconds())/ops/1e6, "cpu-ms/op")
		b.ReportMetric(float64(nbars)/ops, "bars/op")
	}
	b.Run("rows="+benchutil.CountName(n), func(b *testing.B) {
		// The floor: the reader's iterator alone, summing one column.
		b.Run("op=scan", func(b *testing.B) {
			_, _, _, size := benchutil.TickSchema()
			var it reader.Iter
			b.ReportAllocs()
			var rows int64
			cpu := benchutil.StartCPU()
			for b.Loop() {
				if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
					b.Fatal(err)
				}
				var sum, k int64
				for it.Next() {
					sum += it.Row().I64(size)
					k++
				}
				if it.Err() != nil || k != int64(n) || sum <= 0 {
					b.Fatalf("scan: %d rows: %v", k, it.Err())
				}
				rows += k
			}
			c := cpu.Stop()
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(rows)/c.Seconds(), "cpu-rows/s")
			b.ReportMetric(float64(c.Nanoseconds())/float64(rows), "cpu-ns/row")
		})
		// The floor of one symbol's bars: its postings alone.
		b.Run("op=symscan", func(b *testing.B) {
			_, _, _, size := benchutil.TickSchema()
			sid, _ := r.SymbolID([]byte(sym))
			var it reader.Iter
			b.ReportAllocs()
			var rows int64
			cpu := benchutil.StartCPU()
			for b.Loop() {
				if err := r.RangeSym(math.MinInt64, math.MaxInt64, sid, &it); err != nil {
					b.Fatal(err)
				}
				var sum, k int64
				for it.Next() {
					sum += it.Row().I64(size)
					k++
				}
				if it.Err() != nil || k != int64(symRows) || sum <= 0 {
					b.Fatalf("symscan: %d rows: %v", k, it.Err())
				}
				rows += k
			}
			c := cpu.Stop()
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(c.Nanoseconds())/float64(rows), "cpu-ns/row")
			b.ReportMetric(float64(c.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
		})
		for _, iv := range []time.Duration{100 * time.Millisecond, time.Second} {
			b.Run("sym=one/interval="+iv.String(), func(b *testing.B) {
				bars(b, query.BarsQuery{Sym: sym, Interval: iv}, int64(symRows))
			})
		}
		for _, iv := range []time.Duration{100 * time.Millisecond, time.Second} {
			b.Run("sym=all/interval="+iv.String(), func(b *testing.B) {
				bars(b, query.BarsQuery{Interval: iv}, int64(n))
			})
		}
	})
}
