package mmap

import (
	"io"

	"golang.org/x/sys/unix"
)

// FD is an open read-only file: a bare descriptor on Linux (fd_other.go
// uses an *os.File).
type FD = int

// OpenFD opens path read-only as a bare descriptor (O_CLOEXEC): no
// *os.File, so none of its poller registration and flag calls, which cost
// a system call each on a path that opens a file per query.
func OpenFD(path string) (FD, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// PreadFull reads len(b) bytes of fd at off (io.ErrUnexpectedEOF if the
// file ends first).
func PreadFull(fd FD, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pread(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// CloseFD closes a descriptor from OpenFD.
func CloseFD(fd FD) error { return unix.Close(fd) }
