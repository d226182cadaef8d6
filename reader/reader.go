package reader

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/store"
)

// Options configures Open; nil means the defaults.
type Options struct {
	// LiveDir overrides the live slot directory recorded by the writer
	// (for a tree moved to another path or machine).
	LiveDir string
	// Fetch, when not nil, gives the Fetcher of the compressed segment
	// file at path (nil: the file is all there): for a table directory
	// whose compressed segments are sparse copies of objects kept
	// elsewhere, filled as queries read them (package archive's
	// OpenReader: a table archived in object storage).
	Fetch func(path string) Fetcher
	// OnClose, when not nil, runs at the end of Close (once): for what
	// the opener of a Reader it hands on keeps beside it.
	OnClose func()
}

// Fetcher fills byte ranges of a compressed segment file on demand
// (internal/cseg.Fetcher): Fetch(off, n) returns once bytes [off, off+n)
// are in the file. It must be safe for concurrent use.
type Fetcher interface {
	Fetch(off, n int64) error
}

// Prefetcher is a Fetcher that can bring in, in the background, what
// opening its segment reads: the header and the tables at the end (at
// most the last tail bytes). A query asks it of the segments it will
// visit before it opens the first (as it asks the kernel to read local
// files ahead), so that their fetches run together rather than one
// after another.
type Prefetcher interface {
	Fetcher
	Prefetch(tail int64)
}

// Reader reads one table, in this process or another, without any lock:
// every file is opened O_RDONLY and mapped PROT_READ, so it works on a tree
// the process cannot write. A Reader is not safe for concurrent use: open
// one per goroutine (they share nothing but the kernel's page cache).
//
// Rows are handed out as views into the mappings (no copy). A row from a
// sealed durable segment stays valid until Close. A row from a live segment
// stays valid until the writer has moved LiveSlots-1 segments past it and
// recycled the slot; use ReadRow for a copy that is checked against
// recycling. A row from a compressed segment (compacted: package cseg) is
// a view into the reader's decoded copy of its 4,096-row block, valid
// until the reader decodes another block of that segment (a Get or an
// iterator's Next of a row in another block of it); copy what you keep.
// The exception: RangeSym over a segment compressed in the clustered
// format (cseg version 2) decodes the symbol's blocks into the iterator's
// own buffers, so such a row is valid until that iterator decodes its next
// block or is repositioned. Likewise RangeSym over a hot segment that has
// a clustered copy (the writer's seg-N.clu, docs/FORMAT.md §13) reads the
// symbol's rows into the iterator's own buffers, 2,048 at a time: such a
// row is valid until that iterator reads its next 2,048 rows or is
// repositioned.
type Reader struct {
	dir  string
	ctl  *index.Ctl
	ts   *index.TimeIndex
	post *index.Postings
	late *index.LateIndex // late.idx, mapped at the first late row seen
	// verifyLate is the late rows Verify checks (its snapshot's).
	verifyLate uint64
	syms       *index.Symbols
	schema     *store.Schema
	liveDir    string                    // Options.LiveDir, or "" to follow the one in ctl
	fetch      func(path string) Fetcher // Options.Fetch
	onClose    func()                    // Options.OnClose
	// symRead: symbols whose postings chunks this reader has asked the
	// kernel to read ahead (their first RangeSym).
	symRead []bool
	shift   uint
	mask    uint64
	rowSize uint64
	sshift  uint
	segSize int64
	symOff  int
	slots   []slotMap
	segs    []segView // by segment number
	retired [][]byte  // raw mappings of segments read compressed since (remapCompressed)
	// retiredZ: compressed segments written raw again since (view).
	retiredZ []*cseg.Segment
	clus     []cluView // clustered hot copies, by segment number (clu.go)
	cluHead  []byte    // buffer of a clustered copy's header and directory
	// cluSerial counts clustered copies opened.
	cluSerial uint64
	// copiesSwept is the ctl change counter when the copies this reader
	// holds were last checked (sweepCopies).
	copiesSwept uint64
	zlast       uint64 // 1 + the compressed segment whose block Get decoded last (0: none)
	// zscratch is the decode buffers of every compressed segment this
	// reader opens (a Reader is used from one goroutine at a time).
	// zready, when not nil, is closed once the goroutine Open started to
	// prepare them is done: nothing else touches them before (the first
	// compressed segment opened and Close wait for it).
	zscratch cseg.Scratch
	zready   chan struct{}
	visible  uint64   // last loaded published count
	first    uint64   // last loaded first row (retention deletes below it)
	boot     [16]byte // this machine's boot id
	closed   bool

	// last is Latest.Sym's buffers and cache (latest.go).
	last latestState
	// order is the symbol ids in name order (SymbolOrder).
	order []uint32
	// scans are the column scans with decoding goroutines running
	// (scan_task.go): Close stops them before it unmaps what they read.
	scans []*Scan
	// scanMem is the buffers of column scans that ended, for the next
	// ones (scan.go).
	scanMem []*scanMem
	// pipes are the scans' pipelines whose decoding goroutines are
	// started (running a scan's tasks, or parked for the next scan):
	// Close stops them.
	pipes []*pipeline
}

type viewKind uint8

const (
	viewNone       viewKind = iota
	viewDurable             // sealed durable file: immutable
	viewLive                // live slot: valid while the slot's generation holds
	viewPartial             // durable file of an unsealed segment: rows below Durable
	viewCompressed          // compressed sealed segment (package cseg), one block decoded at a time
)

