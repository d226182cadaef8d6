//go:build amd64 || arm64

package mmap

// prefetch asks the CPU to bring the cache line at addr into its caches
// (PREFETCHT0, PRFM PLDL1KEEP) and returns at once. It never faults: an
// address that is not mapped, or whose page is not present, is ignored.
//
//go:noescape
func prefetch(addr uintptr)
