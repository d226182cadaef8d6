package writer

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
)

// Compaction rewrites old sealed segments into compressed files (package
// cseg) that every read path serves. One segment at a time, in order, so
// the compaction mark (ctl cmpSegs) says which are compressed: segments
// below it. For segment n:
//
//  1. encode the raw file's rows (every check word verified) into
//     seg-n.zdat.tmp and fsync it;
//  2. rename it to seg-n.zdat and fsync the directory;
//  3. publish cmpSegs = n+1 and msync ctl;
//  4. remove seg-n.dat (the directory is not synced: a crash that undoes
//     the unlink leaves a raw file below the mark, which Open removes).
//
// A crash after any step leaves one valid copy the published mark points
// to: before 3 the raw file (Open removes the orphan .tmp or .zdat), after
// it the compressed one (Open removes the raw file 4 did not). A reader
// that has the raw file mapped keeps reading it; one that maps segment n
// after step 3 opens the compressed file, and one that finds the raw file
// gone looks at the mark again.
//
// Only segments whose rows the recovery paths never read again are
// compacted: sealed, durable, below the last sealed one and wholly below
// the last index checkpoint (a cold open re-reads the rows from the
// checkpoint on, and the last durable row, from the raw files).

// CompactResult is what one compaction pass did.
type CompactResult struct {
	Segments int // segments compressed
	// RawBytes are the bytes the raw files replaced took on disk, Bytes
	// those the compressed files written take: blocks allocated, not file
	// sizes. A raw segment file is created at its full size and filled as
	// rows come (sparse), so a segment sealed with few rows, the last one
	// at a close, takes far less than its size.
	RawBytes int64
	Bytes    int64
}

// Compact compresses, oldest first, the segments that qualify (above)
// and hold only rows older than olderThan before the table's last ts (0:
// every qualifying segment). It returns when they are done. Writer
// goroutine only, like Append; a long pass holds the writer up, so a
// server leaves it to Options.CompactAge, which compacts on the
// checkpointer.
func (w *Writer) Compact(olderThan time.Duration) (CompactResult, error) {
	if w.closed {
		return CompactResult{}, ErrClosed
	}
	if err := w.fail.get(); err != nil {
		return CompactResult{}, err
	}
	return w.compact(olderThan, w.seq, w.lastTs)
}

// compact compresses the qualifying segments below the row count seq
// (the writer's, as of the caller) with last ts lastTs.
func (w *Writer) compact(olderThan time.Duration, seq uint64, lastTs int64) (CompactResult, error) {
	w.dropMu.Lock() // retention must not unlink a segment being compacted
	defer w.dropMu.Unlock()
	var res CompactResult
	for {
		n := max(w.ctl.CmpSegs(), w.ctl.FirstSeq()>>w.shift)
		if n >= w.compactLimit(seq) || !w.olderThan(n, olderThan, seq, lastTs) {
			return res, nil
		}
		raw, z, err := w.compactSegment(n, w.rps, nil, nil)
		if err != nil {
			return res, fmt.Errorf("writer: compact segment %d: %w", n, err)
		}
		res.Segments++
		res.RawBytes += raw
		res.Bytes += z
	}
}

// compactLimit is the first segment compaction must leave raw: a sealed
// segment qualifies once it is durable and a row after it is durable and
// below the last index checkpoint, so that a reopened writer finds the
// table's tail (its last durable rows) in a raw segment.
func (w *Writer) compactLimit(seq uint64) uint64 {
	ds, d := w.ctl.DurableSegs(), w.ctl.Durable()
	ck := w.ctl.Checkpoint().Seq
	if ds == 0 || d == 0 || ck == 0 {
		return 0
	}
	return min(ds, (d-1)>>w.shift, (ck-1)>>w.shift, seq>>w.shift)
}

// olderThan reports whether every row of segment n is older than age
// before lastTs (always, for age 0), by the time index entry at or after
// the next segment's first row, as retention does.
func (w *Writer) olderThan(n uint64, age time.Duration, seq uint64, lastTs int64) bool {
	if age <= 0 {
		return true
	}
	cut := lastTs - int64(age)
	if cut > lastTs {
		cut = math.MinInt64
	}
	e := ((n+1)<<w.shift + w.strideMask) >> w.strideShft
	return e<<w.strideShft < seq && e < w.ts.Capacity() && w.ts.At(e) < cut
}

