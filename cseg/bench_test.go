package cseg

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickdb/tickdb/codec"
	"github.com/tickdb/tickdb/store"
)

// Benchmarks over one sealed-segment-sized segment (2^21 rows) of
// realistic ticks: internal/gen, 100 symbols, seed 1, the tick schema.
// Compare commits with
//
//	go test ./cseg -run '^$' -bench . -count 10 > new.txt && benchstat old.txt new.txt
//
// Encode and Block run on one goroutine (one core). "Cold" Get is Open +
// one Block + Close with the file in the page cache (cache=warm) or evicted
// from it before each Get (cache=dropped, posix_fadvise DONTNEED).

const benchRows = 1 << 21

// benchSegment returns the rows of the benchmark segment, its header and
// its compressed file (fsynced, so its pages can be evicted).
func benchSegment(b *testing.B) (s *store.Schema, h Header, rows []byte, path string) {
	b.Helper()
	s = store.TickSchema()
	h = Header{TableID: testTableID, SegNo: 7, RowSize: s.RowSize, RowsPerSeg: benchRows, Rows: benchRows}
	rows = genRows(s, benchRows, h.SegNo, h.RowsPerSeg, 1)
	var buf bytes.Buffer
	if _, err := Encode(&buf, s, h, rows, "bench"); err != nil {
		b.Fatal(err)
	}
	path = filepath.Join(b.TempDir(), store.ZSegName(h.SegNo))
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
	return s, h, rows, path
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
	for _, lvl := range []codec.Level{codec.LevelFastest, codec.LevelDefault} {
		b.Run("rows=2M/level="+strconv.Itoa(int(lvl)), func(b *testing.B) {
			b.ReportAllocs()
			var st Stats
			for b.Loop() {
				var err error
				if st, err = encode(io.Discard, s, h, rows, "bench", lvl, VersionSeqOrder); err != nil {
					b.Fatal(err)
				}
			}
			reportRows(b, float64(b.N)*benchRows)
			b.ReportMetric(float64(st.Bytes)/benchRows, "bytes/row")
			for c, n := range st.ColBytes {
				b.ReportMetric(float64(n)/benchRows, s.Cols[c].Name+"-bytes/row")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkBlock decodes the segment's blocks in turn into one buffer on
// one open Segment, and reports throughput and the latency of one
// 4096-row block.
func BenchmarkBlock(b *testing.B) {
	s, h, _, path := benchSegment(b)
	g, err := Open(path, s, h)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	dst := make([]byte, 0, BlockRows*s.RowSize)
	hist := hdrhistogram.New(1, int64(time.Second), 3)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := g.Block(i%g.Blocks(), dst); err != nil {
			b.Fatal(err)
		}
		_ = hist.RecordValue(int64(time.Since(t0)))
		i++
	}
	reportRows(b, float64(b.N)*BlockRows)
	reportHist(b, hist)
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
