package writer_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/writer"
)

// TestRoomFullDisk fills, under a writer appending rows, the small file
// system that holds either the table (db) or its live slots (live), a
// tmpfs or an ext4 image: appends stop with ErrNoSpace (never SIGBUS,
// never a writer that stays failed), every row appended before is made
// durable, Reserve and Condition say no_space, and once the filler is
// removed the writer takes rows again by itself, across segment rolls,
// with every row intact.
func TestRoomFullDisk(t *testing.T) {
	for _, c := range []struct {
		name string
		kind testutil.FSKind
		live bool // the live dir on the small file system, else the db
	}{
		{"db=tmpfs", testutil.Tmpfs, false},
		{"db=ext4", testutil.Ext4, false},
		{"live=tmpfs", testutil.Tmpfs, true},
		{"live=ext4", testutil.Ext4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			small := testutil.MountSmall(t, c.kind, 16<<20)
			tb := newWtTable(t)
			if c.live {
				tb.live = filepath.Join(small, "live")
			} else {
				tb.db = filepath.Join(small, "db")
			}
			w := tb.open(t, func(o *writer.Options) { o.SegmentSize = 64 << 10; o.HotBytes = -1 })
			ids := tb.symbols(t, w, "A", "B", "C")
			seq := uint64(0)
			appendSome := func(n uint64) error {
				r := tb.s.NewRow()
				for end := seq + n; seq < end; seq++ {
					tb.fill(r, seq, ids[seq%3])
					if _, err := w.Append(r); err != nil {
						return err
					}
				}
				w.Publish()
				return nil
			}
			if err := appendSome(5000); err != nil {
				t.Fatal(err)
			}
			filler := filepath.Join(small, "filler")
			if _, err := testutil.Fill(filler); err != nil {
				t.Fatal(err)
			}
			// The room reserved before the disk filled is a bounded
			// runway (at most about two segments, 4,096 rows): appends
			// then fail, with ErrNoSpace.
			var err error
			for range 100 {
				if err = appendSome(1000); err != nil {
					break
				}
			}
			if !errors.Is(err, writer.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append at %d on a full disk: %v, want ErrNoSpace wrapping ENOSPC", seq, err)
			}
			t.Logf("refused at row %d: %v", seq, err)
			if err := w.Reserve(1); !errors.Is(err, writer.ErrNoSpace) {
				t.Fatalf("Reserve(1) on a full disk: %v", err)
			}
			if cond, err := w.Condition(); cond != writer.CondNoSpace || err == nil {
				t.Fatalf("Condition = %v, %v; want no_space", cond, err)
			}
			if st := w.Stats(); st.Condition != writer.CondNoSpace || st.ConditionErr == "" {
				t.Fatalf("Stats condition %v %q", st.Condition, st.ConditionErr)
			}
			// Every row appended is durable, full disk or not.
			if err := w.Sync(); err != nil {
				t.Fatalf("Sync on a full disk: %v", err)
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "room after the filler went", func() bool { return w.Reserve(1) == nil })
			if cond, err := w.Condition(); cond != writer.CondOK {
				t.Fatalf("Condition after the filler went: %v, %v", cond, err)
			}
			if err := appendSome(20_000); err != nil { // ten segments: rolls and recycled slots
				t.Fatalf("append after the filler went: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			tb.checkAll(t, seq, ids)
			tablecheck.Verify(t, tb.db, tb.name, seq)
		})
	}
}

// TestRoomIOError fails the flusher's writes with EIO for a while: Sync
// says ErrIO, new rows are refused (Reserve, then appends once the room
// reserved is used), the writer is not failed for good, and once the
// writes succeed again every row appended is durable and intact and rows
// are taken again.
func TestRoomIOError(t *testing.T) {
	tb := newWtTable(t)
	var failing atomic.Bool
	var faults atomic.Int64
	w := tb.open(t, func(o *writer.Options) {
		o.HotBytes = -1
		writer.SetFlushFault(o, func() error {
			if failing.Load() {
				faults.Add(1)
				return syscall.EIO
			}
			return nil
		})
	})
	ids := tb.symbols(t, w, "A", "B")
	tb.appendN(t, w, 0, 1000, ids)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	// Rows go on into the room reserved before the flusher failed, then
	// are refused with ErrIO.
	n := appendUntil(t, w, tb, 1000, 100_000, ids, writer.ErrIO)
	t.Logf("%d rows appended, then ErrIO", n)
	w.Publish()
	waitFor(t, "the flusher to fail", func() bool { c, _ := w.Condition(); return c == writer.CondIOError })
	if err := w.Sync(); !errors.Is(err, writer.ErrIO) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync while writes fail: %v, want ErrIO wrapping EIO", err)
	}
	if err := w.Reserve(1); !errors.Is(err, writer.ErrIO) {
		t.Fatalf("Reserve while writes fail: %v, want ErrIO", err)
	}
	n0 := faults.Load()
	waitFor(t, "the flusher to retry", func() bool { return faults.Load() > n0+2 })
	failing.Store(false)
	if err := w.WaitDurable(n); err != nil {
		t.Fatalf("WaitDurable after the writes succeed again: %v", err)
	}
	waitFor(t, "the condition to clear", func() bool { c, _ := w.Condition(); return c == writer.CondOK })
	if err := w.Reserve(1); err != nil {
		t.Fatalf("Reserve after recovery: %v", err)
	}
	tb.appendN(t, w, n, 1000, ids)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tb.checkAll(t, n+1000, ids)
	tablecheck.Verify(t, tb.db, tb.name, n+1000)
}

