package writer

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/store"
)

// recover brings the table to a consistent state before the first append.
//
// Warm (the previous writer died, the machine did not restart): the live
// slots in shared memory still hold every published row, and readers may
// have seen them, so the published count is kept as it is and appends go on
// in the same slots. Only unpublished postings entries are dropped.
//
// Cold (clean close, machine restart, or live slots gone): the durable files
// are the truth. Rows are scanned forward from the durable count while the
// check word, ts order and symbol id hold; the torn tail is cut; the index
// files are re-built from their last checkpoint; the current segment's rows
// are copied into a fresh live slot. The work is bounded by the rows past
// the last checkpoint, not by the table's size.
func (w *Writer) recover() error {
	c := w.ctl
	snap := c.RawSnap()
	c.ResetSeqlock()
	boot := mmap.BootID()
	ok, err := w.tryWarm(snap, boot)
	if err != nil {
		return err
	}
	if !ok {
		if err := w.recoverCold(boot); err != nil {
			return err
		}
	}
	c.SetWriter(os.Getpid(), index.StateOpen)
	return c.Sync()
}

func (w *Writer) tryWarm(snap index.Snap, boot [16]byte) (bool, error) {
	c := w.ctl
	if c.State() != index.StateOpen || c.BootID() != boot || c.LiveDir() != w.liveDir {
		return false, nil
	}
	if err := w.syms.Refresh(c.SymCount(), c.SymBytes()); err != nil {
		return false, nil
	}
	for _, s := range w.slots {
		if gen, seg := c.Slot(s.i); gen != 0 {
			if w.attachSlotFile(s, gen, seg) != nil {
				// Not usable (a writer died while assigning it): no reader
				// may pair this entry with the file made in its place.
				c.SetSlot(s.i, 0, 0)
			}
		}
	}
	v, d := snap.Visible, c.Durable()
	if d > v {
		return false, nil
	}
	for n := d >> w.shift; n<<w.shift < v; n++ {
		if w.slots[n%uint64(len(w.slots))].ready.Load() != n+1 {
			w.unmapSlots()
			return false, nil
		}
	}
	if err := w.pw.Reset(w.syms.Dirs(), v, snap.NextChunk, c.PostFloor() > 0); err != nil {
		return false, err
	}
	w.syms.ClearTail()
	w.nsyms = uint32(w.syms.Len())
	if !w.late.Covers(snap.Late) {
		return false, nil
	}
	w.nlate = snap.Late
	w.seq, w.lastTs = v, snap.LastTs
	if v == 0 {
		w.lastTs = math.MinInt64
	}
	w.position()
	w.publish()
	w.log.Info("writer: warm recovery from live slots", "table", w.name, "rows", v, "durable", d)
	return true, nil
}

// position points the writer at the segment holding seq if its slot is
// ready; otherwise the first append rolls into it.
func (w *Writer) position() {
	n := w.seq >> w.shift
	w.sh.curSeg.Store(n)
	if s := w.slots[n%uint64(len(w.slots))]; s.ready.Load() == n+1 {
		w.rows, w.segBase, w.segEnd = s.rows, n<<w.shift, n<<w.shift+w.rps
		return
	}
	w.rows, w.segBase, w.segEnd = nil, w.seq, w.seq
}

func (w *Writer) unmapSlots() {
	for _, s := range w.slots {
		if s.b != nil {
			mmap.Unmap(s.b)
		}
		s.b, s.rows = nil, nil
		s.ready.Store(0)
	}
}

