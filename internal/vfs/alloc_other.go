//go:build !unix

package vfs

import "io/fs"

// Allocated is the bytes of storage file fi holds; without st_blocks here,
// its size.
func Allocated(fi fs.FileInfo) int64 { return fi.Size() }
