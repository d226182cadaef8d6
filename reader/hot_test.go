package reader_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Hot segments: sealed, durable segments that stay in their live slots
// (writer.Options.HotBytes) are read from shared memory by readers in any
// process, never from the segment files.

const (
	hotTable = "hot"
	hotChild = "hot-reader"
	hotSlots = 2 // LiveSlots: the segments not yet durable
	hotSegs  = 4 // the hot budget, in segments
)

// hotOptions: the hot budget of hotSegs segments, kept raw (no background
// compaction): the tests here count hot segments and read their hot copies
// and seg-N.dat files, which a compressed segment does not keep.
func hotOptions(live string) *writer.Options {
	o := &writer.Options{Schema: store.TickSchema(), SegmentSize: 64 << 10, LiveSlots: hotSlots, LiveDir: live, CompactAge: -1}
	o.HotBytes = hotSegs * format.SegFileSize(o.Schema.RowSize, 2048)
	return o
}

// waitTiers waits until the table's lifecycle settles on want hot
// segments (the preparer recycles the oldest slot in the background).
func waitTiers(t *testing.T, db string, hot uint64) reader.Stat {
	t.Helper()
	r, err := reader.Open(db, hotTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := r.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if st.Hot.Segments == hot || time.Now().After(deadline) {
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hotWriter opens the hot table in db (live slots in live), appends
// rows and makes them durable; the test closes the writer.
func hotWriter(t *testing.T, db, live string, rows uint64) *writer.Writer {
	t.Helper()
	w, err := writer.Open(db, hotTable, hotOptions(live))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	xprocAppend(t, w, rows, 1000, 0)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestHotSegmentsReadFromMemory writes more segments than the hot budget
// holds, then hides the segment files of the hot ones: a reader in another
// process still reads every row of them (from shared memory), while a
// segment past the budget needs its file.
func TestHotSegmentsReadFromMemory(t *testing.T) {
	db, live := testutil.DB(t)
	w, err := writer.Open(db, hotTable, hotOptions(live))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Seven full segments and part of an eighth: slots hold the current
	// segment, the next one (prepared), and hotSegs sealed ones.
	rps := uint64(2048)
	rows := 7*rps + 100
	xprocAppend(t, w, rows, 1000, 0)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	st := waitTiers(t, db, hotSegs)
	if st.Hot.Segments != hotSegs || st.Live.Segments != 1 || st.Raw.Segments != 8-1-hotSegs || st.Historical.Segments != 0 {
		t.Fatalf("lifecycle: live %+v hot %+v raw %+v historical %+v; want 1 live, %d hot, %d raw segments",
			st.Live, st.Hot, st.Raw, st.Historical, hotSegs, 8-1-hotSegs)
	}
	firstHot := uint64(7 - hotSegs) // segments 3..6 are hot, 0..2 raw, 7 live
	if st.Raw.Rows != firstHot*rps || st.Hot.Rows != hotSegs*rps || st.Live.Rows != 100 {
		t.Fatalf("lifecycle rows: live %d hot %d raw %d", st.Live.Rows, st.Hot.Rows, st.Raw.Rows)
	}

	// Hide the hot segments' files and the raw segment just before them.
	hide := func(n uint64) func() {
		p := format.SegPath(db+"/"+hotTable, n)
		if err := os.Rename(p, p+".hidden"); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := os.Rename(p+".hidden", p); err != nil {
				t.Fatal(err)
			}
		}
	}
	var restore []func()
	for n := firstHot - 1; n < firstHot+hotSegs; n++ {
		restore = append(restore, hide(n))
	}
	c := testutil.StartChild(t, "TestChildHotReader", hotChild, &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + db,
		"TICKDB_FROM=" + strconv.FormatUint(firstHot*rps, 10),
		"TICKDB_TO=" + strconv.FormatUint(rows, 10),
		"TICKDB_COLD=" + strconv.FormatUint((firstHot-1)*rps, 10),
	}})
	c.Expect(t, "ok", time.Minute, nil)
	if err := c.Wait(time.Minute); err != nil {
		t.Fatalf("child: %v\n%s", err, c.Log())
	}
	for _, f := range restore {
		f()
	}

	// Once the writer closes, the slots are gone and every row reads from
	// the segment files.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, hotTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if st, err := r.Stat(); err != nil || st.Hot.Segments != 0 || st.Raw.Rows != rows {
		t.Fatalf("after close: %+v, %v; want every row raw", st, err)
	}
	checkRows(t, r, 0, rows)
	tablecheck.Verify(t, db, hotTable, rows)
}

