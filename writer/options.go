package writer

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

// FlushPolicy says when published rows are made durable.
type FlushPolicy int

const (
	// FlushInterval (default): the flusher writes what was published every
	// FlushInterval.
	FlushInterval FlushPolicy = iota
	// FlushOnSync: rows become durable when Sync is called, and whole
	// segments when they are sealed.
	FlushOnSync
	// FlushNone: like FlushOnSync, for users who never call Sync; sealed
	// segments are still written so their live slots can be recycled.
	FlushNone
)

// ParseFlushPolicy parses "interval", "sync" or "none".
func ParseFlushPolicy(s string) (FlushPolicy, error) {
	switch s {
	case "interval", "":
		return FlushInterval, nil
	case "sync":
		return FlushOnSync, nil
	case "none":
		return FlushNone, nil
	}
	return 0, fmt.Errorf("writer: unknown flush policy %q (want interval, sync or none)", s)
}

// OutOfOrderPolicy says what happens to a row whose ts is before the last one.
type OutOfOrderPolicy int

const (
	// OutOfOrderReject (default): the row is refused with ErrOutOfOrder and
	// counted; nothing is stored.
	OutOfOrderReject OutOfOrderPolicy = iota
	// OutOfOrderStamp: the row is stored with ts replaced by the arrival
	// time (wall clock, but never before the last ts), and counted.
	OutOfOrderStamp
)

// LagPolicy says what happens when durable lag passes Options.MaxLag.
type LagPolicy int

const (
	// LagAlarm (default): Publish calls Options.OnLag (rate-limited to one
	// call per second) and logs a warning; appends go on.
	LagAlarm LagPolicy = iota
	// LagBlock: Publish waits until the lag is back under MaxLag/2.
	LagBlock
)

// DefaultHotBytes is the default Options.HotBytes: 1 GiB per table, a
// trading day of a busy feed (about 33 M 32-byte ticks) kept in shared
// memory after it is durable, as kdb+'s real-time database keeps today's
// rows in memory.
const DefaultHotBytes = 1 << 30

