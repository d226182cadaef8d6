package writer

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/tickdb/tickdb/internal/format"
)

// Retention deletes a table's oldest rows, a whole segment file at a time.
//
// The order makes it safe for readers in any process: the writer first
// publishes the new first row (firstSeq, under the seqlock, with the next
// Publish), then makes the control file durable, and only then unlinks
// the segment files below it. A reader that has a deleted segment mapped
// keeps reading it (an unlinked file lives as long as its mappings; its
// disk space comes back when the last one goes); a reader that opens it
// afterwards, or asks for a row below the first, gets ErrTruncated; a
// range or symbol query starts at the first row; a tailing reader, being
// past it, never notices. A crash between the publication and the unlinks
// leaves files below the first row, which the next Open removes.

// RetainResult is what one retention pass deleted.
type RetainResult struct {
	Segments int    // segment files deleted
	Rows     uint64 // rows deleted: how far the first row moved
	Bytes    int64  // bytes of the deleted files
	FirstSeq uint64 // the table's first row now
}

// Retain deletes the oldest whole segments that hold only rows older than
// maxAge before the table's last timestamp (not the wall clock, so a
// back-filled table is not emptied), and then as many more of the oldest
// as it takes to keep the segment files within maxBytes. Zero leaves that
// limit out. Only sealed, durable segments go; the segment being written
// never does, so maxBytes is met only down to one segment. It returns
// when the files are gone. Writer goroutine only, like Append.
func (w *Writer) Retain(maxAge time.Duration, maxBytes int64) (RetainResult, error) {
	if w.closed {
		return RetainResult{}, ErrClosed
	}
	if err := w.fail.get(); err != nil {
		return RetainResult{}, err
	}
	before := w.firstSeq
	w.advanceFirst(w.retainTarget(maxAge, maxBytes))
	segs, bytes, err := w.dropSegments()
	return RetainResult{Segments: segs, Rows: w.firstSeq - before, Bytes: bytes, FirstSeq: w.firstSeq}, err
}

// FirstSeq is the table's first row: rows below it were deleted by
// retention.
func (w *Writer) FirstSeq() uint64 { return w.firstSeq }

// retainTarget is the first segment to keep under the limits.
func (w *Writer) retainTarget(maxAge time.Duration, maxBytes int64) uint64 {
	cur := w.seq >> w.shift
	k := w.firstSeq >> w.shift
	// Segments [k, limit) are sealed and durable.
	limit := min(w.ctl.DurableSegs(), cur)
	if w.opts.RetainBelow != nil {
		limit = min(limit, w.opts.RetainBelow(w.name))
	}
	if maxAge > 0 {
		cut := w.lastTs - int64(maxAge)
		if cut > w.lastTs { // wrapped below MinInt64
			cut = math.MinInt64
		}
		for ; k < limit; k++ {
			// The time index entry at or after the next segment's first
			// row holds a ts no earlier than any row of segment k.
			e := ((k+1)<<w.shift + w.strideMask) >> w.strideShft
			if e<<w.strideShft >= w.seq || e >= w.ts.Capacity() || w.ts.At(e) >= cut {
				break
			}
		}
	}
	if maxBytes > 0 {
		for ; k < limit && int64(cur+1-k)*w.segSize > maxBytes; k++ {
		}
	}
	return k
}

// advanceFirst publishes segment k's first row as the table's first row,
// if that moves it, and hands the segments below to dropSegments.
func (w *Writer) advanceFirst(k uint64) {
	if k<<w.shift <= w.firstSeq {
		return
	}
	w.firstSeq = k << w.shift
	w.publish()
	w.sh.dropTo.Store(k)
}

// dropSegments unlinks the segment files below the published first row
// that are still there, after making the control file (and so the first
// row) durable. The writer goroutine (Retain) and the checkpointer (after
// automatic retention at a roll) both call it; dropMu makes them take
// turns.
func (w *Writer) dropSegments() (segs int, bytes int64, err error) {
	w.dropMu.Lock()
	defer w.dropMu.Unlock()
	to := w.sh.dropTo.Load()
	if to <= w.dropped {
		return 0, 0, nil
	}
	if err := w.ctl.Sync(); err != nil {
		return 0, 0, err
	}
	for n := w.dropped; n < to; n++ {
		found := false
		for _, path := range []string{format.SegPath(w.dir, n), format.ZSegPath(w.dir, n)} {
			st, err := os.Stat(path)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err == nil {
				err = w.fs.Remove(path)
			}
			if err != nil {
				return segs, bytes, fmt.Errorf("writer: retention: %w", err)
			}
			found = true
			bytes += st.Size()
		}
		if found {
			segs++
		}
	}
	w.dropped = to
	if err := w.fs.SyncPath(w.dir); err != nil {
		return segs, bytes, err
	}
	if segs > 0 {
		w.log.Info("writer: retention deleted segments", "table", w.name, "segments", segs, "bytes", bytes, "first_row", to<<w.shift)
	}
	return segs, bytes, nil
}

// autoRetain applies Options.RetainAge and RetainBytes at a segment roll:
// the writer only publishes the new first row; the checkpointer deletes
// the files.
func (w *Writer) autoRetain() {
	if w.opts.RetainAge <= 0 && w.opts.RetainBytes <= 0 {
		return
	}
	if k := w.retainTarget(w.opts.RetainAge, w.opts.RetainBytes); k<<w.shift > w.firstSeq {
		w.advanceFirst(k)
		w.ck.wake()
	}
}

// removeBelowFirst deletes segment files a crash left below the first
// row (between publishing it and unlinking them). Open only.
func (w *Writer) removeBelowFirst() error {
	first := w.firstSeq >> w.shift
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		var n uint64
		if !segNumber(e.Name(), format.SegName, &n) && !segNumber(e.Name(), format.ZSegName, &n) || n >= first {
			continue
		}
		if err := w.fs.Remove(filepath.Join(w.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	w.sh.dropTo.Store(first)
	w.dropped = first
	return w.fs.SyncPath(w.dir)
}
