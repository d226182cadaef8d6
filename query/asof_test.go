package query_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// tableIn creates table name with schema s in db (tiny segments, so that
// the rows span many segments and recycled live slots).
func tableIn(t testing.TB, db, live, name string, s *store.Schema) *qtTable {
	t.Helper()
	tb := &qtTable{db: db, live: live, name: name, s: s, row: s.NewRow()}
	// LiveDir is one table's: give each its own under live.
	w, err := writer.Open(db, name, &writer.Options{Schema: s, LiveDir: filepath.Join(live, name), SegmentSize: 4096})
	if err != nil {
		t.Fatalf("writer.Open: %v", err)
	}
	tb.w = w
	t.Cleanup(func() { w.Close() })
	return tb
}

// Trades (left) and quotes (right): quotes' price and size collide with
// trades' columns; ex is a second sym column of the right (its own
// dictionary), and sym is not the right's first column after ts.
func tradesSchema() *store.Schema { return store.TickSchema() }

func quotesSchema() *store.Schema {
	return store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "bid", Type: store.TypeF64},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "ex", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "firm", Type: store.TypeBool},
	)
}

// joinRows is generated trades and quotes: trade i has size i, quote j
// has bid j, so that a joined pair names its rows.
type joinRows struct {
	trades []randRow // ts, sym, price, size
	quotes []quoteRow
}

type quoteRow struct {
	ts      int64
	sym, ex string
	bid, px float64
	size    int64
	firm    bool
}

// genJoin generates both tables on one clock: small steps (0 often, so
// ts ties within and across the tables), rare gaps; trades of A..E,
// quotes of B..F (A never quoted, F never traded).
func genJoin(rng *rand.Rand, nt, nq int) joinRows {
	var j joinRows
	tsyms := []string{"A", "B", "C", "D", "E"}
	qsyms := []string{"F", "E", "D", "C", "B"} // other ids than the trades'
	ts := int64(-50)
	for len(j.trades) < nt || len(j.quotes) < nq {
		switch p := rng.IntN(100); {
		case p < 40:
		case p < 97:
			ts += int64(rng.IntN(5)) + 1
		default:
			ts += int64(rng.IntN(500))
		}
		if len(j.quotes) < nq && (len(j.trades) >= nt || rng.IntN(nt+nq) < nq) {
			j.quotes = append(j.quotes, quoteRow{ts: ts, sym: qsyms[rng.IntN(len(qsyms))], ex: []string{"X", "Y"}[rng.IntN(2)],
				bid: float64(len(j.quotes)), px: float64(rng.IntN(100)), size: int64(rng.IntN(10)), firm: rng.IntN(2) == 0})
		} else {
			j.trades = append(j.trades, randRow{ts: ts, sym: tsyms[rng.IntN(len(tsyms))], price: float64(rng.IntN(100)), size: int64(len(j.trades))})
		}
	}
	return j
}

