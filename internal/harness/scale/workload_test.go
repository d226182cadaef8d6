//go:build linux

package scale

import (
	"bytes"
	"testing"

	"github.com/tickdb/tickdb/lineproto"
)

// TestPlan: every symbol is named once first, the rows are as many as
// asked, the same seed gives the same plan.
func TestPlan(t *testing.T) {
	for _, mix := range []Mix{Uniform, Zipf} {
		w := Workload{Symbols: 1000, Rows: 20_000, Mix: mix, Seed: 1}
		p := w.Plan()
		if len(p) != w.Rows {
			t.Fatalf("%s: %d rows, want %d", mix, len(p), w.Rows)
		}
		seen := make([]bool, w.Symbols)
		for _, s := range p[:w.Symbols] {
			if seen[s] {
				t.Fatalf("%s: symbol %d named twice among the first %d rows", mix, s, w.Symbols)
			}
			seen[s] = true
		}
		for _, s := range p {
			if int(s) >= w.Symbols {
				t.Fatalf("%s: symbol %d of %d", mix, s, w.Symbols)
			}
		}
		q := w.Plan()
		for i := range p {
			if p[i] != q[i] {
				t.Fatalf("%s: plans differ at row %d", mix, i)
			}
		}
	}
}

// TestZipfShape: the Zipf mix is skewed as its doc says (the busiest
// symbol a few percent of the rows, most symbols nearly idle), the
// uniform one is not.
func TestZipfShape(t *testing.T) {
	const n, rows = 100_000, 1_000_000
	counts := func(mix Mix) []int {
		c := make([]int, n)
		for _, s := range (Workload{Symbols: n, Rows: rows, Mix: mix, Seed: 1}).Plan()[n:] {
			c[s]++
		}
		return c
	}
	z := counts(Zipf)
	top, idle := 0, 0
	for _, k := range z {
		top = max(top, k)
		if k < 2 {
			idle++
		}
	}
	if top < rows/50 || idle < n/2 {
		t.Errorf("zipf: busiest symbol %d rows of %d, %d of %d symbols with fewer than 2", top, rows, idle, n)
	}
	u := counts(Uniform)
	top = 0
	for _, k := range u {
		top = max(top, k)
	}
	if top > 4*rows/n {
		t.Errorf("uniform: busiest symbol %d rows, mean %d", top, rows/n)
	}
}

// TestLines: the lines parse as line protocol, one row each, with the
// plan's symbol names, distinct for distinct symbols.
func TestLines(t *testing.T) {
	w := Workload{Table: "opt", Symbols: 3000, Rows: 3000, Seed: 2}
	plan := w.Plan()
	b, err := w.Lines(plan)
	if err != nil {
		t.Fatal(err)
	}
	var p lineproto.Parser
	var l lineproto.Line
	names := map[string]bool{}
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if ok, err := p.Parse(line, &l); !ok || err != nil {
			t.Fatalf("line %d %q: %v, %v", i, line, ok, err)
		}
		if string(l.Measurement) != "opt" || len(l.Tags) != 1 || len(l.Fields) != 2 || l.HasTs {
			t.Fatalf("line %d %q parses as %+v", i, line, &l)
		}
		want := string(OptionSymbol(nil, int(plan[i])))
		if got := string(l.Tags[0].Value); got != want {
			t.Fatalf("line %d: symbol %q, want %q", i, got, want)
		}
		names[want] = true
	}
	if len(names) != w.Symbols {
		t.Fatalf("%d distinct names for %d symbols", len(names), w.Symbols)
	}
}

func TestParseCount(t *testing.T) {
	for s, want := range map[string]int{"100": 100, "10k": 10_000, "1M": 1_000_000, "1.5M": 1_500_000} {
		if got, err := ParseCount(s); err != nil || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "-3", "1G"} {
		if _, err := ParseCount(s); err == nil {
			t.Errorf("ParseCount(%q) accepted", s)
		}
	}
}
