package peers

import (
	"fmt"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

// All returns the peers in report order: tstorage, pebble, bufio.
func All() []suite.Peer { return []suite.Peer{TStorage, Pebble, Bufio} }

// symbols returns the symbol indexes [lo, hi) that q asks for among n
// symbols.
func symbols(q suite.Query, n int) (lo, hi int, err error) {
	if q.Sym == suite.AllSymbols {
		return 0, n, nil
	}
	if q.Sym < 0 || q.Sym >= n {
		return 0, 0, fmt.Errorf("peers: query symbol %d, want 0 to %d or AllSymbols", q.Sym, n-1)
	}
	return q.Sym, q.Sym + 1, nil
}
