//go:build unix

package archive

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// fileID identifies a file whatever its links.
type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// openPair opens (creating) a segment's cache file at path, of size
// bytes, and its chunk marks (path.have, a byte per chunk), under the
// data file's lock, which removeSeg takes too: the two are of one
// generation of the file. errRetry: removed meanwhile.
func openPair(path string, size, nchunks int64) (data, have *os.File, err error) {
	data, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := flock(data, syscall.LOCK_EX); err != nil {
		data.Close()
		return nil, nil, err
	}
	defer flock(data, syscall.LOCK_UN)
	fail := func(err error) (*os.File, *os.File, error) {
		data.Close()
		if have != nil {
			have.Close()
		}
		return nil, nil, err
	}
	if !same(data, path) {
		return fail(errRetry)
	}
	if err := sized(data, size); err != nil {
		return fail(err)
	}
	if have, err = os.OpenFile(path+".have", os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return fail(err)
	}
	if err := sized(have, nchunks); err != nil {
		return fail(err)
	}
	return data, have, nil
}

// sized makes a new (empty) file size bytes long, and checks an older
// one is.
func sized(f *os.File, size int64) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	switch st.Size() {
	case size:
		return nil
	case 0:
		return f.Truncate(size)
	}
	return fmt.Errorf("%s is %d bytes, want %d", f.Name(), st.Size(), size)
}

// removeSeg removes a segment's cache file and its marks, unless another
// process is opening it; it reports whether it did.
func removeSeg(path string) bool {
	data, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer data.Close()
	if flock(data, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	defer flock(data, syscall.LOCK_UN)
	if !same(data, path) {
		return false
	}
	os.Remove(path + ".have")
	return os.Remove(path) == nil
}

// lockView takes a shared lock of a view directory (path is VIEW.lock)
// for as long as a Reader has it open.
func lockView(path string) (func(), error) {
	for try := 0; ; try++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := flock(f, syscall.LOCK_SH); err != nil {
			f.Close()
			return nil, err
		}
		if same(f, path) || try == 10 {
			return func() { flock(f, syscall.LOCK_UN); f.Close() }, nil
		}
		f.Close() // swept meanwhile
	}
}

// sweepViews removes the view directories under views but keep that no
// Reader holds (their lock is free), and temporary ones left by a crash.
func sweepViews(views, keep string) {
	locks, _ := filepath.Glob(filepath.Join(views, "*.lock"))
	for _, l := range locks {
		if l == keep+".lock" {
			continue
		}
		f, err := os.OpenFile(l, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if flock(f, syscall.LOCK_EX|syscall.LOCK_NB) == nil && same(f, l) {
			os.RemoveAll(strings.TrimSuffix(l, ".lock"))
			os.Remove(l)
		}
		f.Close()
	}
	tmps, _ := filepath.Glob(filepath.Join(views, "tmp-*"))
	for _, t := range tmps {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(t), "tmp-%d-", &pid); err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(t)
		}
	}
}
