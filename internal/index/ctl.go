package index

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

// Control file layout (on-disk contract; docs/FORMAT.md "ctl"). Page 0 is
// the immutable header, page 1 the published words.
const (
	CtlSize = 2 * format.BlockSize

	hdrLiveSlots   = 12
	hdrTableID     = 16
	hdrSegShift    = 32
	hdrStrideShift = 36
	hdrChunkWords  = 40
	hdrCreated     = 48
	hdrSchema      = 64
	hdrCheck       = format.BlockSize - 4

	// Writer line A: the seqlock and the snapshot it guards.
	offSeqlock   = 4096
	offVisible   = 4104
	offLastTs    = 4112
	offFirstSeq  = 4120
	offNextChunk = 4128
	offLate      = 4136
	// Writer line B: dictionary, identity and counters.
	offSymCount   = 4160
	offSymBytes   = 4168
	offLiveGen    = 4176
	offWriterPid  = 4184
	offState      = 4192
	offOutOfOrder = 4200
	offBootID     = 4208
	// Flusher line.
	offDurable     = 4224
	offDurableSegs = 4232
	offCkSeq       = 4240
	offCkNextChunk = 4248
	offCkSymCount  = 4256
	offFlushes     = 4264
	offCmpSegs     = 4272
	offCluGen      = 4280
	offPostFloor   = 4288
	offCkLate      = 4296
	offLateWindow  = 4304
	offFeatures    = 4312
	// Live slot table: MaxLiveSlots entries of {gen u64, segNo u64}, up
	// to the live directory's offset.
	offSlots = 4352
	// Live directory path: u32 length then bytes.
	offLiveDir = 4864
	maxLiveDir = 1020

	MaxLiveSlots = (offLiveDir - offSlots) / 16 // 32
	// ChunkWords is the number of u64 words in a postings chunk (4 KiB).
	ChunkWords = format.BlockSize / 8
)

// Writer states in the control file.
const (
	StateClosed = 0 // no writer, or the last one closed cleanly
	StateOpen   = 1 // a writer has the table open (or died with it open)
	// StateRecovering: a writer is recovering from the durable files (or
	// died doing so); the next one recovers that way again.
	StateRecovering = 2
)

// ErrBusy is returned when a seqlock read keeps seeing a write in progress.
var ErrBusy = errors.New("index: published state busy (writer mid-publish or dead mid-publish)")

// Geometry is the fixed shape of a table, chosen at creation.
type Geometry struct {
	SegShift    uint // rows per segment = 1 << SegShift
	StrideShift uint // time index keeps every (1 << StrideShift)-th row's ts
	LiveSlots   int  // live segment slots in shared memory
}

// RowsPerSeg is 1 << SegShift.
func (g Geometry) RowsPerSeg() uint64 { return 1 << g.SegShift }

// Ctl is a mapped control file. Reader methods are safe for concurrent use;
// Set*/Publish belong to the single writer (SetDurable* to its flusher).
type Ctl struct {
	Path string
	// Schema is the table's schema as of Open or the last LoadSchema:
	// the one it was created with, grown by the columns added since.
	Schema  *store.Schema
	created *store.Schema // the schema in the header
	TableID [16]byte
	Geometry
	b        []byte
	writable bool
	f        *vfs.File // the writer's file as opened (closed), for msync
	lockSeq  uint64    // writer: last seqlock value stored
}

// CreateCtl writes a new control file at path (which must not exist)
// through fs and fsyncs it.
func CreateCtl(path string, s *store.Schema, g Geometry, tableID [16]byte, fs vfs.FS) error {
	if g.LiveSlots < 2 || g.LiveSlots > MaxLiveSlots {
		return fmt.Errorf("index: %d live slots, want 2..%d", g.LiveSlots, MaxLiveSlots)
	}
	if s.SchemaBytes() > hdrCheck-hdrSchema {
		return fmt.Errorf("%w: schema needs %d header bytes", store.ErrSchema, s.SchemaBytes())
	}
	b := make([]byte, CtlSize)
	copy(b, format.MagicCtl)
	le.PutUint32(b[8:], format.FormatVersion)
	le.PutUint32(b[hdrLiveSlots:], uint32(g.LiveSlots))
	copy(b[hdrTableID:], tableID[:])
	le.PutUint32(b[hdrSegShift:], uint32(g.SegShift))
	le.PutUint32(b[hdrStrideShift:], uint32(g.StrideShift))
	le.PutUint32(b[hdrChunkWords:], ChunkWords)
	le.PutUint64(b[hdrCreated:], uint64(time.Now().UnixNano()))
	s.MarshalSchema(b[hdrSchema:])
	le.PutUint32(b[hdrCheck:], format.CRC32C(b[:hdrCheck]))
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Sync()
}