type segView struct {
	kind  viewKind
	rs    uint64 // row size: the schema's, or an earlier layout's (columns added since)
	rows  []byte
	slot  int
	gen   uint64
	path  string
	file  []byte   // durable mapping to unmap (nil for live)
	hot   bool     // durable: file maps the segment's hot copy (path), not its durable file
	valid []uint64 // durable: bitset of 4 KiB blocks whose rows passed their check
	// Live only: the slot holds rows from index from on; the rows before
	// it (a writer that reopened the table copied in only the block it
	// appends to) are read from the durable file, mapped in low.
	from uint64
	low  *segView
	// Compressed only: the file, and the rows [bfirst, bend) of the
	// segment decoded last, in rows (a buffer reused for the next block).
	z            *cseg.Segment
	bfirst, bend uint64
	// Clustered (cseg version 2) only: rows is block zpart-1, decoded
	// one row at a time: the rows marked in filled; run is how many rows
	// asked for last came one after the other, the last of them row
	// last of the block.
	zpart  uint64
	run    int
	last   uint64
	filled [cseg.BlockRows / 64]uint64
	// asked: not opened yet, its header and tables asked for
	// (prefetchTables).
	asked bool
	// fileGen: durable (partial) and compressed: the ctl's live
	// generation counter (index.Ctl.LiveGen) loaded before the file was
	// opened. The file of a segment not sealed yet is not for good: a
	// writer's open replaces it (docs/FORMAT.md §15: rewritten in the
	// layout of added columns; §10: a last segment compressed at close,
	// decompressed to append to, and compressed again at the next close)
	// and then hands out a live generation before it publishes any row
	// the old file lacks. view maps such a file again once it changed.
	fileGen uint64
}

// partialRows is how many rows of a block of a clustered compressed
// segment, one after the other, Get decodes one at a time before it
// decodes the whole block: a scan in seq order takes the whole block
// after them; a seek's probes (a binary search) and random rows never
// do, and each costs a row (its block's rank frame and its symbol's data
// block, which the segment keeps decoded), where the whole block is a
// data block for every symbol in it.
const partialRows = 16

// release unmaps what the view holds.
func (v *segView) release() {
	mmap.Unmap(v.file)
	if v.low != nil {
		mmap.Unmap(v.low.file)
	}
	if v.z != nil {
		v.z.Close()
	}
}

type slotMap struct {
	b   []byte
	gen uint64
	rs  uint64 // the slot's row size
}

// Openers of database locations that are not directories, by scheme
// (RegisterOpener).
var (
	openersMu sync.RWMutex
	openers   = map[string]func(db, name string, opts *Options) (*Reader, error){}
)

// RegisterOpener makes Open hand locations scheme://... to open: package
// archive registers "s3". The Reader open returns is read-only like any
// other; its Close releases what open set up (Options.OnClose).
func RegisterOpener(scheme string, open func(db, name string, opts *Options) (*Reader, error)) {
	openersMu.Lock()
	defer openersMu.Unlock()
	openers[scheme] = open
}

// Open opens table name in database directory db for reading.
//
// db may also be a location another package opens, by its scheme:
// s3://bucket/prefix is an archive in object storage, which package
// archive registers (import it, as a database/sql driver is imported);
// opts then passes through to it.
func Open(db, name string, opts *Options) (*Reader, error) {
	if scheme, _, ok := strings.Cut(db, "://"); ok && !strings.ContainsAny(scheme, "/\\") {
		openersMu.RLock()
		open := openers[scheme]
		openersMu.RUnlock()
		if open == nil {
			return nil, fmt.Errorf("reader: open %s: no package registered for %s:// locations (import github.com/tickdb/tickdb/archive for s3://)", db, scheme)
		}
		return open(db, name, opts)
	}
	if err := store.ValidTableName(name); err != nil {
		return nil, err
	}
	dir := filepath.Join(db, name)
	ctl, err := index.OpenCtl(filepath.Join(dir, format.CtlName), nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", store.ErrNoTable, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reader: open %s: %w", name, err)
	}
	r := &Reader{dir: dir, ctl: ctl, schema: ctl.Schema, symOff: -1}
	if err := r.open(opts); err != nil {
		r.Close()
		return nil, fmt.Errorf("reader: open %s: %w", name, err)
	}
	return r, nil
}

func (r *Reader) open(opts *Options) error {
	c := r.ctl
	var err error
	if r.syms, err = index.OpenSymbols(filepath.Join(r.dir, format.SymName), c.TableID, nil); err != nil {
		return err
	}
	if r.ts, err = index.OpenTimeIndex(filepath.Join(r.dir, format.TimeIdxName), c.TableID, nil); err != nil {
		return err
	}
	if r.post, err = index.OpenPostings(filepath.Join(r.dir, format.PostName), c.TableID, nil); err != nil {
		return err
	}
	// Every query's seek reads the time index: start reading it now (on a
	// cold table its pages would come in one random read at a time), up
	// to its newest 4 MiB (32 M rows at the default stride: the advice
	// queues the reads, about 1 ms a MiB here). (Reading it in the
	// background instead, or mapping it, MADV_POPULATE_READ, made the
	// first query slower: it competes with the query.)
	r.ts.WillNeedTail(timeIdxAhead)
	// The set-up of decoding compressed segments, in the background: the
	// decoder, and the decode buffers with every page written once (a
	// fresh process's first block would otherwise take ~100 page faults,
	// ~1 ms on the reference VM, in its first query).
	first := c.FirstSeq() >> c.SegShift
	if c.CmpSegs() > first {
		codec.PrepareDecoder()
		r.zready = make(chan struct{})
		go func(s *store.Schema, done chan struct{}) {
			r.zscratch.Prepare(s)
			close(done)
		}(c.Schema, r.zready)
	}
	if opts != nil && opts.LiveDir != "" {
		r.liveDir = opts.LiveDir
	}
	if opts != nil {
		r.fetch, r.onClose = opts.Fetch, opts.OnClose
	}
	r.shift = c.SegShift
	r.mask = c.RowsPerSeg() - 1
	r.rowSize = uint64(c.Schema.RowSize)
	r.sshift = c.StrideShift
	r.segSize = format.SegFileSize(c.Schema.RowSize, c.RowsPerSeg())
	if c.Schema.SymCol >= 0 {
		r.symOff = c.Schema.ColAt(c.Schema.SymCol).Off
	}
	r.slots = make([]slotMap, c.LiveSlots)
	r.boot = mmap.BootID()
	r.visible, r.first = c.Visible(), c.FirstSeq()
	return r.refreshSymbols()
}

