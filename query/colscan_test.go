package query_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/csegtest"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Bars over every symbol and the as-of join read column scans
// (reader.Scan), decoding on goroutines of their own for tables this
// size: over raw segments, partly compacted ones (some rewritten in
// format version 1) and wholly compacted ones, they must give what the
// brute force gives, and the same bytes each time.

// scanTable creates table name with schema s in db, with segments of
// segRows rows (a power of two), so that compaction makes real blocks;
// its segments stay raw until compactAll compacts them.
func scanTable(t testing.TB, db, live, name string, s *store.Schema, segRows int) *qtTable {
	t.Helper()
	tb := &qtTable{db: db, live: live, name: name, s: s, row: s.NewRow(), segRows: segRows}
	w, err := writer.Open(db, name, &writer.Options{Schema: s, LiveDir: filepath.Join(live, name), SegmentSize: int64(segRows * s.RowSize), CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	tb.w = w
	t.Cleanup(func() { w.Close() })
	return tb
}

// compactAll compacts table name: step 0 all but its newest segments
// (some then rewritten in format version 1), step 1 every one.
func compactAll(t *testing.T, tb *qtTable, step int, rng *rand.Rand) {
	t.Helper()
	w, err := writer.Open(tb.db, tb.name, &writer.Options{LiveDir: filepath.Join(tb.live, tb.name), CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if step == 1 {
		if res, err := w.CloseCompacted(0); err != nil || res.Segments == 0 {
			t.Fatalf("close compacted: %+v, %v", res, err)
		}
		return
	}
	res, err := w.Compact(0)
	if err != nil || res.Segments == 0 {
		t.Fatalf("compact: %+v, %v", res, err)
	}
	rps := uint64(tb.segRows)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for n := range res.Segments {
		if rng.IntN(3) == 0 {
			csegtest.RewriteV1(t, filepath.Join(tb.db, tb.name), tb.s, uint64(n), rps)
		}
	}
}

func TestBarsColumnScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(testutil.Seed(t, 0), 31))
	syms := []string{"AAPL", "MSFT", "GOOG", "BRK A", "X", "Y", "Z"}
	rows := randTicks(rng, 40000, syms)
	db, live := testutil.DB(t)
	tb := scanTable(t, db, live, "ticks", barsSchema(), 2048)
	addRows(t, tb, rows)
	tb.close(t)
	var queries []query.BarsQuery
	for _, iv := range []time.Duration{7, time.Microsecond, time.Millisecond, time.Second, time.Minute} {
		for _, fv := range [][2]string{{"", ""}, {"qty", "qty"}, {"lvl", "lvl"}} {
			q := query.BarsQuery{Table: "ticks", Interval: iv, Field: fv[0], Volume: fv[1]}
			switch rng.IntN(4) {
			case 1:
				q.From, q.HasFrom = rows[rng.IntN(len(rows))].ts, true
			case 2:
				q.To, q.HasTo = rows[len(rows)/2+rng.IntN(len(rows)/2)].ts, true
			case 3:
				q.From, q.HasFrom = rows[rng.IntN(len(rows)/4)].ts, true
				q.To, q.HasTo = rows[len(rows)/2+rng.IntN(len(rows)/2)].ts+int64(rng.IntN(3)), true
			}
			if rng.IntN(3) == 0 {
				q.SeqEnd, q.HasSeqEnd = uint64(len(rows)/2+rng.IntN(len(rows)/2)), true
			}
			queries = append(queries, q)
		}
	}
	var first [][]bruteBar
	for step := range 3 {
		if step > 0 {
			compactAll(t, tb, step-1, rng)
		}
		r := tb.reader(t)
		for i, q := range queries {
			got := gotBars(t, r, q)
			if step == 0 {
				in := rows
				if q.HasSeqEnd {
					in = rows[:q.SeqEnd]
				}
				want := bruteBars(in, q)
				if !slices.Equal(got, want) {
					t.Fatalf("%+v: %d bars, brute force %d (first differing: %v)", q, len(got), len(want), firstDiff(got, want))
				}
				first = append(first, got)
			} else if !slices.Equal(got, first[i]) {
				t.Fatalf("step %d, %+v: %d bars, raw %d (first differing: %v)", step, q, len(got), len(first[i]), firstDiff(got, first[i]))
			}
		}
	}
}

func firstDiff[T comparable](a, b []T) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("%d: %v vs %v", i, a[i], b[i])
		}
	}
	return "a prefix"
}

// fastMatch is bruteMatch by one merge over both tables (both are in ts
// order): for every trade, the last quote of its symbol at or before it.
func fastMatch(j joinRows, tol int64) []int {
	last := map[string]int{}
	match := make([]int, len(j.trades))
	k := 0
	for i, tr := range j.trades {
		for ; k < len(j.quotes) && j.quotes[k].ts <= tr.ts; k++ {
			last[j.quotes[k].sym] = k
		}
		match[i] = -1
		if q, ok := last[tr.sym]; ok && (tol < 0 || tr.ts-j.quotes[q].ts <= tol) {
			match[i] = q
		}
	}
	return match
}

func TestAsOfColumnScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(testutil.Seed(t, 0), 37))
	j := genJoin(rng, 20000, 30000)
	if small := genJoin(rand.New(rand.NewPCG(1, 1)), 300, 700); !slices.Equal(fastMatch(small, 3), bruteMatch(small, 3)) {
		t.Fatal("the merge and the nested loop disagree")
	}
	db, live := testutil.DB(t)
	tr := scanTable(t, db, live, "trades", tradesSchema(), 1024)
	qt := scanTable(t, db, live, "quotes", quotesSchema(), 1024)
	for _, s := range []string{"F", "E", "D", "C", "B"} {
		if _, err := qt.w.SymbolString(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range j.trades {
		tr.add(t, r.ts, r.sym, r.price, r.size)
	}
	for _, q := range j.quotes {
		qt.add(t, q.ts, q.bid, q.sym, q.ex, q.px, q.size, q.firm)
	}
	tr.close(t)
	qt.close(t)
	type tc struct {
		q     query.AsOfQuery
		match []int
	}
	var cases []tc
	for _, tol := range []int64{-1, 0, 3, 100} {
		match := fastMatch(j, tol)
		for k := range 4 {
			q := query.AsOfQuery{Left: "trades", Right: "quotes"}
			if tol >= 0 {
				q.Tolerance, q.HasTolerance = time.Duration(tol), true
			}
			switch k {
			case 1:
				q.From, q.HasFrom = j.trades[rng.IntN(len(j.trades)/2)].ts, true
			case 2:
				q.To, q.HasTo = j.trades[len(j.trades)/2+rng.IntN(len(j.trades)/2)].ts, true
			case 3:
				q.From, q.HasFrom = j.trades[rng.IntN(len(j.trades)/2)].ts+int64(rng.IntN(3)), true
				q.To, q.HasTo = j.quotes[len(j.quotes)/2+rng.IntN(len(j.quotes)/2)].ts, true
			}
			cases = append(cases, tc{q, match})
		}
	}
	var outs []string
	for step := range 4 {
		switch step {
		case 1:
			compactAll(t, qt, 0, rng) // the right partly
		case 2:
			compactAll(t, qt, 1, rng) // the right wholly
			compactAll(t, tr, 0, rng) // the left partly
		case 3:
			compactAll(t, tr, 1, rng)
		}
		l, r := tr.reader(t), qt.reader(t)
		for i, c := range cases {
			wt, wq := bruteAsOf(j, c.match, c.q)
			gt, gq := gotAsOf(t, l, r, c.q)
			if !slices.Equal(gt, wt) || !slices.Equal(gq, wq) {
				t.Fatalf("step %d, %+v: %d rows; want %d (first differing trade: %s, quote: %s)", step, c.q, len(gt), len(wt), firstDiff(gt, wt), firstDiff(gq, wq))
			}
			var buf bytes.Buffer
			enc, err := query.NewAsOfEncoder(&buf, query.FormatCSV, query.TsNs, l, r, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := query.RunAsOf(context.Background(), l, r, c.q, enc); err != nil {
				t.Fatal(err)
			}
			if err := enc.Close(); err != nil {
				t.Fatal(err)
			}
			if step == 0 {
				outs = append(outs, buf.String())
			} else if buf.String() != outs[i] {
				t.Fatalf("step %d, %+v: the joined rows differ from the raw tables'", step, c.q)
			}
		}
	}
}

// TestColumnScanAllocs: Bars and AsOf over compacted tables allocate
// nothing per row: a run over four times the rows allocates as much.
func TestColumnScanAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	j := genJoin(rng, 40000, 40000)
	db, live := testutil.DB(t)
	tr := scanTable(t, db, live, "trades", tradesSchema(), 4096)
	qt := scanTable(t, db, live, "quotes", quotesSchema(), 4096)
	for _, r := range j.trades {
		tr.add(t, r.ts, r.sym, r.price, r.size)
	}
	for _, q := range j.quotes {
		qt.add(t, q.ts, q.bid, q.sym, q.ex, q.px, q.size, q.firm)
	}
	tr.close(t)
	qt.close(t)
	compactAll(t, tr, 1, rng)
	compactAll(t, qt, 1, rng)
	l, r := tr.reader(t), qt.reader(t)
	quarter := j.trades[len(j.trades)/4].ts
	nop := func(*query.Bar) error { return nil }
	bars := func(q query.BarsQuery) float64 {
		return leastAllocs(10, func() {
			if _, err := query.Bars(context.Background(), l, q, nop); err != nil {
				t.Fatal(err)
			}
		})
	}
	if small, big := bars(query.BarsQuery{Interval: time.Microsecond, HasTo: true, To: quarter}), bars(query.BarsQuery{Interval: time.Microsecond}); big > small {
		t.Errorf("bars: %v allocations a run over every row, %v over a quarter", big, small)
	} else {
		t.Logf("bars: %v allocations a run", big)
	}
	join := func(q query.AsOfQuery) float64 {
		return leastAllocs(10, func() {
			if _, err := query.AsOf(context.Background(), l, r, q, func(_, _ store.Row) error { return nil }); err != nil {
				t.Fatal(err)
			}
		})
	}
	if small, big := join(query.AsOfQuery{HasTo: true, To: quarter}), join(query.AsOfQuery{}); big > small {
		t.Errorf("as-of: %v allocations a run over every row, %v over a quarter", big, small)
	}
}
