package writer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
)

// createSlotFile makes slot s's tmpfs file, sparse, and maps it
// read-write. It checks first that the file system has room for a whole
// slot; its pages are then allocated as they are populated (the preparer,
// a growing distance ahead of the writer: preparer.populate), so a table holding
// a few rows holds a few pages of shared memory.
func (w *Writer) createSlotFile(s *liveSlot) error {
	if err := w.fs.MkdirAll(w.liveDir, 0o755); err != nil {
		return fmt.Errorf("writer: live dir: %w", err)
	}
	// A new inode, never the old one truncated: a reader may still map a
	// file left here by an earlier writer and must keep its bytes.
	if err := w.fs.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("writer: replace live slot: %w", err)
	}
	vf, err := w.fs.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("writer: create live slot: %w", err)
	}
	defer vf.Close()
	f := vf.File
	if free, ok := freeBytes(f); ok && free < w.segSize {
		return fmt.Errorf("writer: live dir %s has %d bytes free, a live slot needs %d: %w", w.liveDir, free, w.segSize, syscall.ENOSPC)
	}
	if err := f.Truncate(w.segSize); err != nil {
		return err
	}
	b, err := mmap.MapShared(f, int(w.segSize), true)
	if err != nil {
		return err
	}
	// The header block is written through the mapping (assignSlot): its
	// page must be allocated first, or a full file system answers the
	// store with SIGBUS.
	if err := mmap.PopulateWrite(b[:format.BlockSize]); err != nil {
		if !errors.Is(err, syscall.EINVAL) {
			mmap.Unmap(b)
			return populateErr(s.path, err)
		}
		if err := mmap.Allocate(f, 0, format.BlockSize); err != nil && !errors.Is(err, mmap.ErrNoAllocate) {
			mmap.Unmap(b)
			return fmt.Errorf("writer: allocate live slot header in %s: %w", s.path, err)
		}
	}
	s.b, s.rows = b, b[format.BlockSize:]
	s.popLo, s.popHi = 0, 0
	return nil
}

// attachSlotFile maps an existing slot file left by a previous writer of
// this table if its header says it holds segNo under generation gen.
func (w *Writer) attachSlotFile(s *liveSlot, gen, segNo uint64) error {
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != w.segSize {
		return fmt.Errorf("live slot %s is %d bytes, want %d", s.path, st.Size(), w.segSize)
	}
	b, err := mmap.MapShared(f, int(w.segSize), true)
	if err != nil {
		return err
	}
	h, err := format.UnmarshalSegHeader(s.path, b)
	if err == nil && (!h.Live || h.TableID != w.ctl.TableID || h.SegNo != segNo || h.RowSize != int(w.rowSize) ||
		h.RowsPerSeg != w.rps || mmap.LoadAcquire64(b, format.LiveGenOff) != gen) {
		err = fmt.Errorf("live slot %s holds another segment or generation", s.path)
	}
	if err != nil {
		mmap.Unmap(b)
		return err
	}
	s.b, s.rows = b, b[format.BlockSize:]
	// What an earlier writer populated is not known: the preparer
	// populates from the writer's position on (resident pages cost it a
	// page-table walk, not a page).
	s.popLo, s.popHi = 0, 0
	if lf := mmap.LoadAcquire64(b, format.LiveFromOff); lf > 0 {
		s.popLo = min(lf*w.rowSize&^(format.BlockSize-1), uint64(len(s.rows)))
		s.popHi = s.popLo
	}
	s.ready.Store(segNo + 1)
	return nil
}

// assignSlot points slot s at segment seg under a new generation: header
// first (its gen word cleared), then the gen word, then the control file's
// slot entry, which is what readers check.
//
// liveFrom is the first row index the slot holds (0 but on the open path,
// where only the block holding the next row is copied in and the rows
// before it are read from the durable file).
func (w *Writer) assignSlot(s *liveSlot, seg, liveFrom uint64) {
	gen := w.ctl.NextLiveGen()
	format.SegHeader{Live: true, TableID: w.ctl.TableID, RowSize: int(w.rowSize), SegNo: seg, RowsPerSeg: w.rps}.Marshal(s.b)
	mmap.StoreRelease64(s.b, format.LiveFromOff, liveFrom)
	mmap.StoreRelease64(s.b, format.LiveGenOff, gen)
	w.ctl.SetSlot(s.i, gen, seg)
}

