//go:build !unix

package archive

import (
	"io/fs"
	"os"
)

// (Off Unix, the cache has no locks: one process at a time uses a cache
// directory, and a view left by a crash stays.)

type fileID struct{}

func idOf(fs.FileInfo) (fileID, bool) { return fileID{}, false }

func openPair(path string, size, nchunks int64) (data, have *os.File, err error) {
	if data, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return nil, nil, err
	}
	if have, err = os.OpenFile(path+".have", os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		data.Close()
		return nil, nil, err
	}
	for _, x := range []struct {
		f *os.File
		n int64
	}{{data, size}, {have, nchunks}} {
		if st, err := x.f.Stat(); err == nil && st.Size() == 0 {
			x.f.Truncate(x.n)
		}
	}
	return data, have, nil
}

func removeSeg(path string) bool {
	os.Remove(path + ".have")
	return os.Remove(path) == nil
}

func lockView(string) (func(), error) { return func() {}, nil }

func sweepViews(string, string) {}
