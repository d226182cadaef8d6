package reader_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// A writer that reopens a closed table copies only the block it appends to
// into its new live slot; the rows before it in that segment are read from
// the durable file (the slot header's liveFrom). This test pins that down:
// every row reads back right, a reader attached before the reopen keeps
// working, and damage to a durable row below liveFrom is reported against
// the durable file even though the segment is live.
func TestReopenMidSegmentReadsLowRowsFromDurable(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.TickSchema()
	size, _ := s.Col("size")
	symc, _ := s.Col("sym")
	opts := &writer.Options{Schema: s, SegmentSize: 64 << 10, LiveDir: live} // 2048 rows a segment
	w, err := writer.Open(db, "t", opts)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.SymbolString("AAA")
	row := s.NewRow()
	add := func(w *writer.Writer, from, to int) {
		for i := from; i < to; i++ {
			row.SetTs(int64(i))
			row.SetSym(symc, id)
			row.SetI64(size, int64(i)*3)
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
		}
		w.Publish()
	}
	add(w, 0, 3000) // segment 1 holds rows 2048..2999
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	early, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	if _, err := early.Get(2500); err != nil {
		t.Fatal(err)
	}

	w, err = writer.Open(db, "t", &writer.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	add(w, 3000, 3100)
	check := func(r *reader.Reader) {
		t.Helper()
		for i := uint64(0); i < 3100; i++ {
			got, err := r.Get(i)
			if err != nil {
				t.Fatalf("row %d: %v", i, err)
			}
			if got.I64(size) != int64(i)*3 || got.Ts() != int64(i) {
				t.Fatalf("row %d: size %d ts %d", i, got.I64(size), got.Ts())
			}
		}
	}
	check(early)
	fresh, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	check(fresh)
	if rep, err := reader.Verify(db, "t", nil); err != nil || rep.Rows != 3100 {
		t.Fatalf("verify: %+v %v", rep, err)
	}

	// Row 2100 is below the slot's first row (the reopen copied in only
	// the block holding row 3000): damage it in the durable file.
	path := format.SegPath(filepath.Join(db, "t"), 1)
	off := int64(format.BlockSize + (2100-2048)*32)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0}
	f.ReadAt(b, off+17)
	b[0] ^= 1
	f.WriteAt(b, off+17)
	f.Close()
	other, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Get(2100)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Path != path || ce.Offset != off {
		t.Fatalf("want CorruptError at %s:%d, got %v", path, off, err)
	}
	if got, err := other.Get(3050); err != nil || got.I64(size) != 3050*3 {
		t.Fatalf("row 3050 from the live slot: %v", err)
	}
	b[0] ^= 1 // repair, so the deferred Close's checks stay clean
	f, _ = os.OpenFile(path, os.O_RDWR, 0)
	f.WriteAt(b, off+17)
	f.Close()
}

