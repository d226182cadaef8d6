package reader_test

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// BenchmarkHotWindow: a one-symbol window over 1 % of the span of a table
// whose segments are all hot (sealed, durable, in their live slots), read
// through the clustered hot copies (clu=true) and without them (clu=false:
// the copies removed, RangeSym reads the slots through the postings). A
// fresh reader (fresh mappings: every page is a first touch) serves each
// batch of 8 windows at random places; only the windows are timed.
// TICKDB_BENCH_CLU_ROWS sets the rows (default 4M: 8 segments of 16 MiB,
// 100 symbols), TICKDB_BENCH_CLU_SEG the segment size in MiB (the
// writer's default, 64, with 20M rows is the shape of tickdb bench).
//
//	go test -run '^$' -bench HotWindow -count 5 ./reader | tee clu.txt; benchstat clu.txt
func BenchmarkHotWindow(b *testing.B) {
	n := 4_000_000
	if s := os.Getenv("TICKDB_BENCH_CLU_ROWS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	seg := int64(16 << 20)
	if s := os.Getenv("TICKDB_BENCH_CLU_SEG"); s != "" {
		mib, _ := strconv.Atoi(s)
		seg = int64(mib) << 20
	}
	db := b.TempDir()
	live := testutil.LiveDir(b)
	const nsym = 100
	w, err := writer.Open(db, "t", &writer.Options{Schema: store.TickSchema(), SegmentSize: seg, LiveDir: live})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	for k := range nsym {
		if _, err := w.SymbolString("S" + strconv.Itoa(k)); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(benchutil.Seed, 5))
	s := w.Schema()
	symc, _ := s.Col("sym")
	sizec, _ := s.Col("size")
	row := w.NewRow()
	ts0 := int64(1_700_000_000_000_000_000)
	ts := ts0
	for i := range n {
		ts += 500 + rng.Int64N(1000)
		row.SetTs(ts)
		row.SetSym(symc, uint32(rng.IntN(nsym)))
		row.SetI64(sizec, int64(i))
		if _, err := w.Append(row); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			w.Publish()
		}
	}
	w.Publish()
	if err := w.Sync(); err != nil {
		b.Fatal(err)
	}
	segs := waitClusB(b, db, live)
	span := ts - ts0
	for _, clu := range []bool{true, false} {
		b.Run("clu="+strconv.FormatBool(clu), func(b *testing.B) {
			if !clu {
				for _, seg := range segs {
					os.Remove(format.CluPath(live, seg))
				}
			}
			runtime.LockOSThread() // ThreadFaults
			defer runtime.UnlockOSThread()
			lat := benchutil.NewHist()
			var r *reader.Reader
			var it reader.Iter
			var rows, ops uint64
			var faults int64
			wrng := rand.New(rand.NewPCG(benchutil.Seed, 6))
			b.ReportAllocs()
			for b.Loop() {
				if ops%8 == 0 {
					b.StopTimer()
					if r != nil {
						r.Close()
					}
					if r, err = reader.Open(db, "t", &reader.Options{LiveDir: live}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				// Within the sealed segments (the last is live).
				from := ts0 + wrng.Int64N(span*8/10)
				id := uint32(wrng.IntN(nsym))
				if os.Getenv("XPRE") != "" {
					r.SeekTime(from)
					r.SeekTime(from + span/100)
				}
				f0 := benchutil.ThreadFaults()
				t0 := benchutil.Nanotime()
				if err := r.RangeSym(from, from+span/100, id, &it); err != nil {
					b.Fatal(err)
				}
				for it.Next() {
					rows++
				}
				benchutil.Record(lat, benchutil.Nanotime()-t0)
				faults += benchutil.ThreadFaults() - f0
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
				ops++
			}
			if r != nil {
				r.Close()
			}
			b.ReportMetric(float64(rows)/float64(ops), "rows/op")
			b.ReportMetric(float64(faults)/float64(ops), "faults/op")
			benchutil.ReportHist(b, lat, "", "ns", 1)
		})
	}
}

// waitClusB waits until every hot segment of table "t" has its copy.
func waitClusB(b *testing.B, db, live string) []uint64 {
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for range 2000 {
		st, err := r.Stat()
		if err != nil {
			b.Fatal(err)
		}
		ents, _ := os.ReadDir(live)
		var segs []uint64
		for _, e := range ents {
			if n, tmp, ok := format.ParseCluName(e.Name()); ok && !tmp {
				segs = append(segs, n)
			}
		}
		if st.Hot.Segments > 0 && uint64(len(segs)) == st.Hot.Segments {
			b.Logf("%d hot segments, all with clustered copies", len(segs))
			return segs
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatal("clustered copies not made")
	return nil
}