// joinTables writes j into tables trades and quotes of a new db.
func joinTables(t testing.TB, j joinRows) (tr, qt *qtTable) {
	t.Helper()
	db, live := testutil.DB(t)
	tr = tableIn(t, db, live, "trades", tradesSchema())
	qt = tableIn(t, db, live, "quotes", quotesSchema())
	for _, s := range []string{"F", "E", "D", "C", "B"} { // quotes' ids in this order
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
	tr.publish()
	qt.publish()
	return tr, qt
}

// bruteMatch is the nested loop: for every trade, the index of its quote
// (-1 for none) with tolerance tol (-1: none). A trade's match does not
// depend on the range or symbol selected.
func bruteMatch(j joinRows, tol int64) []int {
	match := make([]int, len(j.trades))
	for i, tr := range j.trades {
		best := -1
		for k, qu := range j.quotes {
			if qu.sym != tr.sym || qu.ts > tr.ts {
				continue
			}
			if tol >= 0 && tr.ts-qu.ts > tol {
				continue
			}
			if best < 0 || qu.ts >= j.quotes[best].ts { // later seq wins ties
				best = k
			}
		}
		match[i] = best
	}
	return match
}

// bruteAsOf selects q's trades and their matches.
func bruteAsOf(j joinRows, match []int, q query.AsOfQuery) (trades, quotes []int) {
	for i, tr := range j.trades {
		if (q.HasFrom && tr.ts < q.From) || (q.HasTo && tr.ts >= q.To) || (q.Sym != "" && tr.sym != q.Sym) {
			continue
		}
		trades, quotes = append(trades, i), append(quotes, match[i])
	}
	return trades, quotes
}

// gotAsOf runs AsOf and returns the trade and quote indexes it paired.
func gotAsOf(t *testing.T, l, r *reader.Reader, q query.AsOfQuery) (trades, quotes []int) {
	t.Helper()
	ls, rs := l.Schema(), r.Schema()
	size, _ := ls.Col("size")
	bid, _ := rs.Col("bid")
	lsym, _ := ls.Col("sym")
	rsym, _ := rs.Col("sym")
	_, err := query.AsOf(context.Background(), l, r, q, func(lr, rr store.Row) error {
		trades = append(trades, int(lr.I64(size)))
		if rr == nil {
			quotes = append(quotes, -1)
			return nil
		}
		ln, _ := l.SymbolName(lr.Sym(lsym))
		rn, _ := r.SymbolName(rr.Sym(rsym))
		if ln != rn || rr.Ts() > lr.Ts() {
			return fmt.Errorf("trade %d (%s at %d) joined with quote %v (%s at %d)", lr.I64(size), ln, lr.Ts(), rr.F64(bid), rn, rr.Ts())
		}
		quotes = append(quotes, int(rr.F64(bid)))
		return nil
	})
	if err != nil {
		t.Fatalf("AsOf(%+v): %v", q, err)
	}
	return trades, quotes
}

// AsOf against a brute-force nested loop on random tables: ties on ts
// within and across the tables, gaps, a traded symbol never quoted,
// tolerances at and around the gaps, ranges, a symbol filter.
func TestAsOfRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	j := genJoin(rng, 2000, 5000)
	tr, qt := joinTables(t, j)
	l, r := tr.reader(t), qt.reader(t)
	cases, matched, unmatched := 0, 0, 0
	for _, tol := range []int64{-1, 0, 1, 2, 3, 7, 100, 1000} {
		match := bruteMatch(j, tol)
		for _, sym := range []string{"", "A", "B", "E", "F", "NOPE"} {
			for k := 0; k < 4; k++ {
				q := query.AsOfQuery{Left: "trades", Right: "quotes", Sym: sym}
				if tol >= 0 {
					q.Tolerance, q.HasTolerance = time.Duration(tol), true
				}
				switch k {
				case 1:
					q.From, q.HasFrom = j.trades[rng.IntN(len(j.trades))].ts, true
				case 2:
					q.To, q.HasTo = j.trades[rng.IntN(len(j.trades))].ts, true
				case 3:
					q.From, q.HasFrom = j.trades[rng.IntN(len(j.trades)/2)].ts+int64(rng.IntN(3)), true
					q.To, q.HasTo = j.quotes[len(j.quotes)/2+rng.IntN(len(j.quotes)/2)].ts, true
				}
				wt, wq := bruteAsOf(j, match, q)
				gt, gq := gotAsOf(t, l, r, q)
				if len(gt) != len(wt) {
					t.Fatalf("%+v: %d rows, want %d", q, len(gt), len(wt))
				}
				for i := range gt {
					if gt[i] != wt[i] || gq[i] != wq[i] {
						t.Fatalf("%+v: row %d: trade %d with quote %d, want trade %d with quote %d", q, i, gt[i], gq[i], wt[i], wq[i])
					}
					if gq[i] < 0 {
						unmatched++
					} else {
						matched++
					}
				}
				cases++
			}
		}
	}
	if matched == 0 || unmatched == 0 {
		t.Errorf("%d matched, %d unmatched: the data does not exercise both", matched, unmatched)
	}
	t.Logf("%d joins, %d rows matched, %d unmatched", cases, matched, unmatched)
}

// The tolerance is inclusive: a quote exactly Tolerance older matches,
// one a nanosecond older does not; equal ts take the later quote.
func TestAsOfBoundaries(t *testing.T) {
	j := joinRows{
		quotes: []quoteRow{{ts: 100, sym: "B", bid: 0}, {ts: 100, sym: "B", bid: 1}, {ts: 105, sym: "C", bid: 2}},
		trades: []randRow{{ts: 100, sym: "B", size: 0}, {ts: 110, sym: "B", size: 1}, {ts: 111, sym: "B", size: 2},
			{ts: 115, sym: "C", size: 3}, {ts: 116, sym: "C", size: 4}, {ts: 116, sym: "A", size: 5}},
	}
	tr, qt := joinTables(t, j)
	l, r := tr.reader(t), qt.reader(t)
	for _, c := range []struct {
		tol  time.Duration
		has  bool
		want []int
	}{
		{0, false, []int{1, 1, 1, 2, 2, -1}},
		{10, true, []int{1, 1, -1, 2, -1, -1}},
		{0, true, []int{1, -1, -1, -1, -1, -1}},
		{11, true, []int{1, 1, 1, 2, 2, -1}},
	} {
		q := query.AsOfQuery{Left: "trades", Right: "quotes", Tolerance: c.tol, HasTolerance: c.has}
		_, got := gotAsOf(t, l, r, q)
		if _, want := bruteAsOf(j, bruteMatch(j, map[bool]int64{false: -1, true: int64(c.tol)}[c.has]), q); fmt.Sprint(want) != fmt.Sprint(c.want) {
			t.Fatalf("brute force: %v, want %v", want, c.want)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("tolerance %v (%v): quotes %v, want %v", c.tol, c.has, got, c.want)
		}
	}
}

