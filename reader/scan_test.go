package reader_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Differential tests of the column scan (Reader.Scan): over random tables
// raw, compacted (both format versions), mixed, with late rows, with
// columns added, in live slots, and over windows that cut blocks, every
// scan must hand out the rows Range does: the same set, and in OrderSeq
// the same order (arrival order where the range has late rows).

// scanRow is one row as a scan sees it: its seq and its columns' values
// as words (an f64's bits, a bool 0 or 1).
type scanRow struct {
	seq  uint64
	vals []uint64
}

// word is column c (type t) of row as a word.
func word(row store.Row, c store.Col, t store.ColType) uint64 {
	switch t {
	case store.TypeF64:
		return math.Float64bits(row.F64(c))
	case store.TypeSym:
		return uint64(row.Sym(c))
	case store.TypeBool:
		if row.Bool(c) {
			return 1
		}
		return 0
	default:
		return uint64(row.I64(c))
	}
}

// rangeRows is what Range returns for [from, to), in its order.
func rangeRows(t *testing.T, r *reader.Reader, from, to int64, cols []int) []scanRow {
	t.Helper()
	s := r.Schema()
	var it reader.Iter
	if err := r.Range(from, to, &it); err != nil {
		t.Fatal(err)
	}
	var out []scanRow
	for it.Next() {
		row := it.Row()
		v := make([]uint64, len(cols))
		for i, c := range cols {
			v[i] = word(row, s.ColAt(c), s.Cols[c].Type)
		}
		out = append(out, scanRow{seq: it.Seq(), vals: v})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("Range(%d, %d): %v", from, to, err)
	}
	return out
}

// scanRows runs a scan and returns its rows in its order (seq 0 when
// not asked for), checking each block's shape.
func scanRows(t *testing.T, r *reader.Reader, sc *reader.Scan, spec reader.ScanSpec) (rows []scanRow, late bool) {
	t.Helper()
	if err := r.Scan(spec, sc); err != nil {
		t.Fatalf("Scan(%+v): %v", spec, err)
	}
	s := r.Schema()
	for sc.Next() {
		b := sc.Block()
		n := b.Len()
		if n < 1 || n > reader.BlockRows {
			t.Fatalf("block of %d rows", n)
		}
		seqs := b.Seqs()
		if spec.Seqs != (seqs != nil) || (seqs != nil && len(seqs) != n) {
			t.Fatalf("block of %d rows has %d seqs (asked: %v)", n, len(seqs), spec.Seqs)
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Fatalf("block's seqs go from %d to %d", seqs[i-1], seqs[i])
			}
		}
		for i := range n {
			v := make([]uint64, len(spec.Cols))
			for j, c := range spec.Cols {
				switch s.Cols[c].Type {
				case store.TypeF64:
					v[j] = math.Float64bits(b.F64(j)[i])
				case store.TypeSym:
					v[j] = uint64(b.Sym(j)[i])
				case store.TypeBool:
					if b.Bool(j)[i] {
						v[j] = 1
					}
				default:
					v[j] = uint64(b.I64(j)[i])
				}
			}
			row := scanRow{vals: v}
			if seqs != nil {
				row.seq = seqs[i]
			}
			rows = append(rows, row)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("Scan(%+v): %v", spec, err)
	}
	return rows, sc.Late()
}

func cmpRows(a, b scanRow) int {
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	return slices.Compare(a.vals, b.vals)
}

