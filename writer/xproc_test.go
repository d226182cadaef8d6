package writer_test

import (
	"errors"
	"fmt"
	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

const (
	lockTable = "ticks"
	lockChild = "lock-holder"
)

// TestSecondWriterProcess: while a writer process holds a table, a second
// writer fails at once with ErrLocked naming the holder's pid; once the
// holder is SIGKILLed the kernel has released its flock, and the next
// Open succeeds and recovers (warm: the live slots are still there), with
// the holder's published rows and without its unpublished tail.
func TestSecondWriterProcess(t *testing.T) {
	const published, unpublished = 5000, 300 // the tail stays inside segment 2
	db, live := testutil.DB(t)
	dir := filepath.Join(db, lockTable)
	c := testutil.StartChild(t, "TestChildLockHolder", lockChild, &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + db, "TICKDB_LIVE=" + live,
		"TICKDB_ROWS=" + strconv.Itoa(published), "TICKDB_TAIL=" + strconv.Itoa(unpublished),
	}})
	f := c.Expect(t, "holding", 2*time.Minute, nil)
	if len(f) != 2 || f[0] != strconv.Itoa(c.Pid) || f[1] != strconv.Itoa(published) {
		t.Fatalf("child %d reported holding %q", c.Pid, f)
	}

	for i, o := range []*writer.Options{
		{LiveDir: live},
		{Schema: store.TickSchema(), LiveDir: live}, // the create-if-missing path
		nil, // default live dir
	} {
		start := time.Now()
		w, err := writer.Open(db, lockTable, o)
		if err == nil {
			w.Close()
			t.Fatalf("case %d: a second writer opened a table held by pid %d", i, c.Pid)
		}
		// LOCK_NB: no waiting for the holder. The bound is only there to
		// catch a blocking lock; it is no timing assertion.
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("case %d: Open took %v to fail", i, d)
		}
		var le *writer.LockedError
		if !errors.Is(err, writer.ErrLocked) || !errors.As(err, &le) {
			t.Fatalf("case %d: %v, want a *LockedError", i, err)
		}
		if le.Pid != c.Pid || !strings.Contains(err.Error(), "pid "+strconv.Itoa(c.Pid)) {
			t.Fatalf("case %d: %q (pid %d), want the holder's pid %d", i, err, le.Pid, c.Pid)
		}
	}
	if locked, pid := writer.IsLocked(dir); !locked || pid != c.Pid {
		t.Fatalf("IsLocked = %v, %d; want true, %d", locked, pid, c.Pid)
	}
	r, err := reader.Open(db, lockTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if pid, n := r.WriterPid(), r.Len(); pid != c.Pid || n != published {
		t.Fatalf("reader: writer pid %d, %d rows; want %d, %d", pid, n, c.Pid, published)
	}

	c.Kill()
	if locked, pid := writer.IsLocked(dir); locked {
		t.Fatalf("the lock is still held (pid %d) after the holder was killed", pid)
	}
	w, err := writer.Open(db, lockTable, &writer.Options{LiveDir: live})
	if err != nil {
		t.Fatalf("open after the holder died: %v", err)
	}
	defer w.Close()
	if n := w.Len(); n != published {
		t.Fatalf("recovered %d rows, want the %d published (the unpublished tail dropped)", n, published)
	}
	// A second writer in this very process is refused too, naming us.
	var le *writer.LockedError
	if _, err := writer.Open(db, lockTable, &writer.Options{LiveDir: live}); !errors.As(err, &le) || le.Pid != os.Getpid() {
		t.Fatalf("second in-process writer: %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	xpCheck(t, r, 0, published)
	const more = 3000
	xpAppend(t, w, published+more)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if pid := r.WriterPid(); pid != os.Getpid() {
		t.Fatalf("writer pid %d, want %d", pid, os.Getpid())
	}
	xpCheck(t, r, 0, published+more)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("live dir after a clean close: %v", err)
	}
	xpCheck(t, r, 0, published+more)
	tablecheck.Verify(t, db, lockTable, published+more)
}

// TestChildLockHolder opens the table as its writer, appends and syncs
// TICKDB_ROWS rows, appends TICKDB_TAIL more without publishing them,
// reports "holding <pid> <rows>" and waits to be killed.
func TestChildLockHolder(t *testing.T) {
	testutil.ChildRole(t, lockChild)
	db := testutil.EnvString(t, "TICKDB_DB")
	live := testutil.EnvString(t, "TICKDB_LIVE")
	rows := testutil.EnvUint(t, "TICKDB_ROWS")
	tail := testutil.EnvUint(t, "TICKDB_TAIL")
	w, err := writer.Open(db, lockTable, &writer.Options{Schema: store.TickSchema(), SegmentSize: 64 << 10, LiveSlots: 2, HotBytes: -1, LiveDir: live})
	if err != nil {
		testutil.Report("error open: %v", err)
		t.Fatal(err)
	}
	defer w.Close()
	xpAppend(t, w, rows)
	if err := w.Sync(); err != nil {
		testutil.Report("error sync: %v", err)
		t.Fatal(err)
	}
	// The unpublished tail: same rows as a later writer would write, but
	// never published, so a recovering writer must drop them.
	g := testutil.NewSeqRows()
	syms := testutil.NewWriterSyms(g, w.SymbolString)
	row := w.NewRow()
	for seq := rows; seq < rows+tail; seq++ {
		id, err := syms.ID(seq)
		if err != nil || g.Fresh(seq) {
			testutil.Report("error the unpublished tail must not add symbols (row %d)", seq)
			t.Fatal(err)
		}
		g.Fill(row, seq, id)
		if _, err := w.Append(row); err != nil {
			testutil.Report("error append: %v", err)
			t.Fatal(err)
		}
	}
	testutil.Report("holding %d %d", os.Getpid(), rows)
	for range testutil.Commands() {
	}
}

// xpAppend appends SeqRows up to row count to, publishing every 500.
func xpAppend(t *testing.T, w *writer.Writer, to uint64) {
	t.Helper()
	g := testutil.NewSeqRows()
	syms := testutil.NewWriterSyms(g, w.SymbolString)
	row := w.NewRow()
	for seq := w.Len(); seq < to; seq++ {
		id, err := syms.ID(seq)
		if err != nil {
			t.Fatal(err)
		}
		g.Fill(row, seq, id)
		if _, err := w.Append(row); err != nil {
			t.Fatalf("append row %d: %v", seq, err)
		}
		if seq%500 == 0 {
			w.Publish()
		}
	}
	w.Publish()
}

// xpCheck checks rows [from, to) through r.
func xpCheck(t *testing.T, r *reader.Reader, from, to uint64) {
	t.Helper()
	if err := xpCheckRows(r, testutil.NewSeqRows(), from, to); err != nil {
		t.Fatal(err)
	}
}

func xpCheckRows(r *reader.Reader, g *testutil.SeqRows, from, to uint64) error {
	names := testutil.NewSymCache(r.SymbolName)
	if n := r.Len(); n < to {
		return fmt.Errorf("reader: %d rows published, want %d", n, to)
	}
	for seq := from; seq < to; seq++ {
		row, err := r.Get(seq)
		if err != nil {
			return fmt.Errorf("get row %d: %w", seq, err)
		}
		if err := g.Check(row, seq, names.Name); err != nil {
			return err
		}
	}
	return nil
}
