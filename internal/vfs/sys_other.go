//go:build !linux

package vfs

import "os"

// dsyncFlags are the open flags that make every write durable on return.
const dsyncFlags = os.O_SYNC

// extent gives the whole rest of the file: no SEEK_DATA here.
func extent(f *os.File, off, size int64) (data, hole int64, ok bool) {
	return off, size, true
}

// reopenRead opens the file of f again, read-only, by its name.
func reopenRead(f *os.File) (*os.File, error) { return os.Open(f.Name()) }
