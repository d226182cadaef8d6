//go:build !linux

package mmap

import (
	"io"
	"os"
)

// FD is an open read-only file: an *os.File off Linux (fd_linux.go uses a
// bare descriptor).
type FD = *os.File

// OpenFD opens path read-only.
func OpenFD(path string) (FD, error) { return os.Open(path) }

// PreadFull reads len(b) bytes of fd at off (io.ErrUnexpectedEOF if the
// file ends first).
func PreadFull(fd FD, b []byte, off int64) error {
	_, err := fd.ReadAt(b, off)
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// CloseFD closes a file from OpenFD.
func CloseFD(fd FD) error { return fd.Close() }
