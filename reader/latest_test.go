package reader_test

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Latest-row queries (Reader.Latest, Latest.Sym, LastSym) against a
// brute-force model: for every symbol and many times, the row with the
// greatest (ts, seq) among the symbol's rows with ts <= the time, over
// random tables (symbols that come and go, runs of equal timestamps) in
// every tier a row can be read from.

const latTable = "lat"

// latModel is what was written: every row (without its check word), its
// ts and its symbol id.
type latModel struct {
	rows [][]byte
	ts   []int64
	sym  []uint32
	nsym int // symbols in the dictionary (some never have a row)
}

// latGen appends rows to a writer, recording them in a model: symbols
// come and go in phases of random length (a subset of them active in
// each), are added to the dictionary when first used (and one more that
// never has a row), and a third of the rows repeat the previous ts.
type latGen struct {
	rng    *rand.Rand
	m      *latModel
	ts     int64
	active []string
	left   int // rows left in the phase
	rps    int
	names  []string
}

func newLatGen(seed uint64, rps int) *latGen {
	g := &latGen{rng: rand.New(rand.NewPCG(seed, 11)), m: &latModel{}, ts: 1_700_000_000_000_000_000, rps: rps}
	for i := range 12 {
		g.names = append(g.names, fmt.Sprintf("S%02d", i))
	}
	return g
}

// write appends n rows to w and publishes.
func (g *latGen) write(t *testing.T, w *writer.Writer, n int) {
	t.Helper()
	if err := g.append(w, n); err != nil {
		t.Fatal(err)
	}
}

// append is write for any goroutine: it returns the error.
func (g *latGen) append(w *writer.Writer, n int) error {
	s := w.Schema()
	symc, _ := s.Col("sym")
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	if _, err := w.SymbolString("never"); err != nil {
		return err
	}
	row := w.NewRow()
	for range n {
		if g.left == 0 {
			g.left = g.rps/3 + g.rng.IntN(2*g.rps)
			g.active = g.active[:0]
			for _, name := range g.names {
				if g.rng.IntN(5) < 2 {
					g.active = append(g.active, name)
				}
			}
			if len(g.active) == 0 {
				g.active = append(g.active, g.names[g.rng.IntN(len(g.names))])
			}
		}
		g.left--
		switch g.rng.IntN(6) {
		case 0, 1: // equal ts
		case 2:
			g.ts++
		default:
			g.ts += int64(1 + g.rng.IntN(2000))
		}
		id, err := w.SymbolString(g.active[g.rng.IntN(len(g.active))])
		if err != nil {
			return err
		}
		clear(row)
		row.SetTs(g.ts)
		row.SetSym(symc, id)
		row.SetF64(price, float64(100_00+g.rng.IntN(500))/100)
		row.SetI64(size, int64(100*g.rng.IntN(20)))
		if _, err := w.Append(row); err != nil {
			return err
		}
		g.m.rows = append(g.m.rows, slices.Clone(row[:len(row)-store.CheckSize]))
		g.m.ts = append(g.m.ts, g.ts)
		g.m.sym = append(g.m.sym, id)
	}
	w.Publish()
	g.m.nsym = w.Stats().Symbols
	return nil
}

// ats are the times to ask at: before the first row, every kind of
// boundary around random rows (a run of equal ts included), after the
// last, and the extremes.
func (m *latModel) ats(rng *rand.Rand) []int64 {
	n := len(m.ts)
	ats := []int64{math.MinInt64, m.ts[0] - 1, m.ts[0], m.ts[n-1] - 1, m.ts[n-1], m.ts[n-1] + 1, math.MaxInt64 - 1, math.MaxInt64}
	for range 12 {
		ts := m.ts[rng.IntN(n)]
		ats = append(ats, ts-1, ts, ts+1)
	}
	return ats
}

// answers is the model's answer at each time, in answer's format.
func (m *latModel) answers(ats []int64) []string {
	var out []string
	for _, at := range ats {
		best := make([]int, m.nsym)
		for i := range best {
			best[i] = -1
		}
		for i, ts := range m.ts {
			// The greatest (ts, seq): the model does not assume ts order.
			if b := best[m.sym[i]]; ts <= at && (b < 0 || ts > m.ts[b] || ts == m.ts[b]) {
				best[m.sym[i]] = i
			}
		}
		var b strings.Builder
		for id, i := range best {
			if i < 0 {
				b.WriteString(answer(uint32(id), 0, nil))
			} else {
				b.WriteString(answer(uint32(id), uint64(i), m.rows[i]))
			}
		}
		out = append(out, b.String())
	}
	return out
}

