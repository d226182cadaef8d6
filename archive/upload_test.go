package archive_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/s3test"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

func tickSchema() *store.Schema {
	return store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
	)
}

var t0 = time.Date(2024, 3, 8, 22, 0, 0, 0, time.UTC).UnixNano()

// makeTicks writes n ticks of 20 symbols into table "trades" of a new
// database (64 KiB segments, a late window, about one row in 50 late)
// and closes it, which compresses every segment.
func makeTicks(t testing.TB, n int, seed uint64) string {
	t.Helper()
	db, live := testutil.DB(t)
	w, err := writer.Open(db, "trades", &writer.Options{Schema: tickSchema(), LiveDir: live,
		SegmentSize: 64 << 10, LateWindow: time.Second, HotBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	appendTicks(t, w, 0, n, seed)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// appendTicks appends rows [from, from+n) of the seeded sequence.
func appendTicks(t testing.TB, w *writer.Writer, from, n int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(from)))
	s := w.Schema()
	row := s.NewRow()
	for i := from; i < from+n; i++ {
		ts := t0 + int64(i)*int64(10*time.Millisecond)
		if rng.IntN(50) == 0 {
			ts -= rng.Int64N(int64(500 * time.Millisecond))
		}
		id, err := w.SymbolString("S" + string(rune('A'+rng.IntN(20))))
		if err != nil {
			t.Fatal(err)
		}
		row.SetTs(ts)
		row.SetSym(s.ColAt(1), id)
		row.SetF64(s.ColAt(2), float64(i)/4)
		row.SetI64(s.ColAt(3), int64(i))
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			w.Publish()
		}
	}
	w.Publish()
}

