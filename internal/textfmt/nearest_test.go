package textfmt

import (
	"slices"
	"testing"
)

func TestNearest(t *testing.T) {
	names := []string{"AAPL", "AAPM", "MSFT", "GOOG", "GOOGL", "IBM", "BRK.A", "BRK.B"}
	for _, c := range []struct {
		name string
		n    int
		want []string
	}{
		{"AAPX", 3, []string{"AAPL", "AAPM"}},
		{"aapl", 3, []string{"AAPL", "AAPM"}}, // case folded: AAPL at 0
		{"GOG", 3, []string{"GOOG", "GOOGL"}},
		{"BRK", 1, []string{"BRK.A"}},            // n bounds the answer
		{"ZZZZZZZZ", 3, []string{}},              // nothing close
		{"MSFT", 3, []string{}},                  // the name itself is not its own neighbour
		{"IBN", 0, nil},                          // n 0: none
		{"BRK.C", 5, []string{"BRK.A", "BRK.B"}}, // ties in byte order
	} {
		got := Nearest(c.name, names, c.n)
		if !slices.Equal(got, c.want) {
			t.Errorf("Nearest(%q, %d) = %q, want %q", c.name, c.n, got, c.want)
		}
	}
}
