package writer

import (
	"errors"
	"fmt"
)

var (
	// ErrOutOfOrder rejects a row whose ts is before the last appended ts
	// (policy OutOfOrderReject, the default). The row is not stored and the
	// table's out-of-order counter is incremented.
	ErrOutOfOrder = errors.New("writer: timestamp before the last appended row")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("writer: closed")
	// ErrRowSize rejects a row buffer that is not exactly the schema's row size.
	ErrRowSize = errors.New("writer: row buffer is not the schema's row size")
	// ErrUnknownSymbol rejects a row whose sym id is not in the dictionary.
	ErrUnknownSymbol = errors.New("writer: row names a symbol id that is not in the dictionary")
	// ErrLocked is matched by *LockedError.
	ErrLocked = errors.New("writer: table is locked by another writer")
	// ErrUnsupported is returned by Open off Linux: the writer needs
	// Linux (docs/DESIGN.md, Platforms); the readers do not. It matches
	// errors.ErrUnsupported too.
	ErrUnsupported = fmt.Errorf("writer: the writer runs on Linux only: %w", errors.ErrUnsupported)
)

// LockedError reports the process that holds a table's writer lock.
type LockedError struct {
	Table string
	Pid   int
}

func (e *LockedError) Error() string {
	if e.Pid > 0 {
		return fmt.Sprintf("writer: table %s is locked by another writer (pid %d)", e.Table, e.Pid)
	}
	return fmt.Sprintf("writer: table %s is locked by another writer (pid unknown)", e.Table)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }
