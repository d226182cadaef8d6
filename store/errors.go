package store

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt is matched (errors.Is) by every *CorruptError.
	ErrCorrupt = errors.New("store: corrupt data")
	// ErrSchema reports an invalid or mismatched schema.
	ErrSchema = errors.New("store: bad schema")
	// ErrNoTable reports a table directory that does not exist.
	ErrNoTable = errors.New("store: no such table")
	// ErrUnsupported reports a write-side call (a writable mapping,
	// fallocate, msync) off Linux, where only reading is supported. It
	// matches errors.ErrUnsupported too.
	ErrUnsupported = fmt.Errorf("store: writing a table is supported on Linux only: %w", errors.ErrUnsupported)
)

// CorruptError names the file and byte offset where a check failed and why.
// It satisfies errors.Is(err, ErrCorrupt).
type CorruptError struct {
	Path   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store: corrupt %s at offset %d: %s", e.Path, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }
