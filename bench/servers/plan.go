package servers

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

// kind is a query's kind: what both servers are asked, each in its own
// language.
type kind int

const (
	kWindow kind = iota // one symbol over 1 % of the span, rows as CSV
	kScan               // every row of one symbol, as CSV
	kBars               // 1-second OHLCV bars of one symbol, as CSV
	kLatest             // the newest row of every symbol, as CSV
	numKinds
)

func (k kind) String() string {
	return [...]string{"window", "scan", "bars", "latest"}[k]
}

// barWidth is the bars' bucket width in ns: 1 s.
const barWidth int64 = 1_000_000_000

// query is one query of the plan with the answer it must get.
type query struct {
	kind     kind
	sym      int   // the symbol's index (every symbol for kLatest)
	from, to int64 // kWindow: From <= ts < To
	want     suite.Answer
}

// plan is the queries of a run: for each kind, reps queries while the
// servers run and reps after restarts. Windows are at random symbols and
// places (a fixed seed); scans and bars ask for the symbols whose tick
// count is nearest 1 % of the data (about N/100 rows), so that the
// repetitions read about the same amount.
type plan struct {
	running [numKinds][]query
	cold    [numKinds][]query
}

// maxReps bounds the repetitions: scans and bars need that many symbols
// near 1 % of the data.
const maxReps = 30

// newPlan draws the plan for d from the fixed seed.
func newPlan(d *suite.Data, reps, coldReps int) (*plan, error) {
	if reps < 1 || coldReps < 0 || reps > maxReps || coldReps > maxReps {
		return nil, fmt.Errorf("servers: %d repetitions, %d after restarts: want 1 to %d and 0 to %d", reps, coldReps, maxReps, maxReps)
	}
	rng := rand.New(rand.NewPCG(suite.Seed, 23))
	// Symbols by distance of their count from 1 % of the data.
	near := make([]int, len(d.Symbols))
	for i := range near {
		near[i] = i
	}
	one := len(d.Ticks) / 100
	dist := func(s int) int { return max(d.SymCount(s)-one, one-d.SymCount(s)) }
	slices.SortStableFunc(near, func(a, b int) int { return cmp.Compare(dist(a), dist(b)) })

	first, last := d.First(), d.Last()
	width := max((last-first)/100, 1)
	window := func() query {
		sym := rng.IntN(len(d.Symbols))
		from := first
		if span := last - first - width; span > 0 {
			from += rng.Int64N(span)
		}
		return query{kind: kWindow, sym: sym, from: from, to: from + width, want: d.Expect(sym, from, from+width)}
	}
	whole := func(k kind, sym int) query {
		return query{kind: k, sym: sym, want: d.Expect(sym, minTs, maxTs)}
	}
	p := &plan{}
	for i := range reps {
		p.running[kWindow] = append(p.running[kWindow], window())
		p.running[kScan] = append(p.running[kScan], whole(kScan, near[i]))
		p.running[kBars] = append(p.running[kBars], whole(kBars, near[i]))
		p.running[kLatest] = append(p.running[kLatest], query{kind: kLatest, sym: suite.AllSymbols})
	}
	// After restarts: other places, and the scans' symbols in another
	// order than the bars', although every query there runs on freshly
	// restarted servers with evicted files.
	for i := range coldReps {
		p.cold[kWindow] = append(p.cold[kWindow], window())
		p.cold[kScan] = append(p.cold[kScan], whole(kScan, near[i]))
		p.cold[kBars] = append(p.cold[kBars], whole(kBars, near[coldReps-1-i]))
		p.cold[kLatest] = append(p.cold[kLatest], query{kind: kLatest, sym: suite.AllSymbols})
	}
	return p, nil
}

// minTs and maxTs bound every timestamp: a whole-span query.
const (
	minTs = -1 << 63
	maxTs = 1<<63 - 1
)

// bar is one expected OHLCV bar. Open and close come from the first and
// last ticks of the bucket in arrival order; a server may break a tie of
// equal timestamps otherwise (ClickHouse's argMin and argMax over ts do),
// so opens and closes lists every price at the bucket's first and last
// timestamps.
type bar struct {
	ts            int64
	high, low     float64
	volume, count int64
	firstTs       int64
	lastTs        int64
	opens, closes []float64
}

// expectBars is sym's 1-second bars in ts order.
func expectBars(d *suite.Data, sym int) []bar {
	var bars []bar
	for i := range d.Ticks {
		t := &d.Ticks[i]
		if t.Sym != sym {
			continue
		}
		b0 := floorDiv(t.Ts, barWidth) * barWidth
		if len(bars) == 0 || bars[len(bars)-1].ts != b0 {
			bars = append(bars, bar{ts: b0, high: t.Price, low: t.Price, firstTs: t.Ts})
		}
		b := &bars[len(bars)-1]
		b.high, b.low = max(b.high, t.Price), min(b.low, t.Price)
		b.volume += t.Size
		b.count++
		if t.Ts == b.firstTs {
			b.opens = append(b.opens, t.Price)
		}
		if t.Ts != b.lastTs {
			b.lastTs, b.closes = t.Ts, b.closes[:0]
		}
		b.closes = append(b.closes, t.Price)
	}
	return bars
}

// floorDiv is a / b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// latest is one symbol's expected newest row: its last timestamp, and the
// (price, size) of every tick of that symbol at that timestamp, since a
// server may break that tie otherwise than by arrival.
type latest struct {
	ts    int64
	price []float64
	size  []int64
}

// expectLatest is every symbol's newest row, indexed by symbol (ts 0 and
// no rows for a symbol without ticks).
func expectLatest(d *suite.Data) []latest {
	l := make([]latest, len(d.Symbols))
	for i := range d.Ticks {
		t := &d.Ticks[i]
		x := &l[t.Sym]
		if len(x.price) == 0 || t.Ts != x.ts {
			x.ts, x.price, x.size = t.Ts, x.price[:0], x.size[:0]
		}
		x.price = append(x.price, t.Price)
		x.size = append(x.size, t.Size)
	}
	return l
}
