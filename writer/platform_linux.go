package writer

import (
	"os"

	"golang.org/x/sys/unix"
)

// checkPlatform lets Open go on: the writer runs here.
func checkPlatform() error { return nil }

// Open flags of the flusher's and the column rewrite's segment files.
const (
	oDirect = unix.O_DIRECT
	oDSync  = unix.O_DSYNC
)

// freeBytes is the room left to an unprivileged user on f's file system
// (false if fstatfs fails).
func freeBytes(f *os.File) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
