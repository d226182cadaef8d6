package export

import (
	"math"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// TestScanAllocs: a scan allocates nothing once its buffers have grown,
// in seq order (a table without late rows) and in time order with late
// rows merged in. Skipped under -race (testutil.Race).
func TestScanAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "in_order", true: "late"}[late], func(t *testing.T) {
			db, live := testutil.DB(t)
			s := store.TickSchema()
			w, err := writer.Open(db, "t", &writer.Options{Schema: s, LiveDir: live, SegmentSize: 64 << 10, LateWindow: time.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.SymbolString("A"); err != nil {
				t.Fatal(err)
			}
			row := w.NewRow()
			for i := range int64(20_000) {
				ts := 1_000 * i
				if late && i%10 == 5 {
					ts -= 1_500 // behind the row before, inside the window
				}
				row.SetTs(ts)
				if _, err := w.Append(row); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			snap, err := r.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if (snap.Late > 0) != late {
				t.Fatalf("%d late rows", snap.Late)
			}
			sc := newScanner(r, r.Schema(), late, snap.Len)
			from, to := cut{math.MinInt64, 0}, cut{snap.LastTs, snap.Len}
			rows := 0
			scan := func() {
				rows = 0
				if err := sc.start(from, to); err != nil {
					t.Fatal(err)
				}
				for {
					n, err := sc.fill()
					if err != nil {
						t.Fatal(err)
					}
					if n == 0 {
						break
					}
					rows += n
				}
			}
			scan() // warm up: map the segments, grow the buffers
			if allocs := testing.AllocsPerRun(5, scan); allocs != 0 {
				t.Errorf("%v allocations per scan of %d rows", allocs, rows)
			}
			if rows != 20_000 {
				t.Errorf("scanned %d rows, want 20000", rows)
			}
		})
	}
}
