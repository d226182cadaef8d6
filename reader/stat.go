package reader

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/store"
)

// Stat is a table's published state and fixed shape as its control file
// records them: what tickdb stat prints. Rows are [First, Rows); FirstTs and
// LastTs are 0 when that range is empty.
type Stat struct {
	Rows        uint64 // published rows (Count)
	First       uint64 // first row not deleted by retention
	Durable     uint64 // rows durable on disk
	FirstTs     int64  // ts of row First
	LastTs      int64  // ts of row Rows-1
	Segments    uint64 // segments holding rows [First, Rows)
	SealedSegs  uint64 // segments whose durable file is complete
	SegmentRows uint64 // rows per segment
	// SegmentBytes is the size of one segment file, durable or live slot.
	SegmentBytes int64
	Symbols      int
	OutOfOrder   uint64 // rows later than the late window, rejected or restamped, since creation
	Late         uint64 // rows stored late (inside the late window), since creation
	LateWindow   int64  // the widest late window (ns) the table was written with (0: none)
	// WriterPid and WriterState are what the last writer recorded: a
	// writer that died leaves WriterOpen and its pid behind (the next
	// writer recovers), so whether the pid still runs is the caller's
	// question.
	WriterPid   int
	WriterState WriterState
	// LiveDir is where readers look for the live segment slots, and
	// LiveSlots how many there are: the table's shared memory is bounded
	// by LiveSlots × SegmentBytes (the slots are sparse until written).
	LiveDir   string
	LiveSlots int
	Created   time.Time
	// Compressed is what compaction made of the segments below the
	// compaction mark that retention has not deleted.
	Compressed Compressed
	// Live, Hot, Raw and Historical are the table's lifecycle: where each
	// of the rows [First, Rows) is read from now.
	Live       Tier // in a live slot, not sealed and durable yet: shared memory
	Hot        Tier // sealed and durable, kept in shared memory (a hot copy, or still in its live slot)
	Raw        Tier // sealed or durable rows in raw segment files on disk
	Historical Tier // in compressed segment files on disk (compaction)
}

// Tier counts the rows and segments of one stage of a table's lifecycle.
type Tier struct {
	Segments uint64
	Rows     uint64
}

// Compressed sums a table's compressed segments.
type Compressed struct {
	Segments int
	RawBytes int64   // the raw files they replaced (rows × row size)
	Bytes    int64   // the compressed files
	ColBytes []int64 // compressed bytes per schema column (the check word is not stored)
	// SeqBytes is the seq column of the segments in format version 2
	// (clustered by symbol), which ColBytes does not count; their sym
	// column's bytes are their seq-order index's.
	SeqBytes int64
	// Clustered counts the segments in format version 2.
	Clustered int
}

// Stat returns the table's state. The counts are loaded one after the
// other from the live control file, so with a writer running they can
// differ by what it published in between; Rows and the range come from
// one seqlock snapshot.
func (r *Reader) Stat() (Stat, error) {
	snap, err := r.snapshot()
	if err != nil {
		return Stat{}, err
	}
	c := r.ctl
	st := Stat{
		Rows:         snap.Visible,
		First:        min(snap.FirstSeq, snap.Visible),
		Durable:      min(c.Durable(), snap.Visible),
		SealedSegs:   c.DurableSegs(),
		SegmentRows:  r.mask + 1,
		SegmentBytes: r.segSize,
		Symbols:      r.Symbols(),
		OutOfOrder:   c.OutOfOrder(),
		Late:         snap.Late,
		LateWindow:   c.LateWindow(),
		WriterPid:    c.WriterPid(),
		WriterState:  writerState(c.State()),
		LiveDir:      r.liveDirPath(),
		LiveSlots:    len(r.slots),
		Created:      c.Created(),
	}
	if st.WriterState == WriterClosed {
		st.WriterPid = 0
	}
	r.statTiers(&st)
	if err := r.statCompressed(&st.Compressed, st.First>>r.shift); err != nil {
		return st, err
	}
	if st.Rows > st.First {
		st.Segments = (st.Rows-1)>>r.shift - st.First>>r.shift + 1
		buf := r.schema.NewRow()
		ts, err := r.rowTs(st.First, buf)
		if errors.Is(err, ErrTruncated) {
			// Retention moved on since the snapshot: take the new first row.
			st.First = r.FirstSeq()
			ts, err = r.rowTs(st.First, buf)
		}
		if err != nil {
			return st, err
		}
		st.FirstTs = ts
		// The snapshot's last ts is the writer's; the row's own is the
		// same unless the count was capped after a machine restart (see
		// capVisible), or the row is not readable (a crash tail no
		// writer has cut yet), where the snapshot's stands.
		st.LastTs = snap.LastTs
		if ts, err := r.rowTs(st.Rows-1, buf); err == nil {
			st.LastTs = ts
		}
	}
	return st, nil
}