// compactSegment runs the four steps for segment n, holding its first
// rows rows, and returns the raw and compressed file sizes. Closing stop
// (nil: never) during the encoding abandons it (cseg.ErrStopped). ready,
// when set, is waited for before the mark moves (step 3): the compactor
// encodes a segment once it is durable, before it qualifies.
func (w *Writer) compactSegment(n, rows uint64, stop <-chan struct{}, ready func() error) (rawBytes, zBytes int64, err error) {
	rawPath, zPath := format.SegPath(w.dir, n), format.ZSegPath(w.dir, n)
	// The rows from the segment's hot copy, if it has one (the durable
	// file byte for byte, in memory: no disk read), mapped before the
	// copies go.
	b, rs := w.mapHot(n)
	// The segment's hot copies go first, while its raw file is still
	// there: a reader that has the hot copy mapped maps the raw file over
	// it at its next look (Reader.sweepCopies) for the encoding's time,
	// and so holds no shared memory once the raw file is removed too.
	w.removeCopies(n)
	if b == nil {
		var err error
		if b, rs, err = w.mapDurable(n); err != nil {
			return 0, 0, err
		}
		if b == nil {
			return 0, 0, format.Corruptf(rawPath, 0, "segment file missing below the durable count")
		}
	}
	defer mmap.Unmap(b)
	data := b[format.BlockSize : format.BlockSize+rows*rs]
	// Every row is read: map them in at once (one call reads the file,
	// or maps the hot copy's pages, rather than a fault per page or
	// read-around window in each of the encoder's goroutines). A failure
	// only costs the faults.
	_ = mmap.PopulateRead(data)
	schema := w.schema.Prefix(w.schema.Layout(int(rs))) // the layout the segment's rows have
	rawDisk := diskBytes(rawPath, int64(len(b)))
	var st cseg.Stats
	if w.schema.SymCol >= 0 {
		w.ctl.AddFeatures(index.FeatClustered) // Encode writes version 2; the swap makes ctl durable
	}
	err = w.swap(n, rawPath, zPath, n+1, 0, func(f *vfs.File) error {
		bw := bufio.NewWriterSize(f, 1<<20)
		var err error
		st, err = cseg.EncodeParallel(bw, schema, cseg.Header{TableID: w.ctl.TableID, SegNo: n, RowSize: int(rs), RowsPerSeg: w.rps, Rows: rows, LateWindow: w.ctl.LateWindow()}, data, rawPath, w.opts.CompactWorkers, stop)
		if err != nil {
			return err
		}
		return bw.Flush()
	}, ready)
	if err != nil {
		return 0, 0, err
	}
	zDisk := diskBytes(zPath, st.Bytes)
	w.log.Info("writer: compacted segment", "table", w.name, "segment", n, "raw_disk_bytes", rawDisk, "disk_bytes", zDisk, "encoded_bytes", st.Bytes)
	return rawDisk, zDisk, nil
}

// diskBytes is the bytes file path takes on disk (blocks allocated), or
// size when it cannot be looked at.
func diskBytes(path string, size int64) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return size
	}
	return vfs.Allocated(fi)
}

// mapHot maps segment n's hot copy, or returns nil when it has none (or
// its header does not match: the durable file is read instead). Rows
// that fail their checks there fail the encoding, as the durable file's
// would.
func (w *Writer) mapHot(n uint64) ([]byte, uint64) {
	if !w.hotEnabled() || !w.hot.has(n) {
		return nil, 0
	}
	b, rs, err := format.MapSegmentOf(format.HotPath(w.liveDir, n),
		format.SegHeader{TableID: w.ctl.TableID, RowSize: int(w.rowSize), SegNo: n, RowsPerSeg: w.rps}, w.knownLayout)
	if err != nil {
		return nil, 0
	}
	return b, uint64(rs)
}

// compactStep calls Options.compactHook (tests) after each numbered step
// of a swap, to kill the process there.
func (w *Writer) compactStep(n uint64, step int) {
	if w.opts.compactHook != nil {
		w.opts.compactHook(n, step)
	}
}

