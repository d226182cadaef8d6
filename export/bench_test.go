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
// BenchmarkExportLate is the same over a table of the same ticks with 5 %
// of them late (1-1000 µs behind the newest, in a 1 ms late window): the
// rows are read in time order, merged by reader.Range, instead of
// walked in seq order.
//
// Run (2M rows by default; TICKDB_BENCH_BIG=1 for 20M, or set
// TICKDB_BENCH_ROWS):
//
//	go test -run '^$' -bench BenchmarkExport -count 10 ./export | tee export.txt
//	benchstat export.txt

import (
	"context"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

func benchRows() uint64 {
	def := uint64(2_000_000)
	if benchutil.Big() {
		def = 20_000_000
	}
	return benchutil.Rows(def)
}

func BenchmarkExport(b *testing.B) {
	n := benchRows()
	db := b.TempDir()
	tab, err := benchutil.BuildTable(b, db, "ticks", n, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d rows in %v", n, tab.Build)
	benchExports(b, db, n)
}

func BenchmarkExportLate(b *testing.B) {
	n := benchRows()
	db := b.TempDir()
	late := buildLateTable(b, db, n, 0.05)
	b.Logf("built %d rows, %d late", n, late)
	benchExports(b, db, n)
}

// buildLateTable writes n generated ticks into table "ticks", share of
// them moved 1-1000 µs behind the newest (a 1 ms late window), and
// returns how many are stored late.
func buildLateTable(b *testing.B, db string, n uint64, share float64) uint64 {
	s, _, _, _ := benchutil.TickSchema()
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: s, LiveDir: testutil.LiveDir(b), LateWindow: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	benchutil.AddSymbols(b, w.SymbolString)
	g := gen.New(gen.Options{Symbols: benchutil.Symbols, Seed: benchutil.Seed})
	rng := rand.New(rand.NewPCG(benchutil.Seed, 3))
	row := make(store.Row, s.RowSize)
	newest := int64(0)
	for i := range n {
		t := g.Next()
		if i > 0 && rng.Float64() < share {
			t.Ts = newest - 1 - rng.Int64N(int64(time.Millisecond))
		}
		newest = max(newest, t.Ts)
		benchutil.Encode(row, t)
		if _, err := w.Append(row); err != nil {
			b.Fatalf("append row %d: %v", i, err)
		}
		if i%1024 == 1023 {
			w.Publish()
		}
	}
	late := w.Stats().Late
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return late
}

// benchExports runs the export benchmarks over table "ticks" of n rows.
func benchExports(b *testing.B, db string, n uint64) {
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