// timeIdxAhead is how much of the time index Open asks for.
const timeIdxAhead = 4 << 20

// Warm reads, and waits for, what Open only asks for in the background:
// the newest 4 MiB of the time index, which every query's first seek
// reads, and the decode buffers' set-up. A server warms the readers of
// its tables as it starts, so that the first query after a restart finds
// them in memory (as a column store loads its primary indexes at start)
// instead of waiting for them behind its own reads.
func (r *Reader) Warm() {
	r.ts.ReadTail(timeIdxAhead)
	r.waitScratch()
}

// prefetchTailMax bounds what prefetchTables asks for of a compressed
// segment besides its header: its tables (block index, directory,
// seq-order index: 22 KiB for a 16 MiB segment of 100 symbols' ticks),
// at most 256 KiB.
const prefetchTailMax = 256 << 10

// prefetchTables asks for the header and tables of the compressed
// segments among [lo, hi) that the reader has not opened, all at once and
// in the background (a fadvise each), once each: a query that goes on to
// visit them finds them read, where each first visit would otherwise wait
// for a read of its own. Open reads none of them ahead (a table's
// segments may be many, and a query may need one).
func (r *Reader) prefetchTables(lo, hi uint64) {
	hi = min(hi, r.ctl.CmpSegs())
	tail := min(prefetchTailMax, cseg.TablesSize(r.mask+1, len(r.schema.Cols), r.syms.Len()))
	for n := max(lo, r.first>>r.shift); n < hi; n++ {
		for uint64(len(r.segs)) <= n {
			r.segs = append(r.segs, segView{})
		}
		if v := &r.segs[n]; v.kind == viewNone && !v.asked {
			v.asked = true
			path := format.ZSegPath(r.dir, n)
			if p, ok := r.fetcher(path).(Prefetcher); ok {
				p.Prefetch(tail) // in the background: the fetches go on together
				continue
			}
			_ = cseg.Prefetch(path, tail) // advice: a miss costs reads later
		}
	}
}

// Close unmaps everything. Rows handed out before are invalid after it.
func (r *Reader) Close() error {
	if r.closed {
		return ErrClosed
	}
	for len(r.scans) > 0 {
		r.scans[len(r.scans)-1].Close()
	}
	for len(r.pipes) > 0 {
		r.pipes[len(r.pipes)-1].quit()
	}
	r.closed = true
	r.waitScratch()
	var errs []error
	for i := range r.segs {
		r.segs[i].release()
	}
	r.segs = nil
	for _, b := range r.retired {
		errs = append(errs, mmap.Unmap(b))
	}
	r.retired = nil
	for _, z := range r.retiredZ {
		errs = append(errs, z.Close())
	}
	r.retiredZ = nil
	for i := range r.clus {
		if c := &r.clus[i]; c.state == cluOpen {
			errs = append(errs, mmap.CloseFD(c.fd))
		}
	}
	r.clus = nil
	for i := range r.slots {
		errs = append(errs, mmap.Unmap(r.slots[i].b))
	}
	if r.post != nil {
		errs = append(errs, r.post.Close())
	}
	if r.late != nil {
		errs = append(errs, r.late.Close())
	}
	if r.ts != nil {
		errs = append(errs, r.ts.Close())
	}
	if r.syms != nil {
		errs = append(errs, r.syms.Close())
	}
	errs = append(errs, r.ctl.Close())
	if r.onClose != nil {
		r.onClose()
	}
	return errors.Join(errs...)
}

// Schema is the table's schema.
func (r *Reader) Schema() *store.Schema { return r.schema }

// Dir is the table's directory.
func (r *Reader) Dir() string { return r.dir }

// Len is the published row count (one acquire load): rows [FirstSeq, Len)
// can be read.
// After Close it returns the last count seen.
func (r *Reader) Len() uint64 {
	if !r.closed {
		r.visible = r.loadVisible()
	}
	return r.visible
}

// Durable is the count of rows durable on disk (0 after Close).
func (r *Reader) Durable() uint64 {
	if r.closed {
		return 0
	}
	return r.ctl.Durable()
}

// FirstSeq is the first row not deleted by retention.
func (r *Reader) FirstSeq() uint64 {
	s, err := r.snapshot()
	if err != nil {
		return 0
	}
	return s.FirstSeq
}

