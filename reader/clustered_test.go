package reader_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/csegtest"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Differential tests of reads over compressed segments clustered by symbol
// (cseg format version 2), mixed with version 1 and raw segments: every
// answer must be the raw table's.

// clModel is a table's rows as read raw, before any compaction.
type clModel struct {
	rows []byte // all rows end to end (first seq 0)
	ts   []int64
	sym  []uint32
	nsym int // registered symbols (the last one has no row)
}

// clTable writes a random table: nsym symbols that come and go between
// segments, runs of equal timestamps, rps rows a segment, with the
// writer's options changed by mod if not nil. It closes the writer and
// returns the rows as a reader reads them.
func clTable(t *testing.T, db, live string, rng *rand.Rand, rps int, mod func(*writer.Options)) *clModel {
	t.Helper()
	s := store.TickSchema()
	o := &writer.Options{Schema: s, SegmentSize: int64(rps) * 32, LiveDir: live}
	if mod != nil {
		mod(o)
	}
	w, err := writer.Open(db, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	nsym := 1 + rng.IntN(9)
	for i := range nsym + 1 { // one more, never used
		if _, err := w.SymbolString(fmt.Sprintf("S%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	symc, _ := s.Col("sym")
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	segs := 3 + rng.IntN(4)
	if rps <= 256 {
		segs = 8 + rng.IntN(12) // many segments
	}
	n := rps*segs + rng.IntN(rps)
	row := w.NewRow()
	ts := int64(1_700_000_000_000_000_000)
	var active []uint32
	for i := range n {
		if i%rps == 0 || len(active) == 0 {
			// Each segment (and a few times within one) its own subset.
			active = active[:0]
			for id := range nsym {
				if rng.IntN(3) > 0 || id == i/rps%nsym {
					active = append(active, uint32(id))
				}
			}
		}
		if rng.IntN(rps/2+1) == 0 {
			active = active[:1+rng.IntN(len(active))]
		}
		switch rng.IntN(4) {
		case 0: // equal ts
		case 1:
			ts++
		default:
			ts += int64(rng.IntN(2000))
		}
		id := active[rng.IntN(len(active))]
		row.SetTs(ts)
		row.SetSym(symc, id)
		row.SetF64(price, float64(100_00+rng.IntN(500))/100)
		row.SetI64(size, int64(100*rng.IntN(20)))
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
	m := &clModel{nsym: nsym + 1}
	for q := uint64(0); q < r.Len(); q++ {
		row, err := r.Get(q)
		if err != nil {
			t.Fatal(err)
		}
		m.rows = append(m.rows, row...)
		m.ts = append(m.ts, row.Ts())
		m.sym = append(m.sym, row.Sym(symc))
	}
	if len(m.ts) != n {
		t.Fatalf("read %d rows, wrote %d", len(m.ts), n)
	}
	return m
}

// toV1 rewrites compressed segment n of table "t" in format version 1.
func toV1(t *testing.T, db string, n uint64, rps int) {
	csegtest.RewriteV1(t, filepath.Join(db, "t"), store.TickSchema(), n, uint64(rps))
}

// zVersions returns the cseg format version of each segment of table "t"
// (0: raw).
func zVersions(t *testing.T, db string, segs int) []int {
	var v []int
	for n := range segs {
		b, err := os.ReadFile(format.ZSegPath(filepath.Join(db, "t"), uint64(n)))
		switch {
		case os.IsNotExist(err):
			v = append(v, 0)
		case err != nil:
			t.Fatal(err)
		default:
			v = append(v, int(binary.LittleEndian.Uint32(b[8:])))
		}
	}
	return v
}

// clCheck asks table "t" every kind of question and compares the answers
// with the model's.
func clCheck(t *testing.T, db, live string, m *clModel, rng *rand.Rand) {
	t.Helper()
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := len(m.ts)
	for q := range n {
		row, err := r.Get(uint64(q))
		if err != nil || !bytes.Equal(row, m.rows[q*32:(q+1)*32]) {
			t.Fatalf("Get(%d): %v, differs", q, err)
		}
	}
	// Windows: the whole span, random ones, ones on exact (often
	// repeated) timestamps, empty and reversed ones.
	lo, hi := m.ts[0], m.ts[n-1]
	windows := [][2]int64{{math.MinInt64, math.MaxInt64}, {lo, hi}, {lo, hi + 1}, {hi, lo}, {hi + 1, math.MaxInt64}}
	for range 12 {
		a, b := m.ts[rng.IntN(n)], m.ts[rng.IntN(n)]
		windows = append(windows, [2]int64{min(a, b), max(a, b)}, [2]int64{min(a, b), max(a, b) + 1}, [2]int64{a, a + 1 + rng.Int64N(5000)})
	}
	var it reader.Iter
	for _, w := range windows {
		if err := r.Range(w[0], w[1], &it); err != nil {
			t.Fatal(err)
		}
		var want []byte
		for q := range n {
			if m.ts[q] >= w[0] && m.ts[q] < w[1] {
				want = append(want, m.rows[q*32:(q+1)*32]...)
			}
		}
		var got []byte
		for it.Next() {
			got = append(got, it.Row()...)
		}
		if it.Err() != nil || !bytes.Equal(got, want) {
			t.Fatalf("Range(%d, %d): %d rows (%v), want %d", w[0], w[1], len(got)/32, it.Err(), len(want)/32)
		}
		for id := range uint32(m.nsym) {
			if err := r.RangeSym(w[0], w[1], id, &it); err != nil {
				t.Fatal(err)
			}
			var wantSeqs, gotSeqs []uint64
			for q := range n {
				if m.sym[q] == id && m.ts[q] >= w[0] && m.ts[q] < w[1] {
					wantSeqs = append(wantSeqs, uint64(q))
				}
			}
			for it.Next() {
				q := it.Seq()
				if q >= uint64(n) || !bytes.Equal(it.Row(), m.rows[q*32:(q+1)*32]) {
					t.Fatalf("RangeSym(%d, %d, %d): row %d differs", w[0], w[1], id, q)
				}
				gotSeqs = append(gotSeqs, q)
			}
			if it.Err() != nil || !slices.Equal(gotSeqs, wantSeqs) {
				t.Fatalf("RangeSym(%d, %d, %d): %d rows (%v), want %d", w[0], w[1], id, len(gotSeqs), it.Err(), len(wantSeqs))
			}
		}
	}
	for range 50 {
		ts := m.ts[rng.IntN(n)] + rng.Int64N(3) - 1
		want, _ := slices.BinarySearch(m.ts, ts)
		if got, err := r.SeekTime(ts); err != nil || got != uint64(want) {
			t.Fatalf("SeekTime(%d) = %d, %v; want %d", ts, got, err, want)
		}
	}
	if _, err := reader.Verify(db, "t", nil); err != nil {
		t.Fatalf("verify: %v", err)
	}
}

// TestClusteredMatchesRaw: random tables, compacted partly (the writer's
// Compact, some segments then rewritten in format version 1) and then
// wholly (CloseCompacted), answer every question as they did raw.
func TestClusteredMatchesRaw(t *testing.T) {
	seed := testutil.Seed(t, 0) // TICKDB_SEED replays one
	for i, rps := range []int{64, 256, 1 << 13, 64, 256} {
		t.Run(fmt.Sprintf("rps=%d/%d", rps, i), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			db, live := testutil.DB(t)
			// Raw segments until the test compacts them itself, their
			// postings kept (a version 1 segment is read through them);
			// the last writer compacts in the background too.
			m := clTable(t, db, live, rng, rps, func(o *writer.Options) { o.CompactAge = -1 })
			segs := (len(m.ts) + rps - 1) / rps
			clCheck(t, db, live, m, rng) // raw

			w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
			if err != nil {
				t.Fatal(err)
			}
			res, err := w.Compact(0)
			if err != nil || res.Segments == 0 {
				t.Fatalf("compact: %+v %v", res, err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			for n := range res.Segments {
				if rng.IntN(3) == 0 {
					toV1(t, db, uint64(n), rps)
				}
			}
			t.Logf("partly compacted: %v", zVersions(t, db, segs))
			clCheck(t, db, live, m, rng)

			w, err = writer.Open(db, "t", &writer.Options{LiveDir: live})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.CloseCompacted(0); err != nil {
				t.Fatal(err)
			}
			vs := zVersions(t, db, segs)
			t.Logf("wholly compacted: %v", vs)
			if slices.Contains(vs, 0) || !slices.Contains(vs, 2) {
				t.Fatalf("segment versions %v after CloseCompacted", vs)
			}
			clCheck(t, db, live, m, rng)
		})
	}
}

// TestClusteredRangeSymAllocs holds RangeSym and Next over clustered
// segments to zero allocations once warm.
func TestClusteredRangeSymAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	db, live := testutil.DB(t)
	rng := rand.New(rand.NewPCG(1, 1))
	m := clTable(t, db, live, rng, 1<<12, nil)
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var it reader.Iter
	scan := func() {
		for id := range uint32(m.nsym) {
			if err := r.RangeSym(m.ts[len(m.ts)/3], math.MaxInt64, id, &it); err != nil {
				t.Fatal(err)
			}
			for it.Next() {
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		}
	}
	scan()
	if n := testing.AllocsPerRun(10, scan); n != 0 {
		t.Errorf("RangeSym over clustered segments allocates %v times a scan", n)
	}
}
