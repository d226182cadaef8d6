// Package gen generates deterministic synthetic market trades for the demo,
// tests and benchmarks: many symbols with realistic tickers, a skewed
// activity mix, random-walk prices rounded to cents, sizes in round lots and
// timestamps about a microsecond apart that never go backwards.
//
// The same Options always give the same ticks, in this process or another
// one running the same binary: the demo's writer and its verifying reader
// process both regenerate the stream from the seed instead of sharing it.
// The random source is a self-contained SplitMix64, so the stream does not
// depend on math/rand's implementation.
//
// # Concurrency
//
// A Gen is not safe for concurrent use; make one per goroutine.
package gen

import (
	"math"
	"time"
)

// Tick is one synthetic trade.
type Tick struct {
	Ts    int64   // ns since the Unix epoch, UTC; non-decreasing
	Sym   int     // index into Gen.Symbols
	Price float64 // a whole number of cents
	Size  int64   // a multiple of 100 (round lots)
}

// DefaultStart is the first tick's timestamp when Options.Start is 0:
// 2024-01-02 14:30:00 UTC (a US market open) in ns since the Unix epoch.
const DefaultStart int64 = 1_704_205_800_000_000_000

// Options configures New. Zero values give the documented defaults.
type Options struct {
	// Symbols is the number of distinct symbols (default 100).
	Symbols int
	// Seed selects the stream; equal options give equal streams.
	Seed int64
	// Start is the first tick's ts (default DefaultStart).
	Start int64
	// Gap is the mean time between ticks (default 1 µs, at most 1 s).
	// Each gap is drawn uniformly from [0.5, 1.5) × Gap, and about 1 tick
	// in 16 shares the previous tick's ts (a burst), so ts is
	// non-decreasing, not strictly increasing.
	Gap time.Duration
}

// Gen produces ticks. Create it with New.
type Gen struct {
	rng   uint64
	ts    int64
	gap   uint64
	names []string
	alias []aliasCol // symbol choice by activity weight
	mid   []float64  // per symbol: the unrounded random-walk price
	vol   []float64  // per symbol: per-tick relative volatility
	lots  [256]int64 // size quantiles, in lots
}

// New returns a generator for o.
func New(o Options) *Gen {
	if o.Symbols <= 0 {
		o.Symbols = 100
	}
	o.Symbols = min(o.Symbols, MaxSymbols)
	if o.Start == 0 {
		o.Start = DefaultStart
	}
	if o.Gap <= 0 {
		o.Gap = time.Microsecond
	}
	o.Gap = min(o.Gap, time.Second) // the gap draw needs gap < 2^32
	g := &Gen{
		rng:   uint64(o.Seed)*0x9E3779B97F4A7C15 ^ 0xD1B54A32D192ED03,
		ts:    o.Start,
		gap:   uint64(o.Gap),
		names: Symbols(o.Symbols),
		mid:   make([]float64, o.Symbols),
		vol:   make([]float64, o.Symbols),
	}
	// Activity: Zipf-like weights 1/(rank+1)^0.8, so a few names trade much
	// more than the tail (with 100 symbols the busiest gets about 12% of
	// the ticks and the quietest about 0.3%).
	w := make([]float64, o.Symbols)
	total := 0.0
	for i := range w {
		w[i] = 1 / math.Pow(float64(i+1), 0.8)
		total += w[i]
	}
	g.alias = newAlias(w, total)
	// Sizes: 1 + an exponential number of lots with mean 3, by quantile
	// (1 to 19 lots): mostly small prints, a few blocks.
	for i := range g.lots {
		g.lots[i] = 1 + int64(-3*math.Log(1-(float64(i)+0.5)/float64(len(g.lots))))
	}
	for i := range g.mid {
		// Start prices: the real tickers' own, log-uniform in [$5, $800)
		// for the synthetic names. Per-trade volatility 0.05–0.2 bp: a
		// $500 stock moves by a cent every trade or two, a $10 one rarely,
		// and a million trades drift prices by about 1%.
		g.mid[i] = 5 * math.Exp(g.float()*math.Log(160))
		if i < len(tickers) {
			g.mid[i] = tickers[i].price
		}
		g.vol[i] = 1e-5 * (0.5 + 1.5*g.float())
	}
	return g
}

// MaxSymbols is the most symbols Symbols names: as many as there are four-
// and five-letter codes (the real tickers of one to three letters make the
// true supply slightly larger).
const MaxSymbols = 26*26*26*26 + 26*26*26*26*26