// Snapshot is the table's published state read at one instant (the
// writer publishes it under a seqlock, so its fields agree with each
// other): rows [FirstSeq, Len) can be read, LastTs is the newest ts among
// them (late rows are older), and Late rows of them were stored late
// (inside the late window).
type Snapshot struct {
	Len      uint64
	FirstSeq uint64
	LastTs   int64
	Late     uint64
}

// Snapshot reads the table's published state at one instant.
func (r *Reader) Snapshot() (Snapshot, error) {
	s, err := r.snapshot()
	return Snapshot{Len: s.Visible, FirstSeq: s.FirstSeq, LastTs: s.LastTs, Late: s.Late}, err
}

// snapshot is the seqlock-published state as the control file holds it.
func (r *Reader) snapshot() (index.Snap, error) {
	if r.closed {
		return index.Snap{}, ErrClosed
	}
	s, err := r.ctl.Snapshot()
	if err == nil {
		s.Visible = r.capVisible(s.Visible)
		r.first = s.FirstSeq
	}
	return s, err
}

// loadVisible is the published count (one acquire load), capped by
// capVisible; it also reloads the first row.
func (r *Reader) loadVisible() uint64 {
	r.first = r.ctl.FirstSeq()
	r.sweepCopies()
	return r.capVisible(r.ctl.Visible())
}

// capVisible caps a published count after a machine restart that a writer
// has not recovered from yet (the boot id in ctl is another boot's and the
// writer never closed): then only rows below the durable count are on disk,
// and the time index and postings only below the last checkpoint, so a
// reader shows no more than both. The first writer to open the table
// recovers it and records this boot.
func (r *Reader) capVisible(v uint64) uint64 {
	if r.ctl.State() == index.StateClosed || r.ctl.BootID() == r.boot {
		return v
	}
	return min(v, r.ctl.Durable(), r.ctl.Checkpoint().Seq)
}

// WriterPid is the pid recorded by the writer that has the table open, or 0.
func (r *Reader) WriterPid() int {
	if r.closed {
		return 0
	}
	return r.ctl.WriterPid()
}

// OutOfOrder is the table's count of late rows rejected or restamped.
func (r *Reader) OutOfOrder() uint64 {
	if r.closed {
		return 0
	}
	return r.ctl.OutOfOrder()
}

// SegmentRows is the number of rows per segment.
func (r *Reader) SegmentRows() uint64 { return r.mask + 1 }

// Get returns row seq as a view into the mapping, without copying and
// without allocating once its segment is mapped.
func (r *Reader) Get(seq uint64) (store.Row, error) {
	if seq < r.first {
		return r.getSlow(seq) // deleted by retention: ErrTruncated
	}
	if seq >= r.visible {
		if r.closed {
			return nil, ErrClosed
		}
		if r.visible = r.loadVisible(); seq >= r.visible {
			return nil, ErrNotVisible
		}
	}
	n := seq >> r.shift
	if n < uint64(len(r.segs)) {
		v := &r.segs[n]
		rs := v.rs
		off := (seq & r.mask) * rs
		switch v.kind {
		case viewDurable, viewPartial:
			if v.valid[off>>18]&(1<<(off>>12&63)) != 0 {
				return v.rows[off : off+rs], nil
			}
		case viewCompressed:
			if i := seq & r.mask; i >= v.bfirst && i < v.bend {
				o := (i - v.bfirst) * rs
				return v.rows[o : o+rs], nil
			}
		case viewLive:
			if r.ctl.SlotGen(v.slot) == v.gen {
				if seq&r.mask >= v.from {
					return v.rows[off : off+rs], nil
				}
				if l := v.low; l != nil && l.valid[off>>18]&(1<<(off>>12&63)) != 0 {
					return l.rows[off : off+rs], nil
				}
			}
		}
	}
	return r.getSlow(seq)
}

// ReadRow copies row seq into dst and checks afterwards that the copy was
// not raced by a slot recycle: a seqlock-style read that is safe to keep.
// dst is Schema().RowSize bytes (or the size of the row, Get's len); a
// row of another layout (written before columns were added to the table,
// or after, by a reader whose schema is older) is copied into it in dst's
// layout, the missing value in each column the row lacks.
func (r *Reader) ReadRow(seq uint64, dst []byte) error {
	for {
		row, err := r.Get(seq)
		if err != nil {
			return err
		}
		// A row that fails its check leaves dst failing it too (a
		// recycled slot: checked below).
		if err := r.CopyRow(seq, dst, row); err != nil {
			return err
		}
		if !r.recycled(seq) {
			return nil
		}
	}
}

// recycled reports whether row seq was last read from a live slot that
// has been recycled since (its generation moved on): what Get returned for
// it then may hold another segment's bytes.
func (r *Reader) recycled(seq uint64) bool {
	n := seq >> r.shift
	if n >= uint64(len(r.segs)) {
		return false
	}
	v := &r.segs[n]
	return v.kind == viewLive && r.ctl.SlotGen(v.slot) != v.gen
}

