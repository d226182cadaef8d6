package reader_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Cross-process reader tests: the test process writes, a child process
// (this test binary re-executed, see testutil.StartChild) tails the table
// with reader.Tail and checks every row it gets (testutil.SeqRows: every
// column derives from the seq), its order and that none is missing.

var xprocSeedFlag = flag.Uint64("seed", 0, "seed of the randomized cross-process tests (0: $TICKDB_SEED, else random)")

const (
	xprocTable = "ticks"
	xprocSlots = 2 // live slots: small, so they are recycled many times
	xprocChild = "xproc-tail"
)

// xprocOptions: 64 KiB segments (2048 rows of 32 bytes), so a few hundred
// thousand rows roll over a hundred segments through two live slots.
func xprocOptions(live string) *writer.Options {
	return &writer.Options{Schema: store.TickSchema(), SegmentSize: 64 << 10, LiveSlots: xprocSlots, HotBytes: -1, LiveDir: live}
}

// xprocRows returns the row count of a full run and of a -short one.
func xprocRows(full, short uint64) uint64 {
	if testing.Short() {
		return short
	}
	return full
}

// xprocAppend appends rows [w.Len(), to) in batches, publishing each batch
// and sleeping pause between batches.
func xprocAppend(t *testing.T, w *writer.Writer, to uint64, batch int, pause time.Duration) {
	t.Helper()
	g := testutil.NewSeqRows()
	syms := testutil.NewWriterSyms(g, w.SymbolString)
	row := w.NewRow()
	for w.Len() < to {
		for i := 0; i < batch && w.Len() < to; i++ {
			seq := w.Len()
			id, err := syms.ID(seq)
			if err != nil {
				t.Fatal(err)
			}
			g.Fill(row, seq, id)
			if _, err := w.Append(row); err != nil {
				t.Fatalf("append row %d: %v", seq, err)
			}
		}
		w.Publish()
		if pause > 0 {
			time.Sleep(pause)
		}
	}
}

func startTailChild(t *testing.T, db string, rows uint64, mode string, seed uint64) *testutil.Child {
	return testutil.StartChild(t, "TestChildXprocTail", xprocChild, &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + db,
		"TICKDB_ROWS=" + strconv.FormatUint(rows, 10),
		"TICKDB_MODE=" + mode,
		"TICKDB_SLOTS=" + strconv.Itoa(xprocSlots),
		"TICKDB_CHILD_SEED=" + strconv.FormatUint(seed, 10),
	}})
}

// tailResult is what the child reports when it has checked every row.
type tailResult struct {
	rows, late, behind, maxLag, live uint64
}

func expectTailDone(t *testing.T, c *testutil.Child, rows uint64) tailResult {
	t.Helper()
	f := c.Expect(t, "done", 4*time.Minute, nil)
	var r tailResult
	vals := []*uint64{&r.rows, &r.late, &r.behind, &r.maxLag, &r.live}
	if len(f) != 2*len(vals) {
		t.Fatalf("child: bad done line %q", f)
	}
	for i, p := range vals {
		v, err := strconv.ParseUint(f[2*i+1], 10, 64)
		if err != nil {
			t.Fatalf("child: bad done line %q", f)
		}
		*p = v
	}
	if r.rows != rows {
		t.Fatalf("child checked %d rows, want %d", r.rows, rows)
	}
	if err := c.Wait(time.Minute); err != nil {
		t.Fatalf("child exit: %v\n%s", err, c.Log())
	}
	t.Logf("child checked %d rows: %d read at or past the durable count, lag up to %d segments, %d pauses over a slot recycle, %d views recycled before the copy",
		r.rows, r.live, r.maxLag, r.behind, r.late)
	// A view recycled between Get's generation check and the caller's
	// copy is the documented limit of a zero-copy row (a checked copy,
	// ReadRow, was then right). It needs a preemption inside a
	// nanosecond-wide window: a handful at most. A broken generation check
	// gives thousands.
	if r.late > rows/1000+8 {
		t.Fatalf("%d of %d rows came from a recycled live slot", r.late, rows)
	}
	return r
}

// TestXprocTail: a reader process follows a writer through many segment
// rolls and live-slot recycles, checking every row.
func TestXprocTail(t *testing.T) {
	rows := xprocRows(300_000, 60_000)
	db, live := testutil.DB(t)
	w, err := writer.Open(db, xprocTable, xprocOptions(live))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := startTailChild(t, db, rows, "follow", 1)
	c.Expect(t, "open", time.Minute, nil)
	xprocAppend(t, w, rows, 256, 200*time.Microsecond)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	expectTailDone(t, c, rows)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, db, xprocTable, rows)
}

// TestXprocTailWaitsForTable: the reader process starts before the table
// exists, waits for it, and then follows it from its first row.
func TestXprocTailWaitsForTable(t *testing.T) {
	rows := xprocRows(100_000, 30_000)
	db, live := testutil.DB(t)
	c := startTailChild(t, db, rows, "follow", 1)
	c.Expect(t, "waiting", time.Minute, nil)
	// Let the child poll the missing table a few times.
	time.Sleep(20 * time.Millisecond)
	w, err := writer.Open(db, xprocTable, xprocOptions(live))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	xprocAppend(t, w, rows, 128, 100*time.Microsecond)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	expectTailDone(t, c, rows)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, db, xprocTable, rows)
}

