package query_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// Twin tables for columns that grow (docs/FORMAT.md §15): the same rows
// written once into a table created with every column, the values of each
// column missing (NaN, 0, "", false) before a given row, and once into a
// table created with the first four columns that has the others added at
// those rows (writer.AddColumn). Every query must answer both the same,
// byte for byte.

// growTwins returns readers of the two tables, and the rows.
func growTwins(t *testing.T, rng *rand.Rand, n int, syms []string) (full, grown *reader.Reader, rows []randRow) {
	t.Helper()
	rows = randTicks(rng, n, syms)
	// Column i of barsSchema (4..7) is added at row addAt[i-4]: mid
	// segment, two at once, and one more.
	addAt := []int{n / 5, n / 2, n / 2, 4 * n / 5}
	for i := range rows {
		r := &rows[i]
		if i < addAt[0] {
			r.qty = math.NaN()
		}
		if i < addAt[1] {
			r.lvl = 0
		}
		if i < addAt[2] {
			r.venue = ""
		}
		if i < addAt[3] {
			r.hot = false
		}
	}
	a := newTable(t, barsSchema())
	addRows(t, a, rows)
	a.close(t)

	s := barsSchema()
	b := newTable(t, store.MustSchema(s.Cols[:4]...))
	for i := range rows {
		for k, at := range addAt {
			if i == at && b.w.Schema().Index(s.Cols[4+k].Name) < 0 {
				if err := b.w.AddColumn(s.Cols[4+k]); err != nil {
					t.Fatal(err)
				}
				b.s, b.row = b.w.Schema(), b.w.NewRow()
			}
		}
		r := &rows[i]
		vals := []any{r.sym, r.price, r.size, r.qty, r.lvl, r.venue, r.hot}
		b.add(t, r.ts, vals[:len(b.s.Cols)-1]...)
		if i%100 == 99 {
			b.publish()
		}
	}
	b.publish()
	b.close(t)
	return a.reader(t), b.reader(t), rows
}

func TestQueriesWithAddedColumns(t *testing.T) {
	seed := testutil.Seed(t, 0)
	rng := rand.New(rand.NewPCG(seed, 9))
	syms := []string{"AAPL", "MSFT", "GOOG", "BRK A", "X"}
	a, b, rows := growTwins(t, rng, 4000, syms)
	if !a.Schema().Equal(b.Schema()) {
		t.Fatalf("schemas %s and %s", a.Schema(), b.Schema())
	}
	ctx := context.Background()
	pick := func() int64 { return rows[rng.IntN(len(rows))].ts }
	for k := range 30 {
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
		for _, f := range []query.Format{query.FormatCSV, query.FormatJSON, query.FormatILP} {
			wa, na := run(t, a, q, f, query.TsNs)
			wb, nb := run(t, b, q, f, query.TsNs)
			if wa != wb || na != nb {
				t.Fatalf("query %+v format %v: %d rows with added columns, %d created whole:\n%.600s\nvs\n%.600s", q, f, nb, na, wb, wa)
			}
		}
		bq := query.BarsQuery{Table: "ticks", Sym: q.Sym, From: q.From, HasFrom: q.HasFrom, To: q.To, HasTo: q.HasTo,
			Interval: []time.Duration{time.Millisecond, time.Second, time.Minute}[k%3], Field: []string{"price", "qty"}[k%2], Volume: []string{"size", "lvl"}[k%2]}
		if ga, gb := gotBars(t, a, bq), gotBars(t, b, bq); !slices.Equal(ga, gb) {
			t.Fatalf("bars %+v: %d bars with added columns, %d created whole", bq, len(gb), len(ga))
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
			t.Fatalf("latest %+v:\nwith added columns:\n%s\ncreated whole:\n%s", lq, lb.String(), la.String())
		}
	}
}
