package reader_test

// BenchmarkLatest: the last row of each of the 100 symbols at or before a
// time (Reader.Latest, then Latest.Sym per symbol), one op = every symbol,
// over a table of generated ticks (benchutil.BuildTable: 100 symbols, ts
// about 1 µs apart, fixed seed), first raw (closed: durable segment files
// in the page cache), then compacted whole (CloseCompacted: clustered
// compressed segments, postings punched below the floor). Each op's
// answers are checked against a brute-force answer from what was written.
//
//	at=now   every symbol's newest row (math.MaxInt64: no seek)
//	at=past  at one of 64 times uniform over the table's span, in turn
//	fresh    open a reader, at=now for every symbol, close: what one CLI
//	         or HTTP request costs with the files in the page cache
//
// ns/sym is ns/op over the 100 symbols. Default 2M rows; the 20M-row
// table (640 MB under the temp dir, about a minute to build here):
//
//	TICKDB_BENCH_ROWS=20M go test -run '^$' -bench BenchmarkLatest -count 5 ./reader | tee latest.txt
//	benchstat latest.txt

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// latestExpect is, for one time, each symbol's answer: 1 + its seq (0:
// none), summed over the symbols as the op's checksum.
func latestExpect(tab *benchutil.Table, at int64) uint64 {
	// Rows in ts order: the rows at or before at are a prefix; each
	// symbol's answer is its last row in it.
	b := sort.Search(len(tab.Ts), func(i int) bool { return tab.Ts[i] > at })
	var seen [256]bool
	var sum uint64
	left := benchutil.Symbols
	for i := b - 1; i >= 0 && left > 0; i-- {
		if s := tab.Sym[i]; !seen[s] {
			seen[s] = true
			sum += uint64(i) + 1
			left--
		}
	}
	return sum
}

func BenchmarkLatest(b *testing.B) {
	n := benchutil.Rows(2_000_000)
	db := b.TempDir()
	tab, err := benchutil.BuildTable(b, db, "ticks", n, true)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d rows in %v", n, tab.Build)
	rng := rand.New(rand.NewPCG(benchutil.Seed, 21))
	past := make([]int64, 64)
	want := make([]uint64, len(past))
	for i := range past {
		past[i] = tab.Ts[0] + rng.Int64N(tab.Ts[n-1]-tab.Ts[0]+1)
		want[i] = latestExpect(tab, past[i])
	}
	now := latestExpect(tab, math.MaxInt64)
	tiers := func(b *testing.B) {
		r, err := reader.Open(db, "ticks", nil)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		dst := make([]byte, 32)
		var l reader.Latest
		all := func(at int64) uint64 {
			if err := r.Latest(at, &l); err != nil {
				b.Fatal(err)
			}
			var sum uint64
			for id := range uint32(benchutil.Symbols) {
				seq, ok, err := l.Sym(id, dst)
				if err != nil {
					b.Fatal(err)
				}
				if ok {
					sum += seq + 1
				}
			}
			return sum
		}
		// Warm: every answer once (maps the segments, decodes the blocks).
		for i, at := range past {
			if got := all(at); got != want[i] {
				b.Fatalf("at %d: checksum %d, want %d", at, got, want[i])
			}
		}
		b.Run("at=now", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := all(math.MaxInt64); got != now {
					b.Fatalf("checksum %d, want %d", got, now)
				}
			}
			reportSym(b)
		})
		b.Run("at=past", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k := i % len(past)
				if got := all(past[k]); got != want[k] {
					b.Fatalf("at %d: checksum %d, want %d", past[k], got, want[k])
				}
				i++
			}
			reportSym(b)
		})
		b.Run("fresh", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := reader.Open(db, "ticks", nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := f.Latest(math.MaxInt64, &l); err != nil {
					b.Fatal(err)
				}
				var sum uint64
				for id := range uint32(benchutil.Symbols) {
					seq, ok, err := l.Sym(id, dst)
					if err != nil {
						b.Fatal(err)
					}
					if ok {
						sum += seq + 1
					}
				}
				f.Close()
				if sum != now {
					b.Fatalf("checksum %d, want %d", sum, now)
				}
			}
			reportSym(b)
		})
	}
	rows := "rows=" + benchutil.CountName(n)
	b.Run(rows+"/tier=raw", tiers)
	w, err := writer.Open(db, "ticks", &writer.Options{LiveDir: testutil.LiveDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	res, err := w.CloseCompacted(0)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("compacted %d segments", res.Segments)
	b.Run(rows+"/tier=compacted", tiers)
}

// reportSym reports ns/op per symbol.
func reportSym(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchutil.Symbols, "ns/sym")
}