// compactNext compresses the first segment not compressed when it is
// below upTo and still qualifies, and returns how many it compressed (0
// or 1). The compactor's (compactor.go).
//
// With CompactAge 0 a segment is taken once it is sealed and durable
// (its file complete), and its encoding overlaps the wait for it to
// qualify (a durable, checkpointed row after it: the checkpoint's
// msyncs take tens of milliseconds), which only the mark's move waits
// for. A crash before the mark moves leaves the raw file the segment,
// as in any compaction.
func (w *Writer) compactNext(upTo uint64, stop, halt <-chan struct{}) (int, error) {
	if !semAcquire(halt) {
		return 0, cseg.ErrStopped
	}
	held := true
	defer func() {
		if held {
			<-compactSem
		}
	}()
	w.dropMu.Lock() // retention must not unlink a segment being compacted
	defer w.dropMu.Unlock()
	n := max(w.ctl.CmpSegs(), w.ctl.FirstSeq()>>w.shift)
	var ready func() error
	if w.opts.CompactAge == 0 && n < min(w.ctl.DurableSegs(), w.ctl.Visible()>>w.shift) {
		ready = func() error {
			// Holding neither dropMu (the checkpointer, whose
			// checkpoint this waits for, takes it for retention) nor
			// compactSem (the wait lasts until this table's writer
			// appends again, which may be never, or only once another
			// table's compaction lets its roll go on). Retention may
			// delete the segment meanwhile, which is then not to
			// compact.
			w.dropMu.Unlock()
			<-compactSem
			held = false
			err := w.waitQualify(n, halt)
			if err == nil {
				if held = semAcquire(stop); !held {
					err = cseg.ErrStopped
				}
			}
			w.dropMu.Lock()
			if err == nil && (w.ctl.FirstSeq() > n<<w.shift || w.ctl.CmpSegs() > n) {
				err = errSegDropped // or compacted by Writer.Compact meanwhile
			}
			return err
		}
	} else if n >= upTo || n >= w.compactLimit(w.ctl.Visible()) {
		return 0, nil
	}
	if _, _, err := w.compactSegment(n, w.rps, stop, ready); errors.Is(err, errSegDropped) {
		return 0, err
	} else if err != nil {
		return 0, fmt.Errorf("writer: compact segment %d: %w", n, err)
	}
	return 1, nil
}

// closeCompactRows bounds the rows a plain Close compresses (compactTail):
// one default segment's worth or two, about 40 ms each on two cores.
const closeCompactRows = 1 << 20

// closeCompactLast is the fewest rows of the last segment that Close
// compresses: one compressed block's.
const closeCompactLast = cseg.BlockRows

// compactTail compresses, at Close, what the background compaction had
// not: with the raw backlog bounded (Options.RawBacklog), the one or two
// sealed segments before the last, which qualify once Close has made
// every row durable and checkpointed them, and the last segment, partly
// filled, which closing seals (as CloseCompacted does): a reader of the
// closed table then finds every symbol's rows clustered, the last
// segment's too, where a raw last segment holds one symbol's rows on
// every page of it. The next writer decompresses the last segment back
// into a raw file to append to it (restoreTail; its postings are kept,
// so that is a copy, not a re-indexing). It leaves more than
// closeCompactRows rows (a bound turned off, larger segments) to the
// next writer, so that Close stays short, and a failure too (logged):
// the segment stays raw, as it was. Close only, once the table is
// recorded closed; the compactor has ended.
func (w *Writer) compactTail() {
	if w.cmp == nil || w.opts.CompactAge != 0 || w.opts.RawBacklog < 0 || w.compactOff.Load() {
		return
	}
	w.dropMu.Lock()
	defer w.dropMu.Unlock()
	n := max(w.ctl.CmpSegs(), w.ctl.FirstSeq()>>w.shift)
	end := w.seq // past the last row: the last segment too
	if w.reopening || w.seq-w.seq>>w.shift<<w.shift < closeCompactLast {
		// AddColumns reopens at once, and rewrites the last segment
		// in the new layout; a last segment of a few rows is read
		// whole at little cost, and compressed takes more room than
		// raw: the sealed ones alone.
		end = w.seq >> w.shift << w.shift
	}
	if n<<w.shift >= end || end-n<<w.shift > closeCompactRows {
		return
	}
	for ; n<<w.shift < end; n++ {
		if _, _, err := w.compactSegment(n, min(w.rps, w.seq-n<<w.shift), nil, nil); err != nil {
			w.log.Warn("writer: compaction at close failed; the segment stays raw", "table", w.name, "segment", n, "err", err)
			return
		}
	}
	// (Not the last segment's postings: restoreTail would need them made
	// again.)
	if err := w.dropPostings(w.ctl.CmpSegs(), false); err != nil {
		w.log.Warn("writer: dropping compacted postings at close failed", "table", w.name, "err", err)
	}
}

