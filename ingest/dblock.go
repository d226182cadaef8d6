package ingest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/writer"
)

// serveLockName is the file in a database directory whose flock a running
// Server holds. Its name starts with '.', which no table name may, so it
// never collides with a table.
const serveLockName = ".serve.lock"

// ServingError reports that another server holds the database: a second
// `tickdb serve` on the same --db would start, fail to take every table's
// writer lock and answer every write 500, so it stops at once instead.
// It matches writer.ErrLocked.
type ServingError struct {
	DB  string
	Pid int // 0 when the file names none
}

func (e *ServingError) Error() string {
	who := "pid unknown"
	if e.Pid > 0 {
		who = "pid " + strconv.Itoa(e.Pid)
	}
	return fmt.Sprintf("ingest: database %s is already served by another process (%s)", e.DB, who)
}

// Is makes errors.Is(err, writer.ErrLocked) true, as for a second writer.
func (e *ServingError) Is(target error) bool { return target == writer.ErrLocked }

// lockDB takes the database's server lock (flock, exclusive, without
// waiting) and writes this process's pid into it. The lock goes away with
// the process, so a killed server leaves none behind. Two Servers in one
// process exclude each other too: flock belongs to the open file.
func lockDB(db string) (*os.File, error) {
	if err := os.MkdirAll(db, 0o755); err != nil {
		return nil, fmt.Errorf("ingest: database directory: %w", err)
	}
	path := filepath.Join(db, serveLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ingest: open server lock: %w", err)
	}
	for wait := time.Millisecond; ; wait *= 2 {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("ingest: flock %s: %w", path, err)
		}
		// A lock this process let go of a moment ago stays held while a
		// child forked meanwhile has not yet exec'd (it shares the open
		// file): retry briefly before calling it another server's.
		b, _ := os.ReadFile(path)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid != os.Getpid() || wait > 256*time.Millisecond {
			f.Close()
			return nil, &ServingError{DB: db, Pid: pid}
		}
		time.Sleep(wait)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
