package codec

import (
	"errors"
	"fmt"
)

// ErrCorrupt is matched (errors.Is) by every *CorruptError: a Decode or
// Decompress met bytes that no encoder of this package writes.
var ErrCorrupt = errors.New("codec: corrupt data")

// CorruptError says which codec rejected its input, at which byte of that
// input, and why. It satisfies errors.Is(err, ErrCorrupt), and unwraps to
// the zstd decoder's own error when Decompress failed there.
type CorruptError struct {
	Codec  string // "ts", "f64", "i64", "u32", "bool" or "zstd"
	Offset int    // byte offset into the src passed to the Decode call
	Reason string
	Err    error // the underlying error, or nil
}

// Error names the codec, the byte offset and the reason.
func (e *CorruptError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("codec: corrupt %s block at byte %d: %s: %v", e.Codec, e.Offset, e.Reason, e.Err)
	}
	return fmt.Sprintf("codec: corrupt %s block at byte %d: %s", e.Codec, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the underlying error, if any.
func (e *CorruptError) Unwrap() error { return e.Err }

// corrupt builds a *CorruptError. It is only reached on the error path, so
// the formatting cost never lands in a per-value loop.
func corrupt(codec string, off int, format string, args ...any) error {
	return &CorruptError{Codec: codec, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// ErrArgs reports a call that breaks the Decode contract (a key slice of the
// wrong length, a negative count): a bug in the caller, not bad data.
var ErrArgs = errors.New("codec: bad arguments")
