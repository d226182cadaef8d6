package archive

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/s3test"
	"github.com/tickdb/tickdb/reader"
)

// BenchmarkSegmentParquet writes the archive's Parquet of every segment
// of a compacted benchmark table (benchutil.BuildCompacted: 100 symbols,
// ticks about 1 µs apart, the writer's default 16 MiB segments;
// TICKDB_BENCH_ROWS rows, default 2 M) to a local versitygw, and reports
// rows/s and the Parquet's size against the compressed segments'.
func BenchmarkSegmentParquet(b *testing.B) {
	srv := s3test.Start(b, "")
	bucket := srv.Bucket(b, "lake")
	db := b.TempDir()
	tab, err := benchutil.BuildCompacted(b, db, "ticks", benchutil.Rows(2<<20))
	if err != nil {
		b.Fatal(err)
	}
	r, err := reader.Open(db, "ticks", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	st, err := r.Stat()
	if err != nil {
		b.Fatal(err)
	}
	var zbytes int64
	var segs [][2]uint64
	for n := uint64(0); n*st.SegmentRows < st.Rows; n++ {
		fi, err := os.Stat(format.ZSegPath(filepath.Join(db, "ticks"), n))
		if err != nil {
			b.Fatal(err)
		}
		zbytes += fi.Size()
		segs = append(segs, [2]uint64{n * st.SegmentRows, min((n+1)*st.SegmentRows, st.Rows)})
	}
	c, err := Dial("s3://"+bucket+"/node", Config{Endpoint: srv.Endpoint, AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, Region: s3test.Region})
	if err != nil {
		b.Fatal(err)
	}
	var objects int
	start := time.Now()
	for b.Loop() {
		objects = 0
		for _, sg := range segs {
			keys, err := writeParquetRows(b.Context(), c, r, "ticks", sg[0], sg[1])
			if err != nil {
				b.Fatal(err)
			}
			objects += len(keys)
		}
	}
	el := time.Since(start)
	put := c.Stats().PutBytes / int64(b.N)
	rows := float64(tab.N)
	b.ReportMetric(rows*float64(b.N)/el.Seconds(), "rows/s")
	b.ReportMetric(float64(put)/rows, "parquet-B/row")
	b.ReportMetric(float64(zbytes)/rows, "zdat-B/row")
	b.ReportMetric(float64(objects), "objects")
	b.ReportMetric(float64(len(segs)), "segments")
}