// scanCheck compares every kind of scan of table name with Range over
// windows: the whole table, random ones (often on repeated timestamps,
// cutting blocks), empty and reversed ones.
func scanCheck(t *testing.T, r *reader.Reader, rng *rand.Rand, ts []int64) {
	t.Helper()
	s := r.Schema()
	lo, hi := slices.Min(ts), slices.Max(ts)
	windows := [][2]int64{{math.MinInt64, reader.ToEnd}, {lo, hi}, {lo, hi + 1}, {hi, lo}, {hi + 1, reader.ToEnd}, {lo - 10, lo}}
	for range 3 {
		a, b := ts[rng.IntN(len(ts))], ts[rng.IntN(len(ts))]
		windows = append(windows, [2]int64{min(a, b), max(a, b)}, [2]int64{a, a + 1 + rng.Int64N(5000)}, [2]int64{min(a, b), reader.ToEnd})
	}
	all := make([]int, len(s.Cols))
	for i := range all {
		all[i] = i
	}
	var sc reader.Scan
	defer sc.Close()
	for wi, w := range windows {
		every := rangeRows(t, r, w[0], w[1], all) // Range's rows, every column
		kinds := 4
		if s.SymCol >= 0 {
			kinds = 7 // and one symbol's rows: one of the window's, any id, any id
			var sc reader.Scan
			id := uint32(r.Symbols() + 3)
			if err := r.Scan(reader.ScanSpec{From: w[0], To: w[1], OneSym: true, Sym: id}, &sc); !errors.Is(err, reader.ErrUnknownSymbol) {
				t.Fatalf("a scan of symbol %d, which the table has not seen: %v", id, err)
			}
		}
		for k := range kinds {
			spec := reader.ScanSpec{From: w[0], To: w[1], Seqs: rng.IntN(3) > 0, Workers: 1 + rng.IntN(3)}
			switch k {
			case 0:
				spec.Cols = all
			case 1:
				spec.Cols = []int{rng.IntN(len(s.Cols))}
			case 2, 5:
				spec.Cols = []int{len(s.Cols) - 1, 0}
			case 4:
				spec.Cols = all
			case 6:
				spec.Cols = []int{rng.IntN(len(s.Cols))}
			}
			if k >= 4 {
				spec.OneSym = true
				switch {
				case k == 4 && len(every) > 0:
					spec.Sym = uint32(every[rng.IntN(len(every))].vals[s.SymCol])
				default:
					spec.Sym = uint32(rng.IntN(max(r.Symbols(), 1)))
				}
			} else if rng.IntN(2) == 0 {
				spec.Order = reader.OrderAny
			}
			want := make([]scanRow, 0, len(every))
			for _, row := range every {
				if spec.OneSym && uint32(row.vals[s.SymCol]) != spec.Sym {
					continue
				}
				v := make([]uint64, len(spec.Cols))
				for j, c := range spec.Cols {
					v[j] = row.vals[c]
				}
				want = append(want, scanRow{seq: row.seq, vals: v})
			}
			got, late := scanRows(t, r, &sc, spec)
			name := fmt.Sprintf("window %d [%d, %d) %+v", wi, w[0], w[1], spec)
			if len(got) != len(want) {
				t.Fatalf("%s: %d rows, Range has %d", name, len(got), len(want))
			}
			if !spec.Seqs {
				for i := range want {
					want[i].seq = 0
				}
			}
			if spec.Order == reader.OrderAny || late || !spec.Seqs && spec.Order != reader.OrderSeq {
				slices.SortFunc(want, cmpRows)
				slices.SortFunc(got, cmpRows)
			}
			for i := range want {
				if cmpRows(got[i], want[i]) != 0 {
					t.Fatalf("%s: row %d is %+v, Range's %+v", name, i, got[i], want[i])
				}
			}
		}
	}
}

// TestScanMatchesRange: random tables read raw, partly compacted (some
// segments rewritten in format version 1) and wholly compacted.
func TestScanMatchesRange(t *testing.T) {
	seed := testutil.Seed(t, 0)
	for i, rps := range []int{64, 256, 1 << 12} {
		t.Run(fmt.Sprintf("rps=%d/%d", rps, i), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			db, live := testutil.DB(t)
			m := clTable(t, db, live, rng, rps, rawLayout)
			check := func(what string) {
				r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				t.Logf("%s: %v", what, zVersions(t, db, (len(m.ts)+rps-1)/rps))
				scanCheck(t, r, rng, m.ts)
			}
			check("raw")
			w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
			if err != nil {
				t.Fatal(err)
			}
			res, err := w.Compact(0)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			for n := range res.Segments {
				if rng.IntN(3) == 0 {
					toV1(t, db, uint64(n), rps)
				}
			}
			check("partly compacted")
			w, err = writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.CloseCompacted(0); err != nil {
				t.Fatal(err)
			}
			check("wholly compacted")
		})
	}
}

