package writer

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
)

// Room for rows: what a full file system gets.
//
// Everything the writer needs to store a row and make it durable is
// reserved on the file systems before the row is appended: its bytes in
// the live slot (pages allocated: MADV_POPULATE_WRITE, which fails with
// an error where a store would raise SIGBUS), its bytes in the durable
// segment file (fallocate) and its time-index entry (the index files grow
// by fallocate). The preparer keeps that reservation a growing distance
// ahead of the writer and publishes how far it goes (shared.reserved);
// the writer's fast paths stop at it as they stop at a segment's end, one
// compare they already made, so the common append adds no system call.
// When the preparer cannot reserve (ENOSPC, EDQUOT) it records why
// (resCond) and tries again on its next tick (10 ms): appends and Reserve
// past the reservation fail with ErrNoSpace, storing nothing, and take
// rows again once a retry succeeds. Rows inside the reservation always
// become durable: the flusher writes them into blocks already allocated.
//
// The flusher's own failures (EIO; ENOSPC where the file system has no
// fallocate) are transient too: it records them (ioCond), retries with
// backoff, and rewrites from the live slot, which still holds every row
// not yet durable. Meanwhile the reservation stops growing and Reserve
// refuses new rows, so no client waits on rows that cannot be made
// durable.

// Condition is what stands in the way of a table's writes, if anything.
type Condition int

const (
	// CondOK: the writer takes rows.
	CondOK Condition = iota
	// CondNoSpace: the file system is full or over quota; rows are
	// refused (ErrNoSpace) once the room reserved before is used.
	CondNoSpace
	// CondIOError: a write failed with an I/O error, or a file could not
	// be opened for want of descriptors (EMFILE, ENFILE: a flush job of a
	// writer.Group opens its segment file when it runs); the flusher
	// retries, new rows are refused (ErrIO) until a retry succeeds. An index
	// checkpoint's I/O error also shows here, without refusing rows (it
	// stays until the writer is reopened, which re-indexes).
	CondIOError
	// CondFailed: another error stopped the writer for good (reopen it).
	CondFailed
)

// String is the condition's name in metrics and /health: ok, no_space,
// io_error, failed.
func (c Condition) String() string {
	switch c {
	case CondOK:
		return "ok"
	case CondNoSpace:
		return "no_space"
	case CondIOError:
		return "io_error"
	}
	return "failed"
}

// classify says whether err is a condition that can clear (no space, an
// I/O error) or a failure (CondFailed).
func classify(err error) Condition {
	switch {
	case errors.Is(err, ErrNoSpace), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return CondNoSpace
	case errors.Is(err, ErrIO), errors.Is(err, syscall.EIO), errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return CondIOError
	}
	return CondFailed
}

// condErr wraps err, of a condition that can clear, for this table.
func (w *Writer) condErr(err error) *ConditionError {
	var ce *ConditionError
	if errors.As(err, &ce) {
		return ce
	}
	return &ConditionError{Table: w.name, Cond: classify(err), Err: err}
}

// Condition reports whether the table takes rows, and if not why, from
// any goroutine: a failure for good first, then the flusher's, then the
// preparer's, then an index checkpoint's.
func (w *Writer) Condition() (Condition, error) {
	if err := w.fail.get(); err != nil {
		return CondFailed, err
	}
	for _, c := range []*condition{&w.sh.ioCond, &w.sh.resCond, &w.sh.ckCond} {
		if e := c.get(); e != nil {
			return e.Cond, e
		}
	}
	return CondOK, nil
}