// answer formats one symbol's answer: its seq and row without the check
// word, or none.
func answer(id uint32, seq uint64, row []byte) string {
	if row == nil {
		return fmt.Sprintf("%d:- ", id)
	}
	return fmt.Sprintf("%d:%d:%s ", id, seq, hex.EncodeToString(row))
}

// readerAnswers asks r for every symbol's latest row at each time, through
// one Latest per time, and every fourth symbol through LastSym too (which
// must agree).
func readerAnswers(r *reader.Reader, ats []int64, nsym int) ([]string, error) {
	var out []string
	dst := make([]byte, r.Schema().RowSize)
	var l reader.Latest
	for _, at := range ats {
		if err := r.Latest(at, &l); err != nil {
			return nil, fmt.Errorf("at %d: %w", at, err)
		}
		var b strings.Builder
		for id := range uint32(nsym) {
			seq, ok, err := l.Sym(id, dst)
			if err != nil {
				return nil, fmt.Errorf("at %d symbol %d: %w", at, id, err)
			}
			if !ok {
				b.WriteString(answer(id, 0, nil))
			} else {
				if !format.Valid(seq, dst) {
					return nil, fmt.Errorf("at %d symbol %d: row %d fails its check word", at, id, seq)
				}
				b.WriteString(answer(id, seq, dst[:len(dst)-store.CheckSize]))
			}
			if id%4 == 0 {
				seq2, ok2, err := r.LastSym(id, at, dst)
				if err != nil || ok2 != ok || (ok && seq2 != seq) {
					return nil, fmt.Errorf("at %d symbol %d: LastSym gives %d %v %v, Latest %d %v", at, id, seq2, ok2, err, seq, ok)
				}
			}
		}
		out = append(out, b.String())
	}
	return out, nil
}

// checkLatest compares r's answers with the model's at many times.
func checkLatest(t *testing.T, what string, r *reader.Reader, m *latModel, rng *rand.Rand) {
	t.Helper()
	checkLatestAt(t, what, r, m, m.ats(rng))
}

// checkLatestAt compares r's answers with the model's at the times ats.
func checkLatestAt(t *testing.T, what string, r *reader.Reader, m *latModel, ats []int64) {
	t.Helper()
	got, err := readerAnswers(r, ats, m.nsym)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for i, want := range m.answers(ats) {
		if got[i] != want {
			t.Fatalf("%s: at %d:\n got %s\nwant %s", what, ats[i], got[i], want)
		}
	}
}

// latOptions: 64 KiB segments (2048 rows), two live slots, hot segments as
// given (negative: none).
func latOptions(live string, hotSegs int64) *writer.Options {
	o := &writer.Options{Schema: store.TickSchema(), SegmentSize: 64 << 10, LiveSlots: 2, LiveDir: live, TimeStride: 16}
	o.HotBytes = -1
	if hotSegs > 0 {
		o.HotBytes = hotSegs * format.SegFileSize(32, 2048)
	}
	return o
}

