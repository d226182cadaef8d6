package codec_test

import (
	"testing"

	"github.com/tickdb/tickdb/internal/codec"
)

// maxBytesPerRow is the design target for a compressed tick block (ts,
// sym, price, size): the codecs must leave room for it, so this fails if a
// change makes them worse on realistic data.
const maxBytesPerRow = 5.0

// encodedBlock is the tick block, each column encoded, raw and compressed.
type encodedBlock struct {
	name     []string
	raw, zst [][]byte
}

func encodeBlock(c ticks, s *codec.State, level codec.Level) encodedBlock {
	raw := [][]byte{
		codec.AppendTs(nil, c.ts),
		codec.AppendU32(nil, c.sym),
		codec.AppendF64(nil, c.price, c.sym, s),
		codec.AppendI64(nil, c.size, c.sym, s),
	}
	e := encodedBlock{name: []string{"ts", "sym", "price", "size"}, raw: raw}
	for _, b := range raw {
		e.zst = append(e.zst, codec.Compress(nil, b, level))
	}
	return e
}

// TestTickBlock encodes a 64k-row block of realistic ticks, checks the
// modes chosen, logs bytes per row per column (go test -v -run TickBlock),
// and holds the total to the target at every level.
func TestTickBlock(t *testing.T) {
	c := genTicks(blockRows, 1)
	var s codec.State
	e := encodeBlock(c, &s, codec.LevelFastest)
	// Modes: ts as deltas (jitter and repeats), prices as per-symbol cent
	// deltas, sizes as raw lots (g = 100).
	count := 3 // tag, then 65536 as a three-byte varint
	if got := e.raw[0][0]; got != tagTsDelta {
		t.Errorf("ts: tag %#x, want delta %#x", got, tagTsDelta)
	}
	if got, k := e.raw[2][0], e.raw[2][1+count]; got != tagF64DecDelta || k != 2 {
		t.Errorf("price: tag %#x scale %d, want decimal delta %#x with scale 2", got, k, tagF64DecDelta)
	}
	if got, g := e.raw[3][0], e.raw[3][1+count]; got != tagI64Raw || g != 100 {
		t.Errorf("size: tag %#x divisor %d, want raw %#x with divisor 100", got, g, tagI64Raw)
	}
	for _, level := range []codec.Level{codec.LevelFastest, codec.LevelDefault, codec.LevelBetter, codec.LevelBest} {
		e := encodeBlock(c, &s, level)
		var raw, zst int
		for i := range e.raw {
			raw += len(e.raw[i])
			zst += len(e.zst[i])
			t.Logf("level %d %-5s %5.3f bytes/row raw, %5.3f after zstd", level, e.name[i],
				float64(len(e.raw[i]))/blockRows, float64(len(e.zst[i]))/blockRows)
		}
		perRow := float64(zst) / blockRows
		t.Logf("level %d total %5.3f bytes/row raw, %5.3f after zstd", level, float64(raw)/blockRows, perRow)
		if perRow > maxBytesPerRow {
			t.Errorf("level %d: %.3f bytes/row after zstd, want at most %.1f", level, perRow, maxBytesPerRow)
		}
		// And the block comes back.
		var got ticks
		var err error
		var buf []byte
		for i, z := range e.zst {
			if buf, err = codec.Decompress(buf[:0], z, 16<<20); err != nil {
				t.Fatalf("level %d %s: %v", level, e.name[i], err)
			}
			if string(buf) != string(e.raw[i]) {
				t.Fatalf("level %d %s: Decompress differs", level, e.name[i])
			}
			switch i {
			case 0:
				got.ts, _, err = codec.DecodeTs(nil, buf, blockRows)
			case 1:
				got.sym, _, err = codec.DecodeU32(nil, buf, blockRows)
			case 2:
				got.price, _, err = codec.DecodeF64(nil, buf, blockRows, got.sym, &s)
			case 3:
				got.size, _, err = codec.DecodeI64(nil, buf, blockRows, got.sym, &s)
			}
			if err != nil {
				t.Fatalf("level %d %s: %v", level, e.name[i], err)
			}
		}
		if firstDiff(got.ts, c.ts) >= 0 || firstDiff(got.sym, c.sym) >= 0 || sameF64(got.price, c.price) >= 0 || firstDiff(got.size, c.size) >= 0 {
			t.Fatalf("level %d: the block does not round-trip", level)
		}
	}
}
