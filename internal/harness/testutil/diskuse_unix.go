//go:build unix

package testutil

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// DiskUse is what the regular files under dir take on disk (the sum of
// st_blocks × 512, counted apart from the engine's own vfs code) and the
// sum of their sizes, which for sparse segment files is far more.
func DiskUse(t testing.TB, dir string) (alloc, logical int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		alloc += fi.Sys().(*syscall.Stat_t).Blocks * 512
		logical += fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return alloc, logical
}
