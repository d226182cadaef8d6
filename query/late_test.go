package query_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// Twin tables: the same rows written once in ts order and once in an
// arrival order with late rows (stored under a late window). Every
// time-ordered query must answer the two the same, byte for byte.

// lateTwins writes rows (in ts order, as randTicks makes them) into
// "ticks" of two databases: in order, and shuffled by a few places so
// that about share of them arrive late.
func lateTwins(t *testing.T, rng *rand.Rand, rows []randRow, share float64) (inOrder, late *reader.Reader) {
	t.Helper()
	arrival := slices.Clone(rows)
	for i := range arrival {
		if rng.Float64() < share {
			j := min(len(arrival)-1, i+1+rng.IntN(5))
			arrival[i], arrival[j] = arrival[j], arrival[i]
		}
	}
	// In ts order, ties in arrival order: what the late table must read as.
	sorted := slices.Clone(arrival)
	slices.SortStableFunc(sorted, func(a, b randRow) int { return compareTs(a.ts, b.ts) })
	open := func(rows []randRow, win time.Duration) *reader.Reader {
		db, live := testutil.DB(t)
		s := barsSchema()
		tb := &qtTable{db: db, live: live, name: "ticks", s: s, row: s.NewRow()}
		w, err := writer.Open(db, "ticks", &writer.Options{Schema: s, LiveDir: live, SegmentSize: 4096, LateWindow: win})
		if err != nil {
			t.Fatal(err)
		}
		tb.w = w
		addRows(t, tb, rows)
		if st := w.Stats(); st.OutOfOrder != 0 {
			t.Fatalf("%d rows rejected", st.OutOfOrder)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return tb.reader(t)
	}
	inOrder = open(sorted, 0)
	late = open(arrival, time.Hour)
	return inOrder, late
}

func compareTs(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestQueriesWithLateRows(t *testing.T) {
	seed := testutil.Seed(t, 0)
	rng := rand.New(rand.NewPCG(seed, 5))
	syms := []string{"AAPL", "MSFT", "GOOG", "BRK A", "X"}
	rows := randTicks(rng, 5000, syms)
	a, b := lateTwins(t, rng, rows, 0.1)
	if st, _ := b.Stat(); st.Late == 0 {
		t.Fatal("no late rows in the late twin")
	}
	ctx := context.Background()
	pick := func() int64 { return rows[rng.IntN(len(rows))].ts }
	for k := range 40 {
		q := query.Query{Table: "ticks"}
		if k%2 == 1 {
			q.Sym = syms[rng.IntN(len(syms))]
		}
		if k%3 != 0 {
			q.From, q.HasFrom = pick(), true
		}
		if k%4 != 0 {
			q.To, q.HasTo = pick()+int64(rng.IntN(3)), true
		}
		if k%5 == 0 {
			q.Limit = int64(1 + rng.IntN(100))
		}
		wa, na := run(t, a, q, query.FormatCSV, query.TsNs)
		wb, nb := run(t, b, q, query.FormatCSV, query.TsNs)
		if wa != wb || na != nb {
			t.Fatalf("query %+v: %d rows with late rows, %d in order", q, nb, na)
		}

		bq := query.BarsQuery{Table: "ticks", Sym: q.Sym, From: q.From, HasFrom: q.HasFrom, To: q.To, HasTo: q.HasTo,
			Interval: []time.Duration{time.Millisecond, time.Second, time.Minute}[k%3]}
		if ga, gb := gotBars(t, a, bq), gotBars(t, b, bq); !slices.Equal(ga, gb) {
			t.Fatalf("bars %+v: %d bars with late rows, %d in order", bq, len(gb), len(ga))
		}

		lq := query.LatestQuery{Table: "ticks", At: pick(), HasAt: k%2 == 0}
		var la, lb bytes.Buffer
		for _, x := range []struct {
			r   *reader.Reader
			buf *bytes.Buffer
		}{{a, &la}, {b, &lb}} {
			enc := query.NewEncoder(x.buf, query.FormatCSV, query.TsNs, x.r.Schema(), "ticks", x.r.SymbolName)
			if _, err := query.RunLatest(ctx, x.r, lq, enc); err != nil {
				t.Fatal(err)
			}
			if err := enc.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if la.String() != lb.String() {
			t.Fatalf("latest %+v:\nwith late rows:\n%s\nin order:\n%s", lq, lb.String(), la.String())
		}
	}
}

// TestAsOfWithLateRows joins twins: left and right tables with late rows
// give the join their in-order twins give.
func TestAsOfWithLateRows(t *testing.T) {
	seed := testutil.Seed(t, 0)
	rng := rand.New(rand.NewPCG(seed, 6))
	syms := []string{"AAPL", "MSFT", "X"}
	la, lb := lateTwins(t, rng, randTicks(rng, 3000, syms), 0.1)
	ra, rb := lateTwins(t, rng, randTicks(rng, 3000, syms), 0.2)
	for k := range 12 {
		q := query.AsOfQuery{Left: "ticks", Right: "quotes"}
		if k%2 == 1 {
			q.Sym = syms[k%len(syms)]
		}
		if k%3 == 1 {
			q.Tolerance, q.HasTolerance = time.Duration(rng.IntN(int(time.Second))), true
		}
		if k%4 >= 2 {
			from, _ := la.Get(uint64(rng.IntN(1000)))
			q.From, q.HasFrom = from.Ts(), true
		}
		join := func(l, r *reader.Reader) string {
			var buf bytes.Buffer
			enc, err := query.NewAsOfEncoder(&buf, query.FormatCSV, query.TsNs, l, r, q)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := query.RunAsOf(context.Background(), l, r, q, enc); err != nil {
				t.Fatal(err)
			}
			if err := enc.Close(); err != nil {
				t.Fatal(err)
			}
			return buf.String()
		}
		if x, y := join(la, ra), join(lb, rb); x != y {
			t.Fatalf("as-of %+v differs with late rows (%d vs %d bytes)", q, len(y), len(x))
		}
	}
}
