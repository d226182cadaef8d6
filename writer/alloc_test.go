package writer_test

import (
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The append path's zero-allocation contract (STYLE §5). Allocation counts
// are meaningless under -race, so these skip there (testutil.Race).
//
// They measure in steady state: a segment of 32768 rows (1 MiB) is open,
// mapped and populated ahead of the writer, and every measured call stays
// inside the first segment. testing.AllocsPerRun divides the process-wide
// malloc count by the run count (integer division), so a stray allocation
// of the flusher or preparer goroutines does not show; one per call does.

const allocSegRows = 1 << 15

func allocWriter(t *testing.T) (*wtTable, *writer.Writer, []uint32) {
	t.Helper()
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	tb := newWtTable(t)
	w := tb.open(t, func(o *writer.Options) { o.SegmentSize = allocSegRows * 32 })
	ids := tb.symbols(t, w, "AAA", "BBB", "CCC", "DDD")
	tb.appendN(t, w, 0, 100, ids)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	// The preparer has run since: the pages ahead of the writer are
	// populated and the index files have room.
	writer.PrepareNow(w)
	return tb, w, ids
}

func TestAppendAllocs(t *testing.T) {
	tb, w, ids := allocWriter(t)
	row := tb.s.NewRow()
	seq := w.Len()
	allocs := testing.AllocsPerRun(5000, func() {
		tb.fill(row, seq, ids[seq%4])
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		seq++
	})
	if allocs != 0 {
		t.Errorf("Append allocates %v times per row", allocs)
	}
	if w.Len() >= allocSegRows {
		t.Fatalf("measurement crossed a segment roll (%d rows)", w.Len())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAppendBatchAllocs(t *testing.T) {
	tb, w, ids := allocWriter(t)
	const per = 16
	batch := make([]byte, per*tb.s.RowSize)
	seq := w.Len()
	allocs := testing.AllocsPerRun(1000, func() {
		for i := range per {
			tb.fill(store.Row(batch[i*tb.s.RowSize:(i+1)*tb.s.RowSize]), seq+uint64(i), ids[(seq+uint64(i))%4])
		}
		if _, n, err := w.AppendBatch(batch); err != nil || n != per {
			t.Fatalf("AppendBatch: %d, %v", n, err)
		}
		seq += per
	})
	if allocs != 0 {
		t.Errorf("AppendBatch allocates %v times per batch of %d", allocs, per)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPublishAllocs(t *testing.T) {
	tb, w, ids := allocWriter(t)
	row := tb.s.NewRow()
	seq := w.Len()
	known := []byte("CCC")
	cases := []struct {
		name string
		f    func()
	}{
		{"append_and_publish", func() {
			tb.fill(row, seq, ids[seq%4])
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
			seq++
			w.Publish()
		}},
		{"publish_nothing_new", w.Publish},
		{"publish_after_rejected_row", func() {
			tb.fill(row, 0, ids[0]) // late: rejected and counted
			w.Append(row)
			w.Publish()
		}},
		{"symbol_known", func() {
			if _, err := w.Symbol(known); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(2000, tc.f); allocs != 0 {
				t.Errorf("%s allocates %v times per call", tc.name, allocs)
			}
		})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReserveAllocs: Reserve, where the preparer has the room in place
// (the common case: a request's rows within its distance ahead), is a
// compare: no allocation (and no system call).
func TestReserveAllocs(t *testing.T) {
	_, w, _ := allocWriter(t)
	allocs := testing.AllocsPerRun(5000, func() {
		if err := w.Reserve(64); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Reserve allocates %v times per call", allocs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