// The encoders of joined rows: colliding names prefixed, the right's sym
// key left out, a missing match empty in every format.
func TestAsOfEncode(t *testing.T) {
	j := joinRows{
		quotes: []quoteRow{{ts: T0, sym: "B", ex: "X", bid: 7.5, px: 10.25, size: 3, firm: true}},
		trades: []randRow{{ts: T0 + 1500, sym: "B", price: 10.5, size: 100}, {ts: T0 + 2000, sym: "A", price: 3, size: 1}},
	}
	tr, qt := joinTables(t, j)
	l, r := tr.reader(t), qt.reader(t)
	for _, c := range []struct {
		f    query.Format
		tsf  query.TsFormat
		want string
	}{
		{query.FormatCSV, query.TsRFC3339, `ts,sym,price,size,quotes_ts,bid,ex,quotes_price,quotes_size,firm
2023-11-14T22:13:20.000001500Z,B,10.5,100,2023-11-14T22:13:20.000000000Z,7.5,X,10.25,3,true
2023-11-14T22:13:20.000002000Z,A,3,1,,,,,,
`},
		{query.FormatJSON, query.TsNs, `{"ts":1700000000000001500,"sym":"B","price":10.5,"size":100,"quotes_ts":1700000000000000000,"bid":7.5,"ex":"X","quotes_price":10.25,"quotes_size":3,"firm":true}
{"ts":1700000000000002000,"sym":"A","price":3,"size":1,"quotes_ts":null,"bid":null,"ex":null,"quotes_price":null,"quotes_size":null,"firm":null}
`},
		{query.FormatILP, query.TsRFC3339, `trades,sym=B,ex=X price=10.5,size=100i,quotes_ts=1700000000000000000i,bid=7.5,quotes_price=10.25,quotes_size=3i,firm=t 1700000000000001500
trades,sym=A price=3,size=1i 1700000000000002000
`},
		{query.FormatTable, query.TsNs, `                 ts  sym                    price          size            quotes_ts             bid  ex              quotes_price   quotes_size  firm
1700000000000001500  B                       10.5           100  1700000000000000000             7.5  X                      10.25             3  true
1700000000000002000  A                          3             1
`},
	} {
		t.Run(c.f.String(), func(t *testing.T) {
			var buf bytes.Buffer
			q := query.AsOfQuery{Left: "trades", Right: "quotes"}
			enc, err := query.NewAsOfEncoder(&buf, c.f, c.tsf, l, r, q)
			if err != nil {
				t.Fatal(err)
			}
			n, err := query.RunAsOf(context.Background(), l, r, q, enc)
			if err != nil || n != 2 {
				t.Fatalf("RunAsOf = %d, %v", n, err)
			}
			if err := enc.Close(); err != nil {
				t.Fatal(err)
			}
			if buf.String() != c.want {
				t.Errorf("output:\n%s\nwant:\n%s", buf.String(), c.want)
			}
		})
	}
}