// rowTs reads row seq into buf, checked, and returns its ts.
func (r *Reader) rowTs(seq uint64, buf []byte) (int64, error) {
	if err := r.ReadRow(seq, buf); err != nil {
		return 0, err
	}
	if !format.Valid(seq, buf) {
		path, off := r.rowPlace(seq)
		return 0, format.Corruptf(path, off, "row %d fails its check", seq)
	}
	return store.Row(buf).Ts(), nil
}

// statCompressed opens (header and index only) every compressed segment
// from segment first up to the compaction mark.
func (r *Reader) statCompressed(c *Compressed, first uint64) error {
	for n := first; n < r.ctl.CmpSegs(); n++ {
		path := format.ZSegPath(r.dir, n)
		z, err := cseg.OpenFetched(path, r.schema, cseg.Header{TableID: r.ctl.TableID, SegNo: n, RowsPerSeg: r.mask + 1}, nil, r.fetcher(path))
		if errors.Is(err, os.ErrNotExist) && n < r.FirstSeq()>>r.shift {
			continue // deleted by retention meanwhile
		}
		if err != nil {
			return err
		}
		c.Segments++
		c.RawBytes += int64(z.Rows()) * int64(z.RowSize())
		c.Bytes += z.Size()
		if c.ColBytes == nil {
			c.ColBytes = make([]int64, len(r.schema.Cols))
		}
		for i, b := range z.ColBytes() {
			c.ColBytes[i] += b
		}
		c.SeqBytes += z.SeqBytes()
		if z.Version() == cseg.VersionClustered {
			c.Clustered++
		}
		z.Close()
	}
	return nil
}

// statTiers sorts the segments holding rows [First, Rows) into the
// lifecycle's tiers: compressed below the compaction mark; hot when
// sealed and durable and in shared memory (a hot copy, or still in its
// live slot); live in a slot otherwise; else in raw files.
func (r *Reader) statTiers(st *Stat) {
	if st.Rows <= st.First {
		return
	}
	cmp, sealed := r.ctl.CmpSegs(), r.ctl.DurableSegs()
	live := r.liveDirPath()
	copies := map[uint64]bool{}
	if live != "" && r.ctl.State() != index.StateClosed {
		ents, _ := os.ReadDir(live)
		for _, e := range ents {
			if n, tmp, ok := format.ParseHotName(e.Name()); ok && !tmp {
				copies[n] = true
			}
		}
	}
	for n := st.First >> r.shift; n <= (st.Rows-1)>>r.shift; n++ {
		rows := min(st.Rows, (n+1)<<r.shift) - max(st.First, n<<r.shift)
		t := &st.Raw
		if n < cmp {
			t = &st.Historical
		} else if n < sealed && copies[n] {
			t = &st.Hot
		} else if gen, seg := r.ctl.Slot(int(n % uint64(len(r.slots)))); gen != 0 && seg == n && live != "" {
			if _, err := os.Stat(filepath.Join(live, format.SlotName(int(n%uint64(len(r.slots)))))); err == nil {
				t = &st.Live
				if n < sealed {
					t = &st.Hot
				}
			}
		}
		t.Segments++
		t.Rows += rows
	}
}

// WriterState is what the last writer of a table recorded about itself.
type WriterState uint8

const (
	WriterClosed     WriterState = iota // no writer, or the last one closed cleanly
	WriterOpen                          // a writer has the table open, or died with it open
	WriterRecovering                    // a writer is recovering from the durable files (or died doing so)
)

// writerState reads the control file's state word; a value this build
// does not know reads as WriterOpen (a writer may hold the table).
func writerState(w uint64) WriterState {
	switch w {
	case index.StateClosed:
		return WriterClosed
	case index.StateRecovering:
		return WriterRecovering
	}
	return WriterOpen
}

// String is "closed", "open" or "recovering": how tickdb stat and the
// web console name it.
func (s WriterState) String() string {
	switch s {
	case WriterClosed:
		return "closed"
	case WriterRecovering:
		return "recovering"
	}
	return "open"
}
