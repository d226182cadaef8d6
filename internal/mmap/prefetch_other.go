//go:build !amd64 && !arm64

package mmap

// prefetch is a no-op where there is no prefetch instruction here.
func prefetch(addr uintptr) {}
