package writer_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// retainTable opens table "t" with 128-row segments (4 KiB of rows) and
// appends n rows with ts = 1000·i and symbol AAA, publishing and syncing.
func retainTable(t *testing.T, db, live string, n int, o writer.Options) *writer.Writer {
	t.Helper()
	o.Schema, o.SegmentSize, o.LiveDir = store.TickSchema(), 4096, live
	if o.CompactAge == 0 {
		// Raw segments, unless the test asks: retention's byte counts
		// are of the raw files.
		o.CompactAge = -1
	}
	w, err := writer.Open(db, "t", &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	appendRetainRows(t, w, 0, n)
	return w
}

// appendRetainRows appends rows [from, to) of the retain tables.
func appendRetainRows(t *testing.T, w *writer.Writer, from, to int) {
	t.Helper()
	s := w.Schema()
	symc, _ := s.Col("sym")
	size, _ := s.Col("size")
	id, err := w.SymbolString("AAA")
	if err != nil {
		t.Fatal(err)
	}
	row := w.NewRow()
	for i := from; i < to; i++ {
		row.SetTs(int64(i) * 1000)
		row.SetSym(symc, id)
		row.SetI64(size, int64(i))
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		w.Publish()
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
}

// segFiles is the segment numbers up to last present in the table
// directory (the preparer creates the files of the next segments ahead).
func segFiles(t *testing.T, dir string, last uint64) []uint64 {
	t.Helper()
	var ns []uint64
	for n := uint64(0); n <= last; n++ {
		if _, err := os.Stat(format.SegPath(dir, n)); err == nil {
			ns = append(ns, n)
		}
	}
	return ns
}

// checkFrom checks that r's range and symbol queries and SeekTime start
// at row first and return every row up to n, and that rows below first
// are ErrTruncated naming first.
func checkFrom(t *testing.T, r *reader.Reader, first, n uint64) {
	t.Helper()
	if r.FirstSeq() != first || r.Len() != n {
		t.Fatalf("first %d, count %d; want %d, %d", r.FirstSeq(), r.Len(), first, n)
	}
	size, _ := r.Schema().Col("size")
	var it reader.Iter
	for _, sym := range []bool{false, true} {
		var err error
		if sym {
			err = r.RangeSym(math.MinInt64, math.MaxInt64, 0, &it)
		} else {
			err = r.Range(math.MinInt64, math.MaxInt64, &it)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := first
		for it.Next() {
			if it.Seq() != want || it.Row().I64(size) != int64(want) {
				t.Fatalf("sym %v: row %d (size %d), want row %d", sym, it.Seq(), it.Row().I64(size), want)
			}
			want++
		}
		if it.Err() != nil || want != n {
			t.Fatalf("sym %v: ended at %d (%v), want %d", sym, want, it.Err(), n)
		}
	}
	if s, err := r.SeekTime(0); err != nil || s != first {
		t.Fatalf("SeekTime(0) = %d, %v; want %d", s, err, first)
	}
	if first > 0 {
		_, err := r.Get(first - 1)
		var te *reader.TruncatedError
		if !errors.Is(err, reader.ErrTruncated) || !errors.As(err, &te) || te.First != first || te.Seq != first-1 {
			t.Fatalf("Get(%d) below the first row: %v", first-1, err)
		}
	}
}

func TestRetainBytesThenAge(t *testing.T) {
	db, live := testutil.DB(t)
	const n = 10*128 + 10
	w := retainTable(t, db, live, n, writer.Options{})
	dir := filepath.Join(db, "t")
	segSize := format.SegFileSize(32, 128)

	// Keep four segment files: 7, 8, 9 and 10 (the one being written).
	res, err := w.Retain(0, 4*segSize)
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 7 || res.Rows != 7*128 || res.Bytes != 7*segSize || res.FirstSeq != 7*128 || w.FirstSeq() != 7*128 {
		t.Fatalf("retain to 4 segments: %+v", res)
	}
	if got := segFiles(t, dir, 10); len(got) != 4 || got[0] != 7 {
		t.Fatalf("segment files %v, want 7..10", got)
	}
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkFrom(t, r, 7*128, n)

	// Age: keep rows no older than 1,100 µs... of ts before the last
	// row's: segment 7 (rows 896-1023) goes, segment 8 (1024-1151) has
	// rows inside the age and stays.
	lastTs := int64(n-1) * 1000
	res, err = w.Retain(time.Duration(lastTs-1_100_000), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 1 || res.FirstSeq != 8*128 {
		t.Fatalf("retain by age: %+v", res)
	}
	checkFrom(t, r, 8*128, n)
	// Nothing more to do: no change, no error.
	if res, err := w.Retain(time.Duration(lastTs-1_100_000), 4*segSize); err != nil || res.Segments != 0 || res.Rows != 0 {
		t.Fatalf("repeat: %+v %v", res, err)
	}
	// A limit below one segment keeps the segment being written.
	if res, err := w.Retain(0, 1); err != nil || res.FirstSeq != 10*128 {
		t.Fatalf("retain to 1 byte: %+v %v", res, err)
	}
	checkFrom(t, r, 10*128, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// The first row is durable: a reopened writer keeps it and appends
	// after the rows, and verify finds the table whole.
	w2, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if w2.FirstSeq() != 10*128 || w2.Len() != n {
		t.Fatalf("reopened: first %d, rows %d", w2.FirstSeq(), w2.Len())
	}
	appendRetainRows(t, w2, n, n+300)
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	r2, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	checkFrom(t, r2, 10*128, n+300)
	if rep, err := reader.Verify(db, "t", nil); err != nil {
		t.Fatalf("verify after retention: %v (%+v)", err, rep)
	}
}

// A crash between publishing the first row and unlinking the files below
// it leaves those files; the next Open removes them.
func TestRetainOpenRemovesLeftovers(t *testing.T) {
	db, live := testutil.DB(t)
	w := retainTable(t, db, live, 5*128+3, writer.Options{})
	dir := filepath.Join(db, "t")
	if _, err := w.Retain(0, 2*format.SegFileSize(32, 128)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(format.SegPath(dir, 4))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []uint64{0, 2} { // as a crash would leave them
		if err := os.WriteFile(format.SegPath(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w2, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if got := segFiles(t, dir, 5); len(got) != 2 || got[0] != 4 {
		t.Fatalf("segment files after reopen %v, want 4, 5", got)
	}
}

// Options.RetainBytes applies retention at every roll while appending.
func TestRetainAutomatic(t *testing.T) {
	db, live := testutil.DB(t)
	segSize := format.SegFileSize(32, 128)
	const n = 40*128 + 5
	w := retainTable(t, db, live, n, writer.Options{RetainBytes: 3 * segSize})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := segFiles(t, filepath.Join(db, "t"), 40)
	// At a roll only sealed, durable segments go: the files kept are the
	// limit's 3 plus the ones the flusher had not yet sealed then.
	if len(got) < 3 || len(got) > 3+4 || got[len(got)-1] != 40 {
		t.Fatalf("segment files %v, want the last 3 to 7 up to 40", got)
	}
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.FirstSeq() != got[0]*128 {
		t.Fatalf("first row %d, first file %d", r.FirstSeq(), got[0])
	}
	checkFrom(t, r, got[0]*128, n)
}

// A reader in another process keeps working through retention: rows it
// had mapped still read as they were, queries start at the new first row,
// rows below it are ErrTruncated, and its tail goes on with new rows.
func TestRetainReaderInOtherProcess(t *testing.T) {
	db, live := testutil.DB(t)
	const n = 6*128 + 10 // segment 6 is being written
	w := retainTable(t, db, live, n, writer.Options{})
	c := testutil.StartChild(t, "TestChildRetainReader", "retain-reader",
		&testutil.ChildOptions{Env: []string{"TICKDB_DB=" + db, "TICKDB_LIVE=" + live}})
	c.Expect(t, "READY", time.Minute, nil)
	res, err := w.Retain(0, 2*format.SegFileSize(32, 128))
	if err != nil || res.FirstSeq != 5*128 {
		t.Fatalf("retain: %+v %v", res, err)
	}
	appendRetainRows(t, w, n, n+50)
	if err := c.Send("CHECK " + strconv.Itoa(n+50)); err != nil {
		t.Fatal(err)
	}
	c.Expect(t, "OK", time.Minute, nil)
	if err := c.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestChildRetainReader is TestRetainReaderInOtherProcess's reader.
func TestChildRetainReader(t *testing.T) {
	testutil.ChildRole(t, "retain-reader")
	r, err := reader.Open(os.Getenv("TICKDB_DB"), "t", &reader.Options{LiveDir: os.Getenv("TICKDB_LIVE")})
	if err != nil {
		testutil.ChildFatalf(t, "%v", err)
	}
	defer r.Close()
	size, _ := r.Schema().Col("size")
	row0, err := r.Get(0) // maps segment 0, which retention will delete
	if err != nil || row0.I64(size) != 0 {
		testutil.ChildFatalf(t, "Get(0) before retention: %v", err)
	}
	tail := r.Tail(r.Len(), &reader.Backoff{})
	testutil.Report("READY")
	cmd := <-testutil.Commands()
	want, _ := strconv.ParseUint(cmd[len("CHECK "):], 10, 64)
	// The mapped row is still the row it was.
	if row0.I64(size) != 0 || row0.Ts() != 0 {
		testutil.ChildFatalf(t, "row 0 changed under its mapping: size %d ts %d", row0.I64(size), row0.Ts())
	}
	// Row 200 (segment 1) was never mapped here: it is gone.
	if _, err := r.Get(200); !errors.Is(err, reader.ErrTruncated) {
		testutil.ChildFatalf(t, "Get(200) after retention: %v", err)
	}
	if r.FirstSeq() != 5*128 {
		testutil.ChildFatalf(t, "first row %d, want %d", r.FirstSeq(), 5*128)
	}
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil || !it.Next() || it.Seq() != 5*128 {
		testutil.ChildFatalf(t, "range after retention starts at %d (%v)", it.Seq(), err)
	}
	// The tail sees every row appended after retention, in order.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for s := uint64(6*128 + 10); s < want; s++ {
		row, seq, err := tail.Wait(ctx)
		if err != nil || seq != s || row.I64(size) != int64(s) {
			testutil.ChildFatalf(t, "tail: row %d (%v), want %d", seq, err, s)
		}
	}
	testutil.Report("OK")
	for range testutil.Commands() {
	}
}

// Options.RetainBelow holds retention back: automatic retention and
// Retain delete no segment at or past the gate's number, whatever the
// limits, and go on once the gate moves.
func TestRetainBelowGate(t *testing.T) {
	db, live := testutil.DB(t)
	segSize := format.SegFileSize(32, 128)
	var gate atomic.Uint64
	gate.Store(5)
	o := writer.Options{RetainBytes: 3 * segSize, RetainBelow: func(table string) uint64 {
		if table != "t" {
			panic("gate asked for table " + table)
		}
		return gate.Load()
	}}
	w := retainTable(t, db, live, 30*128+5, o)
	if _, err := w.Retain(time.Nanosecond, 3*segSize); err != nil {
		t.Fatal(err)
	}
	if got := w.FirstSeq(); got != 5*128 {
		t.Fatalf("first row %d with the gate at segment 5; want %d", got, 5*128)
	}
	if _, err := os.Stat(format.SegPath(filepath.Join(db, "t"), 5)); err != nil {
		t.Fatalf("segment 5, at the gate, deleted: %v", err)
	}
	gate.Store(20)
	if _, err := w.Retain(0, 3*segSize); err != nil {
		t.Fatal(err)
	}
	if got := w.FirstSeq(); got != 20*128 {
		t.Fatalf("first row %d with the gate at segment 20; want %d", got, 20*128)
	}
	got := segFiles(t, filepath.Join(db, "t"), 30)
	if got[0] != 20 {
		t.Fatalf("segment files %v: want from 20", got)
	}
}