// appendUntil appends rows from seq on until an append fails with an
// error matching want (or max rows), and returns the next seq; another
// error fails t.
func appendUntil(t *testing.T, w *writer.Writer, tb *wtTable, seq, max uint64, ids []uint32, want error) uint64 {
	t.Helper()
	r := tb.s.NewRow()
	for end := seq + max; seq < end; seq++ {
		tb.fill(r, seq, ids[seq%uint64(len(ids))])
		if _, err := w.Append(r); err != nil {
			if !errors.Is(err, want) {
				t.Fatalf("Append(%d): %v, want %v", seq, err, want)
			}
			return seq
		}
	}
	t.Fatalf("%d rows appended, none refused with %v", max, want)
	return seq
}

// TestRoomIOErrorClose: a writer whose flusher keeps failing returns
// ErrIO from Close after its grace, leaves its rows in the live slots,
// and the next Open carries on from them with every row.
func TestRoomIOErrorClose(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out Close's grace (10 s)")
	}
	tb := newWtTable(t)
	var failing atomic.Bool
	w, err := writer.Open(tb.db, tb.name, tb.opts(func(o *writer.Options) {
		writer.SetFlushFault(o, func() error {
			if failing.Load() {
				return syscall.EIO
			}
			return nil
		})
	}))
	if err != nil {
		t.Fatal(err)
	}
	ids := tb.symbols(t, w, "A")
	tb.appendN(t, w, 0, 500, ids)
	failing.Store(true)
	n := appendUntil(t, w, tb, 500, 100_000, ids, writer.ErrIO)
	if err := w.Close(); !errors.Is(err, writer.ErrIO) {
		t.Fatalf("Close while writes fail: %v, want ErrIO", err)
	}
	w2 := tb.open(t, nil)
	if got := w2.Len(); got != n {
		t.Fatalf("reopened with %d rows, want %d", got, n)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	tb.checkAll(t, n, ids)
}

// TestReserve: Reserve of more rows than the preparer keeps ahead waits
// for it (never past the end of the next segment) and succeeds with room;
// the rows then go in, across rolls; after Close it says ErrClosed.
func TestReserve(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	ids := tb.symbols(t, w, "A", "B")
	seq := uint64(0)
	for _, n := range []int{1, 100, 5000, 1 << 20} {
		if err := w.Reserve(n); err != nil {
			t.Fatalf("Reserve(%d) at %d: %v", n, seq, err)
		}
		k := uint64(min(n, 20_000))
		tb.appendN(t, w, seq, k, ids)
		seq += k
	}
	if cond, err := w.Condition(); cond != writer.CondOK || err != nil {
		t.Fatalf("Condition = %v, %v", cond, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Reserve(1); !errors.Is(err, writer.ErrClosed) {
		t.Fatalf("Reserve after Close: %v", err)
	}
	tb.checkAll(t, seq, ids)
}

// TestReserveBeyondDistance: a group larger than the distance the
// preparer keeps ready (256 KiB of rows at first), within one segment of
// the default size, is reserved: the index files grow to what Reserve
// asked for, not only to the preparer's own distance (it once waited for
// ever there, and an HTTP request of 50,000 rows hung its server).
func TestReserveBeyondDistance(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, func(o *writer.Options) { o.SegmentSize = 64 << 20 })
	ids := tb.symbols(t, w, "A")
	done := make(chan error, 1)
	go func() { done <- w.Reserve(200_000) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a hang, not a timing
		t.Fatal("Reserve(200000) did not return")
	}
	tb.appendN(t, w, 0, 200_000, ids)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tb.checkAll(t, 200_000, ids)
}