func (r *Reader) getSlow(seq uint64) (store.Row, error) {
	if r.closed {
		return nil, ErrClosed
	}
	snap, err := r.ctl.Snapshot()
	if err == nil && seq < snap.FirstSeq {
		return nil, &TruncatedError{Seq: seq, First: snap.FirstSeq}
	}
	n := seq >> r.shift
	v, err := r.view(n)
	if err != nil {
		if errors.Is(err, ErrTruncated) {
			return nil, &TruncatedError{Seq: seq, First: r.FirstSeq()}
		}
		return nil, err
	}
	// The count can only go down when a writer recovered from the durable
	// files after losing its live copy; that also changed the slot
	// generations, which is what sent us here. Re-check against it.
	if r.visible = r.loadVisible(); seq >= r.visible {
		return nil, ErrNotVisible
	}
	off := (seq & r.mask) * v.rs
	switch v.kind {
	case viewCompressed:
		return r.getCompressed(v, seq)
	case viewDurable:
		if err := r.validate(v, n, off>>12, r.mask+1); err != nil {
			return nil, err
		}
	case viewPartial:
		d := r.ctl.Durable()
		if seq >= d {
			return nil, ErrUnavailable
		}
		// Bytes of rows below the durable count are final: validate the
		// block, but mark it only if all of its rows are below it.
		if err := r.validate(v, n, off>>12, d-n<<r.shift); err != nil {
			return nil, err
		}
	case viewLive:
		if seq&r.mask < v.from {
			// Below the slot's first row: durable (and final) by
			// construction, read from the durable file.
			if v.low == nil {
				l := &segView{}
				if err := r.mapDurable(l, n, viewPartial); err != nil {
					return nil, err
				}
				if l.rs != v.rs {
					l.release()
					return nil, format.Corruptf(l.path, 12, "%d-byte rows, its live slot has %d", l.rs, v.rs)
				}
				v.low = l
			}
			if err := r.validate(v.low, n, off>>12, v.from); err != nil {
				return nil, err
			}
			return v.low.rows[off : off+v.rs], nil
		}
	}
	return v.rows[off : off+v.rs], nil
}

// view (re)resolves where segment n is read from: its sealed durable file,
// its live slot, or (unsealed, no live copy) its durable file as far as it
// is durable.
func (r *Reader) view(n uint64) (*segView, error) {
	for uint64(len(r.segs)) <= n {
		r.segs = append(r.segs, segView{})
	}
	v := &r.segs[n]
	if v.kind == viewDurable {
		return v, nil
	}
	if v.kind == viewCompressed {
		// A file of a whole segment holds its final rows; one of fewer
		// (a last segment compressed when its writer closed) holds them
		// only until a writer appends to the segment again.
		if n < r.ctl.CmpSegs() && (v.z.Rows() > r.mask || !r.replaced(v)) {
			return v, nil
		}
		// Decompressed since: a writer reopened the table and appends to
		// its last segment again (compacted when its writer closed); or
		// compressed again since, by the next writer's close, with the
		// rows that writer appended. The file stays open until Close,
		// for an iterator still on it.
		r.retiredZ = append(r.retiredZ, v.z)
		*v = segView{}
	}
	// Below the compaction mark: compressed (the last segment too, once
	// compacted after its writer closed).
	if n < r.ctl.CmpSegs() {
		return v, r.mapDurable(v, n, viewDurable)
	}
	if v.kind == viewLive && r.ctl.SlotGen(v.slot) == v.gen {
		return v, nil
	}
	// A live slot that still holds segment n serves it, durable or not: a
	// sealed segment stays in its slot (hot) until the slot is recycled,
	// and reading it there costs no disk read.
	i := int(n % uint64(len(r.slots)))
	if gen, seg := r.ctl.Slot(i); gen != 0 && seg == n {
		if b, rs, err := r.attachSlot(i, gen, n); err == nil {
			v.release()
			from := min(mmap.LoadAcquire64(b, format.LiveFromOff), r.mask+1)
			*v = segView{kind: viewLive, rs: rs, rows: b[format.BlockSize:], slot: i, gen: gen, from: from}
			r.mapRows(v, n)
			return v, nil
		}
	}
	// Not live: sealed meanwhile, or no writer's live copy.
	if n < r.ctl.DurableSegs() {
		return v, r.mapDurable(v, n, viewDurable)
	}
	if v.kind == viewPartial && !r.replaced(v) {
		return v, nil
	}
	// (A partial view mapped before a writer's open replaced the file is
	// mapped again: the rows appended since are only in the new file,
	// which may hold every row in a newer layout. mapDurable keeps the
	// old mapping while a scan may read it.)
	return v, r.mapDurable(v, n, viewPartial)
}

// replaced reports whether v, a view of the durable or compressed file
// of a segment not sealed when it was mapped, may be of a file a writer
// has replaced since (segView.fileGen).
func (r *Reader) replaced(v *segView) bool {
	return v.fileGen != r.ctl.LiveGen()
}

// mapRows maps the published rows of live view v (segment n) into this
// process's page tables in one call (MADV_POPULATE_READ): they are in
// shared memory already, but each first touch of a page would otherwise
// be a page fault (about 5 µs on a virtual machine), and a one-symbol
// query touches a page per row. A hot segment is mapped whole; the segment
// being written, up to the published count (its pages past that may not
// exist yet, and reading them would allocate them).
func (r *Reader) mapRows(v *segView, n uint64) {
	lo, hi := v.from, r.mask+1
	if vis := r.loadVisible(); vis < (n+1)<<r.shift {
		hi = min(hi, vis-min(vis, n<<r.shift))
	}
	if lo < hi {
		_ = mmap.PopulateRead(v.rows[lo*v.rs : hi*v.rs]) // advice: a failure costs only faults
	}
}

