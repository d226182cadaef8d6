package archive_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/harness/s3test"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/writer"
)

var benchRows = flag.Int("archrows", 2_000_000, "rows of the archive benchmarks' table (16 MiB segments, as serve makes them)")

// benchTable writes n ticks into "trades" with the writer's defaults
// (16 MiB segments) and closes it (the sealed segments compressed).
func benchTable(b *testing.B, n int) string {
	b.Helper()
	db, live := testutil.DB(b)
	w, err := writer.Open(db, "trades", &writer.Options{Schema: tickSchema(), LiveDir: live, LateWindow: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	appendTicks(b, w, 0, n, 1)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkArchiveSync uploads a table's compressed segments with Sync
// (each to a fresh prefix) and, in the same iteration, the same files'
// bytes with plain PUTs at the same concurrency: the server's raw PUT
// rate for the same bytes, side by side. Metrics: MB/s of segment bytes
// for each, and their ratio (sync ÷ raw; 1 = the archive costs nothing
// beyond the PUTs).
func BenchmarkArchiveSync(b *testing.B) {
	srv := s3test.Start(b, "")
	srv.Bucket(b, "bench")
	srv.SetEnv(b)
	db := benchTable(b, *benchRows)
	files, _ := filepath.Glob(filepath.Join(db, "trades", "seg-*.zdat"))
	var segBytes int64
	blobs := make([][]byte, len(files))
	for i, f := range files {
		blob, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		blobs[i] = blob
		segBytes += int64(len(blob))
	}
	if len(files) == 0 {
		b.Fatal("no compressed segments")
	}
	ctx := context.Background()
	raw := srv.Client(b)
	var syncTime, putTime time.Duration
	var putBytes int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c, err := archive.Dial(fmt.Sprintf("s3://bench/sync-%d", i), archive.Config{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := archive.Sync(ctx, c, db, "trades", nil)
		if err != nil {
			b.Fatal(err)
		}
		syncTime += time.Since(start)
		putBytes += res.Bytes
		start = time.Now()
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(2) // Sync's default uploads
		for j, blob := range blobs {
			g.Go(func() error {
				_, err := raw.PutObject(gctx, "bench", fmt.Sprintf("raw-%d/%d", i, j), bytesReader(blob), int64(len(blob)), minio.PutObjectOptions{})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		putTime += time.Since(start)
	}
	n := float64(b.N)
	syncMB := float64(segBytes) * n / 1e6 / syncTime.Seconds()
	putMB := float64(segBytes) * n / 1e6 / putTime.Seconds()
	b.ReportMetric(syncMB, "sync_MB/s")
	b.ReportMetric(putMB, "raw_put_MB/s")
	b.ReportMetric(syncMB/putMB, "sync/raw")
	b.ReportMetric(float64(*benchRows)*n/syncTime.Seconds(), "rows/s")
	b.ReportMetric(float64(putBytes)/n/float64(segBytes), "put_bytes/segment_bytes")
	b.ReportMetric(float64(len(files)), "segments")
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
