// Package mmap is tickdb's gateway to the operating system: shared and
// anonymous mappings and their advice (populate, will-need, huge pages,
// drop), msync, fallocate and hole punching, pread on a raw descriptor,
// fsync of a path, the boot id, and the acquire/release loads and stores
// on words of a shared mapping through which the writer publishes.
//
// # Platforms
//
// On Linux every call is there. Elsewhere (mmap_other.go) a table can only
// be read: mappings are read-only through github.com/edsrzf/mmap-go,
// page-cache advice is a no-op, and a write-side call returns
// store.ErrUnsupported.
//
// # Concurrency
//
// LoadAcquire64, StoreRelease64 and AddRelease64 need 8-byte aligned
// offsets into a mapping; aligned 8-byte loads and stores are single-copy
// atomic on amd64 and arm64, the architectures tickdb supports.
package mmap
