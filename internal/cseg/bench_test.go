package cseg

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// Benchmarks over one sealed-segment-sized segment (2^21 rows) of
// realistic ticks: internal/harness/gen, 100 symbols, seed 1, the tick schema.
// Compare commits with
//
//	go test ./cseg -run '^$' -bench . -count 10 > new.txt && benchstat old.txt new.txt
//
// Encode and Block run on one goroutine (one core). "Cold" Get is Open +
// one Block + Close with the file in the page cache (cache=warm) or evicted
// from it before each Get (cache=dropped, posix_fadvise DONTNEED).

const benchRows = 1 << 21

// benchSegment returns the rows of the benchmark segment, its header and
// its compressed file in format version 1 (fsynced, so its pages can be
// evicted).
func benchSegment(b *testing.B) (s *store.Schema, h Header, rows []byte, path string) {
	b.Helper()
	s = store.TickSchema()
	h = Header{TableID: testTableID, SegNo: 7, RowSize: s.RowSize, RowsPerSeg: benchRows, Rows: benchRows}
	rows = genRows(s, benchRows, h.SegNo, h.RowsPerSeg, 1)
	return s, h, rows, benchFile(b, s, h, rows, VersionSeqOrder)
}

// benchFile writes rows as a compressed file of the given format version
// (fsynced) and returns its path.
func benchFile(b *testing.B, s *store.Schema, h Header, rows []byte, version int) (path string) {
	b.Helper()
	var buf bytes.Buffer
	if _, err := encode(&buf, s, h, rows, "bench", level, version); err != nil {
		b.Fatal(err)
	}
	path = filepath.Join(b.TempDir(), format.ZSegName(h.SegNo))
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(buf.Bytes()); err == nil {
		err = f.Sync()
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

func reportRows(b *testing.B, rows float64) {
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/rows, "ns/row")
}

func reportHist(b *testing.B, h *hdrhistogram.Histogram) {
	b.ReportMetric(float64(h.ValueAtQuantile(50)), "p50-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99)), "p99-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99.9)), "p999-ns")
}

