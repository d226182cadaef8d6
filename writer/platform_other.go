//go:build !linux

package writer

import (
	"fmt"
	"os"
)

// Off Linux the package compiles, so that programs that also read (the
// CLI) build, but Open returns ErrUnsupported before touching the table;
// nothing below it runs.

func checkPlatform() error { return ErrUnsupported }

const (
	oDirect = 0
	oDSync  = 0
)

func freeBytes(f *os.File) (int64, bool) { return 0, false }

func lockTable(dir string) (*os.File, error) {
	return nil, fmt.Errorf("writer: lock %s: %w", dir, ErrUnsupported)
}

// IsLocked reports false off Linux, where no writer runs.
func IsLocked(dir string) (bool, int) { return false, 0 }

// Pin returns ErrUnsupported off Linux.
func (w *Writer) Pin() error { return ErrUnsupported }

// Unpin is a no-op off Linux.
func (w *Writer) Unpin() {}