// errSegDropped: retention deleted the segment being compacted, or
// Writer.Compact compacted it, while the compactor waited.
var errSegDropped = errors.New("writer: segment deleted or compacted during its compaction")

// waitQualify waits until segment n qualifies for compaction
// (compactLimit), or halt closes (cseg.ErrStopped, unless it qualifies
// by then), or what it waits for cannot come in this run (the flusher or
// the checkpointer failing: their error).
func (w *Writer) waitQualify(n uint64, halt <-chan struct{}) error {
	for n >= w.compactLimit(w.ctl.Visible()) {
		if err := w.fail.get(); err != nil {
			return err
		}
		if err := w.sh.ioCond.get(); err != nil {
			return err
		}
		if err := w.sh.ckCond.get(); err != nil {
			return err
		}
		select {
		case <-halt:
			if n < w.compactLimit(w.ctl.Visible()) {
				return nil // qualified meanwhile (Close's checkpoint)
			}
			return cseg.ErrStopped
		case <-time.After(200 * time.Microsecond):
		}
	}
	return nil
}

// cleanCompaction settles what a crash during compaction left, from the
// published mark: below it the compressed file is the segment (a raw file
// left is removed), at or past it the raw file is (a compressed or .tmp
// file is removed). Open only.
func (w *Writer) cleanCompaction() error {
	mark := w.ctl.CmpSegs()
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return err
	}
	removed := false
	for _, e := range ents {
		name := e.Name()
		var n uint64
		var path string
		switch {
		case strings.HasSuffix(name, ".zdat.tmp"), strings.HasSuffix(name, ".dat.tmp"):
			path = name
		case segNumber(name, format.ZSegName, &n) && n >= mark:
			path = name
		case segNumber(name, format.SegName, &n) && n < mark:
			// Its compressed file must be there, unless retention has
			// deleted the segment (all of its rows below the first).
			if _, err := os.Stat(format.ZSegPath(w.dir, n)); err != nil && (n+1)<<w.shift > w.ctl.FirstSeq() {
				return format.Corruptf(format.ZSegPath(w.dir, n), 0, "compressed segment missing below the compaction mark %d", mark)
			}
			path = name
		default:
			continue
		}
		if err := w.fs.Remove(filepath.Join(w.dir, path)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		removed = true
	}
	if removed {
		return w.fs.SyncPath(w.dir)
	}
	return nil
}

// segNumber parses a segment file name made by namer into n.
func segNumber(name string, namer func(uint64) string, n *uint64) bool {
	var v uint64
	if _, err := fmt.Sscanf(name, "seg-%d.", &v); err != nil || namer(v) != name {
		return false
	}
	*n = v
	return true
}

// CloseCompacted closes the writer (Close) and then, still holding the
// table's lock, compresses the segments Compact leaves raw while a writer
// runs, when they hold only rows older than olderThan before the last ts
// (0: all): closing seals the table's last segment, so on a closed table
// every segment can be compressed. The next Open decompresses the ones
// its recovery reads (the last one or two) back into raw files.
func (w *Writer) CloseCompacted(olderThan time.Duration) (CompactResult, error) {
	w.closeHook = func() (CompactResult, error) {
		var res CompactResult
		for n := max(w.ctl.CmpSegs(), w.firstSeq>>w.shift); n<<w.shift < w.seq; n++ {
			if !w.olderThan(n, olderThan, w.seq, w.lastTs) {
				break
			}
			raw, z, err := w.compactSegment(n, min(w.rps, w.seq-n<<w.shift), nil, nil)
			if err != nil {
				return res, fmt.Errorf("writer: compact segment %d: %w", n, err)
			}
			res.Segments++
			res.RawBytes += raw
			res.Bytes += z
		}
		// Every compressed segment's postings go, the last one's too: a
		// writer that reopens the table and decompresses it (restoreTail)
		// indexes its rows again.
		// (Close then frees the index files' room grown ahead.)
		return res, w.dropPostings(w.ctl.CmpSegs(), true)
	}
	err := w.Close()
	return w.closeRes, err
}