// Reserve makes sure the next n rows have room (above) and reports an
// error matching ErrNoSpace or ErrIO when they have not, before anything
// is appended: a caller that must store a group of rows all or nothing
// (an HTTP request) calls it first. While the flusher cannot write it
// refuses even rows that have room, since they could not be made durable
// yet.
//
// It costs a compare when the room is there, as it is when the preparer
// keeps up; otherwise it waits for the preparer, as a roll does. It
// reserves at most up to the end of the segment after the current one
// (a live slot can be made ready only once its previous segment is
// durable): rows past that are reserved as they are appended, and an
// append there can still fail with ErrNoSpace. The index files' room for
// new symbols, postings chunks and late rows is kept ahead by the
// preparer, not counted per row: a group that adds more symbols than that
// can also fail part way. Writer goroutine only.
func (w *Writer) Reserve(n int) error {
	if w.closed {
		return ErrClosed
	}
	if err := w.fail.get(); err != nil {
		return err
	}
	if e := w.sh.ioCond.get(); e != nil {
		return e
	}
	need := w.seq + uint64(max(n, 0))
	if need <= w.stop {
		return nil
	}
	// The preparer reserves up to the end of the segment after the one
	// the writer is in (curSeg: at a segment's end, before the roll, the
	// one it is leaving).
	return w.awaitReserved(min(need, (w.sh.curSeg.Load()+2)<<w.shift))
}

// makeRoom runs for the row at w.seq when the fast paths stop at w.stop:
// it rolls at a segment's end, then makes sure the row is reserved.
func (w *Writer) makeRoom() error {
	if w.seq == w.segEnd {
		if err := w.roll(); err != nil {
			return err
		}
	}
	return w.awaitReserved(w.seq + 1)
}

// awaitReserved returns once rows below need are reserved, waiting for the
// preparer (woken, and told need) while it works; it fails at once with
// the preparer's or the flusher's condition while there is one.
func (w *Writer) awaitReserved(need uint64) error {
	if r := w.sh.reserved.Load(); r >= need {
		w.resv = r
		w.setStop()
		return nil
	}
	for {
		want := w.sh.want.Load()
		if want >= need || w.sh.want.CompareAndSwap(want, need) {
			break
		}
	}
	var start time.Time
	for {
		if r := w.sh.reserved.Load(); r >= need {
			w.resv = r
			w.setStop()
			if !start.IsZero() {
				w.sh.waitNanos.Add(int64(time.Since(start)))
			}
			return nil
		}
		if err := w.fail.get(); err != nil {
			return err
		}
		if e := w.sh.resCond.get(); e != nil {
			return e
		}
		if e := w.sh.ioCond.get(); e != nil {
			return e
		}
		if start.IsZero() {
			start = time.Now()
		}
		w.prep.wake()
		time.Sleep(20 * time.Microsecond)
	}
}

// setStop sets where the fast paths hand over to append: the segment's
// end or the reservation's, whichever comes first.
func (w *Writer) setStop() { w.stop = min(w.segEnd, w.resv) }

// populateErr is a failed MADV_POPULATE_WRITE of live slot pages: EFAULT
// (a store there would raise SIGBUS: the file system has no page for
// it) and ENOMEM are no space.
func populateErr(path string, err error) error {
	if errors.Is(err, syscall.EFAULT) || errors.Is(err, syscall.ENOMEM) {
		return fmt.Errorf("writer: allocate live slot pages in %s: %v: %w", path, err, syscall.ENOSPC)
	}
	return fmt.Errorf("writer: allocate live slot pages in %s: %w", path, err)
}

// trimDurable frees the blocks the preparer allocated in the durable
// files past the last row (room.go): the rest of the last segment's file,
// and the next segment's file, made ready ahead. A failure (a file system
// too full to split an extent) costs only disk space: logged.
func (w *Writer) trimDurable() {
	seg := w.seq >> w.shift
	from := format.BlockSize + int64((w.seq-seg<<w.shift)*w.rowSize+format.BlockSize-1)&^(format.BlockSize-1)
	for n := seg; n <= seg+1; n, from = n+1, format.BlockSize {
		f, err := w.fs.OpenFile(format.SegPath(w.dir, n), os.O_WRONLY, 0)
		if err != nil {
			continue // not made (or a compressed segment's, gone)
		}
		if from < w.segSize {
			err = mmap.PunchHole(f.File, from, w.segSize-from)
		}
		f.Close()
		if err != nil {
			w.log.Warn("writer: free the room allocated past the last row", "table", w.name, "segment", n, "err", err)
		}
	}
}
