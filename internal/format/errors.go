package format

import (
	"fmt"

	"github.com/tickdb/tickdb/store"
)

// Corruptf builds a *store.CorruptError.
func Corruptf(path string, off int64, format string, args ...any) error {
	return &store.CorruptError{Path: path, Offset: off, Reason: fmt.Sprintf(format, args...)}
}
