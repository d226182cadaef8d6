package codec_test

import (
	"fmt"

	"github.com/tickdb/tickdb/internal/codec"
)

// Example encodes the columns of a few ticks, compresses one, and reads it
// back. The sym column is decoded first: the price column's deltas are per
// symbol, so its decoder needs the keys.
func Example() {
	ts := []int64{1704205800000000000, 1704205800000001000, 1704205800000001000}
	sym := []uint32{0, 1, 0}
	price := []float64{470.01, 185.50, 470.02}
	size := []int64{100, 300, 200}

	var s codec.State // reused by every keyed call
	cols := [][]byte{
		codec.AppendTs(nil, ts),
		codec.AppendU32(nil, sym),
		codec.AppendF64(nil, price, sym, &s),
		codec.AppendI64(nil, size, sym, &s),
	}
	z := codec.Compress(nil, cols[2], codec.LevelDefault)

	raw, err := codec.Decompress(nil, z, 1<<20)
	if err != nil {
		fmt.Println(err)
		return
	}
	syms, _, _ := codec.DecodeU32(nil, cols[1], len(ts))
	prices, used, err := codec.DecodeF64(nil, raw, len(ts), syms, &s)
	fmt.Println(prices, used == len(raw), err)
	// Output: [470.01 185.5 470.02] true <nil>
}