// Symbols returns the names of n symbols (at most MaxSymbols), the same for
// every seed: real, liquid US tickers first, then synthetic four- and
// five-letter codes that do not repeat them.
func Symbols(n int) []string {
	n = min(n, MaxSymbols)
	out := make([]string, 0, n)
	seen := make(map[string]bool, n)
	for _, t := range tickers {
		if len(out) == n {
			return out
		}
		out = append(out, t.name)
		seen[t.name] = true
	}
	for k := 0; len(out) < n; k++ {
		// Synthetic codes: "AAAA", "AAAB", ... then five letters.
		v, letters := k, 4
		if v >= 26*26*26*26 {
			v, letters = v-26*26*26*26, 5
		}
		var b [5]byte
		for i := letters - 1; i >= 0; i-- {
			b[i] = byte('A' + v%26)
			v /= 26
		}
		s := string(b[:letters])
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Symbols is the generator's symbol names, indexed by Tick.Sym.
func (g *Gen) Symbols() []string { return g.names }

// Next returns the next tick. It allocates nothing and costs three draws
// from the random source (no transcendental functions).
func (g *Gen) Next() Tick {
	r := g.next()
	// Ts: one tick in 16 (bits 0-3) shares the previous ts; the rest move
	// on by a gap drawn from [gap/2, 3·gap/2) (bits 32-63).
	if r&15 != 0 {
		g.ts += int64(g.gap/2 + (r>>32*g.gap)>>32)
	}
	// Size: bits 4-11 index the quantiles of 1 + an exponential number of
	// lots.
	size := g.lots[r>>4&0xFF] * 100
	s := g.pick(g.next())
	// Price: a geometric random walk, one multiplicative step per trade
	// with an approximately normal shock (the sum of four 16-bit uniforms,
	// centred and scaled to unit variance), emitted rounded to the cent.
	q := g.next()
	z := (float64(q&0xFFFF+q>>16&0xFFFF+q>>32&0xFFFF+q>>48)/65536 - 2) * math.Sqrt(3)
	m := g.mid[s] * (1 + g.vol[s]*z)
	if m < 0.01 {
		m = 0.01
	}
	g.mid[s] = m
	// Floor(x+0.5), not Round: the same for positive prices, and an
	// intrinsic on amd64.
	return Tick{Ts: g.ts, Sym: s, Price: math.Floor(m*100+0.5) / 100, Size: size}
}

// Fill overwrites ticks with the next len(ticks) ticks.
func (g *Gen) Fill(ticks []Tick) {
	for i := range ticks {
		ticks[i] = g.Next()
	}
}

// pick maps a uniform u64 to a symbol by the activity weights in O(1)
// (Walker's alias method): the high 32 bits choose a column, the low 32 bits
// choose between the column's own symbol and its alias.
func (g *Gen) pick(u uint64) int {
	c := (u >> 32 * uint64(len(g.alias))) >> 32
	a := &g.alias[c]
	if uint32(u) < a.keep {
		return int(c)
	}
	return int(a.other)
}

// next is SplitMix64.
func (g *Gen) next() uint64 {
	g.rng += 0x9E3779B97F4A7C15
	z := g.rng
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// float is uniform in [0, 1).
func (g *Gen) float() float64 { return float64(g.next()>>11) / (1 << 53) }

// tickers are real, liquid US equity and ETF tickers, most active first,
// with their approximate prices at the start of 2024 (the walks start
// there).
var tickers = [...]struct {
	name  string
	price float64
}{
	{"SPY", 470}, {"QQQ", 400}, {"AAPL", 185}, {"NVDA", 480}, {"TSLA", 240},
	{"MSFT", 370}, {"AMZN", 150}, {"META", 350}, {"AMD", 140}, {"GOOGL", 140},
	{"IWM", 195}, {"GOOG", 141}, {"NFLX", 470}, {"AVGO", 1100}, {"INTC", 47},
	{"BAC", 33}, {"F", 12}, {"PLTR", 17}, {"SOFI", 9}, {"NIO", 8},
	{"JPM", 170}, {"XOM", 100}, {"T", 17}, {"PFE", 29}, {"BABA", 73},
	{"UBER", 60}, {"DIS", 90}, {"WMT", 157}, {"KO", 59}, {"CSCO", 50},
	{"ORCL", 105}, {"CRM", 260}, {"ADBE", 590}, {"QCOM", 145}, {"MU", 85},
	{"C", 51}, {"WFC", 49}, {"CVX", 150}, {"V", 260}, {"MA", 425},
	{"JNJ", 157}, {"UNH", 525}, {"PG", 147}, {"HD", 345}, {"PEP", 170},
	{"COST", 660}, {"MRK", 109}, {"ABBV", 155}, {"LLY", 580}, {"TMO", 530},
	{"NKE", 108}, {"SBUX", 96}, {"MCD", 295}, {"BA", 250}, {"CAT", 295},
	{"GE", 127}, {"GM", 36}, {"DAL", 40}, {"AAL", 14}, {"UAL", 41},
	{"CCL", 18}, {"RIVN", 23}, {"LCID", 4.2}, {"COIN", 170}, {"HOOD", 12.7},
	{"SNAP", 17}, {"PYPL", 61}, {"SQ", 77}, {"SHOP", 78}, {"ROKU", 91},
	{"ZM", 72}, {"DKNG", 35}, {"MARA", 23}, {"RIOT", 15}, {"GME", 17},
	{"AMC", 6}, {"XLF", 37}, {"XLE", 84}, {"XLK", 192}, {"GLD", 190},
	{"SLV", 21}, {"TLT", 98}, {"HYG", 77}, {"EEM", 40}, {"EFA", 75},
	{"VXX", 15}, {"UVXY", 8}, {"SQQQ", 15}, {"TQQQ", 50}, {"SOXL", 30},
	{"ARKK", 52}, {"SMH", 170}, {"KRE", 52}, {"OXY", 60}, {"SLB", 52},
	{"VZ", 38}, {"CMCSA", 44}, {"ABNB", 135}, {"MRNA", 100}, {"TGT", 142},
}

// aliasCol is one column of an alias table: keep its own symbol when the
// low 32 random bits are below keep, else take other.
type aliasCol struct {
	keep  uint32
	other uint32
}

// newAlias builds Vose's alias table for weights w summing to total.
func newAlias(w []float64, total float64) []aliasCol {
	n := len(w)
	p := make([]float64, n)
	var small, large []int
	for i := range w {
		p[i] = w[i] * float64(n) / total
		if p[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	t := make([]aliasCol, n)
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		t[s] = aliasCol{keep: uint32(p[s] * (1 << 32)), other: uint32(l)}
		if p[l] += p[s] - 1; p[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// Leftovers are 1 up to rounding: always keep.
	for _, i := range append(small, large...) {
		t[i] = aliasCol{keep: math.MaxUint32, other: uint32(i)}
	}
	return t
}
