package reader_test

// Whole-table scans summing one column (size), over the same generated
// ticks (100 symbols, fixed seed, internal/harness/benchutil) written twice: one
// table closed plainly (raw segments), one closed with CloseCompacted(0)
// (every segment compressed, clustered by symbol). op=range is the row
// iterator (Range and Iter.Next); op=scan the column scan (Reader.Scan),
// in seq order or in the file's order (order=any), decoding on the
// caller's goroutine (workers=1) or on two goroutines ahead of it
// (workers=2); window=1pct scans 1 % of the span in the middle (blocks
// skipped by their time range). Each run checks its sum against the one
// computed from what was written.
//
// 20 M rows by default (about 740 MB under the temp dir, built once per
// process in about 10 s), TICKDB_BENCH_ROWS=N for another size:
//
//	go test -run '^$' -bench BenchmarkScan -count 5 ./reader | tee scan.txt
//	benchstat scan.txt
//
// cpu-ns/row is the process's CPU time (every goroutine's) per row: on a
// shared machine the steadier figure; rows/s and ns/row are wall time.

import (
	"fmt"
	"math"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/reader"
)

func BenchmarkScan(b *testing.B) {
	n := benchutil.Rows(20_000_000)
	db := b.TempDir()
	tab, err := benchutil.BuildTable(b, db, "raw", n, true)
	if err != nil {
		b.Fatal(err)
	}
	ztab, err := benchutil.BuildCompacted(b, db, "compacted", n)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d rows raw in %v, compacted in %v", n, tab.Build, ztab.Build)
	var want int64
	for _, l := range tab.Lots {
		want += int64(l) * 100
	}
	// The 1 % window in the middle of the span, and its sum.
	from := tab.Ts[n/2]
	to := tab.Ts[n/2+n/100]
	var wantWin, winRows int64
	for i, ts := range tab.Ts {
		if ts >= from && ts < to {
			wantWin += int64(tab.Lots[i]) * 100
			winRows++
		}
	}
	_, _, _, size := benchutil.TickSchema()
	sizeIdx := 3
	for _, layout := range []string{"raw", "compacted"} {
		r, err := reader.Open(db, layout, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		var sc reader.Scan
		scanSum := func(spec reader.ScanSpec) (sum, rows int64) {
			if err := r.Scan(spec, &sc); err != nil {
				b.Fatal(err)
			}
			for sc.Next() {
				blk := sc.Block()
				for _, v := range blk.I64(0) {
					sum += v
				}
				rows += int64(blk.Len())
			}
			if err := sc.Err(); err != nil {
				b.Fatal(err)
			}
			return sum, rows
		}
		// Warm: the files into the page cache, the raw blocks checked.
		if s, _ := scanSum(reader.ScanSpec{Cols: []int{sizeIdx}, From: math.MinInt64, To: reader.ToEnd}); s != want {
			b.Fatalf("%s: warm scan sum %d, want %d", layout, s, want)
		}
		b.Run(fmt.Sprintf("rows=%s/layout=%s/op=range", benchutil.CountName(n), layout), func(b *testing.B) {
			b.ReportAllocs()
			var it reader.Iter
			var rows int64
			c0 := benchutil.ProcCPU()
			for b.Loop() {
				if err := r.Range(math.MinInt64, reader.ToEnd, &it); err != nil {
					b.Fatal(err)
				}
				var sum int64
				for it.Next() {
					sum += it.Row().I64(size)
				}
				if it.Err() != nil || sum != want {
					b.Fatalf("range: sum %d, want %d: %v", sum, want, it.Err())
				}
				rows += int64(n)
			}
			reportScan(b, rows, benchutil.ProcCPU()-c0)
		})
		for _, order := range []reader.ScanOrder{reader.OrderSeq, reader.OrderAny} {
			for _, workers := range []int{1, 2} {
				for _, win := range []string{"all", "1pct"} {
					name := fmt.Sprintf("rows=%s/layout=%s/op=scan/order=%s/workers=%d/window=%s",
						benchutil.CountName(n), layout, orderName(order), workers, win)
					spec := reader.ScanSpec{Cols: []int{sizeIdx}, From: math.MinInt64, To: reader.ToEnd, Order: order, Workers: workers}
					wantSum, wantRows := want, int64(n)
					if win == "1pct" {
						spec.From, spec.To, wantSum, wantRows = from, to, wantWin, winRows
					}
					b.Run(name, func(b *testing.B) {
						b.ReportAllocs()
						var rows int64
						c0 := benchutil.ProcCPU()
						for b.Loop() {
							s, k := scanSum(spec)
							if s != wantSum || k != wantRows {
								b.Fatalf("scan: sum %d of %d rows, want %d of %d", s, k, wantSum, wantRows)
							}
							rows += k
						}
						reportScan(b, rows, benchutil.ProcCPU()-c0)
					})
				}
			}
		}
	}
}

func orderName(o reader.ScanOrder) string {
	if o == reader.OrderAny {
		return "any"
	}
	return "seq"
}

// reportScan reports rows per second and ns per row of wall time, and the
// process's CPU ns per row.
func reportScan(b *testing.B, rows int64, cpu interface{ Nanoseconds() int64 }) {
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(rows), "cpu-ns/row")
	b.ReportMetric(0, "ns/op")
}
