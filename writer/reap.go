package writer

import (
	"os"

	"github.com/tickdb/tickdb/internal/mmap"
)

// reaper frees the shared memory of the live files Close removes after
// Close has returned. Freeing a tmpfs file's pages costs the kernel about
// a tenth of a millisecond a MiB here, and a writer closing with its four
// live slots and a backlog of hot and clustered copies holds a GiB or
// more: Close unlinks each file while it holds it open or mapped (so the
// unlink itself frees nothing), and a goroutine lets go of them. The
// files are gone from the live directory when Close returns; their memory
// follows within a fraction of a second, or at the process's exit.
type reaper struct {
	files []*os.File
	maps  [][]byte
}

// hold opens path so that its unlink frees nothing (no error: a file
// that cannot be opened is freed by the unlink, as before).
func (r *reaper) hold(path string) {
	if f, err := os.Open(path); err == nil {
		r.files = append(r.files, f)
	}
}

// holdMap takes a mapping of a file about to be unlinked.
func (r *reaper) holdMap(b []byte) { r.maps = append(r.maps, b) }

// start frees what r holds on a goroutine of its own, and empties r.
func (r *reaper) start() {
	files, maps := r.files, r.maps
	r.files, r.maps = nil, nil
	if len(files) == 0 && len(maps) == 0 {
		return
	}
	go func() {
		for _, b := range maps {
			mmap.Unmap(b)
		}
		for _, f := range files {
			f.Close()
		}
	}()
}