// OpenCtl maps the control file read-write through fs (the writer, whose
// Sync then goes through fs), or read-only when fs is nil (readers), and
// checks its header.
func OpenCtl(path string, fs vfs.FS) (*Ctl, error) {
	writable := fs != nil
	var f *os.File
	var wf *vfs.File
	var err error
	if writable {
		if wf, err = fs.OpenFile(path, os.O_RDWR, 0); err == nil {
			f = wf.File
		}
	} else {
		f, err = os.OpenFile(path, os.O_RDONLY, 0)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() < CtlSize {
		f.Close()
		return nil, format.Corruptf(path, st.Size(), "control file is %d bytes, want %d", st.Size(), CtlSize)
	}
	b, err := mmap.MapShared(f, CtlSize, writable)
	if err != nil {
		f.Close()
		return nil, err
	}
	// The mapping keeps the file alive: nothing needs the descriptor
	// (msync works on the mapping), and a process with a thousand tables
	// would hold a thousand of them.
	f.Close()
	c := &Ctl{Path: path, b: b, writable: writable, f: wf}
	if err := c.parseHeader(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.CheckFeatures(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.LoadSchema(); err != nil {
		c.Close()
		return nil, err
	}
	c.lockSeq = mmap.LoadAcquire64(b, offSeqlock)
	return c, nil
}

func (c *Ctl) parseHeader() error {
	b := c.b
	if string(b[:8]) != format.MagicCtl {
		return format.Corruptf(c.Path, 0, "bad magic %q, want %q", b[:8], format.MagicCtl)
	}
	if got, want := le.Uint32(b[hdrCheck:]), format.CRC32C(b[:hdrCheck]); got != want {
		return format.Corruptf(c.Path, hdrCheck, "header check %08x, computed %08x", got, want)
	}
	if v := le.Uint32(b[8:]); v != format.FormatVersion {
		return format.Corruptf(c.Path, 8, "format version %d, this build reads %d", v, format.FormatVersion)
	}
	copy(c.TableID[:], b[hdrTableID:hdrTableID+16])
	c.LiveSlots = int(le.Uint32(b[hdrLiveSlots:]))
	c.SegShift = uint(le.Uint32(b[hdrSegShift:]))
	c.StrideShift = uint(le.Uint32(b[hdrStrideShift:]))
	if c.LiveSlots < 2 || c.LiveSlots > MaxLiveSlots || c.SegShift < 4 || c.SegShift > 40 || c.StrideShift > 20 ||
		le.Uint32(b[hdrChunkWords:]) != ChunkWords {
		return format.Corruptf(c.Path, hdrLiveSlots, "geometry out of range: %d slots, segment shift %d, stride shift %d",
			c.LiveSlots, c.SegShift, c.StrideShift)
	}
	s, err := store.UnmarshalSchema(b[hdrSchema:hdrCheck])
	if err != nil {
		return format.Corruptf(c.Path, hdrSchema, "%v", err)
	}
	c.created, c.Schema = s, s
	return nil
}

// Close unmaps the file.
func (c *Ctl) Close() error {
	err := mmap.Unmap(c.b)
	c.b = nil
	return err
}

// Created is the table's creation time.
func (c *Ctl) Created() time.Time { return time.Unix(0, int64(le.Uint64(c.b[hdrCreated:]))) }

// Visible is the published row count: rows [FirstSeq, Visible) may be read.
// A single acquire load: the fast path of every reader.
func (c *Ctl) Visible() uint64 { return mmap.LoadAcquire64(c.b, offVisible) }

// Durable is the count of rows that are durable on disk.
func (c *Ctl) Durable() uint64 { return mmap.LoadAcquire64(c.b, offDurable) }

// DurableSegs is the number of segments whose durable file is complete:
// segments below it are read from their durable files.
func (c *Ctl) DurableSegs() uint64 { return mmap.LoadAcquire64(c.b, offDurableSegs) }

// CmpSegs is the compaction mark: segments below it (and at or past the
// first row's) are compressed files (format.ZSegPath), the others raw.
func (c *Ctl) CmpSegs() uint64 { return mmap.LoadAcquire64(c.b, offCmpSegs) }

// CluGen counts the clustered hot copies (seg-N.clu in the live
// directory) created and removed: a reader that found a copy missing
// looks again only once it has changed. Preparer and checkpointer.
func (c *Ctl) CluGen() uint64 { return mmap.LoadAcquire64(c.b, offCluGen) }

// BumpCluGen records that a clustered copy was created or removed (after
// the rename or unlink). Writer goroutines only.
func (c *Ctl) BumpCluGen() { mmap.AddRelease64(c.b, offCluGen, 1) }

// SetCmpSegs publishes the compaction mark, after the compressed file of
// segment n-1 is durable and before its raw file is removed. Writer (its
// compaction) only.
func (c *Ctl) SetCmpSegs(n uint64) { mmap.StoreRelease64(c.b, offCmpSegs, n) }

// PostFloor is the postings floor: postings entries of rows below it may
// be gone (their data chunks punched out of post.idx, reading as zeros),
// because every row below it is in a clustered compressed segment, which
// a symbol query reads through its own directory. It only grows.
func (c *Ctl) PostFloor() uint64 { return mmap.LoadAcquire64(c.b, offPostFloor) }

// SetPostFloor publishes the postings floor, before any chunk below it is
// punched. Writer only.
func (c *Ctl) SetPostFloor(seq uint64) { mmap.StoreRelease64(c.b, offPostFloor, seq) }

// Format features (the ctl word features, docs/FORMAT.md §12): each bit
// is a part of the format a table uses that a reader must know to read it
// right. A reader refuses a table with a bit it does not know. Bits are
// set by the writer before the first data that needs them is published,
// and never cleared.
const (
	FeatLate      = 1 << 0 // late rows (late.idx entries; time-ordered reads merge them)
	FeatPostFloor = 1 << 1 // postings punched below the postings floor
	FeatClustered = 1 << 2 // compressed segments in format version 2 (clustered by symbol)
	// KnownFeatures is every bit this build reads.
	KnownFeatures = FeatLate | FeatPostFloor | FeatClustered | FeatColumns
)

// Features is the table's format feature bits.
func (c *Ctl) Features() uint64 { return mmap.LoadAcquire64(c.b, offFeatures) }

// AddFeatures sets bits in the features word (writer only).
func (c *Ctl) AddFeatures(bits uint64) {
	if f := c.Features(); f|bits != f {
		mmap.OrRelease64(c.b, offFeatures, bits) // the compactor and the checkpointer may add at once
	}
}

// CheckFeatures refuses a table that uses a format feature this build
// does not know, naming the file and the bits.
func (c *Ctl) CheckFeatures() error {
	if f := c.Features(); f&^KnownFeatures != 0 {
		return format.Corruptf(c.Path, offFeatures, "format features %#x: this build reads %#x (the table was written by a newer tickdb)", f, KnownFeatures)
	}
	return nil
}

// LateWindow is the widest late window (ns) any writer of the table has
// stored late rows under: a late row's ts is at least its entry's prev
// minus it. 0: no late row was ever stored.
func (c *Ctl) LateWindow() int64 { return int64(mmap.LoadAcquire64(c.b, offLateWindow)) }

// SetLateWindow records w if it is wider than the recorded window. Writer
// only, before its first late row.
func (c *Ctl) SetLateWindow(w int64) {
	if w > c.LateWindow() {
		mmap.StoreRelease64(c.b, offLateWindow, uint64(w))
	}
}

// FirstSeq is the published first row (retention deletes the rows below
// it), read alone: it only grows, so a reader that sees an old value
// reads rows whose files it still has mapped or gets ErrTruncated.
func (c *Ctl) FirstSeq() uint64 { return mmap.LoadAcquire64(c.b, offFirstSeq) }

// Snap is the multi-word state published under the seqlock.
type Snap struct {
	Visible   uint64
	LastTs    int64 // the newest ts (late rows are older)
	FirstSeq  uint64
	NextChunk uint64
	Late      uint64 // late.idx entries published (rows stored late)
}

// Snapshot retry bounds. A writer thread preempted between the two halves
// of Publish holds the lock word odd for as long as the OS keeps it off the
// CPU, which on a busy machine is milliseconds: that is not an error (the
// writer's own flusher reads this snapshot, and failing there stops the
// writer). Only a writer that died mid-publish holds it odd for good.
const (
	snapSpins    = 1000                   // tight retries first
	snapPatience = 100 * time.Millisecond // then sleeping retries, this long
)

// Snapshot reads the seqlock-published state: load the lock word, copy, and
// re-check; retried in a tight loop, then with short sleeps (which leave
// the CPU to a preempted writer) for up to snapPatience, and ErrBusy after
// that.
func (c *Ctl) Snapshot() (Snap, error) {
	var deadline time.Time
	for i := 0; ; i++ {
		if i >= snapSpins {
			if deadline.IsZero() {
				deadline = time.Now().Add(snapPatience)
			} else if time.Now().After(deadline) {
				return Snap{}, ErrBusy
			}
			time.Sleep(10 * time.Microsecond)
		}
		s1 := mmap.LoadAcquire64(c.b, offSeqlock)
		if s1&1 != 0 {
			continue
		}
		s := Snap{
			Visible:   mmap.LoadAcquire64(c.b, offVisible),
			LastTs:    int64(mmap.LoadAcquire64(c.b, offLastTs)),
			FirstSeq:  mmap.LoadAcquire64(c.b, offFirstSeq),
			NextChunk: mmap.LoadAcquire64(c.b, offNextChunk),
			Late:      mmap.LoadAcquire64(c.b, offLate),
		}
		if mmap.LoadAcquire64(c.b, offSeqlock) == s1 {
			return s, nil
		}
	}
}

// Publish stores s under the seqlock: mark odd, store the words (visible
// last), mark even. Writer only.
func (c *Ctl) Publish(s Snap) {
	q := c.lockSeq | 1
	mmap.StoreRelease64(c.b, offSeqlock, q)
	mmap.StoreRelease64(c.b, offLastTs, uint64(s.LastTs))
	mmap.StoreRelease64(c.b, offFirstSeq, s.FirstSeq)
	mmap.StoreRelease64(c.b, offNextChunk, s.NextChunk)
	mmap.StoreRelease64(c.b, offLate, s.Late)
	mmap.StoreRelease64(c.b, offVisible, s.Visible)
	c.lockSeq = q + 1
	mmap.StoreRelease64(c.b, offSeqlock, c.lockSeq)
}

// ResetSeqlock makes the lock word even again after a writer died between
// the two halves of Publish. Writer only, before its first Publish.
func (c *Ctl) ResetSeqlock() {
	c.lockSeq = (mmap.LoadAcquire64(c.b, offSeqlock) + 1) &^ 1
	mmap.StoreRelease64(c.b, offSeqlock, c.lockSeq)
}

// Raw reads of single words for recovery and verify (no seqlock).

// RawSnap reads the snapshot words without the seqlock (recovery only).
func (c *Ctl) RawSnap() Snap {
	return Snap{
		Visible:   mmap.LoadAcquire64(c.b, offVisible),
		LastTs:    int64(mmap.LoadAcquire64(c.b, offLastTs)),
		FirstSeq:  mmap.LoadAcquire64(c.b, offFirstSeq),
		NextChunk: mmap.LoadAcquire64(c.b, offNextChunk),
		Late:      mmap.LoadAcquire64(c.b, offLate),
	}
}

// SymCount is the number of published dictionary entries.
func (c *Ctl) SymCount() uint64 { return mmap.LoadAcquire64(c.b, offSymCount) }

// SymBytes is the end offset of the published dictionary entries in sym.dat.
func (c *Ctl) SymBytes() uint64 { return mmap.LoadAcquire64(c.b, offSymBytes) }

// SetSyms publishes the dictionary: bytes first, then count. Writer only.
func (c *Ctl) SetSyms(count, bytes uint64) {
	mmap.StoreRelease64(c.b, offSymBytes, bytes)
	mmap.StoreRelease64(c.b, offSymCount, count)
}

// WriterPid is the pid of the writer that has the table open, or 0.
func (c *Ctl) WriterPid() int { return int(mmap.LoadAcquire64(c.b, offWriterPid)) }

// State is StateOpen while a writer has the table (or died with it) open.
func (c *Ctl) State() uint64 { return mmap.LoadAcquire64(c.b, offState) }

// SetWriter records the writer's pid and state. Writer only.
func (c *Ctl) SetWriter(pid int, state uint64) {
	mmap.StoreRelease64(c.b, offWriterPid, uint64(pid))
	mmap.StoreRelease64(c.b, offState, state)
}

// OutOfOrder is the count of rows rejected or restamped for going back in time.
func (c *Ctl) OutOfOrder() uint64 { return mmap.LoadAcquire64(c.b, offOutOfOrder) }

// SetOutOfOrder publishes the out-of-order counter. Writer only.
func (c *Ctl) SetOutOfOrder(n uint64) { mmap.StoreRelease64(c.b, offOutOfOrder, n) }

// BootID is the boot id of the machine the live slots were made on.
func (c *Ctl) BootID() (id [16]byte) { copy(id[:], c.b[offBootID:offBootID+16]); return }

// SetBootID records the boot id. Writer only, before any slot is published.
func (c *Ctl) SetBootID(id [16]byte) { copy(c.b[offBootID:offBootID+16], id[:]) }

// LiveGen is the last live generation handed out (NextLiveGen). A
// writer's open that puts a new file in the place of a segment's (the
// segment it appends to, rewritten for added columns or decompressed)
// hands one out after the rename, for the slot it appends to, and before
// it publishes a row the old file lacks: a reader that mapped a file of
// a segment not yet sealed maps it again once this has changed.
func (c *Ctl) LiveGen() uint64 { return mmap.LoadAcquire64(c.b, offLiveGen) }

// NextLiveGen returns a new, never used live generation. Writer only.
func (c *Ctl) NextLiveGen() uint64 {
	g := mmap.LoadAcquire64(c.b, offLiveGen) + 1
	mmap.StoreRelease64(c.b, offLiveGen, g)
	return g
}

// SetDurable publishes the durable row count. Flusher only.
func (c *Ctl) SetDurable(n uint64) { mmap.StoreRelease64(c.b, offDurable, n) }

// SetDurableSegs publishes the complete-durable-segment count. Flusher only.
func (c *Ctl) SetDurableSegs(n uint64) { mmap.StoreRelease64(c.b, offDurableSegs, n) }

// Checkpoint is the state of the index files as of their last msync: rows
// below Seq are in ts.idx and post.idx on disk, with NextChunk chunks and
// SymCount symbols, and the Late late.idx entries of rows below Seq.
type Checkpoint struct{ Seq, NextChunk, SymCount, Late uint64 }

// Checkpoint reads the last checkpoint.
func (c *Ctl) Checkpoint() Checkpoint {
	return Checkpoint{
		Seq:       mmap.LoadAcquire64(c.b, offCkSeq),
		NextChunk: mmap.LoadAcquire64(c.b, offCkNextChunk),
		SymCount:  mmap.LoadAcquire64(c.b, offCkSymCount),
		Late:      mmap.LoadAcquire64(c.b, offCkLate),
	}
}

// SetCheckpoint records a checkpoint. Writer or flusher, one at a time.
func (c *Ctl) SetCheckpoint(k Checkpoint) {
	mmap.StoreRelease64(c.b, offCkSymCount, k.SymCount)
	mmap.StoreRelease64(c.b, offCkNextChunk, k.NextChunk)
	mmap.StoreRelease64(c.b, offCkLate, k.Late)
	mmap.StoreRelease64(c.b, offCkSeq, k.Seq)
}

// Flushes counts flusher writes (for stat and metrics).
func (c *Ctl) Flushes() uint64 { return mmap.LoadAcquire64(c.b, offFlushes) }

// SetFlushes publishes the flush counter. Flusher only.
func (c *Ctl) SetFlushes(n uint64) { mmap.StoreRelease64(c.b, offFlushes, n) }

// Slot reads live slot i: the generation of its current assignment and the
// segment it holds. gen 0 means the slot holds nothing.
func (c *Ctl) Slot(i int) (gen, segNo uint64) {
	off := offSlots + 16*i
	for {
		g1 := mmap.LoadAcquire64(c.b, off)
		n := mmap.LoadAcquire64(c.b, off+8)
		if mmap.LoadAcquire64(c.b, off) == g1 {
			return g1, n
		}
	}
}

// SlotGen is the generation of slot i alone: the per-row validity check.
func (c *Ctl) SlotGen(i int) uint64 { return mmap.LoadAcquire64(c.b, offSlots+16*i) }

// SetSlot publishes slot i as holding segNo under generation gen: the
// generation is cleared first so no reader pairs the old gen with the new
// segment. Writer only.
func (c *Ctl) SetSlot(i int, gen, segNo uint64) {
	off := offSlots + 16*i
	mmap.StoreRelease64(c.b, off, 0)
	mmap.StoreRelease64(c.b, off+8, segNo)
	mmap.StoreRelease64(c.b, off, gen)
}

// LiveDir is the directory holding the live slots, as the writer set it.
func (c *Ctl) LiveDir() string {
	n := int(le.Uint32(c.b[offLiveDir:]))
	if n > maxLiveDir {
		return ""
	}
	return string(c.b[offLiveDir+4 : offLiveDir+4+n])
}

// SetLiveDir records the live directory. Writer only, before slots are set.
func (c *Ctl) SetLiveDir(dir string) error {
	if len(dir) > maxLiveDir {
		return fmt.Errorf("index: live dir path is %d bytes, at most %d", len(dir), maxLiveDir)
	}
	copy(c.b[offLiveDir+4:], dir)
	le.PutUint32(c.b[offLiveDir:], uint32(len(dir)))
	return nil
}

// Sync writes the control file back (msync MS_SYNC). Writer only.
func (c *Ctl) Sync() error { return c.f.Msync(c.b, 0) }