func (r *Reader) attachSlot(i int, gen, n uint64) ([]byte, uint64, error) {
	m := &r.slots[i]
	if m.b != nil && mmap.LoadAcquire64(m.b, format.LiveGenOff) == gen {
		m.gen = gen
		return m.b, m.rs, nil
	}
	path := filepath.Join(r.liveDirPath(), format.SlotName(i))
	b, rs, err := format.MapSegmentOf(path, format.SegHeader{Live: true, TableID: r.ctl.TableID, RowSize: int(r.rowSize), SegNo: n, RowsPerSeg: r.mask + 1}, r.knownLayout)
	if err != nil {
		return nil, 0, err
	}
	if mmap.LoadAcquire64(b, format.LiveGenOff) != gen {
		mmap.Unmap(b)
		return nil, 0, fmt.Errorf("live slot %s is not segment %d generation %d", path, n, gen)
	}
	mmap.Unmap(m.b)
	m.b, m.gen, m.rs = b, gen, uint64(rs)
	return b, uint64(rs), nil
}

// knownLayout reports whether rowSize is the row size of one of the
// layouts the table's rows have had, loading the schema again when it is
// not one this reader knows (a column added since: the writer writes the
// schema before any row of the new layout).
func (r *Reader) knownLayout(rowSize int) bool {
	if r.schema.Layout(rowSize) >= 0 {
		return true
	}
	return r.reloadSchema() && r.schema.Layout(rowSize) >= 0
}

// reloadSchema loads the table's schema again and reports whether it has
// columns this reader did not know.
// ReloadSchema loads the table's schema again, for the columns a writer
// has added since this reader loaded it (Schema then includes them), and
// reports whether it changed. A reader loads it by itself only when it
// meets a segment written in a newer layout; one kept open across
// queries (a server's) calls this before each.
func (r *Reader) ReloadSchema() bool {
	if r.closed {
		return false
	}
	return r.reloadSchema()
}

func (r *Reader) reloadSchema() bool {
	if r.ctl.LoadSchema() != nil || len(r.ctl.Schema.Cols) == len(r.schema.Cols) {
		return false
	}
	r.schema = r.ctl.Schema
	r.rowSize = uint64(r.schema.RowSize)
	r.segSize = format.SegFileSize(r.schema.RowSize, r.mask+1)
	return true
}

// CopyRow copies row seq, src (a view Get or an iterator gave, of any of
// the table's layouts: docs/FORMAT.md §15), into dst in the layout of
// dst's size (Schema().RowSize, or the size a schema the caller took
// earlier had): a plain copy when the sizes agree, else column by column,
// the missing value in each column the row lacks.
// A src that fails its check (a live slot recycled under the view) is
// not relaid: dst is cleared and fails its check too; ReadRow then reads
// the row again.
func (r *Reader) CopyRow(seq uint64, dst []byte, src store.Row) error {
	switch {
	case len(src) == len(dst):
		copy(dst, src)
	case !format.Valid(seq, src):
		clear(dst)
	default:
		return r.relayout(seq, dst, src)
	}
	return nil
}

// relayout copies row seq (src, of another of the table's layouts) into
// dst in the layout of dst's size: format.Relayout.
func (r *Reader) relayout(seq uint64, dst, src []byte) error {
	n := r.schema.Layout(len(dst))
	if n < 0 {
		return fmt.Errorf("reader: row buffer of %d bytes for a row of %d (the schema's rows are %d)", len(dst), len(src), r.schema.RowSize)
	}
	format.Relayout(r.schema.Prefix(n), seq, dst, src)
	return nil
}

// liveDirPath is where the live slots are: the writer records its live
// directory in ctl when it opens the table, which can be after this reader
// opened it (a table just created, a writer restarted with another live
// directory), so it is read from ctl at each attach, unless overridden.
func (r *Reader) liveDirPath() string {
	if r.liveDir != "" {
		return r.liveDir
	}
	return r.ctl.LiveDir()
}

func (r *Reader) mapDurable(v *segView, n uint64, kind viewKind) error {
	if kind == viewDurable && n < r.ctl.CmpSegs() {
		return r.mapCompressed(v, n)
	}
	gen := r.ctl.LiveGen() // before the file is opened (segView.fileGen)
	// A sealed segment's hot copy, where the writer keeps one, is its
	// durable file byte for byte, in shared memory.
	want := format.SegHeader{TableID: r.ctl.TableID, RowSize: int(r.rowSize), SegNo: n, RowsPerSeg: r.mask + 1}
	path, hot := format.SegPath(r.dir, n), false
	var b []byte
	var rs int
	var err error
	if dir := r.liveDirPath(); kind == viewDurable && dir != "" && r.ctl.State() != index.StateClosed {
		if b, rs, err = format.MapSegmentOf(format.HotPath(dir, n), want, r.knownLayout); err == nil {
			path, hot = format.HotPath(dir, n), true
		}
	}
	if !hot {
		b, rs, err = format.MapSegmentOf(path, want, r.knownLayout)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && n < r.ctl.CmpSegs() {
			// Compacted since the look above: a sealed segment, or one
			// still being written then (sealed, made durable and
			// compressed meanwhile: a few ms for small segments).
			r.retirePartial(v)
			return r.mapCompressed(v, n)
		}
		return r.segMissing(n, err)
	}
	r.retirePartial(v)
	v.release()
	blocks := (uint64(len(b)) - format.BlockSize) / format.BlockSize
	*v = segView{kind: kind, rs: uint64(rs), rows: b[format.BlockSize:], path: path, file: b, hot: hot, fileGen: gen}
	v.valid = make([]uint64, (blocks+63)/64)
	return nil
}

