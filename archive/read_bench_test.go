package archive_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/harness/duckjs"
	"github.com/tickdb/tickdb/internal/harness/s3test"
	"github.com/tickdb/tickdb/internal/harness/suite"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// symQuery is one symbol's rows in [from, to): their count and sum of
// size, through RangeSym.
func symQuery(b *testing.B, r *reader.Reader, sym string, from, to int64) (n, sum int64) {
	id, ok := r.SymbolID([]byte(sym))
	if !ok {
		b.Fatalf("no symbol %s", sym)
	}
	var it reader.Iter
	if err := r.RangeSym(from, to, id, &it); err != nil {
		b.Fatal(err)
	}
	size := r.Schema().ColAt(3)
	for it.Next() {
		n++
		sum += it.Row().I64(size)
	}
	if err := it.Err(); err != nil {
		b.Fatal(err)
	}
	return n, sum
}

// BenchmarkArchiveRead puts the two queries side by side in one
// run: one symbol's rows in a 1 % window of the table's span, and one
// symbol's whole history (count and sum of a column), on
//
//   - the local table, its files evicted from the page cache (cold) and
//     again (warm);
//   - the archive with a cold cache: a new cache directory, OpenReader
//     (the manifest, the dictionary, the segments' time index and late
//     entries: reported apart as open_*), then the query, fetching what it
//     needs by range requests (its requests and KB reported);
//   - the archive again with that cache warm (a new Reader);
//   - DuckDB (Node API) on the archive's Parquet, read from versitygw's
//     directory: the query's first run in a new DuckDB process.
//
// versitygw serves from this machine's page cache, so the archive's
// figures are its requests' cost, not a network's: on AWS S3 add a
// first-byte latency per request (tens of ms) and divide the bytes by
// the link. Every variant must count the same rows (checked).
func BenchmarkArchiveRead(b *testing.B) {
	srv := s3test.Start(b, "")
	srv.Bucket(b, "bench")
	srv.SetEnv(b)
	n := *benchRows
	db, live := testutil.DB(b)
	w, err := writer.Open(db, "trades", &writer.Options{Schema: tickSchema(), LiveDir: live, LateWindow: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	appendTicks(b, w, 0, n, 1)
	if _, err := w.CloseCompacted(0); err != nil { // every row archived
		b.Fatal(err)
	}
	ctx := context.Background()
	c, err := archive.Dial("s3://bench/read", archive.Config{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := archive.Sync(ctx, c, db, "trades", &archive.SyncOptions{Parquet: true})
	if err != nil {
		b.Fatal(err)
	}
	node := duckjs.Node(b)
	span := int64(n) * int64(10*time.Millisecond)
	from := t0 + span*45/100
	queries := []struct {
		name     string
		from, to int64
	}{
		{"window", from, from + span/100},
		{"symbol", math.MinInt64, reader.ToEnd},
	}
	const sym = "SC"
	glob := filepath.Join(srv.Root, "bench", "read", "parquet", "table=trades", "**", "*.parquet")
	sql := make([]string, len(queries))
	for i, q := range queries {
		where := fmt.Sprintf("sym = '%s'", sym)
		if q.from != math.MinInt64 {
			f := func(t int64) string { return time.Unix(0, t).UTC().Format("2006-01-02 15:04:05.000000000") }
			where += fmt.Sprintf(" AND ts >= '%s'::TIMESTAMP_NS AND ts < '%s'::TIMESTAMP_NS", f(q.from), f(q.to))
		}
		sql[i] = fmt.Sprintf("SELECT count(*), sum(size) FROM read_parquet('%s', hive_partitioning = true) WHERE %s", glob, where)
	}
	type acc struct {
		localCold, localWarm, cold, warm, open, duck time.Duration
		reqs, bytes, openReqs, openBytes             int64
	}
	accs := make([]acc, len(queries))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		for i, q := range queries {
			a := &accs[i]
			// Local, cold then warm.
			if err := suite.Evict(filepath.Join(db, "trades")); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			r, err := reader.Open(db, "trades", nil)
			if err != nil {
				b.Fatal(err)
			}
			wantN, wantSum := symQuery(b, r, sym, q.from, q.to)
			a.localCold += time.Since(start)
			start = time.Now()
			symQuery(b, r, sym, q.from, q.to)
			a.localWarm += time.Since(start)
			r.Close()
			if wantN == 0 {
				b.Fatal("no rows: the benchmark measures nothing")
			}
			// The archive, cold cache then warm.
			cache, err := os.MkdirTemp("", "tickdb-archive-cache-")
			if err != nil {
				b.Fatal(err)
			}
			rc, err := archive.Dial("s3://bench/read", archive.Config{})
			if err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			ar, err := archive.OpenReader(ctx, "s3://bench/read", "trades", &archive.ReaderOptions{Client: rc, CacheDir: cache})
			if err != nil {
				b.Fatal(err)
			}
			a.open += time.Since(start)
			opened := rc.Stats()
			a.openReqs += opened.Gets
			a.openBytes += opened.GetBytes
			start = time.Now()
			gotN, gotSum := symQuery(b, ar.Reader, sym, q.from, q.to)
			a.cold += time.Since(start)
			st := rc.Stats().Sub(opened)
			a.reqs += st.Gets
			a.bytes += st.GetBytes
			ar.Close()
			if gotN != wantN || gotSum != wantSum {
				b.Fatalf("%s: the archive counts %d rows (sum %d), the local table %d (%d)", q.name, gotN, gotSum, wantN, wantSum)
			}
			ar, err = archive.OpenReader(ctx, "s3://bench/read", "trades", &archive.ReaderOptions{Client: rc, CacheDir: cache})
			if err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			symQuery(b, ar.Reader, sym, q.from, q.to)
			a.warm += time.Since(start)
			ar.Close()
			os.RemoveAll(cache)
			// DuckDB on the Parquet.
			dr := duckjs.Time(b, node, 1, sql[i])
			if len(dr.Results[0].Rows) != 1 {
				b.Fatalf("duckdb: %v", dr.Results[0].Rows)
			}
			if got := dr.Results[0].Rows[0]; got[0] != fmt.Sprint(wantN) || got[1] != fmt.Sprint(wantSum) {
				b.Fatalf("%s: DuckDB counts %v, the table %d rows (sum %d)", q.name, got, wantN, wantSum)
			}
			a.duck += time.Duration(dr.Results[0].Ms[0] * 1e6)
		}
		b.StartTimer()
	}
	nf := float64(b.N)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / nf }
	for i, q := range queries {
		a := accs[i]
		p := q.name + "_"
		b.ReportMetric(ms(a.localCold), p+"local_cold_ms")
		b.ReportMetric(ms(a.localWarm), p+"local_warm_ms")
		b.ReportMetric(ms(a.cold), p+"archive_cold_ms")
		b.ReportMetric(float64(a.reqs)/nf, p+"archive_cold_requests")
		b.ReportMetric(float64(a.bytes)/nf/1e3, p+"archive_cold_KB")
		b.ReportMetric(ms(a.warm), p+"archive_warm_ms")
		b.ReportMetric(ms(a.duck), p+"duckdb_parquet_ms")
		if i == 0 {
			b.ReportMetric(ms(a.open), "archive_open_ms")
			b.ReportMetric(float64(a.openReqs)/nf, "archive_open_requests")
			b.ReportMetric(float64(a.openBytes)/nf/1e3, "archive_open_KB")
		}
	}
	var zbytes int64
	for _, s := range res.Manifest.Segments {
		zbytes += s.Size
	}
	b.ReportMetric(float64(zbytes)/1e3, "archive_segments_KB")
	b.ReportMetric(float64(len(res.Manifest.Segments)), "segments")
}
