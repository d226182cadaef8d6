package reader_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// TestScanMatchesGet checks that a scan (Range, RangeSeq), which hands out
// rows of validated sealed blocks without calling Get, returns exactly
// what Get returns, row by row: across sealed durable segments, live slots
// and the unsealed last segment, with the writer open and after it closed,
// for a row size that divides 4 KiB (32 bytes) and one that does not (40),
// and that a scan stops cleanly once the Reader is closed; NextInto's
// copies are the same rows.
func TestScanMatchesGet(t *testing.T) {
	schemas := map[string]*store.Schema{
		"row=32": store.TickSchema(),
		"row=40": store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
			store.Column{Name: "a", Type: store.TypeF64}, store.Column{Name: "b", Type: store.TypeF64}, store.Column{Name: "c", Type: store.TypeI64}),
	}
	for name, s := range schemas {
		t.Run(name, func(t *testing.T) {
			db, live := testutil.DB(t)
			// 8 KiB segments: 256 or 204 rows; 2 live slots, so most
			// segments are sealed and read from their durable files.
			w, err := writer.Open(db, "t", &writer.Options{Schema: s, SegmentSize: 8192, LiveSlots: 2, HotBytes: -1, LiveDir: live})
			if err != nil {
				t.Fatal(err)
			}
			id, err := w.SymbolString("S")
			if err != nil {
				t.Fatal(err)
			}
			symc := s.ColAt(s.SymCol)
			last, _ := s.Col(s.Cols[len(s.Cols)-1].Name)
			row := s.NewRow()
			const n = 3000
			for i := 0; i < n; i++ {
				row.SetTs(int64(i))
				row.SetSym(symc, id)
				row.SetI64(last, int64(i)*7)
				if _, err := w.Append(row); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			check := func(stage string) {
				r, err := reader.Open(db, "t", nil)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				g, err := reader.Open(db, "t", nil)
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				var it reader.Iter
				dst := s.NewRow()
				// The second pass finds every block validated; the third
				// and fourth copy each row with NextInto, over Range and
				// over RangeSym (every row is symbol S's).
				for pass := 0; pass < 4; pass++ {
					var err error
					if pass == 3 {
						err = r.RangeSym(math.MinInt64, reader.ToEnd, id, &it)
					} else {
						err = r.Range(math.MinInt64, math.MaxInt64, &it)
					}
					if err != nil {
						t.Fatal(err)
					}
					next := it.Next
					if pass >= 2 {
						clear(dst)
						next = func() bool { return it.NextInto(dst) }
					}
					var seq uint64
					for ; next(); seq++ {
						want, err := g.Get(seq)
						if err != nil {
							t.Fatal(err)
						}
						if it.Seq() != seq || !bytes.Equal(it.Row(), want) {
							t.Fatalf("%s pass %d: row %d (seq %d) = %x, Get = %x", stage, pass, seq, it.Seq(), it.Row(), want)
						}
						if pass >= 2 && !bytes.Equal(dst, want) {
							t.Fatalf("%s pass %d: NextInto's copy of row %d = %x, Get = %x", stage, pass, seq, dst, want)
						}
					}
					if it.Err() != nil || seq != n {
						t.Fatalf("%s pass %d: scan ended at %d of %d: %v", stage, pass, seq, n, it.Err())
					}
				}
				// A sub-range starting and ending mid-block.
				r.RangeSeq(1000, 1337, &it)
				seq := uint64(1000)
				for ; it.Next(); seq++ {
					if want, _ := g.Get(seq); it.Seq() != seq || !bytes.Equal(it.Row(), want) {
						t.Fatalf("%s: sub-range row %d differs", stage, seq)
					}
				}
				if seq != 1337 {
					t.Fatalf("%s: sub-range ended at %d", stage, seq)
				}
				// Close in the middle of a run: the scan stops, no fault.
				r.RangeSeq(0, n, &it)
				it.Next()
				it.Next()
				r.Close()
				for i := 0; it.Next(); i++ {
					if i > 0 {
						t.Fatalf("%s: scan goes on after Close", stage)
					}
				}
				if it.NextInto(dst) {
					t.Fatalf("%s: NextInto goes on after Close", stage)
				}
			}
			check("writer open")
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			check("writer closed")
		})
	}
}
