package query_test

// Bars benchmarks over one generated table (100 symbols, ts about 1 µs
// apart, fixed seed; internal/harness/benchutil's benchmark table), written twice:
// closed plainly (layout=raw) and closed with CloseCompacted(0)
// (layout=compacted: every segment compressed, clustered by symbol). One
// symbol's bars (the symbol with about 1% of the rows) and every
// symbol's bars in one pass (a column scan, decoding on two goroutines).
// Each run checks that its bars count every selected row.
//
// 20M rows by default (about 740 MB under the temp dir, built once per
// process in about 10 s and removed at the end), TICKDB_BENCH_ROWS=N for
// another size. op=scan, op=colscan and op=symscan are the floors: the
// reader's row iterator, its column scan and its symbol iterator alone
// over the same rows.
//
//	go test -run '^$' -bench BenchmarkBars -count 5 ./query/ | tee bars.txt
//	benchstat bars.txt
//
// cpu-... metrics divide by the process's CPU time (every goroutine's),
// which does not count time it waited for a core: the steadier figure on
// a shared machine.

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/gen"
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
	ztab, err := benchutil.BuildCompacted(b, db, "compacted", n)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built and compacted %d rows in %v", n, ztab.Build)
	id, symRows := tab.SymNear(n / 100)
	sym := gen.Symbols(benchutil.Symbols)[id]
	for _, layout := range []string{"raw", "compacted"} {
		name := map[string]string{"raw": "ticks", "compacted": "compacted"}[layout]
		r, err := reader.Open(db, name, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		warm(b, r, n)
		benchBars(b, r, "rows="+benchutil.CountName(n)+"/layout="+layout, n, sym, symRows)
	}
}

// benchBars runs the bars benchmarks on r, a table of n rows, sym the
// symbol of symRows of them.
func benchBars(b *testing.B, r *reader.Reader, prefix string, n uint64, sym string, symRows uint64) {
	_, _, _, size := benchutil.TickSchema()
	bars := func(b *testing.B, q query.BarsQuery, wantRows int64) {
		b.ReportAllocs()
		var rows, nbars int64
		c0 := benchutil.ProcCPU()
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
		reportRows(b, rows, benchutil.ProcCPU()-c0)
		b.ReportMetric(float64(nbars)/float64(b.N), "bars/op")
	}
	b.Run(prefix, func(b *testing.B) {
		// The floors: the reader's iterator alone, and its column scan
		// (the size column, decoded on two goroutines), summing one
		// column.
		b.Run("op=scan", func(b *testing.B) {
			var it reader.Iter
			b.ReportAllocs()
			var rows int64
			c0 := benchutil.ProcCPU()
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
			reportRows(b, rows, benchutil.ProcCPU()-c0)
		})
		b.Run("op=colscan", func(b *testing.B) {
			var sc reader.Scan
			b.ReportAllocs()
			var rows int64
			c0 := benchutil.ProcCPU()
			for b.Loop() {
				if err := r.Scan(reader.ScanSpec{Cols: []int{3}, From: math.MinInt64, To: reader.ToEnd}, &sc); err != nil {
					b.Fatal(err)
				}
				var sum, k int64
				for sc.Next() {
					for _, v := range sc.Block().I64(0) {
						sum += v
					}
					k += int64(sc.Block().Len())
				}
				if sc.Err() != nil || k != int64(n) || sum <= 0 {
					b.Fatalf("colscan: %d rows: %v", k, sc.Err())
				}
				rows += k
			}
			reportRows(b, rows, benchutil.ProcCPU()-c0)
		})
		// The floor of one symbol's bars: its postings alone.
		b.Run("op=symscan", func(b *testing.B) {
			sid, _ := r.SymbolID([]byte(sym))
			var it reader.Iter
			b.ReportAllocs()
			var rows int64
			c0 := benchutil.ProcCPU()
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
			reportRows(b, rows, benchutil.ProcCPU()-c0)
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

// reportRows reports rows per second and ns per row of wall time, and the
// process's CPU time (every goroutine's: the column scan decodes on
// goroutines of its own) per row and per op.
func reportRows(b *testing.B, rows int64, cpu time.Duration) {
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(rows), "cpu-ns/row")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
}
