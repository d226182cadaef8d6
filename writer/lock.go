package writer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tickdb/tickdb/internal/format"
)

// LockHolder returns the pid written in a table's lock file, or 0. It does
// not say whether that process still holds the lock; use IsLocked for that.
func LockHolder(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, format.LockName))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
