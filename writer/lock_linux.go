package writer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/internal/format"
)

// lockTable takes the table's exclusive writer lock (flock on LOCK) without
// waiting and writes this process's pid into the file. The lock goes away
// with the process, so a crashed writer never leaves a stale lock.
func lockTable(dir string) (*os.File, error) {
	path := filepath.Join(dir, format.LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("writer: open lock %s: %w", path, err)
	}
	for wait := time.Millisecond; ; wait *= 2 {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("writer: flock %s: %w", path, err)
		}
		// A lock this process released a moment ago stays held while a
		// child forked in between (by any goroutine) has not yet exec'd,
		// since the child shares the lock's open file: retry briefly
		// before calling it another writer's.
		if pid := LockHolder(dir); pid != os.Getpid() || wait > 256*time.Millisecond {
			f.Close()
			return nil, &LockedError{Table: dir, Pid: pid}
		}
		time.Sleep(wait)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// IsLocked reports whether a writer currently holds the table's lock, and
// its pid. It opens the lock file read-only, so it works on a tree the
// caller cannot write (and reports false where there is no lock file).
func IsLocked(dir string) (bool, int) {
	f, err := os.Open(filepath.Join(dir, format.LockName))
	if err != nil {
		return false, 0
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return true, LockHolder(dir)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false, 0
}
