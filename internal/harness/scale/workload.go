//go:build linux

package scale

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/tickdb/tickdb/lineproto"
)

// Mix is how a workload's rows are spread over its symbols.
type Mix string

// The mixes. Both name every symbol once first (in a shuffled order), so
// that a run has exactly the symbols it asks for; the rows after that are
// drawn from the mix.
const (
	// Uniform draws every row's symbol uniformly.
	Uniform Mix = "uniform"
	// Zipf draws symbol of rank k (in a shuffled order) with weight
	// 1/(k+1)^ZipfS: a few symbols take most rows, as a few contracts
	// of an options universe trade most of the day.
	Zipf Mix = "zipf"
)

// ZipfS is the exponent of the Zipf mix. At 1.1, over a million symbols
// and 9 million rows after their first ones, the busiest symbol takes 12 %
// of those rows, the busiest 1,000 69 %, and 73 % of the symbols get
// fewer than 2 (TestZipfShape checks the shape at a smaller size).
const ZipfS = 1.1

// ParseMix parses a mix name.
func ParseMix(s string) (Mix, error) {
	switch Mix(s) {
	case Uniform, Zipf:
		return Mix(s), nil
	}
	return "", fmt.Errorf("scale: mix %q: want %s or %s", s, Uniform, Zipf)
}

// Workload is one scale workload: rows of a tick table spread over
// symbols by a mix, sent as line protocol.
type Workload struct {
	Table   string
	Symbols int
	Rows    int
	Mix     Mix
	Seed    uint64
}

// Name is the workload's label in reports, e.g. "1M symbols zipf".
func (w Workload) Name() string {
	if w.Symbols <= 100 {
		return fmt.Sprintf("%s symbols", count(int64(w.Symbols)))
	}
	return fmt.Sprintf("%s symbols %s", count(int64(w.Symbols)), w.Mix)
}

// OptionSymbol is the name of symbol i of a workload, shaped like an OCC
// option symbol (root, expiry yymmdd, C or P, strike × 1000 in 8 digits,
// e.g. "QBCD261218C00152500"): 1 to 5 letters of root, 18 to 22 bytes in
// all. Distinct for distinct i below 2^31.
func OptionSymbol(dst []byte, i int) []byte {
	v := uint64(i)
	// The strike and right vary fastest, then the expiry, then the root,
	// as a chain of strikes per expiry per underlying.
	strike := v % 400
	v /= 400
	right := byte('C')
	if v%2 == 1 {
		right = 'P'
	}
	v /= 2
	exp := v % 24
	v /= 24
	// Root: base-26 letters, at least one.
	var root [8]byte
	n := 0
	for {
		root[n] = byte('A' + v%26)
		n++
		v /= 26
		if v == 0 {
			break
		}
	}
	for j := n - 1; j >= 0; j-- {
		dst = append(dst, root[j])
	}
	yy, mm := 26+exp/12, 1+exp%12
	dst = append(dst, byte('0'+yy/10), byte('0'+yy%10), byte('0'+mm/10), byte('0'+mm%10), '1', '8', right)
	k := 5000 + strike*2500 // 5.000 up, in 2.50 steps
	s := strconv.AppendUint(nil, k, 10)
	for range 8 - len(s) {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// Plan is a workload's row order: the symbol (index) of every row.
func (w Workload) Plan() []uint32 {
	r := rand.New(rand.NewPCG(w.Seed, 0x5ca1e))
	n := w.Symbols
	perm := make([]uint32, n)
	for i := range perm {
		perm[i] = uint32(i)
	}
	r.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	plan := make([]uint32, 0, max(w.Rows, n))
	plan = append(plan, perm...) // every symbol once
	var z *rand.Zipf
	if w.Mix == Zipf && n > 1 {
		z = rand.NewZipf(r, ZipfS, 1, uint64(n-1))
	}
	for len(plan) < w.Rows {
		var k uint64
		if z != nil {
			k = z.Uint64()
		} else {
			k = r.Uint64N(uint64(n))
		}
		// Ranks are mapped through the permutation, so the busiest
		// symbols are not the first ones created.
		plan = append(plan, perm[k])
	}
	return plan
}

// Lines encodes the rows of plan as line protocol, without timestamps
// (the server stamps them, so the table never sees a late row):
// "<table>,sym=<S> price=<p>,size=<q>i". Prices and sizes are a
// deterministic function of the row.
func (w Workload) Lines(plan []uint32) ([]byte, error) {
	out := make([]byte, 0, len(plan)*56)
	var e lineproto.Encoder[[]byte]
	var name []byte
	table, sym, price, size := []byte(w.Table), []byte("sym"), []byte("price"), []byte("size")
	for i, s := range plan {
		name = OptionSymbol(name[:0], int(s))
		e.Begin(out, table)
		e.Tag(sym, name)
		h := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(s)
		e.Float(price, math.Round(float64(1+h%100000))/100)
		e.Int(size, int64(1+(h>>20)%50))
		var err error
		if out, err = e.EndNow(); err != nil {
			return nil, fmt.Errorf("scale: %w", err)
		}
	}
	return out, nil
}

// count prints n as 100, 10k, 1M, 1.5M.
func count(n int64) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		if n%1_000_000 == 0 {
			return strconv.FormatInt(n/1_000_000, 10) + "M"
		}
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.FormatInt(n/1000, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// ParseCount parses a count: digits, or with a k or M suffix (10M).
func ParseCount(s string) (int, error) {
	mul := 1
	switch {
	case strings.HasSuffix(s, "M"):
		mul, s = 1_000_000, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "k"):
		mul, s = 1000, strings.TrimSuffix(s, "k")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f*float64(mul) > math.MaxInt32*4 {
		return 0, fmt.Errorf("scale: count %q: want digits with an optional k or M", s)
	}
	return int(f * float64(mul)), nil
}