// TestChildHotReader is the other process of TestHotSegmentsReadFromMemory.
func TestChildHotReader(t *testing.T) {
	testutil.ChildRole(t, hotChild)
	db := testutil.EnvString(t, "TICKDB_DB")
	from, to := testutil.EnvUint(t, "TICKDB_FROM"), testutil.EnvUint(t, "TICKDB_TO")
	cold := testutil.EnvUint(t, "TICKDB_COLD")
	r, err := reader.Open(db, hotTable, nil)
	if err != nil {
		testutil.ChildFatalf(t, "open: %v", err)
	}
	defer r.Close()
	if err := readRows(r, from, to); err != nil {
		testutil.ChildFatalf(t, "hot rows: %v", err)
	}
	g := testutil.NewSeqRows()
	names := testutil.NewSymCache(r.SymbolName)
	// The hot rows through the iterator. (A time range would seek through
	// the row before them too, which is in a hidden file.)
	var it reader.Iter
	r.RangeSeq(from, to, &it)
	n := uint64(0)
	for it.Next() {
		if err := g.Check(it.Row(), it.Seq(), names.Name); err != nil {
			testutil.ChildFatalf(t, "range: %v", err)
		}
		n++
	}
	if it.Err() != nil || n != to-from {
		testutil.ChildFatalf(t, "range: %d rows, %v; want %d", n, it.Err(), to-from)
	}
	// The segment before them is past the budget: its file is hidden, so
	// reading it fails (the rows above did not come from files).
	if _, err := r.Get(cold); err == nil || !errors.Is(err, os.ErrNotExist) {
		testutil.ChildFatalf(t, "row %d (recycled slot, file hidden): %v; want a missing file", cold, err)
	}
	testutil.Report("ok")
}

// checkRows reads rows [from, to) through r and checks each one.
func checkRows(t *testing.T, r *reader.Reader, from, to uint64) {
	t.Helper()
	if err := readRows(r, from, to); err != nil {
		t.Fatal(err)
	}
}

// readRows reads rows [from, to) through r with ReadRow and checks each
// one against testutil.SeqRows.
func readRows(r *reader.Reader, from, to uint64) error {
	g := testutil.NewSeqRows()
	names := testutil.NewSymCache(r.SymbolName)
	buf := make(store.Row, g.Schema.RowSize)
	for seq := from; seq < to; seq++ {
		if err := r.ReadRow(seq, buf); err != nil {
			return fmt.Errorf("row %d: %w", seq, err)
		}
		if err := g.Check(buf, seq, names.Name); err != nil {
			return err
		}
	}
	return nil
}

const hotWriterChild = "hot-writer"

// TestHotColdRecovery kills a writer whose hot budget is full and removes
// its live directory, as a machine restart does to /dev/shm: the next
// writer recovers every durable row from the segment files alone.
func TestHotColdRecovery(t *testing.T) {
	db, live := testutil.DB(t)
	rows := uint64(9*2048 + 77)
	c := testutil.StartChild(t, "TestChildHotWriter", hotWriterChild, &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + db, "TICKDB_LIVE=" + live, "TICKDB_ROWS=" + strconv.FormatUint(rows, 10),
	}})
	c.Expect(t, "synced", time.Minute, nil)
	st := waitTiers(t, db, hotSegs)
	if st.Hot.Segments != hotSegs || st.Rows != rows {
		t.Fatalf("before the kill: %d rows, hot %+v; want %d rows, %d hot segments", st.Rows, st.Hot, rows, hotSegs)
	}
	c.Kill()
	if err := os.RemoveAll(live); err != nil {
		t.Fatal(err)
	}
	w, err := writer.Open(db, hotTable, hotOptions(live))
	if err != nil {
		t.Fatal(err)
	}
	if w.Len() != rows {
		t.Fatalf("recovered %d rows, want %d", w.Len(), rows)
	}
	xprocAppend(t, w, rows+3000, 500, 0) // and it goes on appending
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, hotTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkRows(t, r, 0, rows+3000)
	tablecheck.Verify(t, db, hotTable, rows+3000)
}

// TestChildHotWriter is the writer of TestHotColdRecovery: it syncs its
// rows, says so and waits to be killed.
func TestChildHotWriter(t *testing.T) {
	testutil.ChildRole(t, hotWriterChild)
	db, live := testutil.EnvString(t, "TICKDB_DB"), testutil.EnvString(t, "TICKDB_LIVE")
	w, err := writer.Open(db, hotTable, hotOptions(live))
	if err != nil {
		testutil.ChildFatalf(t, "open: %v", err)
	}
	xprocAppend(t, w, testutil.EnvUint(t, "TICKDB_ROWS"), 1000, 0)
	if err := w.Sync(); err != nil {
		testutil.ChildFatalf(t, "sync: %v", err)
	}
	testutil.Report("synced")
	for range testutil.Commands() {
	}
	time.Sleep(time.Minute)
}

