package reader_test

import (
	"math"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The read path's zero-allocation contract (STYLE §5): Get, SeekTime,
// Iter.Next over Range and RangeSym, and Tail.Poll, in steady state (every
// segment already mapped and its blocks checked by one warm-up pass).
// Skipped under -race (testutil.Race), where counts are meaningless.
// testing.AllocsPerRun divides the process-wide malloc count by the runs,
// so a stray allocation elsewhere does not show; one per call does.

// allocTable writes rows over 12 tiny segments with 4 live slots, so the
// reader reads both durable files (older segments) and live slots (the
// newest), and warms the reader up with one full pass.
func allocTable(t *testing.T, closeWriter bool) (*reader.Reader, *rtModel, *writer.Writer) {
	t.Helper()
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	tb := newRtTable(t, store.TickSchema(), func(o *writer.Options) { o.TimeStride = 8 })
	w := tb.writer(t)
	m := &rtModel{s: store.TickSchema()}
	rtFill(t, w, m, 12*128+50, 4, 21)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if closeWriter {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		// AllocsPerRun counts the process's allocations: the background
		// compaction (it allocates its buffers) done first, the newest
		// sealed segment included (the live one has durable,
		// checkpointed rows after Sync).
		for deadline := time.Now().Add(20 * time.Second); w.Stats().RawSegs > 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("background compaction left %d raw segments", w.Stats().RawSegs)
			}
		}
	}
	r := tb.reader(t)
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		t.Fatal(err)
	}
	for it.Next() {
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return r, m, w
}

func TestReadAllocs(t *testing.T) {
	for _, closed := range []bool{false, true} {
		name := "writer_open"
		if closed {
			name = "writer_closed"
		}
		t.Run(name, func(t *testing.T) {
			r, m, w := allocTable(t, closed)
			n := uint64(len(m.rows))
			var it reader.Iter
			seq := uint64(0)
			probe := 0
			rows := 0
			dst := r.Schema().NewRow()
			cases := []struct {
				name string
				runs int
				f    func()
			}{
				{"get", 5000, func() {
					if _, err := r.Get(seq % n); err != nil {
						t.Fatal(err)
					}
					seq += 37
				}},
				{"get_last_live_row", 1000, func() {
					if _, err := r.Get(n - 1); err != nil {
						t.Fatal(err)
					}
				}},
				{"seek_time", 2000, func() {
					if _, err := r.SeekTime(m.ts[probe%int(n)] + int64(probe%3-1)); err != nil {
						t.Fatal(err)
					}
					probe += 101
				}},
				{"range_next", 100, func() {
					from := m.ts[probe%int(n)]
					probe += 211
					if err := r.Range(from, from+5000, &it); err != nil {
						t.Fatal(err)
					}
					for it.Next() {
						rows++
					}
				}},
				{"range_all_next", 20, func() {
					if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
						t.Fatal(err)
					}
					for it.Next() {
						rows++
					}
				}},
				{"range_sym_next", 200, func() {
					from := m.ts[probe%int(n)]
					probe += 307
					if err := r.RangeSym(from, math.MaxInt64, uint32(probe%4), &it); err != nil {
						t.Fatal(err)
					}
					for it.Next() {
						rows++
					}
				}},
				{"range_all_next_into", 20, func() {
					if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
						t.Fatal(err)
					}
					for it.NextInto(dst) {
						rows++
					}
				}},
				{"range_sym_next_into", 200, func() {
					from := m.ts[probe%int(n)]
					probe += 307
					if err := r.RangeSym(from, math.MaxInt64, uint32(probe%4), &it); err != nil {
						t.Fatal(err)
					}
					for it.NextInto(dst) {
						rows++
					}
				}},
				{"symbol_id", 1000, func() {
					if _, ok := r.SymbolID(symName2); !ok {
						t.Fatal("SymbolID")
					}
				}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					if a := testing.AllocsPerRun(tc.runs, tc.f); a != 0 {
						t.Errorf("%s allocates %v times per call", tc.name, a)
					}
					if it.Err() != nil {
						t.Fatal(it.Err())
					}
				})
			}
			if rows == 0 {
				t.Fatal("the iterations returned no rows")
			}
			if !closed {
				w.Close()
			}
		})
	}
}

var symName2 = []byte("SYM2")

func TestTailPollAllocs(t *testing.T) {
	r, m, w := allocTable(t, false)
	n := uint64(len(m.rows))
	t.Run("new_row", func(t *testing.T) {
		const runs = 1000
		tail := r.Tail(n-runs-1, reader.BusySpin{})
		allocs := testing.AllocsPerRun(runs, func() {
			if _, _, ok, err := tail.Poll(); !ok || err != nil {
				t.Fatalf("Poll: %v, %v", ok, err)
			}
		})
		if allocs != 0 {
			t.Errorf("Poll with a new row allocates %v times", allocs)
		}
		if tail.Next() != n {
			t.Fatalf("tail at %d, want %d", tail.Next(), n)
		}
	})
	t.Run("nothing_new", func(t *testing.T) {
		tail := r.Tail(n, reader.BusySpin{})
		allocs := testing.AllocsPerRun(1000, func() {
			if _, _, ok, err := tail.Poll(); ok || err != nil {
				t.Fatalf("Poll: %v, %v", ok, err)
			}
		})
		if allocs != 0 {
			t.Errorf("Poll with nothing new allocates %v times", allocs)
		}
	})
	t.Run("filtered", func(t *testing.T) {
		tail := r.Tail(0, reader.BusySpin{})
		tail.FilterSym(1)
		allocs := testing.AllocsPerRun(50, func() {
			if _, _, _, err := tail.Poll(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("filtered Poll allocates %v times", allocs)
		}
	})
	w.Close()
}
