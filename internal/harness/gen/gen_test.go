package gen

import (
	"math"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

func TestDeterministic(t *testing.T) {
	const n = 50_000
	a, b := New(Options{Seed: 7}), New(Options{Seed: 7})
	c := New(Options{Seed: 8})
	same := 0
	for i := 0; i < n; i++ {
		x, y, z := a.Next(), b.Next(), c.Next()
		if x != y {
			t.Fatalf("tick %d: seed 7 gave %+v then %+v", i, x, y)
		}
		if x == z {
			same++
		}
	}
	if same > n/100 {
		t.Errorf("seeds 7 and 8 agree on %d of %d ticks", same, n)
	}
}

func TestTicks(t *testing.T) {
	const n = 200_000
	g := New(Options{Seed: 1, Symbols: 100})
	counts := make([]int, len(g.Symbols()))
	first := g.Next()
	if first.Ts < DefaultStart {
		t.Fatalf("first ts %d before the start %d", first.Ts, DefaultStart)
	}
	prev, equal := first, 0
	counts[first.Sym]++
	for i := 1; i < n; i++ {
		k := g.Next()
		if k.Ts < prev.Ts {
			t.Fatalf("tick %d: ts %d after %d", i, k.Ts, prev.Ts)
		}
		if k.Ts == prev.Ts {
			equal++
		}
		if cents := k.Price * 100; k.Price < 0.01 || math.Abs(cents-math.Round(cents)) > 1e-6 {
			t.Fatalf("tick %d: price %v is not a positive whole number of cents", i, k.Price)
		}
		if k.Size < 100 || k.Size > 10_000 || k.Size%100 != 0 {
			t.Fatalf("tick %d: size %d is not 1..100 round lots", i, k.Size)
		}
		counts[k.Sym]++
		prev = k
	}
	// Prices stay near where they started: the first symbol is SPY at $470.
	if spy := g.mid[0]; spy < 440 || spy > 500 {
		t.Errorf("SPY drifted to %.2f after %d ticks", spy, n)
	}
	// About 1 µs apart on average, with some equal timestamps.
	if mean := float64(prev.Ts-first.Ts) / (n - 1); mean < 800 || mean > 1200 {
		t.Errorf("mean gap %.0f ns, want about 1000", mean)
	}
	if equal < n/32 || equal > n/8 {
		t.Errorf("%d of %d ticks share the previous ts, want about 1 in 16", equal, n)
	}
	// Every symbol trades; the busiest dominates but does not swamp.
	lo, hi := n, 0
	for s, c := range counts {
		if c == 0 {
			t.Errorf("symbol %d (%s) never traded", s, g.Symbols()[s])
		}
		lo, hi = min(lo, c), max(hi, c)
	}
	if hi > n/5 || lo < n/1000 || hi < 10*lo {
		t.Errorf("activity: busiest %d, quietest %d of %d ticks", hi, lo, n)
	}
}

func TestDefaultStart(t *testing.T) {
	if want := time.Date(2024, 1, 2, 14, 30, 0, 0, time.UTC).UnixNano(); DefaultStart != want {
		t.Errorf("DefaultStart = %d, want %d", DefaultStart, want)
	}
}

func TestSymbols(t *testing.T) {
	for _, n := range []int{1, 100, 101, 5000} {
		names := Symbols(n)
		if len(names) != n {
			t.Fatalf("Symbols(%d) gave %d names", n, len(names))
		}
		seen := map[string]bool{}
		for _, s := range names {
			if seen[s] || s == "" || len(s) > 5 {
				t.Fatalf("Symbols(%d): bad or repeated name %q", n, s)
			}
			seen[s] = true
		}
	}
	if got := Symbols(3); got[0] != "SPY" || got[2] != "AAPL" {
		t.Errorf("Symbols(3) = %v", got)
	}
}

func TestNextAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	g := New(Options{Seed: 1})
	if n := testing.AllocsPerRun(1000, func() { _ = g.Next() }); n != 0 {
		t.Errorf("Next allocates %v times", n)
	}
}

func BenchmarkNext(b *testing.B) {
	g := New(Options{Seed: 1})
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Next()
	}
}