// TestXprocSlowTail: the reader process is a slow consumer. It stops in
// the middle of a segment it reads from a live slot until the writer is
// more than LiveSlots segments ahead, so the slot it was reading has been
// recycled for a newer segment; it must then get its rows from the
// durable files (the generation check of docs/FORMAT.md §4), never a row
// of the newer segment.
func TestXprocSlowTail(t *testing.T) {
	seed := testutil.Seed(t, *xprocSeedFlag)
	rows := xprocRows(300_000, 80_000)
	db, live := testutil.DB(t)
	w, err := writer.Open(db, xprocTable, xprocOptions(live))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := startTailChild(t, db, rows, "slow", seed)
	c.Expect(t, "open", time.Minute, nil)
	xprocAppend(t, w, rows, 256, time.Millisecond)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	r := expectTailDone(t, c, rows)
	if r.behind == 0 || r.maxLag < xprocSlots {
		t.Fatalf("the live slot under the reader was never recycled (%d pauses, lag up to %d segments)", r.behind, r.maxLag)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, db, xprocTable, rows)
}

// TestChildXprocTail is the reader process of the tests above. Mode
// "follow" reads as fast as it can; "slow" pauses now and then, when it is
// near the head, until the writer is LiveSlots+2 segments ahead; "behind"
// counts the pauses during which the live slot of the segment being read
// was recycled. It reports "waiting" while the
// table does not exist, "open" once it is open, and at the end
// "done rows N late L behind B maxlag M live V".
func TestChildXprocTail(t *testing.T) {
	testutil.ChildRole(t, xprocChild)
	db := testutil.EnvString(t, "TICKDB_DB")
	rows := testutil.EnvUint(t, "TICKDB_ROWS")
	slots := testutil.EnvUint(t, "TICKDB_SLOTS")
	slow := testutil.EnvString(t, "TICKDB_MODE") == "slow"
	rng := rand.New(rand.NewPCG(testutil.EnvUint(t, "TICKDB_CHILD_SEED"), 7))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	r, err := openWhenCreated(ctx, db, xprocTable)
	if err != nil {
		testutil.ChildFatalf(t, "open: %v", err)
	}
	defer r.Close()
	testutil.Report("open")
	g := testutil.NewSeqRows()
	names := testutil.NewSymCache(r.SymbolName)
	rps := r.SegmentRows()
	tail := r.Tail(0, &reader.Backoff{MaxSleep: 200 * time.Microsecond})
	buf := make(store.Row, g.Schema.RowSize)
	var late, behind, maxLag, live uint64
	pause := ^uint64(0)
	if slow {
		pause = rps/2 + rng.Uint64N(rps)
	}
	for next := uint64(0); next < rows; next++ {
		if next == pause {
			pause = next + rps/2 + rng.Uint64N(2*rps)
			// Near the head (likely reading a live slot): stop until the
			// writer is well past the slot this segment lives in, as a
			// consumer stuck elsewhere would; or until the writer is done.
			seg := next / rps
			if before := r.Len(); before-next < slots*rps {
				target := min(rows, next+(slots+2)*rps)
				for r.Len() < target {
					if ctx.Err() != nil {
						testutil.ChildFatalf(t, "writer stuck at %d rows while the reader waits at %d", r.Len(), next)
					}
					time.Sleep(200 * time.Microsecond)
				}
				// The slot of segment seg now holds segment seg+slots.
				if before <= (seg+slots)*rps && r.Len() > (seg+slots)*rps {
					behind++
				}
			}
		}
		durable := r.Durable()
		row, seq, err := tail.Wait(ctx)
		if err != nil {
			testutil.ChildFatalf(t, "tail at row %d: %v", next, err)
		}
		if seq != next {
			testutil.ChildFatalf(t, "tail returned row %d, want %d", seq, next)
		}
		if seq >= durable {
			live++
		}
		copy(buf, row)
		if wasLate, err := g.CheckCopy(buf, seq, names.Name, r.ReadRow); err != nil {
			testutil.ChildFatalf(t, "%v", err)
		} else if wasLate {
			late++
		}
		// The tail's own checked copy gives the row too, recycled slot
		// or not.
		if err := tail.ReadRow(buf); err != nil {
			testutil.ChildFatalf(t, "tail.ReadRow of row %d: %v", seq, err)
		}
		if err := g.Check(buf, seq, names.Name); err != nil {
			testutil.ChildFatalf(t, "tail.ReadRow: %v", err)
		}
		if lag := (r.Len() - seq) / rps; lag > maxLag {
			maxLag = lag
		}
	}
	if row, seq, ok, err := tail.Poll(); ok || err != nil {
		testutil.ChildFatalf(t, "tail past the last row: row %d (%d bytes), %v", seq, len(row), err)
	}
	testutil.Report("done rows %d late %d behind %d maxlag %d live %d", rows, late, behind, maxLag, live)
}

// openWhenCreated opens a table, waiting for it to be created.
func openWhenCreated(ctx context.Context, db, name string) (*reader.Reader, error) {
	waiting := false
	for {
		r, err := reader.Open(db, name, nil)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, store.ErrNoTable) {
			return nil, err
		}
		if !waiting {
			testutil.Report("waiting")
			waiting = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("table %s never appeared: %w", name, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}
