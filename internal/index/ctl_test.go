package index

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

var testID = [16]byte{0xA1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0xF0}

var testGeo = Geometry{SegShift: 7, StrideShift: 3, LiveSlots: 4}

func newCtl(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), format.CtlName)
	if err := CreateCtl(path, store.TickSchema(), testGeo, testID, vfs.OS); err != nil {
		t.Fatal(err)
	}
	return path
}

func openCtl(t *testing.T, path string, writable bool) *Ctl {
	t.Helper()
	c, err := OpenCtl(path, testFS(writable))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wantCorrupt asserts a *store.CorruptError for path at off.
func wantCorrupt(t *testing.T, err error, path string, off int64) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want corruption of %s at %d", path, off)
	}
	var ce *store.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("error %v is not a *store.CorruptError", err)
	}
	if ce.Path != path || ce.Offset != off {
		t.Fatalf("corruption at %s:%d (%s), want %s:%d", ce.Path, ce.Offset, ce.Reason, path, off)
	}
}

func TestCreateOpenCtl(t *testing.T) {
	path := newCtl(t)
	st, err := os.Stat(path)
	if err != nil || st.Size() != CtlSize {
		t.Fatalf("ctl file: %v, size %d", err, st.Size())
	}
	for _, writable := range []bool{false, true} {
		c := openCtl(t, path, writable)
		if !c.Schema.Equal(store.TickSchema()) || c.TableID != testID || c.Geometry != testGeo || c.Path != path {
			t.Errorf("opened ctl: schema %s id %x geometry %+v path %s", c.Schema, c.TableID, c.Geometry, c.Path)
		}
		if c.RowsPerSeg() != 128 {
			t.Errorf("RowsPerSeg = %d", c.RowsPerSeg())
		}
		if d := time.Since(c.Created()); d < 0 || d > time.Minute {
			t.Errorf("Created = %v", c.Created())
		}
		snap, err := c.Snapshot()
		if err != nil || snap != (Snap{}) {
			t.Errorf("fresh snapshot %+v, %v", snap, err)
		}
		if c.Visible() != 0 || c.Durable() != 0 || c.SymCount() != 0 || c.State() != StateClosed || c.LiveDir() != "" {
			t.Error("fresh published words are not zero")
		}
	}
}

func TestCreateCtlErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		geo  Geometry
	}{
		{"one_slot", Geometry{SegShift: 7, LiveSlots: 1}},
		{"too_many_slots", Geometry{SegShift: 7, LiveSlots: MaxLiveSlots + 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := CreateCtl(path, store.TickSchema(), tc.geo, testID, vfs.OS); err == nil {
				t.Fatal("CreateCtl accepted the geometry")
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Error("a rejected ctl left a file")
			}
		})
	}
	t.Run("exists", func(t *testing.T) {
		path := newCtl(t)
		if err := CreateCtl(path, store.TickSchema(), testGeo, testID, vfs.OS); !errors.Is(err, os.ErrExist) {
			t.Fatalf("CreateCtl over an existing file: %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := OpenCtl(filepath.Join(dir, "nope"), nil); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("OpenCtl(missing) = %v", err)
		}
	})
}