// BenchmarkEncode encodes the whole segment (rows verified, compressed,
// written to io.Discard) and reports the size: bytes/row for the file and
// per column (each frame's length prefix included).
func BenchmarkEncode(b *testing.B) {
	s, h, rows, _ := benchSegment(b)
	for _, tc := range []struct {
		v       int
		lvl     codec.Level
		workers int // EncodeParallel's; 0: encode on one goroutine
	}{{VersionSeqOrder, codec.LevelFastest, 0}, {VersionSeqOrder, codec.LevelDefault, 0}, {VersionClustered, codec.LevelFastest, 0},
		{VersionClustered, codec.LevelFastest, 2}} {
		name := "rows=2M/v=" + strconv.Itoa(tc.v) + "/level=" + strconv.Itoa(int(tc.lvl))
		if tc.workers > 0 {
			name += "/workers=" + strconv.Itoa(tc.workers)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var st Stats
			for b.Loop() {
				var err error
				if st, err = encodeN(io.Discard, s, h, rows, "bench", tc.lvl, tc.v, max(tc.workers, 1), nil); err != nil {
					b.Fatal(err)
				}
			}
			reportRows(b, float64(b.N)*benchRows)
			b.ReportMetric(float64(st.Bytes)/benchRows, "bytes/row")
			for c, n := range st.ColBytes {
				b.ReportMetric(float64(n)/benchRows, s.Cols[c].Name+"-bytes/row")
			}
			if tc.v == VersionClustered && tc.workers == 0 {
				// (The sym column's bytes are the seq-order index's.)
				b.ReportMetric(float64(st.SeqBytes)/benchRows, "seq-bytes/row")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkBlock decodes the segment's blocks in turn into one buffer on
// one open Segment, and reports throughput and the latency of one
// 4096-row block.
//
// Version 2 builds each block from the symbols' data blocks (kept
// decoded, one per symbol, as blocks go by in order): blocks in order cost
// about one data block's decoding each; a block out of order (order=random)
// decodes the data block of every symbol in it.
func BenchmarkBlock(b *testing.B) {
	s, h, rows, path1 := benchSegment(b)
	path2 := benchFile(b, s, h, rows, VersionClustered)
	for _, tc := range []struct {
		name string
		path string
		rnd  bool
	}{{"v=1/order=seq", path1, false}, {"v=2/order=seq", path2, false}, {"v=1/order=random", path1, true}, {"v=2/order=random", path2, true}} {
		b.Run(tc.name, func(b *testing.B) {
			g, err := Open(tc.path, s, h)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			dst := make([]byte, 0, BlockRows*s.RowSize)
			hist := hdrhistogram.New(1, int64(time.Second), 3)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k := i % g.Blocks()
				if tc.rnd {
					k = i * 7919 % g.Blocks()
				}
				t0 := time.Now()
				if _, err := g.Block(k, dst); err != nil {
					b.Fatal(err)
				}
				_ = hist.RecordValue(int64(time.Since(t0)))
				i++
			}
			reportRows(b, float64(b.N)*BlockRows)
			reportHist(b, hist)
		})
	}
}

// BenchmarkSym reads one symbol's rows (the one nearest 1 % of the rows)
// of the segment: its whole span (query=all) or windows of 1 % of the
// segment's span (query=window). Version 1 decodes every block whose ts
// range meets the window and keeps the symbol's rows (what a postings walk
// costs: nearly every block holds one of them); version 2 decodes only the
// symbol's blocks that meet it (SymSeek, SymBlock). cache=dropped evicts
// the file and opens it before each query; cache=warm reuses one open
// Segment. rows/s counts the symbol's rows returned.
func BenchmarkSym(b *testing.B) {
	s, h, rows, path1 := benchSegment(b)
	path2 := benchFile(b, s, h, rows, VersionClustered)
	symc, _ := s.Col("sym")
	counts := map[uint32]int{}
	for i := 0; i < len(rows); i += s.RowSize {
		counts[store.Row(rows[i:]).Sym(symc)]++
	}
	var sym uint32
	for id, c := range counts {
		if d, best := abs(c-benchRows/100), abs(counts[sym]-benchRows/100); d < best || (d == best && id < sym) {
			sym = id
		}
	}
	lo, hi := store.Row(rows).Ts(), store.Row(rows[len(rows)-s.RowSize:]).Ts()
	span := hi - lo
	wins := make([]int64, 64)
	x := uint64(1)
	for i := range wins {
		x = x*6364136223846793005 + 1442695040888963407
		wins[i] = lo + int64(x>>33)%(span-span/100)
	}
	for _, q := range []string{"all", "window"} {
		for _, v := range []int{VersionSeqOrder, VersionClustered} {
			for _, dropped := range []bool{false, true} {
				path := path1
				if v == VersionClustered {
					path = path2
				}
				name := "query=" + q + "/v=" + strconv.Itoa(v) + "/cache=warm"
				if dropped {
					name = "query=" + q + "/v=" + strconv.Itoa(v) + "/cache=dropped"
				}
				b.Run(name, func(b *testing.B) {
					g, err := Open(path, s, h)
					if err != nil {
						b.Fatal(err)
					}
					defer func() { g.Close() }()
					dst := make([]byte, 0, BlockRows*s.RowSize)
					seqs := make([]uint64, 0, BlockRows)
					hist := hdrhistogram.New(1, int64(100*time.Second), 3)
					var total int
					i := 0
					for b.Loop() {
						from, to := lo, hi+1
						if q == "window" {
							from, to = wins[i&63], wins[i&63]+span/100
						}
						if dropped {
							b.StopTimer()
							g.Close()
							if err := evict(path); err != nil {
								b.Fatal(err)
							}
							b.StartTimer()
						}
						t0 := time.Now()
						if dropped {
							if g, err = Open(path, s, h); err != nil {
								b.Fatal(err)
							}
						}
						n := 0
						if v == VersionSeqOrder {
							for k := range g.Blocks() {
								if bl, bh := g.BlockTs(k); bh < from || bl >= to {
									continue
								}
								if dst, err = g.Block(k, dst); err != nil {
									b.Fatal(err)
								}
								for o := 0; o < len(dst); o += s.RowSize {
									r := store.Row(dst[o : o+s.RowSize])
									if r.Sym(symc) == sym && r.Ts() >= from && r.Ts() < to {
										n++
									}
								}
							}
						} else {
							k, end := g.SymSeek(sym, from)
							for ; k < end; k++ {
								if bl, _ := g.DataBlockTs(k); bl >= to {
									break
								}
								if dst, seqs, err = g.SymBlock(k, dst, seqs); err != nil {
									b.Fatal(err)
								}
								for o := 0; o < len(dst); o += s.RowSize {
									if t := store.Row(dst[o:]).Ts(); t >= from && t < to {
										n++
									}
								}
							}
						}
						_ = hist.RecordValue(int64(time.Since(t0)))
						if n == 0 && q == "all" {
							b.Fatal("no rows")
						}
						total += n
						i++
					}
					reportRows(b, float64(total))
					reportHist(b, hist)
				})
			}
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// BenchmarkColdGet is what a reader pays for a row of a segment it has not
// opened: Open, decode the row's block, Close.
func BenchmarkColdGet(b *testing.B) {
	s, h, _, path := benchSegment(b)
	nb := int(numBlocks(benchRows))
	for _, dropped := range []bool{false, true} {
		name := "cache=warm"
		if dropped {
			name = "cache=dropped"
		}
		b.Run(name, func(b *testing.B) {
			dst := make([]byte, 0, BlockRows*s.RowSize)
			hist := hdrhistogram.New(1, int64(10*time.Second), 3)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if dropped {
					if err := evict(path); err != nil {
						b.Fatal(err)
					}
				}
				t0 := time.Now()
				g, err := Open(path, s, h)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := g.Block(i*7919%nb, dst); err != nil {
					b.Fatal(err)
				}
				g.Close()
				_ = hist.RecordValue(int64(time.Since(t0)))
				i++
			}
			reportHist(b, hist)
		})
	}
}

// BenchmarkRandomRow is a random Get of a clustered segment's rows
// (RowInto): over a few blocks, whose rank frames RowInto keeps, and over
// many, where most rows decode a rank frame.
func BenchmarkRandomRow(b *testing.B) {
	s := store.TickSchema()
	for _, rows := range []int{5 * BlockRows, 128 * BlockRows} {
		b.Run(fmt.Sprintf("blocks=%d", rows/BlockRows), func(b *testing.B) {
			h := Header{TableID: testTableID, SegNo: 0, RowSize: s.RowSize, RowsPerSeg: 128 * BlockRows, Rows: uint64(rows)}
			path, _ := encodeFileVersion(b, b.TempDir(), s, h, genRows(s, rows, 0, h.RowsPerSeg, 1), VersionClustered)
			g, err := Open(path, s, h)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			one := make([]byte, s.RowSize)
			x := uint64(1)
			b.ReportAllocs()
			for b.Loop() {
				x = x*6364136223846793005 + 1442695040888963407
				if err := g.RowInto(x>>33%uint64(rows), one); err != nil {
					b.Fatal(err)
				}
			}
			reportRows(b, float64(b.N))
		})
	}
}

// BenchmarkWarmRow reads one field of random rows of a decoded block: the
// cost of a Get once its block is decoded (just indexing the buffer).
func BenchmarkWarmRow(b *testing.B) {
	s := store.TickSchema()
	h := Header{TableID: testTableID, SegNo: 0, RowSize: s.RowSize, RowsPerSeg: 1 << 13, Rows: BlockRows}
	path, _ := encodeFile(b, b.TempDir(), s, h, genRows(s, BlockRows, 0, h.RowsPerSeg, 1))
	g, err := Open(path, s, h)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	buf, err := g.Block(0, nil)
	if err != nil {
		b.Fatal(err)
	}
	price, _ := s.Col("price")
	var idx [BlockRows]uint16
	x := uint32(1)
	for i := range idx {
		x = x*1664525 + 1013904223
		idx[i] = uint16(x >> 20)
	}
	b.ReportAllocs()
	var sum float64
	for b.Loop() {
		for _, i := range idx {
			o := int(i) * s.RowSize
			sum += store.Row(buf[o : o+s.RowSize]).F64(price)
		}
	}
	if sum == 0 {
		b.Fatal("no rows read")
	}
	reportRows(b, float64(b.N)*BlockRows)
	b.ReportMetric(0, "ns/op")
}