// mapsOf reports whether this process maps a file whose path contains s
// (/proc/self/maps).
func mapsOf(t *testing.T, s string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), s)
}

// TestHotCopyLeavesReader: a reader reads a hot segment from its copy in
// the live directory; once the writer drops the copy (past the hot
// budget) the reader's next read maps the durable file over it in place:
// a row it holds reads the same bytes, and the copy's memory is no longer
// mapped (it would otherwise stay allocated as long as the reader lives).
func TestHotCopyLeavesReader(t *testing.T) {
	db, live := testutil.DB(t)
	rps := uint64(2048)
	w := hotWriter(t, db, live, 5*rps+10)
	waitTiers(t, db, hotSegs)
	hot := format.HotPath(live, 1)
	if _, err := os.Stat(hot); err != nil {
		t.Fatalf("segment 1 has no hot copy: %v", err)
	}
	r, err := reader.Open(db, hotTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seq := rps + 77
	row, err := r.Get(seq)
	if err != nil {
		t.Fatal(err)
	}
	held := slices.Clone(row)
	if !mapsOf(t, hot) {
		t.Fatalf("segment 1 is not read from its hot copy %s", hot)
	}
	// Six more segments: segment 1 leaves the budget.
	xprocAppend(t, w, 11*rps+10, 1000, 0)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(hot); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("segment 1 kept its hot copy past the budget")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Any load of the published count looks (Len, a Get past the count
	// loaded before, a query).
	if n := r.Len(); n != 11*rps+10 {
		t.Fatalf("Len %d, want %d", n, 11*rps+10)
	}
	if mapsOf(t, hot) {
		t.Fatalf("the reader still maps %s after the writer removed it", hot)
	}
	if !slices.Equal(row, held) {
		t.Fatal("a row read from the hot copy changed when the durable file replaced it")
	}
	for q := rps; q < 2*rps; q++ {
		got, err := r.Get(q)
		if err != nil {
			t.Fatal(err)
		}
		if !format.Valid(q, got) {
			t.Fatalf("row %d fails its check after the swap", q)
		}
	}
}

// sameAsDurable checks that every hot copy in live is its segment's
// durable file byte for byte (header included), which is what lets a
// reader map the durable file over it in place when the writer drops it,
// and returns the segments that have one (but those compressed since).
func sameAsDurable(t *testing.T, dir, live string) []uint64 {
	t.Helper()
	ents, err := os.ReadDir(live)
	if err != nil {
		t.Fatal(err)
	}
	var segs []uint64
	for _, e := range ents {
		n, tmp, ok := format.ParseHotName(e.Name())
		if !ok || tmp {
			continue
		}
		hot, err := os.ReadFile(format.HotPath(live, n))
		if errors.Is(err, os.ErrNotExist) {
			continue // dropped meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		dat, err := os.ReadFile(format.SegPath(dir, n))
		if errors.Is(err, os.ErrNotExist) {
			if _, zerr := os.Stat(format.ZSegPath(dir, n)); zerr == nil {
				continue // compressed meanwhile: its copy is dropped next
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(hot, dat) {
			t.Fatalf("segment %d: hot copy (%d bytes) differs from the durable file (%d bytes)", n, len(hot), len(dat))
		}
		segs = append(segs, n)
	}
	return segs
}

// TestHotCopyIsDurableFile: the flusher's hot copies are their durable
// files byte for byte; a writer that reopens the table after a clean
// close takes the last segment up in its middle, in a slot without its
// first rows: that segment gets no copy, the next one does.
func TestHotCopyIsDurableFile(t *testing.T) {
	db, live := testutil.DB(t)
	rps := uint64(2048)
	w := hotWriter(t, db, live, 5*rps+rps/2)
	waitTiers(t, db, hotSegs)
	if got := sameAsDurable(t, db+"/"+hotTable, live); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Fatalf("hot copies of %v, want 1..4", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	hotWriter(t, db, live, 7*rps+10)
	waitTiers(t, db, 1)
	if got := sameAsDurable(t, db+"/"+hotTable, live); !slices.Equal(got, []uint64{6}) {
		t.Fatalf("hot copies of %v after a reopen, want 6 only", got)
	}
}
