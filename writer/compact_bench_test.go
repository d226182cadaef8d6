package writer_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// BenchmarkCompressed compares reads of the same rows raw and compressed:
// three identical tables of generated ticks (100 symbols, seed 1, 512k-row
// segments, 6 segments), the second compacted (segments 0-3) in cseg
// format version 2 (clustered by symbol, "compressed"), the third the
// same then rewritten in format version 1 (seq order, "compressed-v1").
// Every op reads rows of segments 0-3 only and checks its answer against
// the raw table's.
//
//	go test -run '^$' -bench BenchmarkCompressed -benchtime 2s ./writer
//
// op=get: Get of random rows (a compressed row costs a block decode unless
// its block is the one decoded last: "cold block"); op=get-seq: Get of
// consecutive rows ("warm block"); op=window: RangeSym of the symbol with
// about 1 % of the rows over 1 % of the span; op=symscan: RangeSym of that
// symbol over the four segments; op=scan: Range over the four segments.
// The -cold ops first close the readers and evict every file of the table
// from the page cache (posix_fadvise DONTNEED), then open a reader and run
// the query once: each op is a cold query (on a machine whose device is
// fast, or cached below the page cache, "cold" is only so cold).
func BenchmarkCompressed(b *testing.B) {
	const segRows = 1 << 19
	const n = 6 * segRows
	db, live := testutil.DB(b)
	for _, name := range []string{"raw", "z", "z1"} {
		s, _, _, _ := benchutil.TickSchema()
		w, err := writer.Open(db, name, &writer.Options{Schema: s, SegmentSize: segRows * 32, LiveDir: live + "/" + name})
		if err != nil {
			b.Fatal(err)
		}
		writeGenerated(b, w, n, 64)
	}
	for _, name := range []string{"z", "z1"} {
		w, err := writer.Open(db, name, &writer.Options{LiveDir: live + "/" + name})
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
		zb := res.Bytes
		if name == "z1" {
			zb = 0
			for seg := range uint64(res.Segments) {
				zb += rewriteV1(b, db, name, seg, segRows)
			}
		}
		b.Logf("%s: compacted %d segments: %d → %d bytes, %.2f bytes/row", name, res.Segments, res.RawBytes, zb, float64(zb)/float64(uint64(res.Segments)*segRows))
	}
	const rows = 4 * segRows
	open := func(name string) *reader.Reader {
		r, err := reader.Open(db, name, &reader.Options{LiveDir: live + "/" + name})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		return r
	}
	raw, z, z1 := open("raw"), open("z"), open("z1")
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
	firstTs, lastTs := first.Ts(), last.Ts() // (the rows go with the readers, closed for the cold ops)
	span := lastTs - firstTs
	rng := rand.New(rand.NewPCG(1, 2))
	seqs := make([]uint64, 4096)
	for i := range seqs {
		seqs[i] = rng.Uint64N(rows)
	}
	wins := make([]int64, 64)
	for i := range wins {
		wins[i] = firstTs + rng.Int64N(span-span/100)
	}
	for _, tc := range []struct {
		name string
		r    *reader.Reader
	}{{"raw", raw}, {"compressed", z}, {"compressed-v1", z1}} {
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
		b.Run("op=symscan/"+tc.name, func(b *testing.B) {
			var it reader.Iter
			b.ReportAllocs()
			var total int
			for b.Loop() {
				if err := r.RangeSym(firstTs, lastTs+1, uint32(sym), &it); err != nil {
					b.Fatal(err)
				}
				var a uint64
				for it.Next() {
					a += sum(it.Row())
					total++
				}
				if it.Err() != nil || a == 0 {
					b.Fatalf("symscan: %v", it.Err())
				}
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
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
	// Cold: every reader closed, every file of the table evicted before
	// each query, the answer's row count checked against the warm one's.
	wantRows := func(from, to int64) int {
		var it reader.Iter
		if err := raw.RangeSym(from, to, uint32(sym), &it); err != nil {
			b.Fatal(err)
		}
		k := 0
		for it.Next() {
			k++
		}
		return k
	}
	winRows := make([]int, len(wins))
	for i, from := range wins {
		winRows[i] = wantRows(from, from+span/100)
	}
	scanRows := wantRows(firstTs, lastTs+1)
	for _, r := range []*reader.Reader{raw, z, z1} {
		r.Close()
	}
	for _, name := range []string{"raw", "z", "z1"} {
		label := map[string]string{"raw": "raw", "z": "compressed", "z1": "compressed-v1"}[name]
		for _, op := range []string{"window", "symscan"} {
			b.Run("op="+op+"-cold/"+label, func(b *testing.B) {
				var it reader.Iter
				lat := benchutil.NewHist()
				i := 0
				for b.Loop() {
					b.StopTimer()
					if err := evictDir(filepath.Join(db, name)); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					t0 := benchutil.Nanotime()
					r, err := reader.Open(db, name, &reader.Options{LiveDir: live + "/" + name})
					if err != nil {
						b.Fatal(err)
					}
					from, to, want := firstTs, lastTs+1, scanRows
					if op == "window" {
						from, to, want = wins[i&63], wins[i&63]+span/100, winRows[i&63]
					}
					if err := r.RangeSym(from, to, uint32(sym), &it); err != nil {
						b.Fatal(err)
					}
					k := 0
					for it.Next() {
						k++
					}
					if it.Err() != nil || k != want {
						b.Fatalf("%s: %d rows (%v), want %d", op, k, it.Err(), want)
					}
					r.Close()
					benchutil.Record(lat, benchutil.Nanotime()-t0)
					i++
				}
				benchutil.ReportHist(b, lat, "", "ns", 1)
			})
		}
	}
}

// rewriteV1 rewrites compressed segment seg of table name in cseg format
// version 1 and returns its new size.
func rewriteV1(b *testing.B, db, name string, seg uint64, segRows int) int64 {
	b.Helper()
	s, _, _, _ := benchutil.TickSchema()
	path := format.ZSegPath(filepath.Join(db, name), seg)
	head, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	h := cseg.Header{SegNo: seg, RowSize: 32, RowsPerSeg: uint64(segRows)}
	copy(h.TableID[:], head[16:32])
	z, err := cseg.Open(path, s, h)
	if err != nil {
		b.Fatal(err)
	}
	var rows, dst []byte
	for k := range z.Blocks() {
		if dst, err = z.Block(k, dst); err != nil {
			b.Fatal(err)
		}
		rows = append(rows, dst...)
	}
	h.Rows = z.Rows()
	z.Close()
	var buf bytes.Buffer
	st, err := cseg.EncodeV1(&buf, s, h, rows, path)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path+".v1", buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".v1", path); err != nil {
		b.Fatal(err)
	}
	return st.Bytes
}

// BenchmarkCloseCompacted times CloseCompacted(0) of a closed table of 8 M
// generated ticks (100 symbols, the default 64 MiB segments: four), each op
// on a table written afresh (untimed), with one compression worker and with
// two (Options.CompactWorkers), and reports the rows compressed a second.
//
//	go test -run '^$' -bench BenchmarkCloseCompacted -benchtime 3x ./writer
func BenchmarkCloseCompacted(b *testing.B) {
	const n = 4 << 21
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("rows=8M/workers=%d", workers), func(b *testing.B) {
			b.ReportAllocs()
			db, live := testutil.DB(b)
			s, _, _, _ := benchutil.TickSchema()
			var compacted time.Duration
			i := 0
			for b.Loop() {
				b.StopTimer()
				name := fmt.Sprintf("t%d", i)
				i++
				w, err := writer.Open(db, name, &writer.Options{Schema: s, LiveDir: live + "/" + name, HotBytes: -1, CompactAge: -1})
				if err != nil {
					b.Fatal(err)
				}
				writeGenerated(b, w, n, 1024)
				w, err = writer.Open(db, name, &writer.Options{LiveDir: live + "/" + name, HotBytes: -1, CompactAge: -1, CompactWorkers: workers})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				res, err := w.CloseCompacted(0)
				compacted += time.Since(t0)
				if err != nil || res.Segments != 4 {
					b.Fatalf("CloseCompacted: %+v %v", res, err)
				}
				b.StopTimer()
				if err := os.RemoveAll(filepath.Join(db, name)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N)*n/compacted.Seconds(), "rows/s")
			b.ReportMetric(float64(compacted.Nanoseconds())/float64(b.N)/n, "ns/row")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// writeGenerated appends n generated ticks (benchutil's symbols and seed)
// to w in batches of batch rows, publishing each, and closes it.
func writeGenerated(b *testing.B, w *writer.Writer, n, batch int) {
	b.Helper()
	benchutil.AddSymbols(b, w.SymbolString)
	g := gen.New(gen.Options{Symbols: benchutil.Symbols, Seed: benchutil.Seed})
	buf := make([]byte, batch*32)
	for i := 0; i < n; i += batch {
		for j := range batch {
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
