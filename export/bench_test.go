package export_test

// Export benchmarks over one table of generated ticks (store.TickSchema:
// ts, sym, price, size; 100 symbols, random-walk prices, round lots, ts
// about 1 µs apart, fixed seed), built once per process: the whole table
// to Parquet (zstd and snappy) and to CSV, into a fresh directory under
// the temp dir each iteration. Each checks the rows written and reports
// rows/s, bytes/row (of output) and cpu-ns/row: the process's CPU time
// (user + system, all threads) per row, which, unlike rows/s, holds on a
// machine busy with other work. Target on the 2-core reference machine:
// Parquet ≥ 5 M rows/s.
//
// Run (2M rows by default; TICKDB_BENCH_BIG=1 for 20M, or set
// TICKDB_BENCH_ROWS):
//
//	go test -run '^$' -bench BenchmarkExport -count 10 ./export | tee export.txt
//	benchstat export.txt

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/internal/benchutil"
	"github.com/tickdb/tickdb/reader"
)

func BenchmarkExport(b *testing.B) {
	def := uint64(2_000_000)
	if benchutil.Big() {
		def = 20_000_000
	}
	n := benchutil.Rows(def)
	db := b.TempDir()
	tab, err := benchutil.BuildTable(b, db, "ticks", n, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d rows in %v", n, tab.Build)
	for _, bc := range []struct {
		name string
		opts export.Options
	}{
		{"format=parquet/codec=zstd", export.Options{}},
		{"format=parquet/codec=snappy", export.Options{Compression: export.CompressionSnappy}},
		{"format=csv", export.Options{Format: export.FormatCSV}},
	} {
		b.Run(bc.name+"/rows="+benchutil.CountName(n), func(b *testing.B) {
			r, err := reader.Open(db, "ticks", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ReportAllocs()
			var bytes int64
			cpu0 := cpuTime(b)
			for b.Loop() {
				b.StopTimer()
				out, err := os.MkdirTemp(b.TempDir(), "export")
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := export.Run(context.Background(), r, out, &bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if res.Rows != int64(n) {
					b.Fatalf("exported %d rows, want %d", res.Rows, n)
				}
				bytes = res.Bytes()
				b.StopTimer()
				os.RemoveAll(out)
				b.StartTimer()
			}
			cpu := cpuTime(b) - cpu0
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n)/float64(b.N), "cpu-ns/row")
			b.ReportMetric(float64(bytes)/float64(n), "bytes/row")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
