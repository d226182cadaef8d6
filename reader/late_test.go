package reader_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Differential tests of late rows (writer.Options.LateWindow): every
// time-ordered read must return the rows a brute-force model sorted by
// (ts, seq) holds, over live, hot, raw durable and compressed segments.

const lateWin = 5_000 // ns

// lateModel is the rows stored, in seq order.
type lateModel struct {
	rows     []byte
	ts       []int64
	sym      []uint32
	nsym     int
	late     int // rows stored late
	rejected int // rows later than the window
}

// lateTable writes a random table with a late-row mix: most rows in
// order, some up to the window behind the newest (stored), a few further
// behind (rejected). Equal timestamps, symbols that come and go.
func lateTable(t *testing.T, db, live string, rng *rand.Rand, rps int, lateShare float64, hot int64) *lateModel {
	t.Helper()
	s := store.TickSchema()
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, SegmentSize: int64(rps) * 32, LiveDir: live,
		LateWindow: lateWin, HotBytes: hot})
	if err != nil {
		t.Fatal(err)
	}
	// A test that fails before the Close below still stops the writer's
	// goroutines before its live directory is removed.
	t.Cleanup(func() { w.Close() })
	m := &lateModel{nsym: 1 + rng.IntN(6)}
	for i := range m.nsym {
		if _, err := w.SymbolString(fmt.Sprintf("S%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	symc, _ := s.Col("sym")
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	n := rps*(3+rng.IntN(5)) + rng.IntN(rps)
	row := w.NewRow()
	newest := int64(1_700_000_000_000_000_000)
	for len(m.ts) < n {
		ts := newest
		switch x := rng.Float64(); {
		case len(m.ts) == 0:
			// the first row: in order whatever it is
		case x < lateShare:
			ts = newest - 1 - rng.Int64N(lateWin) // stored late
		case x < lateShare*1.1:
			ts = newest - lateWin - 1 - rng.Int64N(1000) // too late
		case x < 0.5:
			// equal ts
		default:
			ts = newest + rng.Int64N(700)
		}
		id := uint32(rng.IntN(m.nsym))
		if rng.IntN(7) == 0 {
			id = uint32(len(m.ts)/rps) % uint32(m.nsym) // bursts per segment
		}
		row.SetTs(ts)
		row.SetSym(symc, id)
		row.SetF64(price, float64(rng.IntN(10000))/100)
		row.SetI64(size, int64(len(m.ts)))
		seq, err := w.Append(row)
		if errors.Is(err, writer.ErrOutOfOrder) {
			if newest-ts <= lateWin {
				t.Fatalf("row %d behind the newest by %d, inside the window, rejected", len(m.ts), newest-ts)
			}
			m.rejected++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if newest-ts > lateWin {
			t.Fatalf("row behind the newest by %d stored as seq %d", newest-ts, seq)
		}
		if ts < newest {
			m.late++
		}
		newest = max(newest, ts)
		m.ts = append(m.ts, ts)
		m.sym = append(m.sym, id)
		if rng.IntN(50) == 0 {
			w.Publish()
		}
	}
	st := w.Stats()
	if st.Late != uint64(m.late) || st.OutOfOrder != uint64(m.rejected) {
		t.Fatalf("stats: %d late, %d out of order; want %d, %d", st.Late, st.OutOfOrder, m.late, m.rejected)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The rows as stored (check words filled in), read in seq order.
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for q := range uint64(len(m.ts)) {
		row, err := r.Get(q)
		if err != nil {
			t.Fatal(err)
		}
		if row.Ts() != m.ts[q] || row.Sym(symc) != m.sym[q] {
			t.Fatalf("row %d: ts %d sym %d, want %d %d", q, row.Ts(), row.Sym(symc), m.ts[q], m.sym[q])
		}
		m.rows = append(m.rows, row...)
	}
	return m
}

// order is the model's rows of [from, to) (symbol sym, or all when sym
// < 0) in time order: by ts, then seq.
func (m *lateModel) order(from, to int64, sym int) []uint64 {
	var q []uint64
	for i, ts := range m.ts {
		if ts >= from && ts < to && (sym < 0 || m.sym[i] == uint32(sym)) {
			q = append(q, uint64(i))
		}
	}
	slices.SortStableFunc(q, func(a, b uint64) int { return cmp.Compare(m.ts[a], m.ts[b]) })
	return q
}

// lateCheck asks table "t" every time-ordered question and compares the
// answers with the model's.
func lateCheck(t *testing.T, db, live string, m *lateModel, rng *rand.Rand) {
	t.Helper()
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := len(m.ts)
	if c := r.Len(); c != uint64(n) {
		t.Fatalf("count %d, want %d", c, n)
	}
	for q := range n {
		row, err := r.Get(uint64(q))
		if err != nil || !bytes.Equal(row, m.rows[q*32:(q+1)*32]) {
			t.Fatalf("Get(%d): %v, differs", q, err)
		}
	}
	lo, hi := slices.Min(m.ts), slices.Max(m.ts)
	windows := [][2]int64{{math.MinInt64, math.MaxInt64}, {lo, hi}, {lo, hi + 1}, {hi, lo}}
	for range 15 {
		a, b := m.ts[rng.IntN(n)], m.ts[rng.IntN(n)]
		windows = append(windows, [2]int64{min(a, b), max(a, b)}, [2]int64{a, a + 1 + rng.Int64N(3*lateWin)}, [2]int64{a - rng.Int64N(lateWin), a})
	}
	var it reader.Iter
	read := func(what string, want []uint64) {
		t.Helper()
		var got []uint64
		for it.Next() {
			q := it.Seq()
			if q >= uint64(n) || !bytes.Equal(it.Row(), m.rows[q*32:(q+1)*32]) {
				t.Fatalf("%s: row %d differs", what, q)
			}
			got = append(got, q)
		}
		if it.Err() != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows (%v), want %d\n got %v\nwant %v", what, len(got), it.Err(), len(want), short(got), short(want))
		}
	}
	for _, w := range windows {
		if err := r.Range(w[0], w[1], &it); err != nil {
			t.Fatal(err)
		}
		read(fmt.Sprintf("Range(%d, %d)", w[0], w[1]), m.order(w[0], w[1], -1))
		for id := range m.nsym {
			if err := r.RangeSym(w[0], w[1], uint32(id), &it); err != nil {
				t.Fatal(err)
			}
			read(fmt.Sprintf("RangeSym(%d, %d, %d)", w[0], w[1], id), m.order(w[0], w[1], id))
		}
	}
	// SeekTime: every row before the answer has ts < t, and the row at
	// it (unless it is a late one) has ts >= t.
	for range 50 {
		ts := m.ts[rng.IntN(n)] + rng.Int64N(3) - 1
		got, err := r.SeekTime(ts)
		if err != nil {
			t.Fatal(err)
		}
		for q := range got {
			if m.ts[q] >= ts {
				t.Fatalf("SeekTime(%d) = %d, but row %d has ts %d", ts, got, q, m.ts[q])
			}
		}
		if got < uint64(n) && m.ts[got] < ts {
			newest := slices.Max(m.ts[:got+1])
			if newest < ts {
				t.Fatalf("SeekTime(%d) = %d: no row up to it has ts >= %d", ts, got, ts)
			}
		}
	}
	// Latest: each symbol's last row by (ts, seq) at or before a time.
	dst := make([]byte, 32)
	for k := range 30 {
		at := m.ts[rng.IntN(n)] + rng.Int64N(2*lateWin) - lateWin
		if k == 0 {
			at = math.MaxInt64
		}
		for id := range m.nsym {
			want, wok := uint64(0), false
			for q := range n {
				if m.sym[q] == uint32(id) && m.ts[q] <= at && (!wok || m.ts[q] >= m.ts[want]) {
					want, wok = uint64(q), true
				}
			}
			got, ok, err := r.LastSym(uint32(id), at, dst)
			if err != nil || ok != wok || ok && (got != want || !bytes.Equal(dst, m.rows[want*32:(want+1)*32])) {
				t.Fatalf("LastSym(%d, %d) = %d, %v, %v; want %d, %v", id, at, got, ok, err, want, wok)
			}
		}
	}
	rep, err := reader.Verify(db, "t", nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if rep.Late != uint64(m.late) {
		t.Fatalf("verify checked %d late rows, the table has %d", rep.Late, m.late)
	}
}

// TestLateRowsMatchModel: random late mixes, read raw (durable, hot with
// clustered copies), partly compacted and wholly compacted (clustered by
// symbol): every answer in (ts, seq) order.
func TestLateRowsMatchModel(t *testing.T) {
	seed := testutil.Seed(t, 0)
	cases := []struct {
		rps   int
		share float64
		hot   int64
	}{{64, 0.01, -1}, {256, 0.2, -1}, {4096, 0.05, 0}, {64, 0.5, 0}, {1024, 0.9, -1}}
	for i, c := range cases {
		t.Run(fmt.Sprintf("rps=%d/late=%v/hot=%d", c.rps, c.share, c.hot), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			db, live := testutil.DB(t)
			m := lateTable(t, db, live, rng, c.rps, c.share, c.hot)
			t.Logf("%d rows, %d late, %d rejected", len(m.ts), m.late, m.rejected)
			lateCheck(t, db, live, m, rng)

			// Reopened by a writer (cold recovery re-indexes nothing after a
			// clean close), then partly and wholly compacted.
			w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, LateWindow: lateWin})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Compact(0); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			lateCheck(t, db, live, m, rng)
			w, err = writer.Open(db, "t", &writer.Options{LiveDir: live})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.CloseCompacted(0); err != nil {
				t.Fatal(err)
			}
			lateCheck(t, db, live, m, rng)
			// The format features the table now uses are declared.
			c, err := index.OpenCtl(filepath.Join(db, "t", format.CtlName), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := uint64(index.FeatClustered | index.FeatPostFloor)
			if m.late > 0 {
				want |= index.FeatLate
			}
			if f := c.Features(); f != want {
				t.Errorf("features %#x, want %#x", f, want)
			}
			c.Close()
		})
	}
}

// TestLateWindowZeroRejects: without a window a late row is refused and
// counted, as before the window existed.
func TestLateWindowZeroRejects(t *testing.T) {
	db, live := testutil.DB(t)
	w, err := writer.Open(db, "t", &writer.Options{Schema: store.TickSchema(), LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.SymbolString("A"); err != nil {
		t.Fatal(err)
	}
	row := w.NewRow()
	row.SetTs(100)
	if _, err := w.Append(row); err != nil {
		t.Fatal(err)
	}
	row.SetTs(99)
	if _, err := w.Append(row); !errors.Is(err, writer.ErrOutOfOrder) {
		t.Fatalf("late row without a window: %v", err)
	}
	if st := w.Stats(); st.Late != 0 || st.OutOfOrder != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestLateRowsReindexed: rows past the last checkpoint are re-indexed
// from the durable files when the live slots are lost (cold recovery):
// the late entries come back the same.
func TestLateRowsReindexed(t *testing.T) {
	db, live := testutil.DB(t)
	rng := rand.New(rand.NewPCG(7, 7))
	m := lateTable(t, db, live, rng, 256, 0.1, -1)
	// Forget the checkpoint: the next writer re-indexes every row.
	// (ctl's checkpoint words, docs/FORMAT.md §4: ckSeq, ckNextChunk,
	// ckSymCount at 4240..4263, ckLate at 4296.)
	f, err := os.OpenFile(filepath.Join(db, "t", format.CtlName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{4240, 4248, 4256, 4296} {
		if _, err := f.WriteAt(make([]byte, 8), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, LateWindow: time.Duration(lateWin)})
	if err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Late != uint64(m.late) {
		t.Fatalf("re-indexed %d late rows, want %d", st.Late, m.late)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lateCheck(t, db, live, m, rng)
}

// TestLateMergeAllocs holds Range and RangeSym with late rows to zero
// allocations once the iterator's buffers have grown.
func TestLateMergeAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	db, live := testutil.DB(t)
	rng := rand.New(rand.NewPCG(3, 3))
	m := lateTable(t, db, live, rng, 1024, 0.05, 0)
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var it reader.Iter
	from := m.ts[len(m.ts)/4]
	scan := func() {
		if err := r.Range(from, math.MaxInt64, &it); err != nil {
			t.Fatal(err)
		}
		for it.Next() {
		}
		for id := range uint32(m.nsym) {
			if err := r.RangeSym(from, math.MaxInt64, id, &it); err != nil {
				t.Fatal(err)
			}
			for it.Next() {
			}
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	scan()
	if n := testing.AllocsPerRun(10, scan); n != 0 {
		t.Errorf("a scan with late rows allocates %v times", n)
	}
}

// TestReaderAcrossUncompaction: a reader that read the last segment
// compressed (compacted when its writer closed) keeps reading it, and
// the rows after it, once a writer reopens the table and appends to that
// segment again.
func TestReaderAcrossUncompaction(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.TickSchema()
	symc, _ := s.Col("sym")
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, SegmentSize: 256 * 32, LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.SymbolString("A"); err != nil {
		t.Fatal(err)
	}
	row := w.NewRow()
	appendN := func(n int) {
		for range n {
			row.SetTs(int64(w.Len()) * 10)
			row.SetSym(symc, 0)
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
		}
		w.Publish()
	}
	appendN(600) // segments 0, 1 and 88 rows of 2
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if row, err := r.Get(599); err != nil || row.Ts() != 5990 {
		t.Fatalf("Get(599) compressed: %v", err)
	}
	if w, err = writer.Open(db, "t", &writer.Options{LiveDir: live}); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	row = w.NewRow()
	appendN(300)
	for seq := uint64(0); seq < 900; seq++ {
		row, err := r.Get(seq)
		if err != nil || row.Ts() != int64(seq)*10 {
			t.Fatalf("Get(%d) after the writer reopened: %v", seq, err)
		}
	}
	var it reader.Iter
	if err := r.RangeSym(0, math.MaxInt64, 0, &it); err != nil {
		t.Fatal(err)
	}
	k := 0
	for it.Next() {
		if it.Seq() != uint64(k) {
			t.Fatalf("RangeSym row %d is seq %d", k, it.Seq())
		}
		k++
	}
	if it.Err() != nil || k != 900 {
		t.Fatalf("RangeSym: %d rows, %v", k, it.Err())
	}
}

// TestLateNearMaxInt64: a window end whose late reach passes MaxInt64
// still takes the late rows behind a row stamped MaxInt64.
func TestLateNearMaxInt64(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.TickSchema()
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, LiveDir: live, LateWindow: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.SymbolString("A"); err != nil {
		t.Fatal(err)
	}
	row := w.NewRow()
	for _, ts := range []int64{math.MaxInt64 - 10, math.MaxInt64, math.MaxInt64 - 5} {
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
	var it reader.Iter
	for _, c := range []struct {
		from, to int64
		want     []uint64
	}{
		{math.MaxInt64 - 20, math.MaxInt64 - 4, []uint64{0, 2}},
		{math.MaxInt64 - 6, math.MaxInt64 - 1, []uint64{2}},
		// to = MaxInt64 is reader.ToEnd: the row stamped MaxInt64 too.
		{math.MaxInt64 - 6, math.MaxInt64, []uint64{2, 1}},
		{math.MinInt64, math.MaxInt64, []uint64{0, 2, 1}},
	} {
		for _, sym := range []bool{false, true} {
			if sym {
				err = r.RangeSym(c.from, c.to, 0, &it)
			} else {
				err = r.Range(c.from, c.to, &it)
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for it.Next() {
				got = append(got, it.Seq())
			}
			if it.Err() != nil || !slices.Equal(got, c.want) {
				t.Fatalf("range [%d, %d) sym %v: %v %v, want %v", c.from, c.to, sym, got, it.Err(), c.want)
			}
		}
	}
}

// TestReopenAfterCloseCompacted: CloseCompacted drops the postings of
// every compressed segment, the last one's too; a writer that reopens
// the table decompresses that segment and indexes its rows again (late
// rows included) before it publishes them, and every read still matches
// the model, through more appends and another CloseCompacted.
func TestReopenAfterCloseCompacted(t *testing.T) {
	seed := testutil.Seed(t, 0)
	rng := rand.New(rand.NewPCG(seed, 9))
	db, live := testutil.DB(t)
	const rps = 4096
	m := lateTable(t, db, live, rng, rps, 0.05, -1)
	s := store.TickSchema()
	symc, _ := s.Col("sym")
	for round := range 3 {
		w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, LateWindow: lateWin})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.CloseCompacted(0); err != nil {
			t.Fatal(err)
		}
		lateCheck(t, db, live, m, rng) // compressed, postings dropped

		// Reopen: the last segment comes back raw with its postings.
		if w, err = writer.Open(db, "t", &writer.Options{LiveDir: live, LateWindow: lateWin}); err != nil {
			t.Fatal(err)
		}
		if got := w.Stats().Late; got != uint64(m.late) {
			t.Fatalf("round %d: %d late rows after reopening, want %d", round, got, m.late)
		}
		row := w.NewRow()
		newest := slices.Max(m.ts)
		add := 1000 + rng.IntN(3*rps)
		for range add {
			ts := newest + rng.Int64N(500)
			if rng.IntN(10) == 0 {
				ts = newest - rng.Int64N(lateWin)
			}
			id := uint32(rng.IntN(m.nsym))
			row.SetTs(ts)
			row.SetSym(symc, id)
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
			if ts < newest {
				m.late++
			}
			newest = max(newest, ts)
			m.ts = append(m.ts, ts)
			m.sym = append(m.sym, id)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
		if err != nil {
			t.Fatal(err)
		}
		for q := uint64(len(m.rows) / 32); q < uint64(len(m.ts)); q++ {
			row, err := r.Get(q)
			if err != nil {
				t.Fatal(err)
			}
			m.rows = append(m.rows, row...)
		}
		r.Close()
		lateCheck(t, db, live, m, rng)
	}
}