// ensureDurableFile creates segment seg's durable file if it is missing or
// incomplete: header block written, sized to the full segment file size
// (sparse: the flusher allocates ahead of its writes, flusher.allocate),
// file and directory fsynced before any row is written into it.
func (w *Writer) ensureDurableFile(seg uint64) error {
	path := format.SegPath(w.dir, seg)
	if f, err := os.Open(path); err == nil {
		hdr := make([]byte, format.BlockSize)
		_, rerr := f.ReadAt(hdr, 0)
		st, serr := f.Stat()
		f.Close()
		if rerr == nil && serr == nil && st.Size() == w.segSize {
			if h, err := format.UnmarshalSegHeader(path, hdr); err == nil && !h.Live && h.SegNo == seg && h.TableID == w.ctl.TableID && h.RowSize == int(w.rowSize) {
				return nil
			}
		}
	}
	f, err := w.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writer: create segment: %w", err)
	}
	defer f.Close()
	hdr := make([]byte, format.BlockSize)
	format.SegHeader{TableID: w.ctl.TableID, RowSize: int(w.rowSize), SegNo: seg, RowsPerSeg: w.rps}.Marshal(hdr)
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return fmt.Errorf("writer: write segment header %s: %w", path, err)
	}
	if err := f.Truncate(w.segSize); err != nil {
		return fmt.Errorf("writer: size segment %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writer: fsync %s: %w", path, err)
	}
	return w.fs.SyncPath(w.dir)
}

// openDirect opens a durable segment for the flusher: O_DIRECT|O_DSYNC, or
// O_DSYNC alone on a file system without O_DIRECT (logged once).
func (w *Writer) openDirect(seg uint64, warned *bool) (*vfs.File, error) {
	path := format.SegPath(w.dir, seg)
	f, err := w.fs.OpenFile(path, os.O_WRONLY|oDirect|oDSync, 0)
	if errors.Is(err, syscall.EINVAL) {
		if !*warned {
			w.log.Warn("writer: O_DIRECT not supported here, flushing with O_DSYNC", "dir", w.dir)
			*warned = true
		}
		f, err = w.fs.OpenFile(path, os.O_WRONLY|oDSync, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("writer: open segment for flush: %w", err)
	}
	return f, nil
}

// mapDurable maps segment seg's durable file read-only (recovery scans)
// and returns its row size: the schema's, or an earlier layout's for a
// segment written before columns were added. It returns nil, 0, nil when
// the file does not exist.
func (w *Writer) mapDurable(seg uint64) ([]byte, uint64, error) {
	b, rs, err := format.MapSegmentOf(format.SegPath(w.dir, seg),
		format.SegHeader{TableID: w.ctl.TableID, RowSize: int(w.rowSize), SegNo: seg, RowsPerSeg: w.rps}, w.knownLayout)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	return b, uint64(rs), err
}

// knownLayout reports whether rowSize is the row size of one of the
// layouts the table's rows have had.
func (w *Writer) knownLayout(rowSize int) bool { return w.schema.Layout(rowSize) >= 0 }

// cutDurableTail makes the durable files end exactly at row seq: the block
// holding seq is rewritten from the live copy with zero padding, the rest of
// that segment is punched out (a hole: reads as zeros, holds no blocks; the
// flusher allocates ahead of its writes again) and later segment files are
// removed. A later recovery can then never scan into rows of an older run.
func (w *Writer) cutDurableTail(seq uint64, live []byte) error {
	seg := seq >> w.shift
	path := format.SegPath(w.dir, seg)
	if _, err := os.Stat(path); err == nil {
		f, err := w.fs.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		used := int64(seq-seg<<w.shift) * int64(w.rowSize)
		blk := used &^ (format.BlockSize - 1)
		buf := make([]byte, format.BlockSize)
		copy(buf, live[blk:used])
		_, werr := f.WriteAt(buf, format.BlockSize+blk)
		from := format.BlockSize + blk + format.BlockSize
		if werr == nil && from < w.segSize {
			werr = mmap.PunchHole(f.File, from, w.segSize-from)
		}
		if werr == nil {
			werr = f.Sync()
		}
		f.Close()
		if werr != nil {
			return fmt.Errorf("writer: cut tail of %s: %w", path, werr)
		}
	}
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return err
	}
	removed := false
	for _, e := range ents {
		var n uint64
		if _, err := fmt.Sscanf(e.Name(), "seg-%010d.dat", &n); err == nil && n > seg && e.Name() == format.SegName(n) {
			if err := w.fs.Remove(filepath.Join(w.dir, e.Name())); err != nil {
				return err
			}
			removed = true
		}
	}
	if removed {
		return w.fs.SyncPath(w.dir)
	}
	return nil
}
