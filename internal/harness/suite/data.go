// Package suite is tickdb's benchmark suite: one generated data set, the
// machine's limits, tickdb's workloads and any number of peer systems run
// on identical work in one process, every query answer checked against the
// generator's expected answer, and the figures reported side by side with
// their ratios (tickdb ÷ peer, tickdb ÷ limit), which hold on a shared
// machine where absolute times drift.
//
// `tickdb bench` runs it with tickdb and the limits only; the module under
// bench/ adds the peers (tstorage, pebble, a plain bufio file), so their
// code never enters the main module. Both draw their data from Generate and
// their expected answers from Data, and implement System for each store.
// `tickdb demo` runs the suite's demo workload (Demo) on its own.
//
// Its child processes (a reader in another process, the user protocol's
// ingesting and fresh processes, the demo's verifying reader) are the
// binary that runs the suite, re-executed by internal/harness/child in one of the
// suite's roles: such a binary calls MaybeChild first.
//
// # Concurrency
//
// A Data is read-only once generated and may be shared; everything else is
// owned by the goroutine running the suite.
package suite

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/tickdb/tickdb/internal/harness/gen"
)

// Seed is the generator seed of every data set the suite builds.
const Seed = 1

// NumSymbols is the number of symbols of every data set.
const NumSymbols = 100

// Data is a generated tick stream with what the suite needs to know about
// it to check answers: per symbol, the positions of its ticks.
type Data struct {
	Ticks   []gen.Tick // in ts order (non-decreasing)
	Symbols []string   // names, indexed by Tick.Sym

	bySym [][]int32 // per symbol: indexes into Ticks, ascending
}

// Generate returns n ticks of NumSymbols symbols from the fixed seed:
// random-walk prices in cents, sizes in round lots, ts about 1 µs apart
// (internal/harness/gen). Equal n give equal data in any process.
func Generate(n int) *Data {
	g := gen.New(gen.Options{Symbols: NumSymbols, Seed: Seed})
	d := &Data{Ticks: make([]gen.Tick, n), Symbols: g.Symbols(), bySym: make([][]int32, NumSymbols)}
	g.Fill(d.Ticks)
	counts := make([]int, NumSymbols)
	for i := range d.Ticks {
		counts[d.Ticks[i].Sym]++
	}
	for s, c := range counts {
		d.bySym[s] = make([]int32, 0, c)
	}
	for i := range d.Ticks {
		s := d.Ticks[i].Sym
		d.bySym[s] = append(d.bySym[s], int32(i))
	}
	return d
}

// First and Last are the first and last ticks' timestamps.
func (d *Data) First() int64 { return d.Ticks[0].Ts }

// Last is the last tick's timestamp.
func (d *Data) Last() int64 { return d.Ticks[len(d.Ticks)-1].Ts }

// SymCount is the number of ticks of symbol s.
func (d *Data) SymCount(s int) int { return len(d.bySym[s]) }

// Answer summarises a query's result so that two stores' answers compare
// exactly whatever order they return rows in: the row count and a sum of
// a per-row mix of ts and price (the two values every store keeps).
type Answer struct {
	Rows int64
	Sum  uint64
}

// Add counts one row.
func (a *Answer) Add(ts int64, price float64) {
	a.Rows++
	a.Sum += Mix(ts, price)
}

// Mix is one row's contribution to Answer.Sum.
func Mix(ts int64, price float64) uint64 {
	return uint64(ts)*0x9E3779B97F4A7C15 ^ math.Float64bits(price)
}

// AllSymbols as a query's symbol selects every symbol.
const AllSymbols = -1

// Query is one range query: the rows of symbol Sym (or of every symbol,
// with AllSymbols) with From <= ts < To, and the answer the data holds.
type Query struct {
	Sym      int
	From, To int64
	Want     Answer
}

// Expect is the answer to sym (or AllSymbols) over From <= ts < To, from
// the per-symbol positions: two binary searches and a sum, independent of
// any store.
func (d *Data) Expect(sym int, from, to int64) Answer {
	var a Answer
	if sym == AllSymbols {
		lo := sort.Search(len(d.Ticks), func(i int) bool { return d.Ticks[i].Ts >= from })
		for i := lo; i < len(d.Ticks) && d.Ticks[i].Ts < to; i++ {
			a.Add(d.Ticks[i].Ts, d.Ticks[i].Price)
		}
		return a
	}
	pos := d.bySym[sym]
	lo := sort.Search(len(pos), func(i int) bool { return d.Ticks[pos[i]].Ts >= from })
	for _, p := range pos[lo:] {
		t := &d.Ticks[p]
		if t.Ts >= to {
			break
		}
		a.Add(t.Ts, t.Price)
	}
	return a
}

// BusySymbol is the symbol whose tick count is nearest 1 % of the data:
// the one the window and symbol-scan queries ask for (ties: the lower
// index).
func (d *Data) BusySymbol() int {
	want := len(d.Ticks) / 100
	best, bestDiff := 0, math.MaxInt
	for s := range d.bySym {
		diff := len(d.bySym[s]) - want
		if diff < 0 {
			diff = -diff
		}
		if diff < bestDiff {
			best, bestDiff = s, diff
		}
	}
	return best
}

// Windows returns k window queries: BusySymbol over 1 % of the time span
// at positions drawn from the fixed seed (about N/10,000 rows each), with
// their expected answers.
func (d *Data) Windows(k int) []Query {
	sym := d.BusySymbol()
	first, last := d.First(), d.Last()
	width := (last - first) / 100
	rng := rand.New(rand.NewPCG(Seed, 3))
	qs := make([]Query, k)
	for i := range qs {
		from := first
		if span := last - first - width; span > 0 {
			from += rng.Int64N(span)
		}
		qs[i] = Query{Sym: sym, From: from, To: from + width}
		qs[i].Want = d.Expect(sym, from, from+width)
	}
	return qs
}

// SymbolScan is the query for every tick of BusySymbol.
func (d *Data) SymbolScan() Query {
	sym := d.BusySymbol()
	return Query{Sym: sym, From: math.MinInt64, To: math.MaxInt64, Want: d.Expect(sym, math.MinInt64, math.MaxInt64)}
}

// FullScan is the query for every tick.
func (d *Data) FullScan() Query {
	return Query{Sym: AllSymbols, From: math.MinInt64, To: math.MaxInt64, Want: d.Expect(AllSymbols, math.MinInt64, math.MaxInt64)}
}