// TestScanLateRows: tables with late rows, raw and compacted.
func TestScanLateRows(t *testing.T) {
	seed := testutil.Seed(t, 0)
	for i, c := range []struct {
		rps   int
		share float64
	}{{64, 0.05}, {256, 0.3}, {4096, 0.02}} {
		t.Run(fmt.Sprintf("rps=%d/late=%v", c.rps, c.share), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			db, live := testutil.DB(t)
			m := lateTable(t, db, live, rng, c.rps, c.share, -1)
			check := func() {
				r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				scanCheck(t, r, rng, m.ts)
			}
			check()
			w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, LateWindow: lateWin, CompactAge: -1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.CloseCompacted(0); err != nil {
				t.Fatal(err)
			}
			check()
		})
	}
}

// TestScanGrownColumns: a table whose columns grew, read while its
// writer runs (live slots, durable files of several layouts), after it
// closed, and compacted.
func TestScanGrownColumns(t *testing.T) {
	plan := growPlan()
	db, live := testutil.DB(t)
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t, 0)), 7))
	w := growWriter(t, db, live, plan, 2600)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	var ts []int64
	for q := range uint64(2600) {
		ts = append(ts, growWant(plan, "ts", q).(int64))
	}
	check := func() {
		r, err := reader.Open(db, "grow", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if len(r.Schema().Cols) != 8 {
			r.Get(2599) // learns the newest layout
		}
		scanCheck(t, r, rng, ts)
	}
	check()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check()
	w, err := writer.Open(db, "grow", &writer.Options{LiveDir: live, LiveSlots: 2, HotBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	check()
}

// TestScanLive: rows in live slots and durable files of a running writer.
func TestScanLive(t *testing.T) {
	tb := newRtTable(t, store.TickSchema(), func(o *writer.Options) { o.TimeStride = 8 })
	w := tb.writer(t)
	m := &rtModel{s: store.TickSchema()}
	rtFill(t, w, m, 12*128+50, 4, 21)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	r := tb.reader(t)
	rng := rand.New(rand.NewPCG(uint64(testutil.Seed(t, 0)), 3))
	scanCheck(t, r, rng, m.ts)
}

// TestScanClosed: a scan of a closed reader fails; closing the reader
// stops a scan under way.
func TestScanClosed(t *testing.T) {
	db, live := testutil.DB(t)
	rng := rand.New(rand.NewPCG(1, 2))
	clTable(t, db, live, rng, 256, rawLayout)
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	var sc reader.Scan
	if err := r.Scan(reader.ScanSpec{Cols: []int{0}, From: math.MinInt64, To: reader.ToEnd, Workers: 2}, &sc); err != nil {
		t.Fatal(err)
	}
	if !sc.Next() {
		t.Fatalf("no block: %v", sc.Err())
	}
	r.Close()
	if sc.Next() {
		t.Fatal("a block after the reader's Close")
	}
	if err := r.Scan(reader.ScanSpec{To: reader.ToEnd}, &sc); !errors.Is(err, reader.ErrClosed) {
		t.Fatalf("scan of a closed reader: %v", err)
	}
}

// TestScanAllocs: once warm, a scan allocates nothing, with decoding
// goroutines or without: a scan's goroutines stay, parked, for the
// Reader's next scan.
func TestScanAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	db, live := testutil.DB(t)
	rng := rand.New(rand.NewPCG(1, 1))
	m := clTable(t, db, live, rng, 1<<13, rawLayout)
	r := compactButLast(t, db, live)
	var sc reader.Scan
	half := m.ts[len(m.ts)/2]
	for _, order := range []reader.ScanOrder{reader.OrderSeq, reader.OrderAny} {
		for _, workers := range []int{1, 2} {
			scan := func(to int64) func() {
				return func() {
					spec := reader.ScanSpec{Cols: []int{0, 1, 2, 3}, From: math.MinInt64, To: to, Order: order, Seqs: true, Workers: workers}
					if err := r.Scan(spec, &sc); err != nil {
						t.Fatal(err)
					}
					for sc.Next() {
					}
					if err := sc.Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
			all, part := scan(reader.ToEnd), scan(half)
			all()
			part()
			a, p := testing.AllocsPerRun(10, all), testing.AllocsPerRun(10, part)
			if a != 0 || p != 0 {
				t.Errorf("order %d, %d workers: %v allocations a scan of %d rows, %v of half of them", order, workers, a, len(m.ts), p)
			}
		}
	}
	// One symbol's rows: its blocks of the compressed segments, its
	// postings in the raw last one.
	if r.Schema().SymCol < 0 {
		t.Fatal("the table has no sym column")
	}
	for _, workers := range []int{1, 2} {
		scan := func(to int64) func() {
			return func() {
				spec := reader.ScanSpec{Cols: []int{0, 2}, From: math.MinInt64, To: to, OneSym: true, Sym: 1, Workers: workers}
				if err := r.Scan(spec, &sc); err != nil {
					t.Fatal(err)
				}
				n := 0
				for sc.Next() {
					n += sc.Block().Len()
				}
				if err := sc.Err(); err != nil || n == 0 {
					t.Fatalf("one symbol's scan: %d rows, %v", n, err)
				}
			}
		}
		all, part := scan(reader.ToEnd), scan(half)
		all()
		part()
		a, p := testing.AllocsPerRun(10, all), testing.AllocsPerRun(10, part)
		if a != 0 || p != 0 {
			t.Errorf("one symbol, %d workers: %v allocations a scan of every row, %v of half of them", workers, a, p)
		}
	}
}

// TestScanWorkersParked: a scan's decoding goroutines outlive it,
// parked for the Reader's next scan (which starts none), and the
// Reader's Close stops them, its scans' and the ones lent to it.
func TestScanWorkersParked(t *testing.T) {
	db, live := testutil.DB(t)
	rng := rand.New(rand.NewPCG(5, 6))
	clTable(t, db, live, rng, 1<<13, rawLayout)
	r := compactButLast(t, db, live)
	scan := func(sc *reader.Scan) {
		if err := r.Scan(reader.ScanSpec{Cols: []int{0, 2}, From: math.MinInt64, To: reader.ToEnd, Workers: 2}, sc); err != nil {
			t.Fatal(err)
		}
		for sc.Next() {
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	var a, b reader.Scan
	scan(&a)
	if n := workerGoroutines(); n != 2 {
		t.Fatalf("after a scan with 2 workers: %d more goroutines, want 2 (parked)", n)
	}
	for range 3 {
		scan(&a)
	}
	a.Close() // its goroutines lent to the Reader
	scan(&b)  // which the next scan takes
	if n := workerGoroutines(); n != 2 {
		t.Fatalf("after scans one after another: %d more goroutines, want 2", n)
	}
	// b part way (it holds its goroutines) while a scans: two sets.
	if err := r.Scan(reader.ScanSpec{Cols: []int{0, 2}, From: math.MinInt64, To: reader.ToEnd, Workers: 2}, &b); err != nil || !b.Next() {
		t.Fatalf("a block: %v", err)
	}
	scan(&a)
	if n := workerGoroutines(); n != 4 {
		t.Fatalf("two scans: %d more goroutines, want 4", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// Close returns once every worker has returned from its loop (the
	// WaitGroup); a goroutine can still show in a stack dump for a moment
	// after its deferred Done, so wait, bounded, for it to be gone.
	n := workerGoroutines()
	for deadline := time.Now().Add(10 * time.Second); n != 0 && time.Now().Before(deadline); n = workerGoroutines() {
		time.Sleep(time.Millisecond)
	}
	if n != 0 {
		t.Fatalf("after the Reader's Close: %d goroutines left after 10 s", n)
	}
}

// workerGoroutines counts the goroutines running a scan's decoding loop.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "reader.runWorker(")
}

// TestScanCorrupt: a raw row that fails its check word and a compressed
// block that fails its CRC32C end every kind of scan with a
// *store.CorruptError naming the file and the offset, never with rows.
func TestScanCorrupt(t *testing.T) {
	for _, compacted := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted=%v", compacted), func(t *testing.T) {
			db, live := testutil.DB(t)
			rng := rand.New(rand.NewPCG(3, 4))
			clTable(t, db, live, rng, 1<<12, rawLayout)
			dir := filepath.Join(db, "t")
			path, off := format.SegPath(dir, 1), int64(format.BlockSize+100*32+8)
			if compacted {
				w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.CloseCompacted(0); err != nil {
					t.Fatal(err)
				}
				path, off = format.ZSegPath(dir, 1), format.BlockSize+100
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[off] ^= 0x40
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var sc reader.Scan
			for _, order := range []reader.ScanOrder{reader.OrderSeq, reader.OrderAny} {
				for _, workers := range []int{1, 2} {
					spec := reader.ScanSpec{Cols: []int{0, 1, 2, 3}, From: math.MinInt64, To: reader.ToEnd, Order: order, Workers: workers}
					if err := r.Scan(spec, &sc); err != nil {
						t.Fatal(err)
					}
					for sc.Next() {
					}
					var ce *store.CorruptError
					if err := sc.Err(); !errors.As(err, &ce) || ce.Path != path {
						t.Fatalf("order %d, %d workers: %v, want corruption in %s", order, workers, err, path)
					}
				}
			}
		})
	}
}

// TestScanManySymbols: a clustered segment of more symbols than the
// merge takes on is read row by row, in seq order, the same rows.
func TestScanManySymbols(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.TickSchema()
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, SegmentSize: 1 << 13 * 32, LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	symc, _ := s.Col("sym")
	size, _ := s.Col("size")
	row := w.NewRow()
	var ts []int64
	for i := range 9000 {
		id, err := w.SymbolString(fmt.Sprintf("S%d", i%5000))
		if err != nil {
			t.Fatal(err)
		}
		row.SetTs(int64(1e18) + int64(i/3))
		row.SetSym(symc, id)
		row.SetI64(size, int64(i))
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, int64(1e18)+int64(i/3))
	}
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	if v := zVersions(t, db, 3); v[0] != 2 {
		t.Fatalf("segment versions %v", v)
	}
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	scanCheck(t, r, rand.New(rand.NewPCG(8, 8)), ts)
}

// rawLayout keeps a test table's segments raw until the test compacts
// them itself: the scans are checked on raw, partly and wholly compacted
// tables in turn.
func rawLayout(o *writer.Options) { o.CompactAge = -1 }

// TestPartialCompactedMeanwhile: a segment a reader found unsealed (a
// partial view of its durable file) can be sealed, made durable and
// compressed before the reader opens the file, its raw file removed: the
// reader then reads the compressed file, not "no such file".
func TestPartialCompactedMeanwhile(t *testing.T) {
	db, live := testutil.DB(t)
	rng := rand.New(rand.NewPCG(1, 9))
	clTable(t, db, live, rng, 256, rawLayout)
	r := compactButLast(t, db, live)
	if _, err := os.Stat(format.SegPath(filepath.Join(db, "t"), 0)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 0's raw file after compaction: %v", err)
	}
	z, err := r.MapPartialForTest(0)
	if err != nil || !z {
		t.Fatalf("segment 0 as a partial view after it was compacted: compressed %v, %v", z, err)
	}
}

// compactButLast compresses every segment of table t but the last (a
// writer's Compact) and returns a reader of it, closed at the test's end.
func compactButLast(t *testing.T, db, live string) *reader.Reader {
	t.Helper()
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Compact(0); err != nil || res.Segments == 0 {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