// restoreTail decompresses, newest first, the compressed segments the
// recovery paths read (the ones holding rows from the last checkpoint or
// the durable count on: after a clean close, the last one or two) back
// into raw files, with the compaction swap run backwards: write and fsync
// seg-n.dat.tmp; rename it; lower the mark to n and msync; remove
// seg-n.zdat. A crash in between leaves the mark naming a valid copy
// (cleanCompaction removes the other). Open only, before recovery.
func (w *Writer) restoreTail() error {
	need := min(w.ctl.Durable(), w.ctl.Checkpoint().Seq)
	if need > 0 {
		need--
	}
	for {
		mark := w.ctl.CmpSegs()
		if mark == 0 || mark-1 < need>>w.shift || (mark-1)<<w.shift < w.firstSeq {
			return nil
		}
		n := mark - 1
		if err := w.unfloor(n); err != nil {
			return fmt.Errorf("writer: index segment %d again: %w", n, err)
		}
		if err := w.restoreSegment(n); err != nil {
			return fmt.Errorf("writer: decompress segment %d for recovery: %w", n, err)
		}
	}
}

// unfloor prepares segment n, about to be decompressed, for postings
// again when CloseCompacted dropped them (n's rows below the postings
// floor): the floor comes down to n's first row, and so does the
// checkpoint, so that the recovery that follows re-indexes the segment's
// rows (postings, time index, late rows) from its raw file, before it
// publishes them. Both are made durable before the decompression.
func (w *Writer) unfloor(n uint64) error {
	c := w.ctl
	base := n << w.shift
	if c.PostFloor() <= base {
		return nil
	}
	ck := c.Checkpoint()
	if ck.Seq > base {
		if !w.late.Covers(ck.Late) {
			return format.Corruptf(w.late.Path(), 0, "shorter than the %d late rows checkpointed", ck.Late)
		}
		ck.Late = w.late.SearchSeq(ck.Late, base)
		ck.Seq = base
		c.SetCheckpoint(ck)
	}
	c.SetPostFloor(base)
	return c.Sync()
}

func (w *Writer) restoreSegment(n uint64) error {
	zPath, rawPath := format.ZSegPath(w.dir, n), format.SegPath(w.dir, n)
	z, err := cseg.Open(zPath, w.schema, cseg.Header{TableID: w.ctl.TableID, SegNo: n, RowsPerSeg: w.rps})
	if err != nil {
		return err
	}
	defer z.Close()
	rs := z.RowSize() // the layout the segment was written in
	return w.swap(n, zPath, rawPath, n, 10, func(f *vfs.File) error {
		// Full size, sparse: the rows are written below, the rest reads
		// as zeros and the flusher allocates ahead of its writes.
		if err := f.Truncate(format.SegFileSize(rs, w.rps)); err != nil {
			return err
		}
		hdr := make([]byte, format.BlockSize)
		format.SegHeader{TableID: w.ctl.TableID, RowSize: rs, SegNo: n, RowsPerSeg: w.rps}.Marshal(hdr)
		if _, err := f.WriteAt(hdr, 0); err != nil {
			return err
		}
		var rows []byte
		for b := 0; b < z.Blocks(); b++ {
			var err error
			if rows, err = z.Block(b, rows); err != nil {
				return err
			}
			if _, err := f.WriteAt(rows, format.BlockSize+int64(b)*cseg.BlockRows*int64(rs)); err != nil {
				return err
			}
		}
		return nil
	}, nil)
}

