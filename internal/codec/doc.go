// Package codec encodes the columns of compressed tick blocks: one block
// holds up to a few tens of thousands of rows, and each column of it is
// encoded by the codec of its type, then compressed with zstd.
//
//	column type  codec                    what it exploits
//	ts           AppendTs / DecodeTs      timestamps a few µs apart: delta or delta-of-delta
//	sym          AppendU32 / DecodeU32    few distinct ids: bit-packed at the largest id's width
//	f64          AppendF64 / DecodeF64    prices in whole cents: per-symbol deltas of scaled integers
//	i64          AppendI64 / DecodeI64    sizes in round lots: values or deltas over their common divisor
//	bool         AppendBool / DecodeBool  one bit each
//	(any)        Compress / Decompress    zstd over one encoded column
//
// Every encoder appends to a caller's buffer and every decoder appends to a
// caller's slice, so with reused buffers (and, for f64 and i64, a reused
// *State and keys below 65536) no call allocates. Each encoded block
// starts with a tag byte naming its codec and mode and a varint value
// count, and every decoder checks both against what the caller expects, so
// a column handed to the wrong decoder, or a block of the wrong length, is
// an error and not garbage. The byte layouts are on-disk contract, for docs/FORMAT.md:
// format.go lists the tags, and TestGolden pins every layout.
//
// # Concurrency
//
// The Append and Decode functions share nothing; a *State is scratch for
// one call at a time, so use one per goroutine. Compress and Decompress are
// safe for concurrent use: they share one zstd decoder and one encoder per
// level, made on first use, each serving up to GOMAXPROCS calls at a time.
// Returned slices are the caller's dst, extended; nothing is retained.
//
// # Durability
//
// codec does no I/O. The column codecs carry no checksum: integrity comes
// from the xxhash64 checksum zstd puts in every frame Compress writes,
// which Decompress verifies.
//
// # Caveats
//
// Decoders reject truncated input, bad varints (longer than 10 bytes,
// overflowing, or not in shortest form), unknown tags and nonzero padding
// bits with an error wrapping ErrCorrupt; they never panic or read past
// src. Bytes after a block are not an error: each Decode returns how many
// bytes its block used, and the caller decides. A decoded block is only as
// right as its bytes: flipped bits inside varints give wrong values, which
// the zstd checksum is there to catch.
//
// The f64 decimal mode stores float64(m)/10^k; a value in it round-trips bit
// for bit because the encoder checks exactly that before choosing the mode.
package codec