func TestAsOfErrors(t *testing.T) {
	j := joinRows{quotes: []quoteRow{{ts: 1, sym: "B"}}, trades: []randRow{{ts: 2, sym: "B"}}}
	tr, qt := joinTables(t, j)
	l, r := tr.reader(t), qt.reader(t)
	nop := func(_, _ store.Row) error { return nil }
	q := query.AsOfQuery{Left: "trades", Right: "quotes", Tolerance: -1, HasTolerance: true}
	if _, err := query.AsOf(context.Background(), l, r, q, nop); !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative tolerance: %v", err)
	}
	noSym := tableIn(t, tr.db, tr.live, "plain", store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "v", Type: store.TypeF64}))
	noSym.add(t, 1, 1.0)
	noSym.publish()
	p := noSym.reader(t)
	q = query.AsOfQuery{Left: "trades", Right: "plain"}
	if _, err := query.AsOf(context.Background(), l, p, q, nop); !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), "plain has no sym column") {
		t.Errorf("right without sym: %v", err)
	}
	boom := errors.New("boom")
	if _, err := query.AsOf(context.Background(), l, r, query.AsOfQuery{}, func(_, _ store.Row) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("fn error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := query.AsOf(ctx, l, r, query.AsOfQuery{}, nop); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// An encoder of table rows is refused by RunAsOf, one of computed rows by Run.
	var buf bytes.Buffer
	if _, err := query.RunAsOf(context.Background(), l, r, query.AsOfQuery{}, query.NewEncoder(&buf, query.FormatCSV, query.TsNs, l.Schema(), "trades", l.SymbolName)); err == nil {
		t.Error("RunAsOf with a table-row encoder: no error")
	}
	enc, err := query.NewAsOfEncoder(&buf, query.FormatCSV, query.TsNs, l, r, query.AsOfQuery{Right: "quotes"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := query.Run(context.Background(), l, query.Query{}, enc); err == nil {
		t.Error("Run with a computed-row encoder: no error")
	}
}

// AsOf allocates nothing per row once every symbol has been seen: a join
// over several times the rows allocates as much.
func TestAsOfAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	j := genJoin(rng, 5000, 10000)
	tr, qt := joinTables(t, j)
	tr.close(t) // an idle writer's flusher still allocates, and AllocsPerRun counts the process
	qt.close(t)
	l, r := tr.reader(t), qt.reader(t)
	nop := func(_, _ store.Row) error { return nil }
	measure := func(q query.AsOfQuery) float64 {
		return leastAllocs(20, func() {
			if _, err := query.AsOf(context.Background(), l, r, q, nop); err != nil {
				t.Fatal(err)
			}
		})
	}
	small := measure(query.AsOfQuery{HasTo: true, To: j.trades[500].ts})
	big := measure(query.AsOfQuery{})
	if big > small {
		t.Errorf("5000 trades: %v allocations per run, 500: %v", big, small)
	}
	// Through an encoder: nothing per row either.
	enc, err := query.NewAsOfEncoder(discard{}, query.FormatCSV, query.TsRFC3339, l, r, query.AsOfQuery{Right: "quotes"})
	if err != nil {
		t.Fatal(err)
	}
	measureEnc := func(q query.AsOfQuery) float64 {
		return leastAllocs(20, func() {
			if _, err := query.RunAsOf(context.Background(), l, r, q, enc); err != nil {
				t.Fatal(err)
			}
		})
	}
	small = measureEnc(query.AsOfQuery{Right: "quotes", HasTo: true, To: j.trades[500].ts})
	big = measureEnc(query.AsOfQuery{Right: "quotes"})
	if big > small {
		t.Errorf("encoded: 5000 trades: %v allocations per run, 500: %v", big, small)
	}
}

// With From and no tolerance, AsOf finds each symbol's last quote before
// From as a latest-row query at From - 1 does (reader.Latest): quotes
// hours and days before From, symbols quoted only long before, a quote
// exactly at From - 1 and at From.
func TestAsOfSeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	gaps := []int64{0, 1, int64(time.Millisecond), int64(3 * time.Second), int64(2 * time.Hour), int64(5 * 24 * time.Hour)}
	var j joinRows
	ts := int64(-3 * 24 * time.Hour)
	for len(j.trades) < 400 || len(j.quotes) < 400 {
		ts += gaps[rng.IntN(len(gaps))]
		if rng.IntN(2) == 0 && len(j.quotes) < 400 {
			// F is quoted only early on; C after a long silence.
			s := []string{"B", "C", "D", "E"}[rng.IntN(4)]
			if len(j.quotes) < 20 {
				s = "F"
			}
			j.quotes = append(j.quotes, quoteRow{ts: ts, sym: s, ex: "X", bid: float64(len(j.quotes))})
		} else if len(j.trades) < 400 {
			j.trades = append(j.trades, randRow{ts: ts, sym: []string{"A", "B", "C", "D", "E"}[rng.IntN(5)], size: int64(len(j.trades))})
		}
	}
	tr, qt := joinTables(t, j)
	l, r := tr.reader(t), qt.reader(t)
	match := bruteMatch(j, -1)
	froms := []int64{math.MinInt64, j.quotes[0].ts, j.quotes[len(j.quotes)-1].ts + 1}
	for i := 0; i < 40; i++ {
		q := j.quotes[rng.IntN(len(j.quotes))].ts
		froms = append(froms, q, q+1, q-1)
	}
	for _, from := range froms {
		for _, sym := range []string{"", "C", "F"} {
			q := query.AsOfQuery{Left: "trades", Right: "quotes", Sym: sym, From: from, HasFrom: true}
			wt, wq := bruteAsOf(j, match, q)
			gt, gq := gotAsOf(t, l, r, q)
			if fmt.Sprint(gt, gq) != fmt.Sprint(wt, wq) {
				t.Fatalf("%+v:\n got %v %v\nwant %v %v", q, gt, gq, wt, wq)
			}
		}
	}
}
