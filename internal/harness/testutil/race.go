//go:build race

package testutil

// Race is true when the race detector is on: allocation counts are not
// meaningful then, so zero-allocation tests skip.
const Race = true
