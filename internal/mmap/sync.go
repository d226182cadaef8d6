package mmap

import (
	"fmt"
	"os"
)

// SyncPath fsyncs the file or directory at path: a directory so that an
// entry created or renamed in it is durable, a file that another handle
// wrote.
func SyncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}