// Every method of a closed Reader returns an error or a zero value; none
// touches the unmapped files.
func TestReaderAfterClose(t *testing.T) {
	db, live := testutil.DB(t)
	w := writeTicks(t, db, live, "t", 300, nil)
	defer w.Close()
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	var it reader.Iter
	if err := r.Range(0, 1<<62, &it); err != nil || !it.Next() {
		t.Fatal(err)
	}
	tail := r.Tail(0, nil)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(0); !errors.Is(err, reader.ErrClosed) {
		t.Errorf("Get: %v", err)
	}
	if _, err := r.Get(1 << 40); !errors.Is(err, reader.ErrClosed) {
		t.Errorf("Get past the count: %v", err)
	}
	if _, err := r.SeekTime(5); !errors.Is(err, reader.ErrClosed) {
		t.Errorf("SeekTime: %v", err)
	}
	if err := r.Range(0, 10, &it); !errors.Is(err, reader.ErrClosed) {
		t.Errorf("Range: %v", err)
	}
	if err := r.RangeSym(0, 10, 0, &it); !errors.Is(err, reader.ErrClosed) {
		t.Errorf("RangeSym: %v", err)
	}
	if it.Next() {
		t.Error("Next after Close")
	}
	if _, _, _, err := tail.Poll(); err == nil {
		t.Error("Poll after Close")
	}
	if _, err := r.SymbolName(0); !errors.Is(err, reader.ErrClosed) {
		t.Errorf("Symbol: %v", err)
	}
	_, _ = r.SymbolID([]byte("AAA"))
	_ = r.Len() + r.Durable() + r.FirstSeq() + r.OutOfOrder() + uint64(r.WriterPid()+r.Symbols())
	if _, err := r.Snapshot(); !errors.Is(err, reader.ErrClosed) {
		t.Errorf("Snapshot: %v", err)
	}
	if err := r.Close(); !errors.Is(err, reader.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

// After a machine restart that no writer has recovered from yet, only rows
// below the durable count and the index checkpoint are on disk: a reader
// shows no more than that. The restart is simulated by writing another
// boot id into the control file of a table whose writer is still open.
func TestReaderCapsCountAfterRestart(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.TickSchema()
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, SegmentSize: 4096, LiveDir: live, Flush: writer.FlushOnSync})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	id, _ := w.SymbolString("AAA")
	row := s.NewRow()
	symc, _ := s.Col("sym")
	for i := 0; i < 1000; i++ {
		row.SetTs(int64(i))
		row.SetSym(symc, id)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		if i == 599 {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Publish()
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != 1000 {
		t.Fatalf("count %d before the restart", r.Len())
	}
	d := r.Durable()
	if d < 600 || d >= 1000 {
		t.Fatalf("durable %d, want 600..999", d)
	}
	// The index checkpoint follows Sync in the background: wait for it to
	// cover the synced rows, or the cap below is 0 on a busy machine.
	ctl, err := index.OpenCtl(filepath.Join(db, "t", format.CtlName), nil)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ctl.Checkpoint().Seq < 600; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("index checkpoint at %d 10 s after Sync of 600 rows", ctl.Checkpoint().Seq)
		}
	}
	ctl.Close()
	f, err := os.OpenFile(filepath.Join(db, "t", format.CtlName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	other := [16]byte{1, 2, 3}
	if _, err := f.WriteAt(other[:], 4208); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Sealed segments go on becoming durable in the background, so the
	// cap is checked against the durable count read after it.
	got := r.Len()
	if d := r.Durable(); got > d || got < 600 {
		t.Fatalf("count %d after the restart, want 600 (synced and checkpointed) up to durable %d", got, d)
	}
	snap, err := r.Snapshot()
	if err != nil || snap.Len != got {
		t.Fatalf("snapshot %+v %v, want visible %d", snap, err, got)
	}
	if _, err := r.Get(got); !errors.Is(err, reader.ErrNotVisible) {
		t.Fatalf("Get(%d): %v", got, err)
	}
	// Put this boot back so the writer's Close sees its own table.
	boot := mmap.BootID()
	f, _ = os.OpenFile(filepath.Join(db, "t", format.CtlName), os.O_RDWR, 0)
	f.WriteAt(boot[:], 4208)
	f.Close()
}

// A damaged postings entry must not make a symbol query return rows out of
// order or skip some: entries only go up, and one that does not is
// reported against post.idx.
func TestRangeSymDetectsPostingsOutOfOrder(t *testing.T) {
	db, live := testutil.DB(t)
	// Postings of raw segments: the test damages AAA's first postings
	// block, which compaction drops (below the postings floor).
	w := writeTicks(t, db, live, "t", 600, func(o *writer.Options) { o.CompactAge = -1 }) // symbols AAA, BBB, CCC round robin
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// AAA's first directory is line 64 (the first after the header) and
	// its first data block, of one line, line 65 (allocated together at
	// creation); its entry i is row 3i. In a version 3 post.idx
	// (docs/FORMAT.md §7) entry k of a block is 3 bytes at 64(v/21) +
	// 3(v%21), v = k+3, and holds seq_k - seq_0 + 1; the first block
	// holds 18.
	path := filepath.Join(db, "t", format.PostName)
	entryOff := func(k int64) int64 { v := k + 3; return 65*64 + v/21*64 + v%21*3 }
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{450 + 1 - 256, 1, 0} // entry 10 (row 30) now names row 450
	if _, err := f.WriteAt(b, entryOff(10)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	id, _ := r.SymbolID([]byte("AAA"))
	var it reader.Iter
	if err := r.RangeSym(math.MinInt64, math.MaxInt64, id, &it); err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		n++
	}
	var ce *store.CorruptError
	if !errors.As(it.Err(), &ce) || ce.Path != path || ce.Offset != entryOff(11) {
		t.Fatalf("after %d rows: want CorruptError in %s at %d, got %v", n, path, entryOff(11), it.Err())
	}
}