// TestOpenCtlCorrupt damages the header page at exact offsets. Without a
// fixed-up check word every change past the magic is caught by the check
// (offset 4092); with it, the field's own validation names its offset.
func TestOpenCtlCorrupt(t *testing.T) {
	fixCheck := func(b []byte) { binary.LittleEndian.PutUint32(b[hdrCheck:], format.CRC32C(b[:hdrCheck])) }
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		off    int64
	}{
		{"magic_byte_0", func(b []byte) []byte { b[0] ^= 1; return b }, 0},
		{"magic_other_file", func(b []byte) []byte { copy(b, format.MagicSeg); return b }, 0},
		{"version_byte", func(b []byte) []byte { b[8] ^= 1; return b }, hdrCheck},
		{"live_slots_byte", func(b []byte) []byte { b[hdrLiveSlots] ^= 2; return b }, hdrCheck},
		{"table_id_byte", func(b []byte) []byte { b[hdrTableID+7] ^= 0x40; return b }, hdrCheck},
		{"seg_shift_byte", func(b []byte) []byte { b[hdrSegShift] ^= 1; return b }, hdrCheck},
		{"created_byte", func(b []byte) []byte { b[hdrCreated+3] ^= 1; return b }, hdrCheck},
		{"schema_name_byte", func(b []byte) []byte { b[hdrSchema+8+64+1] ^= 1; return b }, hdrCheck},
		{"unused_header_byte", func(b []byte) []byte { b[3000] ^= 1; return b }, hdrCheck},
		{"check_byte", func(b []byte) []byte { b[hdrCheck+2] ^= 1; return b }, hdrCheck},
		{"zero_header", func(b []byte) []byte { clear(b[:format.BlockSize]); return b }, 0},
		{"version_2_fixed", func(b []byte) []byte { b[8] = 2; fixCheck(b); return b }, 8},
		{"one_slot_fixed", func(b []byte) []byte { b[hdrLiveSlots] = 1; fixCheck(b); return b }, hdrLiveSlots},
		{"too_many_slots_fixed", func(b []byte) []byte { b[hdrLiveSlots] = MaxLiveSlots + 1; fixCheck(b); return b }, hdrLiveSlots},
		{"seg_shift_3_fixed", func(b []byte) []byte { b[hdrSegShift] = 3; fixCheck(b); return b }, hdrLiveSlots},
		{"seg_shift_41_fixed", func(b []byte) []byte { b[hdrSegShift] = 41; fixCheck(b); return b }, hdrLiveSlots},
		{"stride_21_fixed", func(b []byte) []byte { b[hdrStrideShift] = 21; fixCheck(b); return b }, hdrLiveSlots},
		{"chunk_words_fixed", func(b []byte) []byte { b[hdrChunkWords] = 1; fixCheck(b); return b }, hdrLiveSlots},
		{"schema_row_size_fixed", func(b []byte) []byte { b[hdrSchema+4] = 40; fixCheck(b); return b }, hdrSchema},
		{"schema_count_fixed", func(b []byte) []byte { b[hdrSchema] = 0; fixCheck(b); return b }, hdrSchema},
		{"schema_first_col_fixed", func(b []byte) []byte { b[hdrSchema+8] = 'x'; fixCheck(b); return b }, hdrSchema},
		{"truncated_to_header", func(b []byte) []byte { return b[:format.BlockSize] }, format.BlockSize},
		{"truncated_by_one", func(b []byte) []byte { return b[:CtlSize-1] }, CtlSize - 1},
		{"empty", func(b []byte) []byte { return nil }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := newCtl(t)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.mutate(b), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, writable := range []bool{false, true} {
				c, err := OpenCtl(path, testFS(writable))
				if err == nil {
					c.Close()
				}
				wantCorrupt(t, err, path, tc.off)
			}
		})
	}
	t.Run("published_page_not_checked", func(t *testing.T) {
		// Page 1 changes all the time; damage there is not a header error.
		path := newCtl(t)
		b, _ := os.ReadFile(path)
		b[offLiveDir+100] = 0xFF
		os.WriteFile(path, b, 0o644)
		openCtl(t, path, false)
	})
	t.Run("longer_file_ok", func(t *testing.T) {
		path := newCtl(t)
		b, _ := os.ReadFile(path)
		os.WriteFile(path, append(b, make([]byte, 100)...), 0o644)
		openCtl(t, path, false)
	})
}