// Options configures Open. The zero value (or nil) gives the documented
// defaults.
type Options struct {
	// Schema is required to create a table; when opening an existing one it
	// is checked against the stored schema if set.
	Schema *store.Schema
	// SegmentSize is the target bytes of rows per segment (default 16
	// MiB: the raw tail while writing, the segment being written and at
	// most RawBacklog sealed ones, stays small beside the compressed
	// rest, and Close compresses it in a few tens of milliseconds); the
	// rows per segment are the largest power of two
	// that fit, at least 16.
	SegmentSize int64
	// TimeStride is how many rows one time-index entry covers (default 64,
	// a power of two).
	TimeStride int
	// LiveSlots is the number of segments that may be in shared memory
	// while not yet durable (default 4, at least 2): the durable lag is
	// bounded by LiveSlots-1 segments.
	LiveSlots int
	// HotBytes is the shared memory kept, on top of LiveSlots, for the most
	// recently sealed segments after they are durable (default
	// DefaultHotBytes; negative: none): HotBytes / segment file size
	// segments keep a copy of their rows in the live directory (a table
	// with a sym column, a second one clustered by symbol), made off the
	// append path once they are durable. Readers in every process read
	// those rows from shared memory instead of the disk. Shared memory is
	// allocated only as rows arrive. With the background compaction on
	// (CompactAge not negative) the default keeps at most two segments'
	// copies: a segment's copies go when it is compressed, so more would
	// be copies of a backlog about to be compressed, made with the CPU
	// the compaction needs; a HotBytes given keeps its budget.
	HotBytes int64
	// LiveDir is where the live segment slots go. Default: a directory named
	// after the table's id under /dev/shm/tickdb, or, where /dev/shm is not
	// a writable tmpfs, the table's own "live" directory.
	LiveDir string
	// Flush is the flush policy (default FlushInterval).
	Flush FlushPolicy
	// FlushInterval is the flusher's period (default 1 ms).
	FlushInterval time.Duration
	// FlushBytes is the most one flush write carries, and the size of the
	// flusher's buffer (anonymous memory; default 8 MiB): a flush that keeps
	// up writes what a FlushInterval brought, a backlog drains in writes
	// this large, which the disk takes faster than small ones.
	FlushBytes int
	// LateWindow is the out-of-order window (default 0: none). A row whose
	// ts is at most LateWindow before the newest ts appended so far is
	// stored as it is, as a late row: it gets the next sequence number
	// (Tail delivers it in arrival order) and a late.idx entry, and every
	// time-ordered read (Reader.Range, RangeSym, and the query, bars,
	// as-of and export paths built on them) returns it in ts order, as if
	// it had arrived in order. A row later than the window follows
	// OutOfOrder. In-order rows pay nothing for the window.
	LateWindow time.Duration
	// OutOfOrder is the policy for a row later than LateWindow (default
	// OutOfOrderReject).
	OutOfOrder OutOfOrderPolicy
	// MaxLag is the durable lag in rows that triggers LagPolicy (default:
	// one segment). Lag can never exceed LiveSlots-1 segments: past that
	// the writer waits at the segment roll.
	MaxLag uint64
	// LagPolicy is what passing MaxLag does (default LagAlarm).
	LagPolicy LagPolicy
	// OnLag is called (from Publish, rate-limited) when the lag passes
	// MaxLag under LagAlarm.
	OnLag func(lag uint64)
	// RetainAge and RetainBytes, when set, apply retention (Retain) at
	// every segment roll: segments holding only rows older than RetainAge
	// before the table's last ts go, then the oldest until the segment
	// files fit in RetainBytes. The checkpointer deletes the files.
	RetainAge   time.Duration
	RetainBytes int64
	// RetainBelow, when set, bounds retention (automatic, and Retain):
	// only segments below the number it returns for the table's name may
	// be deleted, whatever the limits say; the archive's gate
	// (archive.Archiver.RetainBelow: the segments its manifest lists),
	// so history is never only on this disk by accident. It is called
	// from the writer goroutine and must not block.
	RetainBelow func(table string) uint64
	// CompactAge is when a sealed segment is compressed in the
	// background (Compact: clustered by symbol, about 4.5 bytes a tick
	// row against 32), by the compactor, one segment at a time: 0 (the
	// default) as soon as it qualifies (sealed and durable, with a row
	// after it durable and below the last index checkpoint: the next
	// segment's first rows), and without clustered copies (Stats); a
	// positive age once its rows are all older than that before the
	// table's last ts; a negative one never (segments stay raw until
	// Compact, CloseCompacted or tickdb compact). It costs CPU beside the writer
	// (CompactWorkers) and the segments' hot copies (HotBytes), which a
	// compressed segment does not keep.
	CompactAge time.Duration
	// CompactWorkers is how many goroutines one segment's compression
	// may use (cseg.EncodeParallel; default GOMAXPROCS, at most 4): a
	// segment compresses at about 5 M rows/s a core. 1 keeps
	// compaction to one core beside the writer.
	CompactWorkers int
	// RawBacklog is how many sealed segments the background compaction
	// may have left raw when the writer rolls to a new segment (default
	// 1, the one just sealed; 2 under FlushOnSync and FlushNone, where
	// the one before it qualifies only then; negative: no limit). A roll that would
	// leave more waits for the compaction (a write stall, counted in
	// Stats.BacklogStalls and BacklogWait), as an LSM store stalls writes
	// when its first level fills: a feed faster than the compaction is
	// slowed to its pace instead of leaving raw segments behind, which
	// would take 32 bytes a row on disk and whole-segment reads for one
	// symbol after a restart. A feed the compaction keeps up with never
	// waits. Close compresses the segments the bound leaves raw, the
	// one being written included (from 4,096 rows), when they hold at
	// most 1 M rows, so that a closed table has no raw segment; the
	// next writer decompresses the last one to append to it. Only with
	// CompactAge 0; the writer
	// never waits for a compaction that stopped on damage or fails (a
	// full disk).
	RawBacklog int
	// OnFlush, when set, is called from the flusher goroutine after each
	// O_DIRECT write with its size and duration (for latency histograms).
	OnFlush func(bytes int, d time.Duration)
	// PinCPU makes Pin bind the writer thread to CPU (sched_setaffinity).
	PinCPU bool
	CPU    int
	// FIFO asks Pin for SCHED_FIFO (a warning, not an error, where refused).
	FIFO bool
	// Logger receives start/stop/warning lines (default: discard).
	Logger *slog.Logger
	// Group, when set, runs the writer's flusher, preparer and
	// checkpointer on the group's shared workers instead of goroutines
	// (and a flush buffer) of its own: for a process that writes many
	// tables (ingest.Server makes one for all its tables). nil: the
	// writer's own goroutines. The group must outlive the writer.
	Group *Group

	compactHook func(seg uint64, step int) // tests: called after each step of a compaction swap
	columnHook  func(step int)             // tests: called after each step of AddColumn (columns.go)
	// postMaxDelta, when set, lowers the postings' early-close distance
	// (index.PostWriter.SetMaxDelta): tests, which cannot put 2^24 rows
	// between two rows of a symbol.
	postMaxDelta uint64
	// idxReserve, when set, maps ts.idx, post.idx and late.idx with this
	// much address space at open (reserve.go): tests, which cannot grow
	// an index file to a quarter of the real floor.
	idxReserve int
	// flushFault, when set, is called before each of the flusher's
	// writes; an error it returns stands for the write's (tests: an I/O
	// error without a failing disk).
	flushFault func() error
	// fs is where the writer creates, renames, removes and syncs its
	// files (default vfs.OS); tests give a vfs.Strict to check what a
	// machine crash would leave (SetFS).
	fs vfs.FS
	// hotDefault: HotBytes was left to its default (hotBudget).
	hotDefault bool
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.SegmentSize <= 0 {
		r.SegmentSize = 16 << 20
	}
	if r.TimeStride <= 0 {
		r.TimeStride = 64
	}
	if r.LiveSlots == 0 {
		r.LiveSlots = 4
	}
	if r.HotBytes == 0 {
		r.HotBytes, r.hotDefault = DefaultHotBytes, true
	}
	if r.FlushInterval <= 0 {
		r.FlushInterval = time.Millisecond
	}
	if r.FlushBytes <= 0 {
		r.FlushBytes = 8 << 20
	}
	r.FlushBytes = (r.FlushBytes + format.BlockSize - 1) &^ (format.BlockSize - 1)
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.RawBacklog == 0 {
		r.RawBacklog = 1
		if r.Flush != FlushInterval {
			// A segment's rows become durable only when it is sealed
			// (or at a Sync): the one before it qualifies a segment
			// later.
			r.RawBacklog = 2
		}
	}
	if r.CompactWorkers <= 0 {
		r.CompactWorkers = min(runtime.GOMAXPROCS(0), 4)
	}
	if r.fs == nil {
		r.fs = vfs.OS
	}
	return r
}

// defaultLiveRoot is /dev/shm/tickdb when /dev/shm is a writable directory.
func defaultLiveRoot() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		root := "/dev/shm/tickdb"
		// Sticky and world-writable, like /dev/shm: every user's writers
		// share it, each in a directory of its own.
		if err := os.MkdirAll(root, 0o777); err == nil {
			_ = os.Chmod(root, os.ModeSticky|0o777)
			return root
		}
	}
	return ""
}

// liveDirFor returns the live directory as an absolute path: it is recorded
// in ctl for readers in other processes, whose working directory differs.
func liveDirFor(o *Options, tableDir string, tableID [16]byte) string {
	dir := filepath.Join(tableDir, "live")
	if o.LiveDir != "" {
		dir = o.LiveDir
	} else if root := defaultLiveRoot(); root != "" {
		dir = filepath.Join(root, fmt.Sprintf("%x", tableID))
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir
}
