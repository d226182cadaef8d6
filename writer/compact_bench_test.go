package writer_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tickdb/tickdb/internal/benchutil"
	"github.com/tickdb/tickdb/internal/gen"
	"github.com/tickdb/tickdb/internal/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// BenchmarkCompressed compares reads of the same rows raw and compressed:
// two identical tables of generated ticks (100 symbols, seed 1, 512k-row
// segments, 6 segments), the second compacted (segments 0-3). Every op
// reads rows of segments 0-3 only and checks its answer against the raw
// table's.
//
//	go test -run '^$' -bench BenchmarkCompressed -benchtime 2s ./writer
//
// op=get: Get of random rows (a compressed row costs a block decode unless
// its block is the one decoded last: "cold block"); op=get-seq: Get of
// consecutive rows ("warm block"); op=window: RangeSym of the symbol with
// about 1 % of the rows over 1 % of the span; op=scan: Range over the
// four segments.
func BenchmarkCompressed(b *testing.B) {
	const segRows = 1 << 19
	const n = 6 * segRows
	db, live := testutil.DB(b)
	for _, name := range []string{"raw", "z"} {
		s, _, _, _ := benchutil.TickSchema()
		w, err := writer.Open(db, name, &writer.Options{Schema: s, SegmentSize: segRows * 32, LiveDir: live + "/" + name})
		if err != nil {
			b.Fatal(err)
		}
		benchutil.AddSymbols(b, w.SymbolString)
		g := gen.New(gen.Options{Symbols: benchutil.Symbols, Seed: benchutil.Seed})
		buf := make([]byte, 64*32)
		for i := 0; i < n; i += 64 {
			for j := 0; j < 64; j++ {
				benchutil.Encode(buf[j*32:], g.Next())
			}
			if _, _, err := w.AppendBatch(buf); err != nil {
				b.Fatal(err)
			}
			w.Publish()
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	w, err := writer.Open(db, "z", &writer.Options{LiveDir: live + "/z"})
	if err != nil {
		b.Fatal(err)
	}
	res, err := w.Compact(0)
	if err != nil || res.Segments < 4 {
		b.Fatalf("compact: %+v %v", res, err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("compacted %d segments: %d → %d bytes, %.2f bytes/row", res.Segments, res.RawBytes, res.Bytes, float64(res.Bytes)/float64(uint64(res.Segments)*segRows))
	const rows = 4 * segRows
	open := func(name string) *reader.Reader {
		r, err := reader.Open(db, name, &reader.Options{LiveDir: live + "/" + name})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		return r
	}
	raw, z := open("raw"), open("z")
	_, symc, price, _ := benchutil.TickSchema()
	sum := func(r store.Row) uint64 { return uint64(r.Ts()) ^ math.Float64bits(r.F64(price)) }
	// The symbol with about 1 % of the rows, and 1 % windows of the span.
	counts := make([]int, benchutil.Symbols)
	for s := uint64(0); s < rows; s += 97 {
		row, _ := raw.Get(s)
		counts[row.Sym(symc)]++
	}
	sym := 0
	for i, c := range counts {
		if math.Abs(float64(c)-float64(rows/97/100)) < math.Abs(float64(counts[sym])-float64(rows/97/100)) {
			sym = i
		}
	}
	first, _ := raw.Get(0)
	last, _ := raw.Get(rows - 1)
	span := last.Ts() - first.Ts()
	rng := rand.New(rand.NewPCG(1, 2))
	seqs := make([]uint64, 4096)
	for i := range seqs {
		seqs[i] = rng.Uint64N(rows)
	}
	wins := make([]int64, 64)
	for i := range wins {
		wins[i] = first.Ts() + rng.Int64N(span-span/100)
	}
	for _, tc := range []struct {
		name string
		r    *reader.Reader
	}{{"raw", raw}, {"compressed", z}} {
		r := tc.r
		b.Run("op=get/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s := seqs[i&4095]
				row, err := r.Get(s)
				if err != nil {
					b.Fatal(err)
				}
				want, _ := raw.Get(s)
				if sum(row) != sum(want) {
					b.Fatalf("row %d differs", s)
				}
				i++
			}
		})
		b.Run("op=get-seq/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var s uint64
			var acc uint64
			for b.Loop() {
				row, err := r.Get(s)
				if err != nil {
					b.Fatal(err)
				}
				acc += sum(row)
				if s++; s == rows {
					s = 0
				}
			}
			_ = acc
		})
		b.Run("op=window/"+tc.name, func(b *testing.B) {
			var it reader.Iter
			lat := benchutil.NewHist()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				from := wins[i&63]
				t0 := benchutil.Nanotime()
				if err := r.RangeSym(from, from+span/100, uint32(sym), &it); err != nil {
					b.Fatal(err)
				}
				var a uint64
				var k int
				for it.Next() {
					a += sum(it.Row())
					k++
				}
				benchutil.Record(lat, benchutil.Nanotime()-t0)
				if it.Err() != nil || k == 0 {
					b.Fatalf("window: %d rows, %v", k, it.Err())
				}
				i++
			}
			benchutil.ReportHist(b, lat, "", "ns", 1)
		})
		b.Run("op=scan/"+tc.name, func(b *testing.B) {
			var it reader.Iter
			b.ReportAllocs()
			var total uint64
			for b.Loop() {
				r.RangeSeq(0, rows, &it)
				var k uint64
				for it.Next() {
					k++
				}
				if it.Err() != nil || k != rows {
					b.Fatalf("scan: %d rows, %v", k, it.Err())
				}
				total += k
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
