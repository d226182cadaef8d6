package vfs

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// dsyncFlags are the open flags that make every write durable on return.
const dsyncFlags = unix.O_DSYNC | unix.O_SYNC

// extent finds the first range of f holding data at or past off, [data,
// hole), within size; false when there is none. A file system without
// SEEK_DATA gives the whole rest of the file.
func extent(f *os.File, off, size int64) (data, hole int64, ok bool) {
	fd := int(f.Fd())
	data, err := unix.Seek(fd, off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return 0, 0, false
	}
	if err != nil {
		return off, size, true
	}
	if hole, err = unix.Seek(fd, data, unix.SEEK_HOLE); err != nil {
		hole = size
	}
	return data, hole, true
}

// reopenRead opens the file of f again, read-only, through /proc (the
// same inode, whatever its name is now).
func reopenRead(f *os.File) (*os.File, error) {
	return os.Open("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
}
