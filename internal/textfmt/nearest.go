package textfmt

import (
	"slices"
	"strings"
)

// Nearest returns at most n of names closest to name, for a "did you
// mean" in an error: by edit distance (Levenshtein, over runes, case
// folded, so "aapl" finds "AAPL"), then in byte order; only names within
// a distance of max(2, a third of name's length) count, so a name
// with nothing like it gets none rather than n random ones. It reads
// every name once: O(len(names)), for error paths only.
func Nearest(name string, names []string, n int) []string {
	if n <= 0 {
		return nil
	}
	want := []rune(strings.ToLower(name))
	limit := max(2, len(want)/3)
	type cand struct {
		name string
		d    int
	}
	var best []cand
	var row []int
	for _, c := range names {
		if c == name {
			continue
		}
		r := []rune(strings.ToLower(c))
		if abs(len(r)-len(want)) > limit {
			continue // the distance is at least the difference in length
		}
		var d int
		d, row = distance(want, r, row)
		if d > limit {
			continue
		}
		best = append(best, cand{c, d})
	}
	slices.SortFunc(best, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, min(n, len(best)))
	for _, c := range best[:min(n, len(best))] {
		out = append(out, c.name)
	}
	return out
}

// distance is the Levenshtein distance of a and b, with row as scratch
// space (returned for reuse).
func distance(a, b []rune, row []int) (int, []int) {
	row = slices.Grow(row[:0], len(b)+1)[:len(b)+1]
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0] // row[i-1][j-1]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cur := row[j]
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			row[j] = min(row[j]+1, row[j-1]+1, prev+cost)
			prev = cur
		}
	}
	return row[len(b)], row
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