// swap replaces segment n's file from with a new file to that fill
// writes, setting the compaction mark to mark, in the four steps that
// keep one valid copy named by the mark at every point: write and fsync
// to.tmp; rename it to to and fsync the directory; publish the mark and
// msync ctl; remove from and fsync the directory. The compaction hook
// sees steps step0+1 to step0+4.
func (w *Writer) swap(n uint64, from, to string, mark uint64, step0 int, fill func(*vfs.File) error, ready func() error) error {
	tmp := to + ".tmp"
	_ = w.fs.Remove(tmp) // a crashed pass's
	f, err := w.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		w.fs.Remove(tmp)
		return err
	}
	w.compactStep(n, step0+1)
	if err := w.fs.Rename(tmp, to); err != nil {
		return err
	}
	if err := w.fs.SyncPath(w.dir); err != nil {
		return err
	}
	w.compactStep(n, step0+2)
	if ready != nil {
		if err := ready(); err != nil {
			// The renamed file is at or past the mark, not the
			// segment: removed, as the next Open would
			// (cleanCompaction) after a crash here; unless another
			// compaction of the segment moved the mark past it
			// meanwhile (the file is then that one's, the same bytes).
			if w.ctl.CmpSegs() < mark {
				_ = w.fs.Remove(to)
			}
			return err
		}
	}
	w.ctl.SetCmpSegs(mark)
	if err := w.ctl.Sync(); err != nil {
		return err
	}
	w.compactStep(n, step0+3)
	// Not synced: a crash that undoes the unlink leaves the old copy
	// on the wrong side of the mark, which Open removes
	// (cleanCompaction). The file is held open across the unlink and
	// let go on a goroutine: freeing its blocks takes milliseconds the
	// next segment's compaction need not wait for.
	held, _ := os.Open(from)
	if err := w.fs.Remove(from); err != nil {
		if held != nil {
			held.Close()
		}
		return err
	}
	if held != nil {
		go held.Close()
	}
	w.compactStep(n, step0+4)
	return nil
}

// dropPostings frees the postings of rows that symbol queries no longer
// read through them: rows in clustered (cseg version 2) compressed
// segments below the compaction mark mark, which RangeSym reads through
// the segments' own directories. It raises the postings floor (ctl) to
// the end of the longest run of such segments from the first row, and
// not into the segments a recovery would decompress again (restoreTail's)
// unless all (CloseCompacted: the writer that decompresses them indexes
// their rows again), makes ctl durable, then punches the data chunks
// wholly below the floor out of post.idx. Segments below the first row
// (deleted by retention) count as such. The checkpointer, or
// CloseCompacted; never concurrently.
func (w *Writer) dropPostings(mark uint64, all bool) error {
	if w.schema.SymCol < 0 {
		return nil
	}
	need := min(w.ctl.Durable(), w.ctl.Checkpoint().Seq)
	if need == 0 {
		return nil
	}
	limit := min(mark, (need-1)>>w.shift) // segments below it may go
	if all {
		limit = mark
	}
	old := w.ctl.PostFloor()
	n := max(old>>w.shift, w.ctl.FirstSeq()>>w.shift)
	for ; n < limit; n++ {
		v, err := cseg.FileVersion(format.ZSegPath(w.dir, n))
		if err != nil || v != cseg.VersionClustered {
			break // a version 1 segment still needs its postings
		}
	}
	floor := n << w.shift
	if floor <= old {
		return nil
	}
	w.ctl.AddFeatures(index.FeatPostFloor)
	w.ctl.SetPostFloor(floor)
	if err := w.ctl.Sync(); err != nil {
		return err
	}
	snap, err := w.ctl.Snapshot()
	if err != nil {
		return nil // the writer is publishing: the next pass
	}
	// The published dictionary, through a read-only view of its own: the
	// writer goroutine may be adding symbols meanwhile.
	if w.ckSyms == nil {
		if w.ckSyms, err = index.OpenSymbols(filepath.Join(w.dir, format.SymName), w.ctl.TableID, nil); err != nil {
			return err
		}
	}
	if err := w.ckSyms.Refresh(w.ctl.SymCount(), w.ctl.SymBytes()); err != nil {
		return err
	}
	punched, err := w.post.PunchBelow(w.ckSyms.Dirs(), snap.NextChunk, floor)
	if err != nil {
		return err
	}
	w.log.Info("writer: postings of compacted rows dropped", "table", w.name, "floor", floor, "chunks", punched)
	return nil
}