func TestSyncUploadsEverySegmentOnce(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	db := makeTicks(t, 40000, 1)
	c, err := archive.Dial("s3://ticks/node-a", archive.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Check(ctx); err != nil {
		t.Fatal(err)
	}
	// One segment first, then the rest: a second call goes on where the
	// manifest ends.
	res, err := archive.Sync(ctx, c, db, "trades", &archive.SyncOptions{MaxSegments: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 1 || res.PendingSegs == 0 {
		t.Fatalf("first call: %d segments up, %d pending; want 1 and more", res.Segments, res.PendingSegs)
	}
	res, err = archive.Sync(ctx, c, db, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := res.Manifest
	dir := filepath.Join(db, "trades")
	// Every compressed segment; Close leaves the last, partial one raw.
	zsegs, _ := filepath.Glob(filepath.Join(dir, "seg-*.zdat"))
	want := uint64(len(zsegs)) * r.SegmentRows()
	if res.PendingSegs != 0 || m.FirstSeq != 0 || m.EndSeq != want || want < r.Len()-r.SegmentRows() {
		t.Fatalf("manifest rows [%d, %d), %d pending; the table has %d rows, %d compressed segments", m.FirstSeq, m.EndSeq, res.PendingSegs, r.Len(), len(zsegs))
	}
	tsIdx, err := os.ReadFile(filepath.Join(dir, format.TimeIdxName))
	if err != nil {
		t.Fatal(err)
	}
	var late uint64
	for _, s := range m.Segments {
		local, err := os.ReadFile(format.ZSegPath(dir, s.Seg))
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(ctx, s.Key)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, local) {
			t.Fatalf("segment %d: the object differs from the file", s.Seg)
		}
		tsi, err := c.Get(ctx, s.TsIdx)
		if err != nil {
			t.Fatal(err)
		}
		want := tsIdx[format.BlockSize+8*s.TsFirst:][:8*s.TsCount]
		if !bytes.Equal(tsi, want) || s.TsCount == 0 {
			t.Fatalf("segment %d: time index entries differ (%d entries)", s.Seg, s.TsCount)
		}
		late += s.LateCount
	}
	if late == 0 {
		t.Fatal("no late rows archived; the table has some")
	}
	// Nothing new: a third call puts nothing at all.
	before := c.Stats()
	res, err = archive.Sync(ctx, c, db, "trades", nil)
	if err != nil || res.Segments != 0 || c.Stats().Puts != before.Puts {
		t.Fatalf("third call: %d segments, %d puts, %v; want none", res.Segments, c.Stats().Puts-before.Puts, err)
	}
}

// A table's last, partial segment (compressed at a clean close) goes up
// with the rows it has; once it holds more, the next Sync puts it again
// under its new row range and removes the old objects, so no row is in
// the archive twice; with nothing new, Sync puts nothing.
func TestSyncPartialSegmentGrows(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	db, live := testutil.DB(t)
	open := func() *writer.Writer {
		w, err := writer.Open(db, "trades", &writer.Options{Schema: tickSchema(), LiveDir: live, SegmentSize: 64 << 10, LateWindow: time.Second, HotBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := open()
	appendTicks(t, w, 0, 5000, 2) // 2 whole segments of 2,048 rows and 904 rows
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	c, err := archive.Dial("s3://ticks/p", archive.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := archive.Sync(ctx, c, db, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Manifest; m.EndSeq != 5000 || len(m.Segments) != 3 {
		t.Fatalf("manifest rows [%d, %d) in %d segments; want [0, 5000) in 3", m.FirstSeq, m.EndSeq, len(m.Segments))
	}
	oldKey := res.Manifest.Segments[2].Key
	before := c.Stats()
	if res, err = archive.Sync(ctx, c, db, "trades", nil); err != nil || res.Segments != 0 || c.Stats().Puts != before.Puts {
		t.Fatalf("again with nothing new: %d segments, %d puts, %v", res.Segments, c.Stats().Puts-before.Puts, err)
	}
	w = open()
	appendTicks(t, w, 5000, 1000, 2)
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	if res, err = archive.Sync(ctx, c, db, "trades", nil); err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if m.EndSeq != 6000 || len(m.Segments) != 3 || m.Segments[2].FirstSeq != 4096 || res.Segments != 1 {
		t.Fatalf("after growing: rows [%d, %d) in %d segments, %d put; want [0, 6000) in 3, 1 put", m.FirstSeq, m.EndSeq, len(m.Segments), res.Segments)
	}
	if _, err := c.Size(ctx, oldKey); !errors.Is(err, archive.ErrNotFound) {
		t.Fatalf("the partial segment's old object %s: %v; want it removed", oldKey, err)
	}
	keys, err := c.List(ctx, "trades/seg/")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, s := range m.Segments {
		for _, k := range []string{s.Key, s.TsIdx, s.Late} {
			if k != "" {
				listed[k] = true
			}
		}
	}
	for _, k := range keys {
		if !listed[k] {
			t.Errorf("object %s is not in the manifest", k)
		}
	}
	if len(keys) != len(listed) {
		t.Errorf("%d segment objects, the manifest lists %d", len(keys), len(listed))
	}
}

// SyncOptions.Parquet puts each archived segment's rows as Parquet too:
// the manifest lists the objects, and together they hold every archived
// row once (TestParquetDuckDB reads them back through DuckDB).
func TestSyncParquet(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	db := makeTicks(t, 9000, 3)
	c, err := archive.Dial("s3://ticks/pq", archive.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := archive.Sync(context.Background(), c, db, "trades", &archive.SyncOptions{Parquet: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, s := range res.Manifest.Segments {
		if len(s.Parquet) == 0 {
			t.Fatalf("segment %d: no Parquet", s.Seg)
		}
		for _, k := range s.Parquet {
			st, err := os.Stat(filepath.Join(srv.Root, "ticks", "pq", k))
			if err != nil || st.Size() == 0 {
				t.Fatalf("segment %d: Parquet object %s: %v", s.Seg, k, err)
			}
			n++
		}
	}
	if n < len(res.Manifest.Segments) {
		t.Fatalf("%d Parquet objects for %d segments", n, len(res.Manifest.Segments))
	}
}
