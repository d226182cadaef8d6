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
	// ErrNoSpace is matched by the error of an append or Reserve that
	// found no room reserved for its rows because the file system (the
	// database's or the live directory's) is full or over its quota
	// (*ConditionError). Nothing of the refused rows is stored; the writer
	// retries the reservation in the background and takes rows again once
	// there is room.
	ErrNoSpace = errors.New("writer: no space left for more rows")
	// ErrIO is matched by the error of an append or Reserve refused while
	// the flusher cannot write (an I/O error: EIO), and by Close's error
	// when rows could not be made durable. The flusher retries; rows
	// appended before it failed are still in the live slot and become
	// durable once a retry succeeds.
	ErrIO = errors.New("writer: I/O error")
)

// ConditionError is why a table takes no rows for now: no space
// (errors.Is(err, ErrNoSpace)) or an I/O error (errors.Is(err, ErrIO)).
// Err is the system call's error with the file it was about (it matches
// syscall.ENOSPC, EDQUOT or EIO).
type ConditionError struct {
	Table string
	Cond  Condition
	Err   error
}

func (e *ConditionError) Error() string {
	switch e.Cond {
	case CondNoSpace:
		return fmt.Sprintf("writer: table %s: no space for more rows: %v", e.Table, e.Err)
	case CondIOError:
		return fmt.Sprintf("writer: table %s: I/O error: %v", e.Table, e.Err)
	}
	return fmt.Sprintf("writer: table %s: %v", e.Table, e.Err)
}

// Is makes errors.Is(err, ErrNoSpace) or errors.Is(err, ErrIO) true by
// the condition.
func (e *ConditionError) Is(target error) bool {
	return (target == ErrNoSpace && e.Cond == CondNoSpace) || (target == ErrIO && e.Cond == CondIOError)
}

// Unwrap is the system call's error.
func (e *ConditionError) Unwrap() error { return e.Err }

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
