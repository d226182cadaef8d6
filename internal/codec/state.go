package codec

import "slices"

// State is the reusable scratch of the keyed codecs (AppendI64, DecodeI64,
// AppendF64, DecodeF64): the previous value of each key, and work buffers
// of one block's length. Passing the same State to every call keeps those
// calls free of allocations once it has grown to the largest block and key
// seen. The zero State is ready to use; each call starts from a clean slate,
// so a State carries nothing from one block to the next.
//
// Keys below 65536 index a slice (8 bytes per key up to the largest key of
// the block, at most 512 KiB). A block with any larger key keeps all its
// keys in a map instead, which is slower and allocates while it grows; sym
// ids are dense from 0, so that only happens past 65536 symbols.
//
// A State is not safe for concurrent use: use one per goroutine.
type State struct {
	prev   []uint64          // previous value by key, for keys < len(prev)
	sparse map[uint32]uint64 // previous value by key, for blocks with a key >= denseKeys
	work   []int64           // deltas of one block
	ints   []int64           // the scaled integers of a decimal f64 block
}

// orNew returns s, or a fresh State when s is nil.
func (s *State) orNew() *State {
	if s == nil {
		return new(State)
	}
	return s
}

// begin prepares the per-key previous values for a block with the given
// keys, all zero. It returns the dense table to index by key, or nil when
// the block has a key too large for it and the sparse map (now empty) must
// be used.
func (s *State) begin(key []uint32) []uint64 {
	var hi uint32
	for _, k := range key {
		hi = max(hi, k)
	}
	if hi >= denseKeys {
		if s.sparse == nil {
			s.sparse = make(map[uint32]uint64)
		}
		clear(s.sparse)
		return nil
	}
	size := int(hi) + 1
	if len(s.prev) < size {
		s.prev = make([]uint64, min(max(size, 2*len(s.prev), 64), denseKeys))
		return s.prev[:size]
	}
	prev := s.prev[:size]
	if size <= len(key) {
		clear(prev)
	} else {
		for _, k := range key {
			prev[k] = 0
		}
	}
	return prev
}

// Reserve grows s's work buffers to blocks of n values and writes every
// page of them once (a caller that prepares its decode state ahead of
// its first block: see cseg.Scratch.Prepare).
func (s *State) Reserve(n int) {
	s.work = slices.Grow(s.work[:0], n)
	s.ints = slices.Grow(s.ints[:0], n)
	clear(s.work[:cap(s.work)])
	clear(s.ints[:cap(s.ints)])
}

// workBuf returns s.work resized to n values (contents undefined).
func (s *State) workBuf(n int) []int64 {
	s.work = slices.Grow(s.work[:0], n)[:n]
	return s.work
}

// intsBuf returns s.ints resized to n values (contents undefined).
func (s *State) intsBuf(n int) []int64 {
	s.ints = slices.Grow(s.ints[:0], n)[:n]
	return s.ints
}
