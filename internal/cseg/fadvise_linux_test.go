package cseg

import (
	"os"

	"golang.org/x/sys/unix"
)

// evict drops the (clean) pages of the file at path from the page cache,
// so the next read goes to the device.
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
