package query_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/store"
)

// A newest-first query returns the last Limit rows of the ascending
// query of the same selection, reversed (among rows of one ts, the later
// first), over a table whose rows are spread so that the query reads
// many windows back, with ties, gaps and a negative ts.
func TestRunDesc(t *testing.T) {
	tb := newTable(t, store.TickSchema())
	rnd := rand.New(rand.NewPCG(7, 8))
	ts := int64(-5e9)
	for i := range 3000 {
		switch rnd.IntN(10) {
		case 0: // a tie
		case 1:
			ts += rnd.Int64N(200e9) // a gap of up to 200 s
		default:
			ts += rnd.Int64N(50e6)
		}
		tb.add(t, ts, []string{"A", "B", "C"}[rnd.IntN(3)], float64(i), i)
	}
	tb.publish()
	r := tb.reader(t)
	for _, c := range []query.Query{
		{Limit: 1}, {Limit: 7}, {Limit: 2999}, {Limit: 3000}, {Limit: 5000},
		{Limit: 10, Sym: "B"}, {Limit: 400, Sym: "C"}, {Limit: 5, Sym: "nope"},
		{Limit: 50, From: 10e9, HasFrom: true}, {Limit: 100000, From: 1000e9, HasFrom: true, To: 20000e9, HasTo: true},
		{Limit: 20, To: 0, HasTo: true}, {Limit: 20, Sym: "A", To: ts, HasTo: true},
		{Limit: 3, From: ts + 1, HasFrom: true},
	} {
		asc := c
		asc.Limit = 0
		want := lines(t, r, asc) // the ascending selection, as Run has it
		if len(want) == 1 && want[0] == "" {
			want = nil
		}
		if int64(len(want)) > c.Limit {
			want = want[int64(len(want))-c.Limit:]
		}
		slices.Reverse(want)
		c.Desc = true
		got := lines(t, r, c)
		if len(got) == 1 && got[0] == "" {
			got = nil
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%+v: %d rows\n%s\nwant %d\n%s", c, len(got), strings.Join(got[:min(len(got), 5)], "\n"), len(want), strings.Join(want[:min(len(want), 5)], "\n"))
		}
		if c.Limit >= 100 && len(want) < 100 && c.Sym == "" {
			t.Fatalf("%+v: only %d rows: the case tests too little", c, len(want))
		}
	}
	for _, lim := range []int64{0, -1, query.MaxDescLimit + 1} {
		_, err := query.Run(context.Background(), r, query.Query{Desc: true, Limit: lim}, query.NewEncoder(&strings.Builder{}, query.FormatCSV, query.TsNs, r.Schema(), "ticks", r.SymbolName))
		if !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), "limit") {
			t.Errorf("Desc with limit %d: %v, want ErrBadQuery naming the limit", lim, err)
		}
	}
}