// retirePartial keeps the mapping of v, a partial view about to be
// replaced, until Close when a column scan's goroutines may be reading
// its rows (they are the same in the new view).
func (r *Reader) retirePartial(v *segView) {
	if v.kind == viewPartial && len(r.scans) > 0 {
		r.retired = append(r.retired, v.file)
		v.file = nil
	}
}

// remapCompressed switches segment n, mapped raw before it was compacted,
// to its compressed file. The raw mapping stays until Close (rows handed
// out from it stay valid).
func (r *Reader) remapCompressed(n uint64) (*segView, error) {
	v := &r.segs[n]
	r.retired = append(r.retired, v.file)
	*v = segView{}
	return v, r.mapCompressed(v, n)
}

// mapCompressed opens segment n's compressed file into v.
func (r *Reader) mapCompressed(v *segView, n uint64) error {
	path := format.ZSegPath(r.dir, n)
	// Rows 0: any count (a table's last segment, compressed after its
	// writer closed, holds fewer than a segment's rows).
	// RowSize 0: the segment's own layout (columns may have been added
	// since it was written; or since this reader loaded the schema: then
	// it loads it again and retries).
	want := cseg.Header{TableID: r.ctl.TableID, SegNo: n, RowsPerSeg: r.mask + 1}
	gen := r.ctl.LiveGen() // before the file is opened (segView.fileGen)
	r.waitScratch()
	f := r.fetcher(path)
	z, err := cseg.OpenFetched(path, r.schema, want, &r.zscratch, f)
	for try := 0; f != nil && try < 3 && errors.Is(err, os.ErrNotExist); try++ {
		// A fetched file removed between the Fetcher's set-up and the
		// open (its cache evicted it): the Fetcher makes it again.
		f = r.fetcher(path)
		z, err = cseg.OpenFetched(path, r.schema, want, &r.zscratch, f)
	}
	if err != nil && errors.Is(err, store.ErrCorrupt) && r.reloadSchema() {
		z, err = cseg.OpenFetched(path, r.schema, want, &r.zscratch, f)
	}
	if err != nil {
		return r.segMissing(n, err)
	}
	v.release()
	*v = segView{kind: viewCompressed, rs: uint64(z.RowSize()), path: path, z: z, fileGen: gen}
	return nil
}

// fetcher is the Fetcher of the compressed segment file at path
// (Options.Fetch), or nil.
func (r *Reader) fetcher(path string) cseg.Fetcher {
	if r.fetch == nil {
		return nil
	}
	if f := r.fetch(path); f != nil {
		return f
	}
	return nil
}

// waitScratch waits for the preparation of the decode buffers Open
// started, if it has not been waited for.
func (r *Reader) waitScratch() {
	if r.zready != nil {
		<-r.zready
		r.zready = nil
	}
}

// segMissing is the error for segment n's file failing to open with err:
// ErrTruncated when it is missing because retention deleted it.
func (r *Reader) segMissing(n uint64, err error) error {
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if snap, serr := r.ctl.Snapshot(); serr == nil && n<<r.shift+r.mask < snap.FirstSeq {
		return ErrTruncated
	}
	return fmt.Errorf("reader: segment %d: %w", n, err)
}

// getCompressed decodes the block of compressed view v holding row seq
// (the rows of the block decoded before are overwritten) and returns the
// row.
func (r *Reader) getCompressed(v *segView, seq uint64) (store.Row, error) {
	i := seq & r.mask
	if i < v.bfirst || i >= v.bend {
		// A version 2 segment keeps a decoded block per symbol for
		// seq-ordered reads (up to the segment's raw size): let the
		// segment read before this one go of them.
		if n := seq>>r.shift + 1; n != r.zlast {
			if l := r.zlast - 1; r.zlast != 0 && l < uint64(len(r.segs)) && r.segs[l].z != nil {
				r.segs[l].z.DropCache(v.z) // its buffers serve this segment
			}
			r.zlast = n
		}
		b := int(i / cseg.BlockRows)
		if b >= v.z.Blocks() {
			return nil, format.Corruptf(v.path, 0, "holds %d rows, not row %d of the segment", v.z.Rows(), i)
		}
		if v.z.Version() == cseg.VersionClustered {
			// Decoding a whole block of a clustered segment decodes a
			// data block for every symbol in it: rows asked for here
			// and there in a block (a seek's probes, random rows) are
			// decoded one by one, each from its symbol's data block;
			// past partialRows of them one after the other, the whole
			// block.
			if v.zpart != uint64(b)+1 {
				n := min(v.z.Rows()-uint64(b)*cseg.BlockRows, cseg.BlockRows)
				if uint64(cap(v.rows)) < n*v.rs {
					v.rows = make([]byte, cseg.BlockRows*v.rs)
				}
				v.rows = v.rows[:n*v.rs]
				v.zpart, v.run, v.last, v.bfirst, v.bend = uint64(b)+1, 0, math.MaxUint64, 0, 0
				clear(v.filled[:])
			}
			j := i - uint64(b)*cseg.BlockRows
			if j == v.last+1 {
				v.run++
			} else {
				v.run = 0
			}
			v.last = j
			if v.run < partialRows {
				row := v.rows[j*v.rs : (j+1)*v.rs]
				if v.filled[j>>6]&(1<<(j&63)) == 0 {
					if err := v.z.RowInto(i, row); err != nil {
						v.zpart = 0
						return nil, err
					}
					v.filled[j>>6] |= 1 << (j & 63)
				}
				return row, nil
			}
		}
		// (The rows of a partly decoded block are rewritten with the
		// same bytes.)
		rows, err := v.z.Block(b, v.rows)
		if err != nil {
			v.bfirst, v.bend, v.zpart = 0, 0, 0
			return nil, err
		}
		v.rows = rows
		v.bfirst = uint64(b) * cseg.BlockRows
		v.bend = v.bfirst + uint64(len(rows))/v.rs
		if i >= v.bend {
			return nil, format.Corruptf(v.path, 0, "block %d holds rows up to %d, not row %d", b, v.bend, i)
		}
	}
	o := (i - v.bfirst) * v.rs
	return v.rows[o : o+v.rs], nil
}

