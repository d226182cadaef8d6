//go:build unix

package vfs

import (
	"io/fs"
	"syscall"
)

// Allocated is the bytes of storage file fi holds (st_blocks × 512): for a
// sparse or preallocated file, not its size.
func Allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
