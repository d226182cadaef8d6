package writer

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

// Writer is a table's single writer. Append, AppendBatch, Publish, Symbol
// and Sync must be called from one goroutine at a time (normally the
// goroutine that called Pin), and so must Stats.
type Writer struct {
	// Hot state, touched on every append.
	seq        uint64 // next sequence number
	lastTs     int64
	segBase    uint64 // first seq of the current segment
	segEnd     uint64 // first seq past the current segment
	stop       uint64 // where the fast paths hand over to append: min(segEnd, resv)
	resv       uint64 // the writer's copy of shared.reserved (room.go)
	rows       []byte // current live slot's row area
	rowSize    uint64
	symOff     int // offset of the postings sym column, or -1
	nsyms      uint32
	strideMask uint64
	strideShft uint
	// strideStop is the time-index entry at which the append fast paths
	// hand a row to append (crossStride): the first entry past the
	// file's known capacity or the first at or past kickAt.
	strideStop uint64
	kickAt     uint64 // seq at which the writer next tells the preparer its position
	published  uint64
	ts         *index.TimeIndex
	pw         *index.PostWriter
	// Late rows (Options.LateWindow): the window in ns, late.idx and its
	// entries appended so far (published with the rows).
	lateWin int64
	late    *index.LateIndex
	nlate   uint64

	opts    Options
	log     *slog.Logger
	fs      vfs.FS // opts.fs: the durable side's file operations
	dir     string
	name    string
	liveDir string
	schema  *store.Schema
	shift   uint
	rps     uint64 // rows per segment
	segSize int64  // segment file size
	lock    *os.File
	ctl     *index.Ctl
	post    *index.Postings
	syms    *index.Symbols
	// ckSyms is a read-only view of the published dictionary for
	// dropPostings (checkpointer, then CloseCompacted), opened on first use.
	ckSyms *index.Symbols
	slots  []*liveSlot
	sh     shared
	fail   failure
	fl     *flusher
	prep   *preparer
	ck     *checkpointer
	closed bool
	final  Stats // the counters at Close
	// reopening is set by AddColumns around its Close: the writer stays a
	// member of its Group through the reopen.
	reopening bool
	// grouped is the flusher when a Group runs it (nil: its own
	// goroutine polls): publish tells it about new rows.
	grouped *flusher

	// Retention (retain.go): the first row not deleted, and the segments
	// below dropped already deletes (under dropMu).
	firstSeq uint64
	dropMu   sync.Mutex
	dropped  uint64

	// closeHook, set by CloseCompacted, runs at the end of Close while
	// the lock is still held; closeRes is its result.
	closeHook func() (CompactResult, error)
	closeRes  CompactResult
	reap      reaper // the live files Close removed, freed after it (reap.go)
	// cmp is the background compaction (compactor.go; nil when
	// Options.CompactAge is negative); compactOff: it met damage and
	// stopped for this run.
	cmp        *compactor
	compactOff atomic.Bool

	clu      cluBuilder // the checkpointer's buffers for clustered copies (clu.go)
	hotChunk []byte     // the checkpointer's buffer for hot copies (clu.go)
	hot      hotSet     // the segments with hot copies (clu.go)
}

