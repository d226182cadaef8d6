package writer

import (
	"time"

	"github.com/tickdb/tickdb/internal/vfs"
)

// SetCompactHook makes the writers opened with o call f after each
// numbered step of a compaction swap (tests kill the process there).
func SetCompactHook(o *Options, f func(seg uint64, step int)) { o.compactHook = f }

// PrepareNow wakes w's preparer and returns once it has run a whole step
// begun after the call (or the writer has failed or closed).
func PrepareNow(w *Writer) {
	s0 := w.sh.prepSteps.Load()
	for w.sh.prepSteps.Load() < s0+2 && w.fail.get() == nil && !w.closed {
		w.prep.wake()
		time.Sleep(100 * time.Microsecond)
	}
}

// SetColumnHook makes the writers opened with o call f after each
// numbered step of AddColumn (1 closed, 2 schema file written, 3 feature
// bit set, 4 the last segment's new file written, before its rename, 5
// renamed; tests kill the process there).
func SetColumnHook(o *Options, f func(step int)) { o.columnHook = f }

// SetPostMaxDelta lowers the postings' early-close distance of a writer
// opened with o (index.PostWriter.SetMaxDelta).
func SetPostMaxDelta(o *Options, n uint64) { o.postMaxDelta = n }

// SetIndexReserve makes the writers opened with o map their ts.idx,
// post.idx and late.idx with n bytes of address space (reserve.go), so
// that tests grow them past it.
func SetIndexReserve(o *Options, n int) { o.idxReserve = n }

// SetFlushFault makes the flushers of writers opened with o call f before
// each write and fail it with f's error when not nil.
func SetFlushFault(o *Options, f func() error) { o.flushFault = f }

// SetFS makes the writers opened with o create, rename, remove and sync
// their files through fs (a vfs.Strict, to check what a machine crash
// would leave).
func SetFS(o *Options, fs vfs.FS) { o.fs = fs }