func (w *Writer) recoverCold(boot [16]byte) error {
	c := w.ctl
	// Until this recovery has published its result, the live slots and the
	// published words disagree (a slot is made for the recovered count
	// while visible still holds the old one): a writer that dies here must
	// leave a table the next writer recovers cold again, never warm. The
	// state word says so; recover sets it open once this returns.
	clean := c.State() == index.StateClosed
	c.SetWriter(os.Getpid(), index.StateRecovering)
	w.unmapSlots()
	for _, s := range w.slots {
		c.SetSlot(s.i, 0, 0)
		if err := w.fs.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := c.SetLiveDir(w.liveDir); err != nil {
		return err
	}
	c.SetBootID(boot)

	nsym := w.syms.Scan()
	// An entry made after the checkpoint names a directory chunk allocated
	// after it; one that does not is a stale, never published entry whose
	// chunk was reused: the dictionary ends before it.
	ck0 := c.Checkpoint()
	for id := int(ck0.SymCount); id < nsym; id++ {
		if w.syms.Dir(uint32(id)) < ck0.NextChunk {
			w.syms.Truncate(id)
			nsym = id
			break
		}
	}
	w.syms.ClearTail()
	w.nsyms = uint32(nsym)
	d := c.Durable()
	seq, err := w.scanDurable(d, uint32(nsym))
	if err != nil {
		return err
	}
	// Rows past the durable count were found in the files, but the write
	// that put them there may have been cut short before its O_DSYNC flush:
	// flush them now, before they are declared durable.
	for n := d >> w.shift; seq > d && n <= (seq-1)>>w.shift; n++ {
		if err := w.fs.SyncPath(format.SegPath(w.dir, n)); err != nil {
			return err
		}
	}
	ck := c.Checkpoint()
	from := min(ck.Seq, seq)
	if !w.late.Covers(ck.Late) {
		return format.Corruptf(w.late.Path(), 0, "shorter than the %d late rows checkpointed", ck.Late)
	}
	// The late rows below from, and the newest ts before it (from the
	// checkpointed entries: those past them are rebuilt below).
	w.nlate = w.late.SearchSeq(ck.Late, from)
	maxTs, err := w.maxTsBefore(from)
	if err != nil {
		return err
	}
	if err := w.publishCheckpoint(from, ck, maxTs); err != nil {
		return err
	}
	if err := w.pw.Reset(w.syms.Dirs(), from, ck.NextChunk, c.PostFloor() > 0); err != nil {
		return err
	}
	lastTs, err := w.reindex(from, seq, maxTs)
	if err != nil {
		return err
	}

	cur := seq >> w.shift
	s := w.slots[cur%uint64(len(w.slots))]
	// The slot gets only the block holding the next row (the flusher
	// rewrites from there); readers read the rows before that block from
	// the durable file, so opening costs the same whatever the table's or
	// the segment's size.
	if err := w.createSlotFile(s); err != nil {
		return err
	}
	used := (seq - cur<<w.shift) * w.rowSize
	blk := used &^ (format.BlockSize - 1)
	// Pre-fault what the preparer would keep ahead of the writer at
	// first: enough for the first appends; it does the rest.
	s.popLo, s.popHi = blk, min(blk+popStart, uint64(len(s.rows)))
	if err := mmap.PopulateWrite(s.rows[s.popLo:s.popHi]); err != nil {
		return populateErr(s.path, err)
	}
	if used > blk {
		b, rs, err := w.mapDurable(cur)
		if err != nil {
			return err
		}
		if b != nil && rs != w.rowSize {
			mmap.Unmap(b)
			return format.Corruptf(format.SegPath(w.dir, cur), 12, "%d-byte rows of an earlier layout in the segment rows are appended to (%d-byte rows)", rs, w.rowSize)
		}
		if b == nil {
			return format.Corruptf(format.SegPath(w.dir, cur), 0, "segment file missing, rows up to %d expected in it", seq)
		}
		copy(s.rows[blk:used], b[format.BlockSize+blk:format.BlockSize+used])
		mmap.Unmap(b)
	}
	w.assignSlot(s, cur, (blk+w.rowSize-1)/w.rowSize)
	// After a clean close nothing was ever written past the durable count
	// (the last flush zero-padded its block), so there is no tail to cut.
	if !clean || seq != d {
		if err := w.cutDurableTail(seq, s.rows); err != nil {
			return err
		}
	}
	if err := w.ensureDurableFile(cur); err != nil {
		return err
	}
	s.ready.Store(cur + 1)

	w.seq, w.lastTs = seq, lastTs
	c.SetDurable(seq)
	c.SetDurableSegs(cur)
	c.SetSyms(uint64(nsym), w.syms.End())
	w.position()
	w.publish()
	// The index files were rebuilt past the checkpoint: record it. With
	// nothing re-indexed (a clean reopen) the last checkpoint still holds.
	if from < seq {
		if err := w.checkpoint(seq); err != nil {
			return err
		}
	}
	w.log.Info("writer: recovered from durable files", "table", w.name, "rows", seq, "was_durable", d, "reindexed", seq-from)
	return nil
}

// publishCheckpoint publishes the state the index files are trusted for,
// rows below from (at most the last checkpoint), before recoverCold
// rebuilds the postings past it. Reset clears the postings entries of rows
// from `from` on and reindex writes them again: readers must not be shown
// those rows meanwhile (a RangeSym would silently miss some), and a writer
// that dies in between must leave a table whose published words agree with
// its index files. The rows past from are still in the durable files; the
// scan finds them again and recoverCold publishes them when it is done.
// The durable words go down first, so that durable never exceeds visible.
func (w *Writer) publishCheckpoint(from uint64, ck index.Checkpoint, lastTs int64) error {
	c := w.ctl
	old := c.RawSnap()
	if from >= old.Visible {
		return nil
	}
	// Symbols whose postings start past the checkpoint are not covered by it.
	dirs := w.syms.Dirs()
	nsym := 0
	for nsym < len(dirs) && nsym < int(c.SymCount()) && dirs[nsym] < ck.NextChunk {
		nsym++
	}
	end := uint64(format.BlockSize)
	for id := 0; id < nsym; id++ {
		end += uint64(format.SymEntrySize(len(w.syms.Name(uint32(id)))))
	}
	c.SetDurableSegs(min(c.DurableSegs(), from>>w.shift))
	c.SetDurable(min(c.Durable(), from))
	c.SetSyms(uint64(nsym), end)
	c.Publish(index.Snap{Visible: from, LastTs: lastTs, FirstSeq: old.FirstSeq, NextChunk: min(old.NextChunk, ck.NextChunk), Late: w.nlate})
	return c.Sync()
}

// maxTsBefore is the newest ts of rows [0, from): row from-1's, or, when
// it is a late row (one of the first w.nlate entries), the newest before
// it. MinInt64 for from 0.
func (w *Writer) maxTsBefore(from uint64) (int64, error) {
	if from == 0 {
		return math.MinInt64, nil
	}
	if w.nlate > 0 {
		if e := w.late.At(w.nlate - 1); e.Seq == from-1 {
			return e.Prev, nil
		}
	}
	n := (from - 1) >> w.shift
	b, rs, err := w.mapDurable(n)
	if err != nil {
		return 0, err
	}
	if b == nil {
		// Compressed (the checkpoint is a decompressed segment's start,
		// unfloor): the row from its block.
		if n < w.ctl.CmpSegs() {
			return w.compressedTs(n, from-1)
		}
		return 0, format.Corruptf(format.SegPath(w.dir, n), 0, "segment file missing, %d rows are checkpointed", from)
	}
	off := format.BlockSize + ((from-1)-n<<w.shift)*rs
	ts := int64(le64(b[off:]))
	mmap.Unmap(b)
	return ts, nil
}

// compressedTs is the ts of row seq of compressed segment n.
func (w *Writer) compressedTs(n, seq uint64) (int64, error) {
	z, err := cseg.Open(format.ZSegPath(w.dir, n), w.schema, cseg.Header{TableID: w.ctl.TableID, SegNo: n, RowsPerSeg: w.rps})
	if err != nil {
		return 0, err
	}
	defer z.Close()
	i := seq & (w.rps - 1)
	rows, err := z.Block(int(i/cseg.BlockRows), nil)
	if err != nil {
		return 0, err
	}
	return int64(le64(rows[(i%cseg.BlockRows)*uint64(z.RowSize()):])), nil
}

// scanDurable returns the count of rows that check out in the durable
// files, scanning from row d (trusted: published durable) forward. (The
// newest ts it tracks, for the late-window check, starts at row d-1's: a
// lower bound; reindex computes the exact one.)
func (w *Writer) scanDurable(d uint64, nsym uint32) (uint64, error) {
	lastTs := int64(math.MinInt64)
	win := w.ctl.LateWindow()
	if d > 0 {
		n := (d - 1) >> w.shift
		b, rs, err := w.mapDurable(n)
		if err != nil {
			return 0, err
		}
		if b == nil {
			return 0, format.Corruptf(format.SegPath(w.dir, n), 0, "segment file missing, %d rows are durable", d)
		}
		off := format.BlockSize + ((d-1)-n<<w.shift)*rs
		row := b[off : off+rs]
		if !format.Valid(d-1, row) {
			mmap.Unmap(b)
			return 0, format.Corruptf(format.SegPath(w.dir, n), int64(off), "row %d (last durable) fails its check", d-1)
		}
		lastTs = int64(le64(row))
		mmap.Unmap(b)
	}
	seq := d
	for {
		n := seq >> w.shift
		b, rs, err := w.mapDurable(n)
		if err != nil {
			if seq == n<<w.shift && errors.Is(err, store.ErrCorrupt) {
				break // a segment file whose creation never completed
			}
			return 0, err
		}
		if b == nil {
			break
		}
		end := (n + 1) << w.shift
		for seq < end {
			off := format.BlockSize + (seq-n<<w.shift)*rs
			row := b[off : off+rs]
			ts := int64(le64(row))
			// A row older than the newest before it by more than any late
			// window the table was written with is not a row this table
			// could hold.
			if !format.Valid(seq, row) || (ts < lastTs && uint64(lastTs)-uint64(ts) > uint64(win)) || (w.symOff >= 0 && le32(row[w.symOff:]) >= nsym) {
				break
			}
			lastTs = max(lastTs, ts)
			seq++
		}
		mmap.Unmap(b)
		if seq < end {
			break
		}
	}
	return seq, nil
}

// reindex adds rows [from, to) to the time index, postings and late
// index, reading them from the durable files, and returns the newest ts
// of rows [0, to); maxTs is that of rows [0, from).
func (w *Writer) reindex(from, to uint64, maxTs int64) (int64, error) {
	for seq := from; seq < to; {
		n := seq >> w.shift
		b, rs, err := w.mapDurable(n)
		if err != nil {
			return 0, err
		}
		if b == nil {
			return 0, fmt.Errorf("segment %d missing while re-indexing row %d", n, seq)
		}
		end := min(to, (n+1)<<w.shift)
		for ; seq < end; seq++ {
			off := format.BlockSize + (seq-n<<w.shift)*rs
			row := b[off : off+rs]
			ts := int64(le64(row))
			var sym uint32
			if w.symOff >= 0 {
				sym = le32(row[w.symOff:])
				if int(sym) >= w.syms.Len() {
					// The row is whole (its check word holds) but names
					// a symbol the dictionary lost: sym.dat was not
					// written back before the row was made durable.
					mmap.Unmap(b)
					return 0, &store.CorruptError{Path: format.SegPath(w.dir, n), Offset: int64(off),
						Reason: fmt.Sprintf("row %d names symbol %d; %s holds %d symbols", seq, sym, format.SymName, w.syms.Len())}
				}
			}
			if ts < maxTs {
				if err := w.addLate(index.LateEntry{Seq: seq, Ts: ts, Prev: maxTs, Sym: sym}); err != nil {
					mmap.Unmap(b)
					return 0, err
				}
			}
			maxTs = max(maxTs, ts)
			if seq&w.strideMask == 0 {
				k := seq >> w.strideShft
				if k >= w.ts.Capacity() {
					if err := w.ts.Grow(k + k/4 + 4096); err != nil {
						mmap.Unmap(b)
						return 0, err
					}
				}
				w.ts.Set(k, maxTs)
			}
			if w.symOff >= 0 {
				if err := w.pw.Add(sym, seq); err != nil {
					mmap.Unmap(b)
					return 0, err
				}
			}
		}
		mmap.Unmap(b)
	}
	return maxTs, nil
}