// Open opens (creating it if needed, when opts.Schema is set) the table
// name under the database directory db, takes the writer lock, recovers
// after a crash, and starts the flusher and the preparer.
func Open(db, name string, opts *Options) (*Writer, error) {
	if err := checkPlatform(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if err := store.ValidTableName(name); err != nil {
		return nil, err
	}
	dir := filepath.Join(db, name)
	if _, err := os.Stat(filepath.Join(dir, format.CtlName)); errors.Is(err, os.ErrNotExist) {
		if o.Schema == nil {
			return nil, fmt.Errorf("%w: %s (give a schema to create it)", store.ErrNoTable, dir)
		}
		if err := createTable(db, name, &o); err != nil {
			return nil, fmt.Errorf("writer: create table %s: %w", name, err)
		}
	}
	if g := o.Group; g != nil {
		// A member from Open to Close (AddColumn's reopen included): the
		// group refuses to close under it.
		if err := g.join(); err != nil {
			return nil, err
		}
	}
	lock, err := lockTable(dir)
	if err != nil {
		o.Group.leaveIfSet()
		return nil, err
	}
	w := &Writer{opts: o, log: o.Logger, fs: o.fs, dir: dir, name: name, lock: lock, symOff: -1}
	if err := w.open(); err != nil {
		w.closeFiles()
		o.Group.leaveIfSet()
		return nil, err
	}
	w.start()
	return w, nil
}

// start starts the flusher, the preparer and the checkpointer of a writer
// that open has readied: goroutines of their own, or jobs of its Group.
func (w *Writer) start() {
	w.fl = newFlusher(w)
	w.prep = newPreparer(w)
	w.ck = newCheckpointer(w)
	w.fail.onSet = w.fl.broadcast
	// Reserve room for the first rows now, so the first append need not
	// wait for the preparer (an error here is the preparer's to handle,
	// on its first step).
	_ = w.prep.step()
	if w.opts.CompactAge >= 0 {
		w.cmp = newCompactor(w)
		go w.cmp.run()
	}
	if g := w.opts.Group; g != nil {
		w.prep.closeDurable() // its jobs hold no file between runs
		w.startJobs(g)
	} else {
		go w.fl.run()
		go w.prep.run()
		go w.ck.run()
	}
	w.prep.wake()
	if w.hotEnabled() || w.cmp != nil {
		// Hot segments recovered warm may lack their copies (a writer
		// killed before it made them), and a backlog of raw segments
		// may wait for the compaction: the checkpointer sees to both now
		// rather than at the next seal.
		w.ck.wake()
	}
	w.log.Info("writer: open", "table", w.name, "rows", w.seq, "durable", w.ctl.Durable(), "live", w.liveDir)
}

// slotCount is the live slots of a new table: LiveSlots, for the segments
// not yet durable. (Tables created before hot copies also have a slot per
// segment of the hot budget; they keep them.)
func slotCount(o *Options) int { return min(o.LiveSlots, index.MaxLiveSlots) }

func createTable(db, name string, o *Options) error {
	s := o.Schema
	rows := uint64(o.SegmentSize) / uint64(s.RowSize)
	if rows < 16 {
		rows = 16
	}
	shift := uint(63 - bits.LeadingZeros64(rows))
	if o.TimeStride&(o.TimeStride-1) != 0 {
		return fmt.Errorf("time stride %d is not a power of two", o.TimeStride)
	}
	g := index.Geometry{SegShift: shift, StrideShift: uint(bits.TrailingZeros64(uint64(o.TimeStride))), LiveSlots: slotCount(o)}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	fs := o.fs
	if err := mkdirDurable(fs, db); err != nil {
		return err
	}
	tmp, err := fs.MkdirTemp(db, "."+name+".tmp-")
	if err != nil {
		return err
	}
	defer fs.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for _, step := range []func() error{
		func() error { return index.CreateCtl(filepath.Join(tmp, format.CtlName), s, g, id, fs) },
		func() error { return index.CreateSymbols(filepath.Join(tmp, format.SymName), id, fs) },
		func() error { return index.CreateTimeIndex(filepath.Join(tmp, format.TimeIdxName), id, fs) },
		func() error { return index.CreatePostings(filepath.Join(tmp, format.PostName), id, fs) },
		func() error { return index.CreateLateIndex(filepath.Join(tmp, format.LateIdxName), id, fs) },
		func() error { return fs.SyncPath(tmp) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	if err := fs.Rename(tmp, filepath.Join(db, name)); err != nil {
		if _, statErr := os.Stat(filepath.Join(db, name, format.CtlName)); statErr == nil {
			return nil // created concurrently by another process
		}
		return err
	}
	return fs.SyncPath(db)
}

// mkdirDurable makes dir and its missing parents, each one synced into
// its parent: a directory made but not synced there may be gone after a
// power cut, with everything synced inside it (the database directory
// Open makes for a first table).
func mkdirDurable(fs vfs.FS, dir string) error {
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(fs, parent); err != nil {
			return err
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return fs.SyncPath(parent)
}

func (w *Writer) open() error {
	var err error
	if w.ctl, err = index.OpenCtl(filepath.Join(w.dir, format.CtlName), w.fs); err != nil {
		return err
	}
	c := w.ctl
	w.firstSeq = c.RawSnap().FirstSeq
	if w.opts.Schema != nil && !w.opts.Schema.Equal(c.Schema) {
		return fmt.Errorf("%w: table %s has columns %s, asked for %s", store.ErrSchema, w.name, c.Schema, w.opts.Schema)
	}
	w.schema = c.Schema
	w.rowSize = uint64(c.Schema.RowSize)
	if c.Schema.SymCol >= 0 {
		w.symOff = c.Schema.ColAt(c.Schema.SymCol).Off
	}
	w.shift = c.SegShift
	w.rps = c.RowsPerSeg()
	if w.opts.MaxLag == 0 {
		w.opts.MaxLag = w.rps // the documented default: one segment
	}
	w.segSize = format.SegFileSize(c.Schema.RowSize, w.rps)
	w.strideShft = c.StrideShift
	w.strideMask = 1<<c.StrideShift - 1
	if w.syms, err = index.OpenSymbols(filepath.Join(w.dir, format.SymName), c.TableID, w.fs); err != nil {
		return err
	}
	if w.ts, err = index.OpenTimeIndex(filepath.Join(w.dir, format.TimeIdxName), c.TableID, w.fs); err != nil {
		return err
	}
	if w.post, err = index.OpenPostings(filepath.Join(w.dir, format.PostName), c.TableID, w.fs); err != nil {
		return err
	}
	if err := w.openLate(); err != nil {
		return err
	}
	if r := w.opts.idxReserve; r > 0 {
		for _, remap := range []func(int) error{w.ts.Remap, w.post.Remap, w.late.Remap} {
			if err := remap(r); err != nil {
				return err
			}
		}
	}
	w.pw = index.NewPostWriter(w.post, 1)
	w.pw.Grow = w.growPostings
	if w.opts.postMaxDelta != 0 {
		w.pw.SetMaxDelta(w.opts.postMaxDelta)
	}
	w.liveDir = liveDirFor(&w.opts, w.dir, c.TableID)
	w.slots = make([]*liveSlot, c.LiveSlots)
	for i := range w.slots {
		w.slots[i] = &liveSlot{i: i, path: filepath.Join(w.liveDir, format.SlotName(i))}
	}
	if err := w.cleanCompaction(); err != nil {
		return fmt.Errorf("writer: table %s: settle an interrupted compaction: %w", w.name, err)
	}
	// After cleanCompaction, which removes what a crash left of its
	// temporary files and of ours (seg-N.dat.tmp); the last segment
	// decompressed first (a plain Close compresses it), in the layout it
	// was written in, then rewritten for added columns.
	if err := w.restoreTail(); err != nil {
		return fmt.Errorf("writer: table %s: %w", w.name, err)
	}
	if err := w.upgradeTail(); err != nil {
		return fmt.Errorf("writer: table %s: rewrite the last segment for added columns: %w", w.name, err)
	}
	if err := w.recover(); err != nil {
		return fmt.Errorf("writer: recover table %s: %w", w.name, err)
	}
	w.kickAt = w.seq
	w.setStrideStop()
	if err := w.removeBelowFirst(); err != nil {
		return fmt.Errorf("writer: table %s: remove segments below the first row: %w", w.name, err)
	}
	if err := w.cleanCopies(true); err != nil {
		return fmt.Errorf("writer: table %s: %w", w.name, err)
	}
	return nil
}

// Schema is the table's schema.
func (w *Writer) Schema() *store.Schema { return w.schema }

// Dir is the table's directory.
func (w *Writer) Dir() string { return w.dir }

// LiveDir is where the live segment slots are.
func (w *Writer) LiveDir() string { return w.liveDir }

// Len is the number of rows appended (published or not).
func (w *Writer) Len() uint64 { return w.seq }

// LastTs is the newest ts appended (math.MinInt64 when empty): the last
// row's, or a newer one when the last row was late.
func (w *Writer) LastTs() int64 { return w.lastTs }

// NewRow returns a zeroed row buffer for this table's schema.
func (w *Writer) NewRow() store.Row { return w.schema.NewRow() }

// Append stores one row (RowSize bytes; the check word is filled in here)
// and returns its sequence number. The row is visible to readers after the
// next Publish. It allocates nothing and never waits for I/O; it waits only
// at a segment roll when the preparer is behind (counted in Stats).
func (w *Writer) Append(row store.Row) (uint64, error) {
	if w.closed {
		return 0, ErrClosed // the live slot is unmapped: never touch it
	}
	if uint64(len(row)) != w.rowSize {
		return 0, ErrRowSize
	}
	if len(row) == 32 {
		return w.append32((*[32]byte)(row))
	}
	return w.append(row)
}

// append32 is append for one 32-byte row on the common path (ts in order,
// known symbol, room in the segment, the reservation and the time index),
// in registers and without a memmove; anything else goes to append.
func (w *Writer) append32(r *[32]byte) (uint64, error) {
	w0 := binary.LittleEndian.Uint64(r[0:])
	w1 := binary.LittleEndian.Uint64(r[8:])
	w2 := binary.LittleEndian.Uint64(r[16:])
	lo := binary.LittleEndian.Uint32(r[24:])
	seq := w.seq
	t := int64(w0)
	if t < w.lastTs || seq >= w.stop {
		return w.append(r[:])
	}
	var sym uint32
	if w.symOff >= 0 {
		if sym = binary.LittleEndian.Uint32(r[w.symOff:]); sym >= w.nsyms {
			return w.append(r[:])
		}
	}
	if seq&w.strideMask == 0 {
		k := seq >> w.strideShft
		if k >= w.strideStop {
			return w.append(r[:])
		}
		w.ts.Set(k, t)
	}
	put32((*[32]byte)(w.rows[(seq-w.segBase)*32:]), seq, w0, w1, w2, lo)
	if w.symOff >= 0 && !w.pw.Put(sym, seq) {
		if err := w.pw.Advance(sym, seq); err != nil {
			return 0, err
		}
	}
	w.lastTs = t
	w.seq = seq + 1
	return seq, nil
}

// put32 stores a 32-byte row at seq: its first 28 bytes (w0, w1, w2, lo)
// and the check word.
func put32(d *[32]byte, seq, w0, w1, w2 uint64, lo uint32) {
	binary.LittleEndian.PutUint64(d[0:], w0)
	binary.LittleEndian.PutUint64(d[8:], w1)
	binary.LittleEndian.PutUint64(d[16:], w2)
	binary.LittleEndian.PutUint64(d[24:], uint64(lo)|uint64(format.Check32(seq, w0, w1, w2, lo))<<32)
}

func (w *Writer) append(row []byte) (uint64, error) {
	ts := int64(le64(row))
	stamped, late := false, false
	if ts < w.lastTs {
		if uint64(w.lastTs)-uint64(ts) <= uint64(w.lateWin) {
			late = true
		} else {
			w.countOutOfOrder()
			if w.opts.OutOfOrder == OutOfOrderReject {
				return 0, ErrOutOfOrder
			}
			ts = max(time.Now().UnixNano(), w.lastTs)
			stamped = true
		}
	}
	var sym uint32
	if w.symOff >= 0 {
		sym = le32(row[w.symOff:])
		if sym >= w.nsyms {
			return 0, ErrUnknownSymbol
		}
	}
	if w.seq >= w.stop {
		// A segment's end (roll) or the reservation's (room.go).
		if err := w.makeRoom(); err != nil {
			return 0, err
		}
	}
	seq := w.seq
	off := (seq - w.segBase) * w.rowSize
	dst := w.rows[off : off+w.rowSize]
	copy(dst, row)
	if stamped {
		putLe64(dst, uint64(ts))
	}
	format.Seal(seq, dst)
	if late {
		if err := w.addLate(index.LateEntry{Seq: seq, Ts: ts, Prev: w.lastTs, Sym: sym}); err != nil {
			return 0, err
		}
	}
	if seq&w.strideMask == 0 {
		k := seq >> w.strideShft
		if k >= w.strideStop {
			if err := w.crossStride(seq); err != nil {
				return 0, err
			}
		}
		// The time index keeps the newest ts up to the row (its own, or
		// for a late row the one before it): a non-decreasing key.
		w.ts.Set(k, max(ts, w.lastTs))
	}
	if w.symOff >= 0 {
		if err := w.pw.Add(sym, seq); err != nil {
			return 0, err
		}
	}
	w.lastTs = max(ts, w.lastTs)
	w.seq = seq + 1
	return seq, nil
}

// openLate maps late.idx, creating it in a table made before late rows
// existed, and records the writer's window in ctl.
func (w *Writer) openLate() error {
	c := w.ctl
	path := filepath.Join(w.dir, format.LateIdxName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if c.RawSnap().Late != 0 {
			return format.Corruptf(path, 0, "file missing, the table has %d late rows", c.RawSnap().Late)
		}
		tmp := path + ".tmp"
		w.fs.Remove(tmp)
		if err := index.CreateLateIndex(tmp, c.TableID, w.fs); err != nil {
			return err
		}
		if err := w.fs.Rename(tmp, path); err != nil {
			return err
		}
		if err := w.fs.SyncPath(w.dir); err != nil {
			return err
		}
	}
	var err error
	if w.late, err = index.OpenLateIndex(path, c.TableID, w.fs); err != nil {
		return err
	}
	w.lateWin = int64(w.opts.LateWindow)
	c.SetLateWindow(w.lateWin)
	return nil
}

// addLate records a late row in late.idx, growing the file when full.
// The entry is published with the row (Snap.Late).
func (w *Writer) addLate(e index.LateEntry) error {
	if w.nlate == 0 {
		w.ctl.AddFeatures(index.FeatLate)
	}
	if w.nlate >= w.late.Capacity() {
		if err := w.late.Grow(w.nlate + w.nlate/2 + 128); err != nil {
			return err
		}
	}
	w.late.Set(w.nlate, e)
	w.nlate++
	return nil
}

// AppendBatch appends len(rows)/RowSize rows laid end to end and returns the
// first one's sequence number and how many were stored. On an error the
// rows before the failing one are stored (n says how many) and the rest are
// not.
func (w *Writer) AppendBatch(rows []byte) (first uint64, n int, err error) {
	if w.closed {
		return w.seq, 0, ErrClosed
	}
	rs := int(w.rowSize)
	if len(rows)%rs != 0 {
		return w.seq, 0, ErrRowSize
	}
	first = w.seq
	if rs == 32 {
		// The fused loop takes every row it can; the one it stops at
		// (a roll, a late row, an unknown symbol, time-index growth)
		// goes through append, then the loop resumes.
		for len(rows) > 0 {
			k, err := w.appendRows32(rows)
			if n += k; err != nil {
				return first, n, err
			}
			if rows = rows[k*32:]; len(rows) == 0 {
				break
			}
			if _, err := w.append(rows[:32]); err != nil {
				return first, n, err
			}
			n++
			rows = rows[32:]
		}
		return first, n, nil
	}
	for off := 0; off < len(rows); off += rs {
		if _, err := w.append(rows[off : off+rs]); err != nil {
			return first, n, err
		}
		n++
	}
	return first, n, nil
}

// appendRows32 is the append path for 32-byte rows, fused into one loop:
// for each row of src (whole 32-byte rows) it checks the ts order and the
// symbol, stores the row's words with the check word into the live slot
// (four 8-byte stores, no memmove), sets the time-index entry every K rows
// and adds the postings entry. It stops, without touching it, at the first
// row that needs more than that: the end of the current segment (a roll)
// or of the room reserved (room.go), a late row, an unknown symbol, or a time-index entry at strideStop (past
// the file's capacity, or where the preparer is told the writer's
// position); append handles that row. It returns how many rows it stored,
// and the error of a failed postings allocation (the only one it can meet:
// that row's bytes are written but it is not counted, as in append).
func (w *Writer) appendRows32(src []byte) (int, error) {
	seq := w.seq
	n := uint64(len(src) / 32)
	if seq >= w.stop {
		return 0, nil
	}
	if room := w.stop - seq; n > room {
		n = room
	}
	if n == 0 {
		return 0, nil
	}
	off := (seq - w.segBase) * 32
	dst := w.rows[off : off+n*32]
	src = src[:n*32]
	lastTs := w.lastTs
	nsyms := w.nsyms
	symOff := w.symOff
	mask, shift, stop := w.strideMask, w.strideShft, w.strideStop
	ts, pw := w.ts, w.pw
	s := seq
	for len(src) >= 32 && len(dst) >= 32 {
		r := (*[32]byte)(src)
		w0 := binary.LittleEndian.Uint64(r[0:])
		w1 := binary.LittleEndian.Uint64(r[8:])
		w2 := binary.LittleEndian.Uint64(r[16:])
		lo := binary.LittleEndian.Uint32(r[24:])
		t := int64(w0)
		if t < lastTs {
			break
		}
		var sym uint32
		if symOff >= 0 {
			if sym = binary.LittleEndian.Uint32(r[symOff:]); sym >= nsyms {
				break
			}
		}
		if s&mask == 0 {
			k := s >> shift
			if k >= stop {
				break
			}
			ts.Set(k, t)
		}
		put32((*[32]byte)(dst), s, w0, w1, w2, lo)
		if symOff >= 0 {
			if !pw.Put(sym, s) {
				if err := pw.Advance(sym, s); err != nil {
					w.seq, w.lastTs = s, lastTs
					return int(s - seq), err
				}
			}
		}
		lastTs = t
		s++
		src, dst = src[32:], dst[32:]
	}
	w.seq, w.lastTs = s, lastTs
	return int(s - seq), nil
}

// CountOutOfOrder counts one row that the caller refused before Append,
// by its own check of the same rule (later than LateWindow under
// OutOfOrderReject), as Append counts the rows it refuses: ingest checks a
// whole request before storing any of it. Like Append's count, it is the
// table's out-of-order counter (Stats.OutOfOrder, reader.Stat), stored in
// the control file at once, without waiting for a Publish, so every
// process sees the same figure as soon as the row is refused. Writer
// goroutine only. It returns the count after it (after Close, the final
// one, unchanged).
func (w *Writer) CountOutOfOrder() uint64 {
	if w.closed {
		return w.final.OutOfOrder
	}
	return w.countOutOfOrder()
}

// countOutOfOrder adds one to the table's out-of-order counter in the
// control file and returns it: readers in every process see it at once,
// not at the next Publish (a refused row may be the last the table gets
// for a while). It is off the in-order path: one store per late row.
func (w *Writer) countOutOfOrder() uint64 {
	n := w.ctl.OutOfOrder() + 1
	w.ctl.SetOutOfOrder(n)
	return n
}

// Publish makes every appended row visible to readers, in this and other
// processes: one seqlock-guarded store of the row count and last ts. It
// allocates nothing and never waits for I/O unless LagBlock is set and the
// durable lag is over MaxLag.
func (w *Writer) Publish() {
	if w.seq == w.published {
		return
	}
	w.publish()
	if w.opts.MaxLag > 0 {
		w.checkLag()
	}
}

func (w *Writer) publish() {
	w.ctl.Publish(index.Snap{Visible: w.seq, LastTs: w.lastTs, FirstSeq: w.firstSeq, NextChunk: w.pw.NextChunk(), Late: w.nlate})
	w.published = w.seq
	if w.grouped != nil {
		w.grouped.published() // a Group has no ticker: tell its flush job
	}
}

func (w *Writer) checkLag() {
	lag := w.seq - w.ctl.Durable()
	if lag <= w.opts.MaxLag {
		return
	}
	w.sh.lagAlarms.Add(1)
	if w.opts.LagPolicy == LagBlock {
		// Under FlushOnSync and FlushNone the flusher writes only sealed
		// segments unless asked for more: ask for the rows this waits on,
		// or the wait never ends.
		target := w.seq - w.opts.MaxLag/2
		for {
			want := w.sh.syncWant.Load()
			if want >= target || w.sh.syncWant.CompareAndSwap(want, target) {
				break
			}
		}
		w.fl.wake()
		for w.seq-w.ctl.Durable() > w.opts.MaxLag/2 && w.fail.get() == nil && w.sh.ioCond.get() == nil {
			time.Sleep(50 * time.Microsecond)
		}
		return
	}
	now := time.Now().UnixNano()
	if now-w.sh.lastLagWarn.Load() >= int64(time.Second) {
		w.sh.lastLagWarn.Store(now)
		w.log.Warn("writer: durable lag over limit", "table", w.name, "lag_rows", lag, "max", w.opts.MaxLag)
		if w.opts.OnLag != nil {
			w.opts.OnLag(lag)
		}
	}
}

// Sync publishes and returns once every row appended before it is durable
// (written with O_DIRECT|O_DSYNC to the durable segment files). While the
// flusher cannot write (an I/O error it retries: Condition) it returns
// that error, matching ErrIO, at once: the rows stay appended, and become
// durable once a retry succeeds.
func (w *Writer) Sync() error {
	if w.closed {
		return ErrClosed
	}
	w.Publish()
	return w.fl.waitDurable(w.seq, time.Now())
}

// WaitDurable returns once the first n rows are durable. Unlike the other
// methods it may be called from any goroutine, while the writer's goroutine
// goes on appending; n must not exceed the published count (rows are
// flushed only once published). It returns ErrClosed if the writer closes
// first (Close itself makes every row durable, or returns its error). It
// must not run while AddColumn does. While the flusher cannot write (an
// I/O error it retries) it waits on: the rows become durable once a
// retry succeeds.
func (w *Writer) WaitDurable(n uint64) error {
	if w.ctl.Durable() >= n {
		return nil
	}
	return w.fl.waitDurable(n, time.Time{})
}

// Symbol returns the dictionary id of name, adding it (and publishing the
// dictionary) if it is new. Allocates only for a new symbol.
func (w *Writer) Symbol(name []byte) (uint32, error) {
	if id, ok := w.syms.Lookup(name); ok {
		return id, nil
	}
	return w.addSymbol(name)
}

// SymbolString is Symbol for a string.
func (w *Writer) SymbolString(name string) (uint32, error) {
	if id, ok := w.syms.Lookup([]byte(name)); ok {
		return id, nil
	}
	return w.addSymbol([]byte(name))
}

func (w *Writer) addSymbol(name []byte) (uint32, error) {
	if w.closed {
		return 0, ErrClosed
	}
	if w.idxTight() {
		if err := w.remapIndexes(); err != nil {
			return 0, err
		}
	}
	dir, err := w.pw.NewSymbol()
	if err != nil {
		return 0, err
	}
	id, err := w.syms.Append(name, dir)
	if err != nil {
		return 0, err
	}
	w.nsyms = uint32(w.syms.Len())
	w.ctl.SetSyms(uint64(w.nsyms), w.syms.End())
	// Publish the chunk allocator with the symbol, so a reader (or a
	// restarted writer) never sees a symbol whose chunks are unpublished.
	w.publish()
	return id, nil
}

// SymbolName returns the name of symbol id.
func (w *Writer) SymbolName(id uint32) string { return w.syms.Name(id) }

// Stats is a snapshot of the writer's counters.
type Stats struct {
	Appended   uint64 // rows appended
	Visible    uint64 // rows published
	Durable    uint64 // rows durable
	OutOfOrder uint64 // rows later than the late window, rejected or restamped (since creation)
	Late       uint64 // rows stored late, inside the late window (since creation)
	Symbols    int
	RollStalls uint64        // rolls that waited for the preparer
	StallTime  time.Duration // total wait at rolls
	// BacklogStalls are the rolls that waited for the background
	// compaction (Options.RawBacklog), BacklogWait their total wait.
	BacklogStalls uint64
	BacklogWait   time.Duration
	Flushes       uint64 // O_DIRECT writes
	FlushBytes    uint64
	LagAlarms     uint64
	// RoomWait is the time appends and Reserve waited for the preparer to
	// reserve room (room.go); StallTime's counterpart within a segment.
	RoomWait time.Duration
	// Condition says whether the table takes rows (Writer.Condition);
	// ConditionErr is why not, empty when it does.
	Condition    Condition
	ConditionErr string
	// HotSegments are sealed, durable segments kept in shared memory (hot
	// copies, Options.HotBytes, or still in their live slots): readers
	// read their HotRows from there.
	HotSegments uint64
	HotRows     uint64
	// CompactedSegs are the segments below the compaction mark (compressed,
	// or deleted by retention); RawSegs the sealed ones at or above it
	// still raw: the background compaction's backlog, which includes the
	// newest sealed one until a row after it is durable and checkpointed
	// (Options.CompactAge).
	CompactedSegs uint64
	RawSegs       uint64
	// CompactRows are the rows the background compaction compressed
	// since Open, CompactTime the wall time it spent on them (encoding
	// and swap, segment by segment): CompactRows/CompactTime is its
	// throughput beside whatever else ran.
	CompactRows uint64
	CompactTime time.Duration
	// IndexReserved is the address space the index files' mappings take
	// (a reservation that follows their sizes), Remaps how often one was
	// mapped again, larger, since Open.
	IndexReserved int64
	Remaps        uint64
}

// Stats returns the current counters (after Close, the final ones).
func (w *Writer) Stats() Stats {
	if w.closed {
		return w.final
	}
	return w.stats()
}

func (w *Writer) stats() Stats {
	st := Stats{
		Appended:      w.seq,
		Visible:       w.ctl.Visible(),
		Durable:       w.ctl.Durable(),
		OutOfOrder:    w.ctl.OutOfOrder(),
		Late:          w.nlate,
		Symbols:       int(w.nsyms),
		RollStalls:    w.sh.rollStalls.Load(),
		StallTime:     time.Duration(w.sh.stallNanos.Load()),
		BacklogStalls: w.sh.backlogStalls.Load(),
		BacklogWait:   time.Duration(w.sh.backlogNanos.Load()),
		Flushes:       w.sh.flushes.Load(),
		FlushBytes:    w.sh.flushBytes.Load(),
		LagAlarms:     w.sh.lagAlarms.Load(),
		Remaps:        w.sh.remaps.Load(),
		RoomWait:      time.Duration(w.sh.waitNanos.Load()),
		CompactRows:   w.sh.cmpRows.Load(),
		CompactTime:   time.Duration(w.sh.cmpNanos.Load()),
	}
	if c, err := w.Condition(); err != nil {
		st.Condition, st.ConditionErr = c, err.Error()
	}
	st.IndexReserved = w.reserved()
	st.HotSegments, st.HotRows = w.hotSegs()
	st.CompactedSegs = w.ctl.CmpSegs()
	if sealed, low := w.seq>>w.shift, max(st.CompactedSegs, w.firstSeq>>w.shift); sealed > low {
		st.RawSegs = sealed - low
	}
	return st
}

// hotSegs counts the sealed, durable, not compressed segments held in
// shared memory, by their hot copies or their live slots, and their rows.
func (w *Writer) hotSegs() (segs, rows uint64) {
	sealed, cmp := w.ctl.DurableSegs(), w.ctl.CmpSegs()
	copies := w.hot.list()
	for _, n := range copies {
		if n < sealed && n >= cmp {
			segs++
		}
	}
	for i := range w.slots {
		if gen, n := w.ctl.Slot(i); gen != 0 && n < sealed && n >= cmp && !slices.Contains(copies, n) {
			segs++
		}
	}
	return segs, segs << w.shift
}

// roll moves the writer to the next segment: it publishes (a sealed
// segment is always fully visible, so the flusher can finish it) and
// switches to the live slot the preparer has made ready, waiting for it if
// the preparer is behind.
func (w *Writer) roll() error {
	if err := w.fail.get(); err != nil {
		return err
	}
	if w.closed {
		return ErrClosed
	}
	w.publish()
	if w.idxTight() {
		if err := w.remapIndexes(); err != nil {
			return err
		}
	}
	n := w.seq >> w.shift
	if err := w.waitBacklog(n); err != nil {
		return err
	}
	w.sh.pos.Store(w.seq)
	w.sh.curSeg.Store(n)
	s := w.slots[n%uint64(len(w.slots))]
	if s.ready.Load() != n+1 {
		w.sh.rollStalls.Add(1)
		start := time.Now()
		for s.ready.Load() != n+1 {
			if err := w.fail.get(); err != nil {
				return err
			}
			// The preparer cannot make the slot ready (no space for the
			// segment's file) or the flusher cannot free it: refuse, as
			// past the reservation (room.go); the next append rolls again.
			if e := w.sh.resCond.get(); e != nil {
				return e
			}
			if e := w.sh.ioCond.get(); e != nil {
				return e
			}
			w.prep.wake()
			w.fl.wake()
			time.Sleep(20 * time.Microsecond)
		}
		w.sh.stallNanos.Add(int64(time.Since(start)))
	}
	w.rows = s.rows
	w.segBase = n << w.shift
	w.segEnd = w.segBase + w.rps
	w.setStop()
	w.prep.wake()
	w.autoRetain()
	return nil
}

// backlogMaxWait bounds one roll's wait for the compaction: a compaction
// that makes no progress for that long (it should not) costs a warning,
// not a writer that never moves again.
const backlogMaxWait = 10 * time.Second

// waitBacklog holds the roll into segment n while that would leave more
// than Options.RawBacklog sealed segments raw, for as long as the
// background compaction can take them: not once it failed, stopped on
// damage, or while the flusher, the checkpointer or the preparer cannot
// work (the compaction waits for them).
func (w *Writer) waitBacklog(n uint64) error {
	if w.cmp == nil || w.opts.CompactAge != 0 || w.opts.RawBacklog < 0 {
		return nil
	}
	over := func() bool {
		low := max(w.ctl.CmpSegs(), w.ctl.FirstSeq()>>w.shift)
		return n > low && n-low > uint64(w.opts.RawBacklog) &&
			!w.sh.cmpFailing.Load() && !w.compactOff.Load() &&
			w.sh.ioCond.get() == nil && w.sh.ckCond.get() == nil && w.sh.resCond.get() == nil
	}
	if !over() {
		return nil
	}
	w.sh.backlogStalls.Add(1)
	start := time.Now()
	for over() {
		if err := w.fail.get(); err != nil {
			return err
		}
		if time.Since(start) > backlogMaxWait {
			w.log.Warn("writer: the background compaction made no progress; rolling without it", "table", w.name, "segment", n, "compacted", w.ctl.CmpSegs())
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	w.sh.backlogNanos.Add(int64(time.Since(start)))
	return nil
}

// crossStride runs for the row seq (at a time-index stride) where the
// fast paths stop. Past kickAt it tells the preparer where the writer is
// (one atomic store and a non-blocking wake, once per kickEvery rows) so
// that it keeps the slot pages and index files ahead; past the time
// index's capacity (the preparer is behind) it grows the file itself.
func (w *Writer) crossStride(seq uint64) error {
	if seq >= w.kickAt {
		w.sh.pos.Store(seq)
		w.prep.wake()
		w.kickAt = seq + max(w.sh.kickEvery.Load(), 1)
	}
	if k := seq >> w.strideShft; k >= w.ts.Capacity() {
		if err := w.ts.Grow(k + 1 + (k+1)/4); err != nil {
			return err
		}
	}
	w.setStrideStop()
	return nil
}

// setStrideStop sets strideStop from the time index's capacity and kickAt.
func (w *Writer) setStrideStop() {
	w.strideStop = min(w.ts.Capacity(), (w.kickAt+w.strideMask)>>w.strideShft)
}

func (w *Writer) growPostings(need uint64) error { return w.post.Grow(need + need/4 + 16) }

// closeGrace is how long Close waits for a flusher that fails with an
// error that can clear (an I/O error) to succeed before it gives up.
const closeGrace = 10 * time.Second

// Close publishes, makes every row durable, checkpoints the index files,
// removes the live slots from shared memory and releases the lock. The
// table's files are then complete on disk.
//
// If the flusher cannot write for closeGrace, Close returns its error
// (ErrIO) and leaves the live slots: the next Open on this machine
// carries on from them. If an index checkpoint failed in this run
// (checkpointer), Close records none: every row is durable, and the next
// Open re-indexes from the last checkpoint recorded.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.publish()
	// No more hot copies: the flusher's disk writes are what Close
	// waits for, while the background compaction goes on with the
	// segment it is encoding, if any.
	w.sh.closing.Store(true)
	w.prep.stop()
	err := w.fl.waitDurable(w.seq, time.Now().Add(closeGrace))
	w.closed = true
	w.fl.stop()
	w.ck.stop() // a background checkpoint must not race the final one
	if err == nil && w.sh.ckCond.get() != nil {
		w.stopCompactor(false)
		return w.closeUncheckpointed()
	}
	if err == nil {
		err = w.checkpoint(w.seq)
	}
	// Then the compaction ends: with the segment it is encoding
	// compressed, when the checkpoint made it qualify (it was sealed
	// before Close; stopping would throw its encoding away, and
	// compactTail do it again whole), or given up (a failed Close).
	w.stopCompactor(err == nil)
	if err == nil {
		_, _, err = w.dropSegments() // what automatic retention left to the checkpointer
	}
	if err == nil {
		err = w.removeLive()
	}
	if err == nil {
		w.trimDurable()
	}
	if err == nil {
		w.ctl.SetWriter(0, index.StateClosed)
		err = w.ctl.Sync()
	}
	if err == nil && w.closeHook == nil {
		w.compactTail()
	}
	if err == nil && w.closeHook != nil {
		w.closeRes, err = w.closeHook()
	}
	if err == nil {
		err = w.trimIndexes()
	}
	w.final = w.stats()
	if e := w.closeFiles(); err == nil {
		err = e
	}
	if !w.reopening {
		w.opts.Group.leaveIfSet()
	}
	w.reap.start()
	w.log.Info("writer: closed", "table", w.name, "rows", w.seq)
	return err
}

// stopCompactor ends the background compaction, if any: finishing the
// segment in progress (compactor.finish) or giving it up (stop).
func (w *Writer) stopCompactor(finish bool) {
	switch {
	case w.cmp == nil:
	case finish:
		w.cmp.finish()
	default:
		w.cmp.stop()
	}
}

// trimIndexes frees the index files' room grown ahead of the published
// rows (the preparer's runway, a quarter or more of post.idx): a closed
// table's files hold its rows only, and the next writer grows them again.
func (w *Writer) trimIndexes() error {
	snap, err := w.ctl.Snapshot()
	if err != nil {
		return err
	}
	if err := w.post.Trim(snap.NextChunk); err != nil {
		return err
	}
	if err := w.late.Trim(snap.Late); err != nil {
		return err
	}
	return w.ts.Trim(snap.Visible>>w.strideShft + 1)
}

// checkpoint makes the dictionary, time index and postings durable for rows
// below visible and records that in the control file. It runs on the
// checkpointer after a segment seal, and synchronously on the open and
// close paths (never two at a time).
func (w *Writer) checkpoint(visible uint64) error {
	snap, err := w.ctl.Snapshot()
	if err != nil {
		return err
	}
	count := w.ctl.SymCount()
	end := w.ctl.SymBytes()
	if err := w.syms.SyncTo(end); err != nil {
		return err
	}
	if err := w.ts.Sync(snap.Visible>>w.strideShft + 1); err != nil {
		return err
	}
	if err := w.post.Sync(snap.NextChunk); err != nil {
		return err
	}
	if err := w.late.Sync(snap.Late); err != nil {
		return err
	}
	ckSeq := min(snap.Visible, visible)
	w.ctl.SetCheckpoint(index.Checkpoint{Seq: ckSeq, NextChunk: snap.NextChunk, SymCount: count, Late: w.late.SearchSeq(snap.Late, ckSeq)})
	return w.ctl.Sync()
}

func (w *Writer) removeLive() error {
	if err := w.cleanCopies(false); err != nil {
		return err
	}
	for _, s := range w.slots {
		w.ctl.SetSlot(s.i, 0, 0)
	}
	for _, s := range w.slots {
		// Unlinked while mapped, unmapped by the reaper after Close.
		if err := w.fs.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if s.b != nil {
			w.reap.holdMap(s.b)
			s.b, s.rows = nil, nil
		}
	}
	if err := w.fs.Remove(w.liveDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if w.opts.LiveDir == "" {
		// The shared root (/dev/shm/tickdb) goes too when this was the
		// last table in it; another writer's directory keeps it.
		_ = os.Remove(filepath.Dir(w.liveDir))
	}
	return nil
}

func (w *Writer) closeFiles() error {
	w.clu.release()
	var errs []error
	for _, s := range w.slots {
		if s != nil && s.b != nil {
			errs = append(errs, mmap.Unmap(s.b))
			s.b, s.rows = nil, nil
		}
	}
	if w.pw != nil {
		w.pw.Release()
	}
	if w.post != nil {
		errs = append(errs, w.post.Close())
	}
	if w.late != nil {
		errs = append(errs, w.late.Close())
	}
	if w.ts != nil {
		errs = append(errs, w.ts.Close())
	}
	if w.ckSyms != nil {
		errs = append(errs, w.ckSyms.Close())
	}
	if w.syms != nil {
		errs = append(errs, w.syms.Close())
	}
	if w.ctl != nil {
		errs = append(errs, w.ctl.Close())
	}
	if w.lock != nil {
		errs = append(errs, w.lock.Close())
	}
	return errors.Join(errs...)
}
