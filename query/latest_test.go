package query_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// latest runs q in csv with ns timestamps and returns the output.
func latest(t *testing.T, r *reader.Reader, q query.LatestQuery) string {
	t.Helper()
	var buf bytes.Buffer
	enc := query.NewEncoder(&buf, query.FormatCSV, query.TsNs, r.Schema(), "ticks", r.SymbolName)
	n, err := query.RunLatest(context.Background(), r, q, enc)
	if err != nil {
		t.Fatalf("RunLatest(%+v): %v", q, err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if enc.Rows() != n {
		t.Fatalf("RunLatest returned %d, encoder saw %d rows", n, enc.Rows())
	}
	return buf.String()
}

func TestLatestSelection(t *testing.T) {
	tb := newTable(t, store.TickSchema())
	// Symbols added Z, A, M: the output is in name order, not id order.
	for i, r := range []struct {
		ts  int64
		sym string
	}{{10, "Z"}, {20, "A"}, {20, "Z"}, {30, "M"}, {40, "A"}, {50, "Z"}, {50, "Z"}, {50, "A"}} {
		tb.add(t, r.ts, r.sym, float64(i), i)
	}
	tb.publish()
	r := tb.reader(t)
	const head = "ts,sym,price,size\n"
	for _, c := range []struct {
		name string
		q    query.LatestQuery
		want string
	}{
		{"newest", query.LatestQuery{}, "50,A,7,7\n30,M,3,3\n50,Z,6,6\n"},
		{"before the first row", query.LatestQuery{At: 9, HasAt: true}, ""},
		{"at the first row", query.LatestQuery{At: 10, HasAt: true}, "10,Z,0,0\n"},
		{"equal ts: the later row", query.LatestQuery{At: 20, HasAt: true}, "20,A,1,1\n20,Z,2,2\n"},
		{"between rows", query.LatestQuery{At: 45, HasAt: true}, "40,A,4,4\n30,M,3,3\n20,Z,2,2\n"},
		{"after the last", query.LatestQuery{At: 1 << 62, HasAt: true}, "50,A,7,7\n30,M,3,3\n50,Z,6,6\n"},
		{"listed, unknown and repeated", query.LatestQuery{Syms: []string{"Z", "nope", "A", "Z"}, At: 45, HasAt: true}, "40,A,4,4\n20,Z,2,2\n"},
		{"listed without a row yet", query.LatestQuery{Syms: []string{"M"}, At: 29, HasAt: true}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := latest(t, r, c.q); got != head+c.want {
				t.Fatalf("got\n%swant\n%s", got, head+c.want)
			}
		})
	}
}

func TestLatestErrors(t *testing.T) {
	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "v", Type: store.TypeF64})
	tb := newTable(t, s)
	tb.add(t, 1, 1.5)
	tb.publish()
	r := tb.reader(t)
	_, err := query.Latest(context.Background(), r, query.LatestQuery{Table: "ticks"}, func(store.Row) error { return nil })
	if !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), "sym") {
		t.Fatalf("no sym column: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := query.Latest(ctx, r, query.LatestQuery{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestLatestMatchesQuery: at random times, each symbol's latest row is the
// last row query.Run gives for that symbol up to the time (RangeSym, a
// path of its own), on a table of many tiny segments, raw and then
// compacted.
func TestLatestMatchesQuery(t *testing.T) {
	seed := testutil.Seed(t, 0)
	rng := rand.New(rand.NewPCG(seed, 1))
	tb := newTable(t, store.TickSchema())
	syms := []string{"b", "a", "c c", "d,e", "f"}
	ts := T0
	for i := range 3000 {
		if rng.IntN(3) > 0 {
			ts += int64(rng.IntN(1000))
		}
		sym := syms[rng.IntN(len(syms))]
		if i > 2000 && sym == "f" {
			sym = "a" // f ends early
		}
		tb.add(t, ts, sym, float64(rng.IntN(1000))/8, i)
	}
	tb.publish()
	check := func(r *reader.Reader) {
		t.Helper()
		for range 40 {
			at := T0 - 10 + rng.Int64N(ts-T0+20)
			var want strings.Builder
			want.WriteString("ts,sym,price,size\n")
			for _, sym := range []string{"a", "b", "c c", "d,e", "f"} { // name order
				rows := lines(t, r, query.Query{Sym: sym, To: at + 1, HasTo: true})
				if len(rows) > 0 {
					want.WriteString(rows[len(rows)-1] + "\n")
				}
			}
			if got := latest(t, r, query.LatestQuery{At: at, HasAt: true}); got != want.String() {
				t.Fatalf("at %d: got\n%swant\n%s", at, got, want.String())
			}
		}
	}
	check(tb.reader(t))
	if _, err := tb.w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(tb.db, tb.name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check(r)
}
