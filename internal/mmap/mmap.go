package mmap

import (
	"sync/atomic"
	"unsafe"
)

// This file is the package's only user of unsafe and sync/atomic: every
// access to a shared word of a mapping goes through the helpers below, so the
// ordering rules can be reviewed in one place.
//
// Mapped words are 8-byte aligned (mappings are page-aligned and every word
// offset in docs/FORMAT.md is a multiple of 8). On amd64 and arm64 an aligned
// 8-byte plain load or store is single-copy atomic; LoadAcquire64 and
// StoreRelease64 add the ordering.

func word(b []byte, off int) *uint64 {
	_ = b[off+7]
	return (*uint64)(unsafe.Pointer(&b[off]))
}

// LoadAcquire64 loads the little-endian word at b[off:]: later loads are not
// reordered before it. Readers use it for published counters.
func LoadAcquire64(b []byte, off int) uint64 { return atomic.LoadUint64(word(b, off)) }

// StoreRelease64 stores v at b[off:]: earlier stores (row bytes, entries) are
// visible to any reader that observes v through LoadAcquire64.
func StoreRelease64(b []byte, off int, v uint64) { atomic.StoreUint64(word(b, off), v) }

// Words views a mapped region as uint64 words (len(b)/8 of them). The region
// must be 8-byte aligned. Plain stores through it are published later by a
// StoreRelease64; plain loads through it are only made after a LoadAcquire64.
func Words(b []byte) []uint64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// AddRelease64 adds d to the word at b[off:] atomically and returns the new
// value: for a counter more than one goroutine of the writer bumps.
func AddRelease64(b []byte, off int, d uint64) uint64 { return atomic.AddUint64(word(b, off), d) }

// OrRelease64 sets the bits of v in the 8-byte word at b[off:] atomically
// (b's goroutines may each set bits of their own) and returns the old
// value.
func OrRelease64(b []byte, off int, v uint64) uint64 { return atomic.OrUint64(word(b, off), v) }

// Slice views b, page-aligned memory of MapAnon, as a slice of T (len(b)
// / size of T of them), for arrays of fixed-size structs kept off the Go
// heap (in huge pages, AdviseHuge). T must hold no pointers: the
// collector does not see this memory.
func Slice[T any](b []byte) []T {
	var t T
	n := len(b) / int(unsafe.Sizeof(t))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// Prefetch asks the CPU to bring the cache line holding s[i] into its
// caches, without waiting for it and without faulting, so that a later
// load or store of it does not wait on memory: at a million symbols a
// row's symbol slot, postings cursor and postings line are each a cache
// miss, which the writer starts a few rows ahead (writer.Ahead) so they
// overlap. i need not be in range (a hint; nothing is read): an
// out-of-range i only wastes the prefetch.
func Prefetch[T any](s []T, i uint64) {
	var t T
	prefetch(uintptr(unsafe.Pointer(unsafe.SliceData(s))) + uintptr(i)*unsafe.Sizeof(t))
}

// Touch reads a word of every 4 KiB page of b. On a virtual machine
// that shadows the guest's page tables (the reference VM), a page that
// has just been mapped costs about 8 µs on its first access, from
// whatever thread, on top of its fault (PopulateWrite spares that): the
// threads that map memory ahead of the writer (its preparer: live
// slots, index files) touch it too, so that the writer's first store
// into each page costs what a cached access costs (measured: 8.3 µs a
// page on the writer untouched, 40 ns touched by another thread on
// another CPU). The loads are atomic so that the compiler keeps them;
// they change nothing, so b may be written meanwhile.
func Touch(b []byte) {
	if len(b) < 4 {
		return
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	off := int((4096 - p%4096) % 4096) // the first page boundary in b
	if off >= len(b) {
		off = 0 // (b within one page: its first word)
	}
	off &^= 3
	for ; off+4 <= len(b); off += 4096 {
		atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[off])))
	}
}