// TestPublishSnapshotConcurrent: one goroutine publishes snapshots in which
// LastTs == Visible*7 and NextChunk == Visible+1 (and FirstSeq ==
// Visible/3); readers on their own read-only mappings (as another process
// would) must only ever see consistent snapshots, with Visible never going
// back. ErrBusy is the only allowed failure (a bounded retry that lost to
// a preempted writer).
func TestPublishSnapshotConcurrent(t *testing.T) {
	path := newCtl(t)
	w := openCtl(t, path, true)
	const readers = 3
	const want = 5_000 // snapshots each reader must see
	var stop atomic.Bool
	var wg sync.WaitGroup
	var busy atomic.Int64
	seen := make([]atomic.Int64, readers)
	moved := make([]atomic.Int64, readers) // snapshots that differed from the reader's previous one
	for i := range readers {
		r := openCtl(t, path, false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for !stop.Load() {
				s, err := r.Snapshot()
				if errors.Is(err, ErrBusy) {
					busy.Add(1)
					continue
				}
				if err != nil {
					t.Errorf("Snapshot: %v", err)
					return
				}
				if s.LastTs != int64(s.Visible)*7 || s.NextChunk != s.Visible+1 && s.Visible != 0 || s.FirstSeq != s.Visible/3 {
					t.Errorf("torn snapshot %+v", s)
					return
				}
				if s.Visible < last {
					t.Errorf("Visible went back from %d to %d", last, s.Visible)
					return
				}
				if v := r.Visible(); v < s.Visible {
					t.Errorf("Visible() = %d after a snapshot of %d", v, s.Visible)
					return
				}
				if s.Visible != last {
					moved[i].Add(1)
				}
				last = s.Visible
				seen[i].Add(1)
			}
		}()
	}
	// Publish until every reader has seen enough snapshots taken while the
	// writer was running (at most 10 s).
	enough := func() bool {
		for i := range readers {
			if seen[i].Load() < want || moved[i].Load() < want/100 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	i := uint64(0)
	for !enough() && time.Now().Before(deadline) {
		for range 1000 {
			i++
			w.Publish(Snap{Visible: i, LastTs: int64(i) * 7, FirstSeq: i / 3, NextChunk: i + 1})
		}
	}
	stop.Store(true)
	wg.Wait()
	if !enough() {
		t.Fatalf("readers saw too few snapshots in 10 s: %v", seen)
	}
	s, err := openCtl(t, path, false).Snapshot()
	if err != nil || s.Visible != i || s.LastTs != int64(i)*7 || s.NextChunk != i+1 {
		t.Fatalf("final snapshot %+v, %v", s, err)
	}
	t.Logf("%d publishes; snapshots per reader %d %d %d; %d busy", i, seen[0].Load(), seen[1].Load(), seen[2].Load(), busy.Load())
}

func TestSnapshotBusyAndResetSeqlock(t *testing.T) {
	path := newCtl(t)
	w := openCtl(t, path, true)
	w.Publish(Snap{Visible: 10, LastTs: 70, NextChunk: 11})
	// A writer that died between the two halves of Publish leaves the lock
	// word odd.
	mmap.StoreRelease64(w.b, offSeqlock, mmap.LoadAcquire64(w.b, offSeqlock)+1)
	r := openCtl(t, path, false)
	if _, err := r.Snapshot(); !errors.Is(err, ErrBusy) {
		t.Fatalf("Snapshot over an odd lock word: %v, want ErrBusy", err)
	}
	if got := r.RawSnap(); got.Visible != 10 || got.LastTs != 70 {
		t.Errorf("RawSnap = %+v", got)
	}
	w2 := openCtl(t, path, true) // the next writer
	w2.ResetSeqlock()
	if s, err := r.Snapshot(); err != nil || s.Visible != 10 {
		t.Fatalf("after ResetSeqlock: %+v, %v", s, err)
	}
	w2.Publish(Snap{Visible: 11, LastTs: 77, NextChunk: 12})
	if s, err := r.Snapshot(); err != nil || s.Visible != 11 || s.LastTs != 77 {
		t.Fatalf("after a publish: %+v, %v", s, err)
	}
	if lk := mmap.LoadAcquire64(r.b, offSeqlock); lk&1 != 0 {
		t.Errorf("lock word %d is odd after Publish", lk)
	}
}

func TestSlots(t *testing.T) {
	path := newCtl(t)
	w := openCtl(t, path, true)
	r := openCtl(t, path, false)
	for i := range MaxLiveSlots {
		if g, s := r.Slot(i); g != 0 || s != 0 {
			t.Fatalf("fresh slot %d = %d, %d", i, g, s)
		}
	}
	cases := []struct {
		slot     int
		gen, seg uint64
	}{
		{0, 1, 0}, {1, 2, 1}, {3, 9, 1 << 40}, {MaxLiveSlots - 1, 1<<64 - 1, 7}, {0, 0, 0},
	}
	for _, tc := range cases {
		w.SetSlot(tc.slot, tc.gen, tc.seg)
		if g, s := r.Slot(tc.slot); g != tc.gen || s != tc.seg {
			t.Errorf("Slot(%d) = %d, %d; want %d, %d", tc.slot, g, s, tc.gen, tc.seg)
		}
		if g := r.SlotGen(tc.slot); g != tc.gen {
			t.Errorf("SlotGen(%d) = %d", tc.slot, g)
		}
	}
	if g, s := r.Slot(1); g != 2 || s != 1 {
		t.Errorf("slot 1 disturbed: %d, %d", g, s)
	}
}

// TestSlotsConcurrent: a reader of a slot being reassigned sees gen 0
// (nothing) or a generation paired with its own segment, never a new
// generation with an old segment.
func TestSlotsConcurrent(t *testing.T) {
	path := newCtl(t)
	w := openCtl(t, path, true)
	r := openCtl(t, path, false)
	var stop atomic.Bool
	var reads, live atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			g, s := r.Slot(2)
			if g != 0 && s != g*3 {
				t.Errorf("slot read gen %d with segment %d", g, s)
				return
			}
			reads.Add(1)
			if g != 0 {
				live.Add(1)
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	g := uint64(0)
	for (reads.Load() < 50_000 || live.Load() < 1000) && time.Now().Before(deadline) {
		for range 1000 {
			g++
			w.SetSlot(2, g, g*3)
		}
	}
	stop.Store(true)
	<-done
	if reads.Load() < 50_000 || live.Load() < 1000 {
		t.Fatalf("reader made %d slot reads (%d live) in 10 s", reads.Load(), live.Load())
	}
}

func TestCtlWords(t *testing.T) {
	path := newCtl(t)
	w := openCtl(t, path, true)
	r := openCtl(t, path, false)

	w.SetSyms(3, 4096+72)
	if r.SymCount() != 3 || r.SymBytes() != 4096+72 {
		t.Errorf("syms %d, %d", r.SymCount(), r.SymBytes())
	}
	w.SetWriter(4242, StateOpen)
	if r.WriterPid() != 4242 || r.State() != StateOpen {
		t.Errorf("writer %d state %d", r.WriterPid(), r.State())
	}
	w.SetOutOfOrder(17)
	if r.OutOfOrder() != 17 {
		t.Errorf("OutOfOrder %d", r.OutOfOrder())
	}
	boot := [16]byte{9, 8, 7}
	w.SetBootID(boot)
	if r.BootID() != boot {
		t.Errorf("BootID %x", r.BootID())
	}
	g1, g2 := w.NextLiveGen(), w.NextLiveGen()
	if g1 == 0 || g2 != g1+1 {
		t.Errorf("NextLiveGen %d then %d", g1, g2)
	}
	if g3 := openCtl(t, path, true).NextLiveGen(); g3 != g2+1 {
		t.Errorf("NextLiveGen after reopen %d, want %d (never reused)", g3, g2+1)
	}
	w.SetDurable(99)
	w.SetDurableSegs(3)
	if r.Durable() != 99 || r.DurableSegs() != 3 {
		t.Errorf("durable %d segs %d", r.Durable(), r.DurableSegs())
	}
	w.SetCheckpoint(Checkpoint{Seq: 90, NextChunk: 12, SymCount: 3})
	if got := r.Checkpoint(); got != (Checkpoint{Seq: 90, NextChunk: 12, SymCount: 3}) {
		t.Errorf("Checkpoint %+v", got)
	}
	w.SetFlushes(5)
	if r.Flushes() != 5 {
		t.Errorf("Flushes %d", r.Flushes())
	}
	for _, dir := range []string{"/dev/shm/tickdb/abc", "", string(make([]byte, maxLiveDir))} {
		if err := w.SetLiveDir(dir); err != nil {
			t.Fatalf("SetLiveDir(%d bytes): %v", len(dir), err)
		}
		if r.LiveDir() != dir {
			t.Errorf("LiveDir = %q, want %q", r.LiveDir(), dir)
		}
	}
	if err := w.SetLiveDir(string(make([]byte, maxLiveDir+1))); err == nil {
		t.Error("SetLiveDir accepted an over-long path")
	}
	// A damaged length word gives "", not a read past the page.
	binary.LittleEndian.PutUint32(w.b[offLiveDir:], maxLiveDir+1)
	if r.LiveDir() != "" {
		t.Error("LiveDir with a damaged length is not empty")
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	// Everything survives a close and reopen.
	w.SetLiveDir("/x")
	w.Sync()
	c := openCtl(t, path, false)
	if c.Durable() != 99 || c.WriterPid() != 4242 || c.LiveDir() != "/x" || c.Checkpoint().Seq != 90 {
		t.Error("published words lost on reopen")
	}
}

func TestOpenCtlReadOnlyFile(t *testing.T) {
	// Readers work on a tree they cannot write: a 0444 ctl opens read-only.
	path := newCtl(t)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	r := openCtl(t, path, false)
	if r.writable || r.Schema == nil {
		t.Fatalf("read-only open: writable %v schema %v", r.writable, r.Schema)
	}
	if os.Geteuid() != 0 {
		if c, err := OpenCtl(path, vfs.OS); err == nil {
			c.Close()
			t.Error("writable open of a 0444 file succeeded")
		}
	}
}

// TestCtlUnknownFeature: a control file with a format feature bit this
// build does not know is refused, naming the file, the offset and the
// bits; known bits open.
func TestCtlUnknownFeature(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	if err := CreateCtl(path, store.TickSchema(), Geometry{SegShift: 10, StrideShift: 6, LiveSlots: 2}, [16]byte{1}, vfs.OS); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCtl(path, vfs.OS)
	if err != nil {
		t.Fatal(err)
	}
	c.AddFeatures(FeatLate | FeatPostFloor)
	if c.Features() != FeatLate|FeatPostFloor {
		t.Fatalf("features %#x", c.Features())
	}
	c.AddFeatures(1 << 40)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = OpenCtl(path, nil)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Offset != offFeatures || !strings.Contains(err.Error(), "newer tickdb") {
		t.Fatalf("open with an unknown feature: %v", err)
	}
}

// testFS is the file system a test opens an index file through: the
// real one for a writable file, none (read-only) for a reader's.
func testFS(writable bool) vfs.FS {
	if writable {
		return vfs.OS
	}
	return nil
}
