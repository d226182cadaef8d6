package reader_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// BenchmarkLateQuery measures time-ordered reads of a table with late
// rows beside the same rows stored in order, in one run: the benchmark
// ticks (100 symbols, about 1 µs apart), one row in late-every moved 3 µs
// back and stored late under a 1 ms window. A full scan (Range over
// everything: ns/row) and a one-symbol window over 1 % of the span
// (RangeSym: ns/op, rows/op), warm. TICKDB_BENCH_ROWS sets the rows
// (default 2M).
//
//	go test -run '^$' -bench BenchmarkLateQuery ./reader
func BenchmarkLateQuery(b *testing.B) {
	n := uint64(2_000_000)
	if v := os.Getenv("TICKDB_BENCH_ROWS"); v != "" {
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		n = x
	}
	for _, every := range []int{0, 100} {
		name := "in-order"
		if every > 0 {
			name = fmt.Sprintf("late=1in%d", every)
		}
		b.Run(name, func(b *testing.B) {
			r := lateBenchTable(b, n, every)
			var it reader.Iter
			b.Run("scan", func(b *testing.B) {
				b.ReportAllocs()
				var rows int
				for b.Loop() {
					if err := r.Range(-1<<63, 1<<63-1, &it); err != nil {
						b.Fatal(err)
					}
					rows = 0
					for it.Next() {
						rows++
					}
					if it.Err() != nil || uint64(rows) != n {
						b.Fatalf("scan: %d rows of %d: %v", rows, n, it.Err())
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
			})
			b.Run("sym-window-1pct", func(b *testing.B) {
				snap, err := r.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				first, err := r.Get(0)
				if err != nil {
					b.Fatal(err)
				}
				lo, hi := first.Ts(), snap.LastTs
				span := (hi - lo) / 100
				b.ReportAllocs()
				var rows, k int
				for b.Loop() {
					from := lo + int64(k%97)*(hi-lo-span)/97
					k++
					if err := r.RangeSym(from, from+span, uint32(k%benchutil.Symbols), &it); err != nil {
						b.Fatal(err)
					}
					for it.Next() {
						rows++
					}
					if it.Err() != nil {
						b.Fatal(it.Err())
					}
				}
				b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
			})
		})
	}
}

// lateBenchTable writes n benchmark ticks, one in every (0: none) moved
// 3 µs back, and opens a reader on them (warmed by one scan).
func lateBenchTable(b *testing.B, n uint64, every int) *reader.Reader {
	db := b.TempDir()
	live := testutil.LiveDir(b)
	s, _, _, _ := benchutil.TickSchema()
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: s, LiveDir: live, LateWindow: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	benchutil.AddSymbols(b, w.SymbolString)
	ring := benchutil.NewRing(1 << 16)
	if every > 0 {
		ring.MakeLate(every, 3000)
	}
	for w.Len() < n {
		if _, _, err := w.AppendBatch(ring.NextBatch(64)); err != nil {
			b.Fatal(err)
		}
		w.Publish()
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	r, err := reader.Open(db, "ticks", &reader.Options{LiveDir: live})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	var it reader.Iter
	r.RangeSeq(0, n, &it)
	for it.Next() {
	}
	return r
}
