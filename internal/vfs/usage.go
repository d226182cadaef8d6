package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// Usage is the storage the regular files under a directory take.
type Usage struct {
	// Bytes is what they hold on disk (or in memory, on tmpfs): the blocks
	// allocated to them. This is a table's size: its segment files are
	// sparse, preallocated to their full size and filled as rows come.
	Bytes int64
	// Logical is the sum of their sizes (ls -l), which counts the holes
	// of sparse files.
	Logical int64
}

// DirUsage sums the Usage of the regular files under dir, skipping
// those removed meanwhile (retention, a slot recycled).
func DirUsage(dir string) (Usage, error) {
	var u Usage
	err := WalkFiles(dir, func(_ string, fi fs.FileInfo) error {
		u.Logical += fi.Size()
		u.Bytes += Allocated(fi)
		return nil
	})
	return u, err
}

// WalkFiles calls fn with each regular file under dir and its FileInfo,
// skipping files removed while it walks (a directory other processes
// change: a table, a cache).
func WalkFiles(dir string, fn func(path string, fi fs.FileInfo) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return fn(path, fi)
	})
}
