package index

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

// TestSnapshotWaitsOutPreemptedWriter: a writer thread descheduled between
// the two halves of Publish keeps the lock word odd for milliseconds on a
// busy machine. Snapshot must wait that out, not fail: the writer's own
// flusher takes a Snapshot at every checkpoint, and an ErrBusy there used
// to stop the writer ("flusher failed: published state busy", seen in the
// demo on two loaded cores).
func TestSnapshotWaitsOutPreemptedWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), format.CtlName)
	geo := Geometry{SegShift: 16, StrideShift: 6, LiveSlots: 4}
	if err := CreateCtl(path, store.TickSchema(), geo, [16]byte{1}, vfs.OS); err != nil {
		t.Fatal(err)
	}
	w, err := OpenCtl(path, vfs.OS)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := OpenCtl(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.Publish(Snap{Visible: 5, LastTs: 50, NextChunk: 6})

	// The first half of a publish, then a 5 ms "preemption".
	odd := w.lockSeq | 1
	mmap.StoreRelease64(w.b, offSeqlock, odd)
	b, done := w.b, make(chan struct{})
	// Timed from before the writer's goroutine starts: it ends the publish
	// 5 ms or more after this, so a Snapshot that waits for it takes that
	// long whatever the scheduler does.
	start := time.Now()
	go func() {
		defer close(done)
		time.Sleep(5 * time.Millisecond)
		mmap.StoreRelease64(b, offVisible, 6)
		mmap.StoreRelease64(b, offSeqlock, odd+1)
	}()
	s, err := r.Snapshot()
	<-done
	w.lockSeq = odd + 1
	if err != nil {
		t.Fatalf("Snapshot across a 5 ms publish: %v", err)
	}
	if s.Visible != 6 {
		t.Errorf("Snapshot = %+v, want the published Visible 6", s)
	}
	if d := time.Since(start); d < 4*time.Millisecond {
		t.Errorf("Snapshot returned after %v, before the publish ended", d)
	}
}
