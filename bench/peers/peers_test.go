package peers_test

import (
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/tickdb/tickdb/bench/peers"
	"github.com/tickdb/tickdb/internal/harness/suite"
)

func TestMain(m *testing.M) {
	suite.MaybeChild(peers.All()...) // the user protocol's fresh process
	goleak.VerifyTestMain(m)
}

// batch is the suite's Ingest batch size.
const batch = 1_000

type namedQuery struct {
	name string
	q    suite.Query
}

// TestPeers stores each data set in each peer as the suite does and checks
// every query's answer against the data's.
func TestPeers(t *testing.T) {
	for _, n := range []int{50, 20_000} {
		d := suite.Generate(n)
		qs := queries(t, d)
		for _, p := range peers.All() {
			t.Run(fmt.Sprintf("peer=%s/n=%d", p.Name, n), func(t *testing.T) {
				dir := t.TempDir()
				sys, err := p.Open(dir, d)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < len(d.Ticks); i += batch {
					if err := sys.Ingest(d.Ticks[i:min(i+batch, len(d.Ticks))]); err != nil {
						t.Fatal(err)
					}
				}
				if err := sys.Seal(); err != nil {
					t.Fatal(err)
				}
				// Every query, then again after Reopen (the suite's cold
				// queries run on a reopened store).
				for _, reopen := range []bool{false, true} {
					if reopen {
						if err := sys.Reopen(); err != nil {
							t.Fatal(err)
						}
					}
					for _, c := range qs {
						got, err := sys.Query(c.q)
						if err != nil {
							t.Errorf("%s (reopened %v): %v", c.name, reopen, err)
						} else if got != c.q.Want {
							t.Errorf("%s (reopened %v; sym %d, [%d, %d)): got %+v, want %+v", c.name, reopen, c.q.Sym, c.q.From, c.q.To, got, c.q.Want)
						}
					}
				}
				if _, err := sys.Query(suite.Query{Sym: len(d.Symbols), From: d.First(), To: d.Last()}); err == nil {
					t.Errorf("query of symbol %d (of %d): no error", len(d.Symbols), len(d.Symbols))
				}
				if err := sys.Close(); err != nil {
					t.Fatal(err)
				}
				// And once more in the store a fresh process opens.
				ex, err := p.OpenExisting(dir, d.Shape())
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range qs {
					got, err := ex.Query(c.q)
					if err != nil {
						t.Errorf("%s (existing): %v", c.name, err)
					} else if got != c.q.Want {
						t.Errorf("%s (existing; sym %d, [%d, %d)): got %+v, want %+v", c.name, c.q.Sym, c.q.From, c.q.To, got, c.q.Want)
					}
				}
				if err := ex.Close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestUserProtocol runs the suite's user protocol (ingest, windows, close,
// a fresh process's cold queries) on tickdb and every peer at 20k rows:
// every answer is checked by the suite, and every metric must be there.
func TestUserProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests 20k rows in each store and runs a child process each")
	}
	cfg := suite.Config{N: 20_000, Reps: 1, Dir: t.TempDir(), UserOnly: true, Peers: peers.All()}
	r, err := suite.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ms := []string{suite.MAfterIngest, suite.MClose, suite.MDiskBytes, suite.MOpenFresh, suite.MWindowFirst,
		suite.MScanFirst, suite.MWindowRandom, suite.MScanRandom}
	if _, err := os.ReadFile("/proc/self/io"); err == nil { // the bytes read figures need it
		ms = append(ms, suite.MBytesOpen, suite.MBytesWindow, suite.MBytesScan, suite.MBytesWindows, suite.MBytesScans)
	}
	for _, s := range []string{suite.TickDB, "tstorage", "pebble", "bufio"} {
		for _, m := range ms {
			x := r.Find(m, s)
			if x == nil || len(x.Reps) != 1 || x.Value < 0 || (x.Unit != "B" && x.Value <= 0) {
				t.Errorf("%s, %s: %+v", m, s, x)
			} else if x.Unit == "ns" && x.Lat == nil {
				t.Errorf("%s, %s: no latency distribution", m, s)
			}
		}
	}
	if x, name := r.VsBestPeer(suite.MWindowRandom); x <= 0 || name == "" {
		t.Errorf("%s: tickdb ÷ best peer %v (%q)", suite.MWindowRandom, x, name)
	}
	if left, _ := os.ReadDir(cfg.Dir); len(left) != 0 {
		t.Errorf("the run left %d entries in its directory", len(left))
	}
}

// queries returns the checked queries for d, and fails t if d lacks what
// makes them meaningful.
func queries(t *testing.T, d *suite.Data) []namedQuery {
	t.Helper()
	var qs []namedQuery
	add := func(name string, sym int, from, to int64) {
		qs = append(qs, namedQuery{name, suite.Query{Sym: sym, From: from, To: to, Want: d.Expect(sym, from, to)}})
	}
	for i, q := range d.Windows(16) {
		qs = append(qs, namedQuery{fmt.Sprintf("window-%d", i), q})
	}
	qs = append(qs, namedQuery{"symbol-scan", d.SymbolScan()}, namedQuery{"full-scan", d.FullScan()})
	if got := qs[len(qs)-1].q.Want.Rows; got != int64(len(d.Ticks)) {
		t.Fatalf("full scan wants %d rows, data has %d", got, len(d.Ticks))
	}

	// A stored symbol with no rows in a window.
	sym, from, to := emptyWindow(d)
	if sym < 0 {
		t.Fatalf("n=%d: no stored symbol has an empty window", len(d.Ticks))
	}
	add("stored-symbol-empty-window", sym, from, to)

	// Empty and reversed ranges where rows would otherwise match.
	mid := d.Ticks[len(d.Ticks)/2]
	add("empty-range", mid.Sym, mid.Ts, mid.Ts)
	add("empty-range-all", suite.AllSymbols, mid.Ts, mid.Ts)
	add("reversed-range", mid.Sym, mid.Ts+1, mid.Ts-1)
	add("after-data", suite.AllSymbols, d.Last()+1, math.MaxInt64)
	add("before-data", suite.AllSymbols, math.MinInt64, d.First())

	// Bounds on the busiest symbol's own timestamps: From is inclusive and
	// To exclusive, also when To is the symbol's last ts.
	busy, ts := busiest(d)
	add("exact-bounds", busy, ts[len(ts)/4], ts[3*len(ts)/4])
	add("to-last-tick", busy, ts[0], ts[len(ts)-1])
	add("from-last-tick", busy, ts[len(ts)-1], math.MaxInt64)
	add("all-symbols-window", suite.AllSymbols, ts[len(ts)/3], ts[2*len(ts)/3])

	if len(d.Ticks) >= 10_000 {
		// At this size, equal-ts ticks of one symbol must be among the
		// data, or the seq and out-of-order paths go untested.
		if !hasDupe(ts) {
			t.Fatalf("n=%d: the busiest symbol has no two ticks with equal ts", len(d.Ticks))
		}
		if qs[0].q.Want.Rows == 0 {
			t.Fatalf("n=%d: window 0 wants no rows", len(d.Ticks))
		}
	}
	return qs
}

// emptyWindow returns a symbol with ticks and a Windows-sized range in which
// it has none, or sym -1.
func emptyWindow(d *suite.Data) (sym int, from, to int64) {
	for _, w := range d.Windows(16) {
		for s := range d.Symbols {
			if d.SymCount(s) > 0 && d.Expect(s, w.From, w.To).Rows == 0 {
				return s, w.From, w.To
			}
		}
	}
	return -1, 0, 0
}

// busiest returns the symbol with the most ticks and their timestamps.
func busiest(d *suite.Data) (int, []int64) {
	best := 0
	for s := range d.Symbols {
		if d.SymCount(s) > d.SymCount(best) {
			best = s
		}
	}
	var ts []int64
	for _, t := range d.Ticks {
		if t.Sym == best {
			ts = append(ts, t.Ts)
		}
	}
	return best, ts
}

// hasDupe reports whether ts (ascending) holds a value twice.
func hasDupe(ts []int64) bool {
	for i := 1; i < len(ts); i++ {
		if ts[i] == ts[i-1] {
			return true
		}
	}
	return false
}

func TestAllOrder(t *testing.T) {
	var got []string
	for _, p := range peers.All() {
		got = append(got, p.Name)
	}
	if want := []string{"tstorage", "pebble", "bufio"}; !slices.Equal(got, want) {
		t.Errorf("All() = %v, want %v", got, want)
	}
}
