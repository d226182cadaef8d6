package codec

import (
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Level is a zstd compression level.
type Level int

// The levels of Compress, fastest first. They are klauspost/compress's
// four (roughly zstd's 1, 3, 7 and 11); any of them decodes with
// Decompress.
const (
	LevelFastest Level = 1
	LevelDefault Level = 2
	LevelBetter  Level = 3
	LevelBest    Level = 4
)

// MaxDecompressed is the most bytes one Decompress call ever produces,
// whatever maxLen its caller passes: a backstop well above any column block
// (64k rows × 10 bytes).
const MaxDecompressed = 256 << 20

// The encoders (one per level, each made on first use) and the decoder are
// shared by every caller in the process. This is the one piece of package
// state, kept despite the style guide's rule against it because it is
// immutable after construction and holds only pooled scratch: EncodeAll
// and DecodeAll are safe for concurrent use, start no goroutines and give
// the same bytes whoever calls them, so sharing is invisible to callers,
// while one set per table would cost megabytes of hash tables each.
var (
	encoders = [...]func() (*zstd.Encoder, error){
		LevelFastest: sync.OnceValues(func() (*zstd.Encoder, error) { return newEncoder(zstd.SpeedFastest) }),
		LevelDefault: sync.OnceValues(func() (*zstd.Encoder, error) { return newEncoder(zstd.SpeedDefault) }),
		LevelBetter:  sync.OnceValues(func() (*zstd.Encoder, error) { return newEncoder(zstd.SpeedBetterCompression) }),
		LevelBest:    sync.OnceValues(func() (*zstd.Encoder, error) { return newEncoder(zstd.SpeedBestCompression) }),
	}
	decoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0), // GOMAXPROCS concurrent DecodeAll calls
			zstd.WithDecoderMaxMemory(MaxDecompressed),
			zstd.WithDecoderMaxWindow(MaxDecompressed),
			zstd.WithDecodeAllCapLimit(true), // never write past cap(dst): Decompress sets it from maxLen
		)
	})
)

func newEncoder(l zstd.EncoderLevel) (*zstd.Encoder, error) {
	return zstd.NewWriter(nil,
		zstd.WithEncoderLevel(l),
		zstd.WithEncoderConcurrency(0), // GOMAXPROCS concurrent EncodeAll calls
		zstd.WithEncoderCRC(true),      // the column codecs carry no checksum of their own
		zstd.WithZeroFrames(true),      // an empty src still makes a frame, so every block is one
		// Entropy-code literals even when a block has no matches: varint
		// columns (timestamps) are all literals, with skewed byte
		// frequencies that Huffman coding shrinks by a quarter.
		zstd.WithAllLitEntropyCompression(true),
	)
}

// Compress appends src compressed as one zstd frame (with its content size
// and an xxhash64 checksum) to dst and returns the extended slice. Levels
// outside LevelFastest..LevelBest are clamped to that range. It is safe for
// concurrent use. Once each of the level's GOMAXPROCS pooled encoders has
// compressed a block of this size, it allocates nothing when dst has room
// for the frame (at most len(src) + 18, plus 3 bytes per started 128 KiB).
func Compress(dst, src []byte, level Level) []byte {
	level = min(max(level, LevelFastest), LevelBest)
	enc, err := encoders[level]()
	if err != nil {
		// The options are constants; this is a bug, not a runtime
		// condition a caller could handle.
		panic(fmt.Sprintf("codec: zstd encoder options rejected: %v", err))
	}
	return enc.EncodeAll(src, dst)
}

// PrepareDecoder starts setting up the process's zstd decoder in a
// goroutine of its own, once, unless it is set up already: a reader that
// opens compressed data calls it, so that the set-up (its tables and
// buffers: about 0.5 ms and 30 page faults on the reference machine)
// overlaps the reads of its open and first query instead of adding to the
// query. A Decompress that comes first waits for it, or does it.
func PrepareDecoder() { prepare() }

// prepare starts the decoder's set-up once: package state beside the
// decoder, for the same reason.
var prepare = sync.OnceFunc(func() { go decoder() })

// Decompress appends the content of the zstd frame src to dst and returns
// the extended slice. It fails with an error wrapping ErrCorrupt, leaving
// dst's length unchanged, when src is not a well-formed frame, its checksum
// does not match, or its content would exceed maxLen bytes (or
// MaxDecompressed): a hostile frame cannot make it allocate more than that.
// It is safe for concurrent use and, once warm, allocates nothing when dst
// has room for the content.
func Decompress(dst, src []byte, maxLen int) ([]byte, error) {
	dec, err := decoder()
	if err != nil {
		panic(fmt.Sprintf("codec: zstd decoder options rejected: %v", err))
	}
	maxLen = min(max(maxLen, 0), MaxDecompressed)
	if len(src) == 0 {
		return dst, corrupt("zstd", 0, "empty input")
	}
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return dst, &CorruptError{Codec: "zstd", Reason: "bad frame header", Err: err}
	}
	if h.Skippable {
		return dst, corrupt("zstd", 0, "skippable frame")
	}
	want := maxLen
	if h.HasFCS {
		if h.FrameContentSize > uint64(maxLen) {
			return dst, corrupt("zstd", 0, "frame holds %d bytes, max %d", h.FrameContentSize, maxLen)
		}
		want = int(h.FrameContentSize)
	}
	if cap(dst)-len(dst) < want {
		dst = slices.Grow(dst, want)
	}
	lim := min(cap(dst)-len(dst), maxLen)
	out, err := dec.DecodeAll(src, dst[:len(dst):len(dst)+lim])
	if err != nil {
		return dst, &CorruptError{Codec: "zstd", Reason: "decode", Err: err}
	}
	return out, nil
}