func openLat(t *testing.T, db string) *reader.Reader {
	t.Helper()
	r, err := reader.Open(db, latTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func latStat(t *testing.T, r *reader.Reader) reader.Stat {
	t.Helper()
	st, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLatestTiers: the answers of a reader in this process equal the
// model's with the rows in each tier: only the live segment, hot
// segments, raw durable files under a running writer and after it closed,
// and the tiers mixed.
func TestLatestTiers(t *testing.T) {
	seed := testutil.Seed(t, *xprocSeedFlag)
	const rps = 2048
	for _, tc := range []struct {
		name  string
		hot   int64
		rows  int
		raw   bool // no background compaction: the case reads raw segments (their hot copies or files)
		check func(t *testing.T, st reader.Stat)
	}{
		{"live", 4, rps - 300, false, func(t *testing.T, st reader.Stat) {
			if st.Live.Rows != st.Rows || st.Hot.Segments+st.Raw.Segments != 0 {
				t.Fatalf("want every row live: %+v %+v %+v", st.Live, st.Hot, st.Raw)
			}
		}},
		{"hot", 4, 7*rps + 500, true, func(t *testing.T, st reader.Stat) {
			if st.Hot.Segments == 0 {
				t.Fatalf("no hot segment: %+v", st.Hot)
			}
		}},
		{"raw", -1, 9*rps + 77, true, func(t *testing.T, st reader.Stat) {
			if st.Raw.Segments < 6 {
				t.Fatalf("want raw segments: raw %+v hot %+v", st.Raw, st.Hot)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			db, live := testutil.DB(t)
			o := latOptions(live, tc.hot)
			if tc.raw {
				o.CompactAge = -1
			}
			w, err := writer.Open(db, latTable, o)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			g := newLatGen(seed, rps)
			early := openLat(t, db) // opened before any row
			g.write(t, w, tc.rows/2)
			checkLatest(t, "half the rows", early, g.m, rng)
			g.write(t, w, tc.rows-tc.rows/2)
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			r := openLat(t, db)
			time.Sleep(20 * time.Millisecond) // let the preparer settle the slots
			tc.check(t, latStat(t, r))
			checkLatest(t, "fresh reader", r, g.m, rng)
			checkLatest(t, "early reader", early, g.m, rng)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checkLatest(t, "writer closed, early reader", early, g.m, rng)
			checkLatest(t, "writer closed, fresh reader", openLat(t, db), g.m, rng)
			tablecheck.Verify(t, db, latTable, uint64(tc.rows))
		})
	}
}

// TestLatestCompacted: the table compacted whole into clustered segments
// (CloseCompacted), its compacted rows' postings punched out: a fresh
// reader, and one that read the raw segments before, answer from the
// segments' directories. Then a writer reopens it (the last segments come
// back raw) and appends: the tiers mixed.
func TestLatestCompacted(t *testing.T) {
	seed := testutil.Seed(t, *xprocSeedFlag)
	rng := rand.New(rand.NewPCG(seed, 4))
	const rps = 2048
	db, live := testutil.DB(t)
	o := latOptions(live, -1)
	w, err := writer.Open(db, latTable, o)
	if err != nil {
		t.Fatal(err)
	}
	g := newLatGen(seed, rps)
	g.write(t, w, 11*rps+900)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	old := openLat(t, db)
	checkLatest(t, "raw", old, g.m, rng)
	if w, err = writer.Open(db, latTable, o); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	rows := uint64(len(g.m.ts))
	if rep, err := reader.Verify(db, latTable, nil); err != nil || rep.Compacted == 0 {
		t.Fatalf("verify: %+v, %v; want rows below the postings floor", rep, err)
	}
	r := openLat(t, db)
	if st := latStat(t, r); st.Historical.Rows != rows {
		t.Fatalf("historical rows %d of %d", st.Historical.Rows, rows)
	}
	checkLatest(t, "compacted, fresh reader", r, g.m, rng)
	checkLatest(t, "compacted, fresh reader again (cached blocks)", r, g.m, rng)
	checkLatest(t, "compacted, reader that mapped the raw segments", old, g.m, rng)

	// Reopened: the last segments raw again, with more rows live. (A
	// fresh reader: one that has the last segment open compressed does
	// not follow it back to raw, and Get fails on the rows appended to
	// it since; that is Get's, not Latest's.)
	if w, err = writer.Open(db, latTable, o); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g.write(t, w, 3*rps+10)
	checkLatest(t, "reopened, appended, fresh reader", openLat(t, db), g.m, rng)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, db, latTable, uint64(len(g.m.ts)))
}

// TestLatestBlocks: compacted segments where each symbol's rows take
// several data blocks; asked at the times of the blocks' last rows (where
// the answer is a block's last row, kept for the next query), going
// forwards and back.
func TestLatestBlocks(t *testing.T) {
	seed := testutil.Seed(t, *xprocSeedFlag)
	rng := rand.New(rand.NewPCG(seed, 9))
	const rps = 32768
	db, live := testutil.DB(t)
	o := latOptions(live, -1)
	o.SegmentSize = rps * 32
	w, err := writer.Open(db, latTable, o)
	if err != nil {
		t.Fatal(err)
	}
	g := newLatGen(seed, rps)
	g.names = g.names[:3]
	g.write(t, w, 3*rps+5000)
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	m := g.m
	// The last row of every 4,096 of a symbol's rows in a segment (a
	// clustered segment's data blocks), and a few around them.
	var ats []int64
	count := map[[2]uint64]int{}
	for i, id := range m.sym {
		k := [2]uint64{uint64(i) / rps, uint64(id)}
		if count[k]++; count[k]%4096 == 0 {
			ats = append(ats, m.ts[i], m.ts[i]-1, m.ts[i]+1)
		}
	}
	if len(ats) < 12 {
		t.Fatalf("only %d block ends", len(ats)/3)
	}
	ats = append(ats, m.ts[len(m.ts)-1], math.MaxInt64)
	rng.Shuffle(len(ats), func(i, j int) { ats[i], ats[j] = ats[j], ats[i] })
	back := slices.Clone(ats)
	slices.Reverse(back)
	ats = append(ats, back...)
	r := openLat(t, db)
	checkLatestAt(t, "latest", r, m, ats)
}

// TestLatestLongPostings: symbols with more rows than one postings
// directory chunk names (511 data chunks, 261,632 rows), raw and then
// compacted (their early chunks punched).
func TestLatestLongPostings(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 600k rows")
	}
	seed := testutil.Seed(t, *xprocSeedFlag)
	rng := rand.New(rand.NewPCG(seed, 10))
	const rps = 32768
	db, live := testutil.DB(t)
	o := latOptions(live, -1)
	o.SegmentSize = rps * 32
	w, err := writer.Open(db, latTable, o)
	if err != nil {
		t.Fatal(err)
	}
	g := newLatGen(seed, 1<<20) // one long phase: two symbols, all along
	g.names = g.names[:2]
	g.active = append(g.active, g.names...)
	g.left = 1 << 30
	g.write(t, w, 600_000)
	count := make([]int, g.m.nsym)
	for _, id := range g.m.sym {
		count[id]++
	}
	if slices.Max(count) <= 511*512 {
		t.Fatalf("rows per symbol %v: want more than a postings directory names", count)
	}
	checkLatest(t, "raw, writer open", openLat(t, db), g.m, rng)
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	checkLatest(t, "compacted", openLat(t, db), g.m, rng)
}

// TestLatestV1: compressed segments of format version 1 (seq order, no
// directory: read through the postings and Get) mixed with clustered
// ones above and below the postings floor, and raw ones.
func TestLatestV1(t *testing.T) {
	seed := testutil.Seed(t, *xprocSeedFlag)
	rng := rand.New(rand.NewPCG(seed, 12))
	const rps = 2048
	db, live := testutil.DB(t)
	o := latOptions(live, -1)
	// Raw segments: the test compacts them itself, their postings kept
	// (a version 1 segment is read through them).
	o.CompactAge = -1
	w, err := writer.Open(db, "t", o) // toV1's table
	if err != nil {
		t.Fatal(err)
	}
	g := newLatGen(seed, rps)
	g.write(t, w, 10*rps+700)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A writer that compacts and closes at once leaves the postings
	// floor where it was (the checkpointer raises it a pass after the
	// compaction mark moves): every compacted segment keeps its
	// postings, so some can be made version 1.
	if w, err = writer.Open(db, "t", o); err != nil {
		t.Fatal(err)
	}
	res, err := w.Compact(0)
	if err != nil || res.Segments < 4 {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := reader.Verify(db, "t", nil); err != nil || rep.Compacted != 0 {
		t.Fatalf("verify: %+v, %v; want no rows below the postings floor yet", rep, err)
	}
	for n := uint64(1); n < uint64(res.Segments); n += 2 {
		toV1(t, db, n, rps)
	}
	open := func() *reader.Reader {
		r, err := reader.Open(db, "t", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	checkLatest(t, "compressed v1 and v2, raw", open(), g.m, rng)
	// Compacted whole: the floor rises to the first version 1 segment
	// (the writer compacts in the background meanwhile).
	if w, err = writer.Open(db, "t", latOptions(live, -1)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	if vs := zVersions(t, db, 11); vs[0] != 2 || vs[1] != 1 || vs[10] != 2 {
		t.Fatalf("segment versions %v", vs)
	}
	if rep, err := reader.Verify(db, "t", nil); err != nil || rep.Compacted != rps {
		t.Fatalf("verify: %+v, %v; want segment 0 below the postings floor", rep, err)
	}
	checkLatest(t, "compacted whole, v1 kept", open(), g.m, rng)
}

// TestLatestRunningCompaction: a writer that compacts as it goes
// (CompactAge) and so punches postings below a rising floor, with hot
// segments and a live one: a reader that follows it from the start (its
// raw mappings of since compacted segments, postings punched under it)
// and a fresh one agree with the model at every step. (Verify runs after
// the writer closes: it counts postings entries, and a chunk punched
// while it reads them would read as missing entries.)
func TestLatestRunningCompaction(t *testing.T) {
	seed := testutil.Seed(t, *xprocSeedFlag)
	rng := rand.New(rand.NewPCG(seed, 5))
	const rps = 2048
	db, live := testutil.DB(t)
	o := latOptions(live, 2)
	o.CompactAge = time.Nanosecond
	w, err := writer.Open(db, latTable, o)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g := newLatGen(seed, rps)
	early := openLat(t, db)
	for step := range 16 {
		g.write(t, w, rps+rng.IntN(rps))
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		checkLatest(t, fmt.Sprintf("step %d, early reader", step), early, g.m, rng)
	}
	r := openLat(t, db)
	st := latStat(t, r)
	if st.Historical.Segments == 0 || st.Live.Rows == 0 {
		t.Fatalf("want historical and live rows: %+v %+v", st.Historical, st.Live)
	}
	checkLatest(t, "fresh reader", r, g.m, rng)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkLatest(t, "closed", early, g.m, rng)
	if rep, err := reader.Verify(db, latTable, nil); err != nil || rep.Compacted == 0 {
		t.Fatalf("verify: %+v, %v; want rows below the postings floor", rep, err)
	}
	tablecheck.Verify(t, db, latTable, uint64(len(g.m.ts)))
}

// TestLatestWhileWriting: a reader asks for every symbol's latest row,
// now and at random times, while the writer appends (and rolls through
// two live slots that are recycled under the reader): each answer is a
// row as written, of its symbol, at or before the time, and none older
// than the symbol's last such row among the rows published before the
// query began; a symbol without an answer had no such row then.
func TestLatestWhileWriting(t *testing.T) {
	seed := testutil.Seed(t, *xprocSeedFlag)
	const rps = 2048
	db, live := testutil.DB(t)
	w, err := writer.Open(db, latTable, latOptions(live, -1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g := newLatGen(seed, rps)
	g.write(t, w, 100)
	rows := 40 * rps
	if testing.Short() {
		rows = 10 * rps
	}
	var mu sync.Mutex
	m := &latModel{}
	snapshot := func() { // the model as the writer left it so far
		mu.Lock()
		*m = latModel{rows: g.m.rows[:len(g.m.rows):len(g.m.rows)], ts: g.m.ts[:len(g.m.ts):len(g.m.ts)], sym: g.m.sym[:len(g.m.sym):len(g.m.sym)], nsym: g.m.nsym}
		mu.Unlock()
	}
	snapshot()
	done := make(chan error, 1)
	go func() {
		for {
			// g.append appends to g.m under mu: the reader reads g.m's
			// rows and copies of its slice headers under mu too.
			mu.Lock()
			n := len(g.m.ts)
			var err error
			if n < rows {
				err = g.append(w, 64)
			}
			mu.Unlock()
			if n >= rows || err != nil {
				done <- err
				return
			}
		}
	}()
	r := openLat(t, db)
	rng := rand.New(rand.NewPCG(seed, 13))
	dst := make([]byte, 32)
	var l reader.Latest
	queries := 0
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		before := r.Len()
		at := int64(math.MaxInt64)
		if mu.Lock(); len(g.m.ts) > 0 && rng.IntN(2) == 0 {
			at = g.m.ts[rng.IntN(len(g.m.ts))]
		}
		mu.Unlock()
		if err := r.Latest(at, &l); err != nil {
			t.Fatal(err)
		}
		var got [16]int64
		for id := range uint32(len(got)) {
			seq, ok, err := l.Sym(id, dst)
			if err != nil && !strings.Contains(err.Error(), "unknown symbol") {
				t.Fatal(err)
			}
			got[id] = -1
			if ok {
				got[id] = int64(seq)
			}
			if ok && !format.Valid(seq, dst) {
				t.Fatalf("row %d fails its check", seq)
			}
			if ok {
				mu.Lock()
				want := g.m.rows[seq]
				mu.Unlock()
				if !slices.Equal(dst[:28], want) {
					t.Fatalf("symbol %d at %d: row %d is not as written", id, at, seq)
				}
			}
		}
		after := r.Len()
		snapshot()
		for id, seq := range got {
			// The symbol's last row at or before at among rows < before.
			last := int64(-1)
			for i := int64(before) - 1; i >= 0; i-- {
				if m.sym[i] == uint32(id) && m.ts[i] <= at {
					last = i
					break
				}
			}
			switch {
			case seq >= 0 && (uint64(seq) >= after || m.sym[seq] != uint32(id) || m.ts[seq] > at):
				t.Fatalf("symbol %d at %d: row %d (published before %d..%d) is not its row at or before the time", id, at, seq, before, after)
			case seq < last:
				t.Fatalf("symbol %d at %d: row %d, but row %d was published before the query", id, at, seq, last)
			}
		}
		queries++
	}
	t.Logf("%d queries while %d rows were written", queries, rows)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkLatest(t, "after", r, g.m, rng)
}

// TestLatestRetention: rows deleted by retention are no answer, and a
// symbol whose rows were all deleted has none.
func TestLatestRetention(t *testing.T) {
	seed := testutil.Seed(t, *xprocSeedFlag)
	rng := rand.New(rand.NewPCG(seed, 6))
	const rps = 2048
	db, live := testutil.DB(t)
	w, err := writer.Open(db, latTable, latOptions(live, -1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g := newLatGen(seed, rps)
	g.write(t, w, 8*rps+5)
	r := openLat(t, db)
	checkLatest(t, "before retention", r, g.m, rng)
	if _, err := w.Retain(0, 5*format.SegFileSize(32, rps)); err != nil {
		t.Fatal(err)
	}
	first := w.FirstSeq()
	if first == 0 {
		t.Fatal("retention deleted nothing")
	}
	// The model without the deleted rows: they are nobody's answer.
	m := *g.m
	m.rows, m.ts, m.sym = slices.Clone(m.rows), slices.Clone(m.ts), slices.Clone(m.sym)
	ats := m.ats(rng)
	for i := range first {
		m.ts[i] = math.MaxInt64 // at no time (but MaxInt64, not asked below)
	}
	ats = slices.DeleteFunc(ats, func(at int64) bool { return at == math.MaxInt64 })
	checkLatestAt(t, "latest", r, &m, ats)
}

// TestLatestErrors: a table without a sym column, an unknown symbol id,
// a short buffer, a closed reader.
func TestLatestErrors(t *testing.T) {
	db, live := testutil.DB(t)
	w, err := writer.Open(db, latTable, latOptions(live, -1))
	if err != nil {
		t.Fatal(err)
	}
	g := newLatGen(1, 2048)
	g.write(t, w, 100)
	w.Close()
	r := openLat(t, db)
	dst := make([]byte, 32)
	if _, _, err := r.LastSym(99, math.MaxInt64, dst); err == nil || !strings.Contains(err.Error(), "unknown symbol") {
		t.Fatalf("unknown symbol: %v", err)
	}
	if _, _, err := r.LastSym(0, math.MaxInt64, dst[:8]); err == nil {
		t.Fatal("short buffer: no error")
	}
	var l reader.Latest
	if _, _, err := l.Sym(0, dst); err == nil {
		t.Fatal("unpositioned Latest: no error")
	}

	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "v", Type: store.TypeF64})
	w2, err := writer.Open(db, "nosym", &writer.Options{Schema: s, LiveDir: testutil.LiveDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	w2.Close()
	r2, err := reader.Open(db, "nosym", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if err := r2.Latest(0, &l); err == nil || !strings.Contains(err.Error(), "sym") {
		t.Fatalf("no sym column: %v", err)
	}
	r.Close()
	if err := r.Latest(0, &l); err == nil {
		t.Fatal("closed reader: no error")
	}
}

// TestLatestAllocs: after a warm-up, Latest, Sym and LastSym allocate
// nothing, with the answers in a live slot, in raw files and in a
// compacted table (a block's last row from the cache, and a time inside
// a block, which decodes it).
func TestLatestAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	const rps = 2048
	db, live := testutil.DB(t)
	o := latOptions(live, -1)
	w, err := writer.Open(db, latTable, o)
	if err != nil {
		t.Fatal(err)
	}
	g := newLatGen(7, rps)
	g.write(t, w, 5*rps+100)
	measure := func(name string, r *reader.Reader) {
		t.Helper()
		n := uint32(g.m.nsym)
		dst := make([]byte, 32)
		mid := g.m.ts[len(g.m.ts)/2]
		for _, at := range []int64{math.MaxInt64, mid} {
			var l reader.Latest
			f := func() {
				if err := r.Latest(at, &l); err != nil {
					t.Fatal(err)
				}
				for id := range n {
					if _, _, err := l.Sym(id, dst); err != nil {
						t.Fatal(err)
					}
				}
				if _, _, err := r.LastSym(1, at, dst); err != nil {
					t.Fatal(err)
				}
			}
			f() // warm-up: buffers, mappings
			if a := testing.AllocsPerRun(50, f); a != 0 {
				t.Errorf("%s at %d: %v allocations per run", name, at, a)
			}
		}
	}
	measure("writer open", openLat(t, db))
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	measure("raw mapped, then compacted", openLat(t, db))
}

// TestLatestXproc: a reader in another process, while the writer runs
// with hot segments, compacts as it goes and has a live segment, gives
// the model's answers.
func TestLatestXproc(t *testing.T) {
	seed := testutil.Seed(t, *xprocSeedFlag)
	rng := rand.New(rand.NewPCG(seed, 8))
	const rps = 2048
	db, live := testutil.DB(t)
	o := latOptions(live, 3)
	o.CompactAge = time.Nanosecond
	w, err := writer.Open(db, latTable, o)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g := newLatGen(seed, rps)
	g.write(t, w, 12*rps+333)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	ats := g.m.ats(rng)
	var as []string
	for _, at := range ats {
		as = append(as, strconv.FormatInt(at, 10))
	}
	c := testutil.StartChild(t, "TestChildLatest", "latest-reader", &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + db,
		"TICKDB_ATS=" + strings.Join(as, ","),
		"TICKDB_NSYM=" + strconv.Itoa(g.m.nsym),
	}})
	want := g.m.answers(ats)
	for i := range ats {
		f := c.Expect(t, "ans", time.Minute, nil)
		if got := strings.Join(f[1:], " ") + " "; f[0] != as[i] || got != want[i] {
			t.Fatalf("child at %s (want at %d):\n got %s\nwant %s", f[0], ats[i], got, want[i])
		}
	}
	c.Expect(t, "done", time.Minute, nil)
	if err := c.Wait(time.Minute); err != nil {
		t.Fatalf("child: %v\n%s", err, c.Log())
	}
	st := latStat(t, openLat(t, db))
	t.Logf("tiers: live %+v hot %+v raw %+v historical %+v", st.Live, st.Hot, st.Raw, st.Historical)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, db, latTable, uint64(len(g.m.ts)))
}

// TestChildLatest is TestLatestXproc's reader process: it reports
// "ans <at> <answers>" for each time, then "done".
func TestChildLatest(t *testing.T) {
	testutil.ChildRole(t, "latest-reader")
	db := testutil.EnvString(t, "TICKDB_DB")
	nsym := int(testutil.EnvUint(t, "TICKDB_NSYM"))
	var ats []int64
	for _, s := range strings.Split(testutil.EnvString(t, "TICKDB_ATS"), ",") {
		at, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			testutil.ChildFatalf(t, "at %q: %v", s, err)
		}
		ats = append(ats, at)
	}
	r, err := reader.Open(db, latTable, nil)
	if err != nil {
		testutil.ChildFatalf(t, "open: %v", err)
	}
	defer r.Close()
	got, err := readerAnswers(r, ats, nsym)
	if err != nil {
		testutil.ChildFatalf(t, "%v", err)
	}
	for i, at := range ats {
		testutil.Report("ans %d %s", at, got[i])
	}
	testutil.Report("done")
}
