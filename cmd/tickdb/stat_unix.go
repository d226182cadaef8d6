//go:build unix

package main

import (
	"errors"
	"io/fs"
	"syscall"
)

// allocated is the bytes of storage a file holds (st_blocks), which for
// a sparse or preallocated file differs from its size.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

// pidRunning reports whether process pid exists (signal 0; EPERM means it
// exists but belongs to another user).
func pidRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