// validate checks the rows that start in 4 KiB block blk of a durable
// segment, up to row index limit of the segment. When the whole block was
// checked it is marked, and later reads of it skip the check.
func (r *Reader) validate(v *segView, n, blk, limit uint64) error {
	if v.valid[blk>>6]&(1<<(blk&63)) != 0 {
		return nil
	}
	rs := v.rs
	first := (blk*format.BlockSize + rs - 1) / rs
	last := min(((blk+1)*format.BlockSize+rs-1)/rs, r.mask+1)
	base := n << r.shift
	for i := first; i < min(last, limit); i++ {
		off := i * rs
		if !format.Valid(base+i, v.rows[off:off+rs]) {
			return format.Corruptf(v.path, int64(format.BlockSize+off), "row %d fails its check", base+i)
		}
	}
	if last <= limit {
		v.valid[blk>>6] |= 1 << (blk & 63)
	}
	return nil
}

// refreshSymbols decodes dictionary entries published since the last call.
func (r *Reader) refreshSymbols() error {
	if r.closed {
		return ErrClosed
	}
	return r.syms.Refresh(r.ctl.SymCount(), r.ctl.SymBytes())
}

// SymbolName returns the name of symbol id; store.NoSym (a sym column added
// to the table after the row was written) is "".
func (r *Reader) SymbolName(id uint32) (string, error) {
	if r.closed {
		return "", ErrClosed
	}
	if id == store.NoSym {
		return "", nil // a sym column the row was written without
	}
	if int(id) >= r.syms.Len() {
		if err := r.refreshSymbols(); err != nil {
			return "", err
		}
		if int(id) >= r.syms.Len() {
			return "", fmt.Errorf("%w: id %d (dictionary has %d)", ErrUnknownSymbol, id, r.syms.Len())
		}
	}
	return r.syms.Name(id), nil
}

// SymbolNamer returns a lookup of the names of the symbols published so
// far that other goroutines may call while the reader goes on being used
// by its own (Reader is not safe for concurrent use; the lookup reads a
// snapshot of the names, never the reader): for encoders on other cores.
// An id published after the call is ErrUnknownSymbol; store.NoSym is "".
func (r *Reader) SymbolNamer() (func(id uint32) (string, error), error) {
	if err := r.refreshSymbols(); err != nil {
		return nil, err
	}
	names := r.syms.Names()
	return func(id uint32) (string, error) {
		if id == store.NoSym {
			return "", nil
		}
		if int(id) >= len(names) {
			return "", fmt.Errorf("%w: id %d (dictionary had %d)", ErrUnknownSymbol, id, len(names))
		}
		return names[id], nil
	}, nil
}

// SymbolID returns the id of a symbol name, without allocating when known.
func (r *Reader) SymbolID(name []byte) (uint32, bool) {
	if r.closed {
		return 0, false
	}
	if id, ok := r.syms.Lookup(name); ok {
		return id, true
	}
	if r.refreshSymbols() != nil {
		return 0, false
	}
	return r.syms.Lookup(name)
}

// Symbols returns the number of symbols in the dictionary.
func (r *Reader) Symbols() int {
	if r.closed {
		return 0
	}
	_ = r.refreshSymbols()
	return r.syms.Len()
}

// SymbolOrder returns the ids of the table's symbols in order of name
// (byte order). The order is kept and extended as symbols are added (the
// new ones sorted and merged in), so a reader asked again, like a pooled
// one serving each query of every symbol's latest row, does not sort a
// million names again. The slice is the Reader's: read it before the next
// call, and do not modify it.
func (r *Reader) SymbolOrder() ([]uint32, error) {
	if err := r.refreshSymbols(); err != nil {
		return nil, err
	}
	n := r.syms.Len()
	if len(r.order) == n {
		return r.order, nil
	}
	// The new names by an 8-byte big-endian prefix first (a sort of
	// 16-byte keys in one array, not of names all over memory), then by
	// name among equal prefixes.
	type key struct {
		pre uint64
		id  uint32
	}
	keys := make([]key, 0, n-len(r.order))
	for id := len(r.order); id < n; id++ {
		var b [8]byte
		copy(b[:], r.syms.Name(uint32(id)))
		keys = append(keys, key{binary.BigEndian.Uint64(b[:]), uint32(id)})
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.pre, b.pre); c != 0 {
			return c
		}
		return strings.Compare(r.syms.Name(a.id), r.syms.Name(b.id))
	})
	merged := make([]uint32, 0, n)
	i := 0
	for _, k := range keys {
		for i < len(r.order) && r.syms.Name(r.order[i]) <= r.syms.Name(k.id) {
			merged = append(merged, r.order[i])
			i++
		}
		merged = append(merged, k.id)
	}
	r.order = append(merged, r.order[i:]...)
	return r.order, nil
}
