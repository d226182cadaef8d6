package writer_test

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// evictDir drops the clean pages of every file in dir from the page cache
// (posix_fadvise DONTNEED), so the next reads go to the device. Pages a
// process still maps stay: close readers first.
func evictDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		err = unix.Fdatasync(int(f.Fd())) // dirty pages are not dropped
		if err == nil {
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
