package reader_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Columns that grow (writer.AddColumn, docs/FORMAT.md §15): a model where
// every column of every row derives from its seq, and the columns added
// at given rows read as missing before them.

// growCol is a column added at row at (its first row that has it).
type growCol struct {
	col store.Column
	at  uint64
}

// growPlan adds four columns: mid-segment, at a segment boundary (rows
// 512 a segment, 32-byte rows at first), in the next, and two at once.
func growPlan() []growCol {
	return []growCol{
		{store.Column{Name: "x", Type: store.TypeF64}, 700},
		{store.Column{Name: "flag", Type: store.TypeBool}, 1024},
		{store.Column{Name: "venue", Type: store.TypeSym}, 1500},
		{store.Column{Name: "n", Type: store.TypeI64}, 1500},
	}
}

func growOptions(live string) *writer.Options {
	return &writer.Options{Schema: store.TickSchema(), SegmentSize: 16 << 10, LiveSlots: 2, HotBytes: -1, LiveDir: live}
}

// growWant is column name's value in row seq: a float64 (NaN missing), an
// int64, a bool, or a symbol name ("" missing).
func growWant(plan []growCol, name string, seq uint64) any {
	for _, g := range plan {
		if g.col.Name == name && seq < g.at {
			switch g.col.Type {
			case store.TypeF64:
				return math.NaN()
			case store.TypeBool:
				return false
			case store.TypeSym:
				return ""
			default:
				return int64(0)
			}
		}
	}
	switch name {
	case "ts":
		return int64(1e18) + int64(seq)*1000
	case "sym":
		return "S" + strconv.Itoa(int(seq%7))
	case "price":
		return float64(seq) / 4
	case "size":
		return int64(seq)
	case "x":
		return float64(seq) + 0.5
	case "flag":
		return seq%3 == 0
	case "venue":
		return "V" + strconv.Itoa(int(seq%5))
	case "n":
		return int64(seq) * 7
	}
	panic(name)
}

// growAppend appends rows [w.Len(), to), adding each planned column at its
// row.
func growAppend(t testing.TB, w *writer.Writer, plan []growCol, to uint64) {
	t.Helper()
	for w.Len() < to {
		seq := w.Len()
		for _, g := range plan {
			if g.at == seq && w.Schema().Index(g.col.Name) < 0 {
				if err := w.AddColumn(g.col); err != nil {
					t.Fatalf("add column %s at row %d: %v", g.col.Name, seq, err)
				}
			}
		}
		s := w.Schema()
		row := w.NewRow()
		for i, c := range s.Cols {
			col := s.ColAt(i)
			switch v := growWant(plan, c.Name, seq).(type) {
			case int64:
				if c.Type == store.TypeTs {
					row.SetTs(v)
				} else {
					row.SetI64(col, v)
				}
			case float64:
				row.SetF64(col, v)
			case bool:
				row.SetBool(col, v)
			case string:
				id, err := w.SymbolString(v)
				if err != nil {
					t.Fatal(err)
				}
				row.SetSym(col, id)
			}
		}
		if _, err := w.Append(row); err != nil {
			t.Fatalf("append row %d: %v", seq, err)
		}
		if seq%64 == 63 {
			w.Publish()
		}
	}
	w.Publish()
}

// growCheck checks every column row seq has in r's schema now against
// the model; it returns how many columns it checked.
func growCheck(r *reader.Reader, plan []growCol, seq uint64, row store.Row) error {
	s := r.Schema()
	for i, c := range s.Cols {
		col := s.ColAt(i)
		var got any
		switch c.Type {
		case store.TypeTs:
			got = row.Ts()
		case store.TypeF64:
			got = row.F64(col)
		case store.TypeI64:
			got = row.I64(col)
		case store.TypeBool:
			got = row.Bool(col)
		case store.TypeSym:
			name, err := r.SymbolName(row.Sym(col))
			if err != nil {
				return fmt.Errorf("row %d column %s: %w", seq, c.Name, err)
			}
			got = name
		}
		want := growWant(plan, c.Name, seq)
		if f, ok := want.(float64); ok && math.IsNaN(f) {
			if g, ok := got.(float64); ok && math.IsNaN(g) {
				continue
			}
		}
		if got != want {
			return fmt.Errorf("row %d (%d bytes) column %s: got %v, want %v", seq, len(row), c.Name, got, want)
		}
	}
	return nil
}

// growReadAll checks every row through Get, a ReadRow copy in the schema's
// layout, Range and RangeSym.
func growReadAll(t *testing.T, r *reader.Reader, plan []growCol, rows uint64) {
	t.Helper()
	for seq := range rows {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatalf("get %d: %v", seq, err)
		}
		// (After Get: the schema grows as the reader meets rows of new
		// layouts.)
		buf := make([]byte, r.Schema().RowSize)
		if err := growCheck(r, plan, seq, row); err != nil {
			t.Fatal(err)
		}
		if err := r.ReadRow(seq, buf); err != nil {
			t.Fatalf("read row %d: %v", seq, err)
		}
		if len(buf) != r.Schema().RowSize || !format.Valid(seq, buf) {
			t.Fatalf("row %d: ReadRow gave %d bytes (schema %d), valid %v", seq, len(buf), r.Schema().RowSize, format.Valid(seq, buf))
		}
		if err := growCheck(r, plan, seq, buf); err != nil {
			t.Fatalf("ReadRow: %v", err)
		}
	}
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for it.Next() {
		if it.Seq() != n {
			t.Fatalf("range: row %d, want %d", it.Seq(), n)
		}
		if err := growCheck(r, plan, it.Seq(), it.Row()); err != nil {
			t.Fatalf("range: %v", err)
		}
		n++
	}
	if it.Err() != nil || n != rows {
		t.Fatalf("range: %d rows, err %v; want %d", n, it.Err(), rows)
	}
	id, ok := r.SymbolID([]byte("S3"))
	if !ok {
		t.Fatal("symbol S3 missing")
	}
	if err := r.RangeSym(math.MinInt64, math.MaxInt64, id, &it); err != nil {
		t.Fatal(err)
	}
	n = 0
	for it.Next() {
		if it.Seq()%7 != 3 {
			t.Fatalf("range sym S3: row %d", it.Seq())
		}
		if err := growCheck(r, plan, it.Seq(), it.Row()); err != nil {
			t.Fatalf("range sym: %v", err)
		}
		n++
	}
	if want := (rows + 3) / 7; it.Err() != nil || n != want {
		t.Fatalf("range sym: %d rows, err %v; want %d", n, it.Err(), want)
	}
}

// TestAddColumn: columns added mid-segment, at a segment boundary and two
// at once read back right through every read path, for a reader opened
// before the first was added (it learns them from the rows) and one
// opened after; the table verifies, survives a reopen, and reads the same
// once compacted (compressed segments of four layouts).
func TestAddColumn(t *testing.T) {
	plan := growPlan()
	db, live := testutil.DB(t)
	w := growWriter(t, db, live, plan, 300)
	early, err := reader.Open(db, "grow", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	growReadAll(t, early, plan, 300)
	if got := len(early.Schema().Cols); got != 4 {
		t.Fatalf("schema has %d columns before any was added", got)
	}
	const rows = 2600
	growAppend(t, w, plan, rows)
	if err := w.AddColumn(store.Column{Name: "x", Type: store.TypeI64}); err == nil {
		t.Fatal("adding a column twice: no error")
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	growReadAll(t, early, plan, rows)
	if got := len(early.Schema().Cols); got != 8 {
		t.Fatalf("the early reader knows %d columns after reading every row, want 8", got)
	}
	late, err := reader.Open(db, "grow", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	growReadAll(t, late, plan, rows)
	if _, err := reader.Verify(db, "grow", nil); err != nil {
		t.Fatalf("verify with the writer open: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, db, "grow", rows)

	// Reopen (the schema from the file: no Schema option needed) and go on.
	w, err = writer.Open(db, "grow", &writer.Options{LiveDir: live, LiveSlots: 2, HotBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(w.Schema().Cols); got != 8 {
		t.Fatalf("reopened writer has %d columns", got)
	}
	growAppend(t, w, plan, rows+100)
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, db, "grow", rows+100)
	after, err := reader.Open(db, "grow", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	st, err := after.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Compressed.Segments == 0 {
		t.Fatalf("nothing compacted: %+v", st)
	}
	growReadAll(t, after, plan, rows+100)
}

// TestAddColumnUpgradeAtOpen: a writer that opens a table whose schema
// file was written but whose last segment was not rewritten (AddColumn
// cut short between the two) rewrites it and goes on.
func TestAddColumnUpgradeAtOpen(t *testing.T) {
	plan := growPlan()[:1]
	db, live := testutil.DB(t)
	w := growWriter(t, db, live, plan, 650)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// As AddColumn leaves it before the reopen: schema file and feature
	// bit, last segment still in the old layout.
	ctl, err := index.OpenCtl(filepath.Join(db, "grow", format.CtlName), vfs.OS)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := ctl.Schema.AddColumn(plan[0].col)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteSchema(filepath.Join(db, "grow"), ns, ctl.TableID, vfs.OS); err != nil {
		t.Fatal(err)
	}
	ctl.AddFeatures(index.FeatColumns)
	if err := errors.Join(ctl.Sync(), ctl.Close()); err != nil {
		t.Fatal(err)
	}
	w, err = writer.Open(db, "grow", &writer.Options{LiveDir: live, LiveSlots: 2, HotBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	growAppend(t, w, plan, 1200)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, db, "grow", 1200)
	r, err := reader.Open(db, "grow", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	growReadAll(t, r, plan, 1200)
}

const xprocGrowChild = "xproc-grow"

// TestXprocAddColumn: a reader process that opened the table before any
// column was added tails it while the writer adds four, and checks every
// column of every row against the model, learning each new column from
// the rows.
func TestXprocAddColumn(t *testing.T) {
	plan := growPlan()
	const rows = 4000
	db, live := testutil.DB(t)
	w := growWriter(t, db, live, plan, 100)
	c := testutil.StartChild(t, "TestChildXprocGrow", xprocGrowChild, &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + db, "TICKDB_ROWS=" + strconv.Itoa(rows)}})
	c.Expect(t, "open", time.Minute, nil)
	for w.Len() < rows {
		growAppend(t, w, plan, min(rows, w.Len()+50))
		time.Sleep(200 * time.Microsecond)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	f := c.Expect(t, "done", 2*time.Minute, nil)
	if len(f) != 2 || f[0] != strconv.Itoa(rows) || f[1] != "8" {
		t.Fatalf("child: %q, want done %d 8", f, rows)
	}
	if err := c.Wait(time.Minute); err != nil {
		t.Fatalf("child exit: %v\n%s", err, c.Log())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, db, "grow", rows)
}

// TestChildXprocGrow is the reader process of TestXprocAddColumn.
func TestChildXprocGrow(t *testing.T) {
	testutil.ChildRole(t, xprocGrowChild)
	db := testutil.EnvString(t, "TICKDB_DB")
	rows := testutil.EnvUint(t, "TICKDB_ROWS")
	r, err := reader.Open(db, "grow", nil)
	if err != nil {
		testutil.ChildFatalf(t, "open: %v", err)
	}
	defer r.Close()
	testutil.Report("open")
	tl := r.Tail(0, nil)
	plan := growPlan()
	deadline := time.Now().Add(2 * time.Minute)
	for seq := uint64(0); seq < rows; seq++ {
		var row store.Row
		var got uint64
		for {
			var ok bool
			row, got, ok, err = tl.Poll()
			if err != nil {
				testutil.ChildFatalf(t, "row %d: %v", seq, err)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				testutil.ChildFatalf(t, "row %d never came", seq)
			}
			time.Sleep(100 * time.Microsecond)
		}
		if got != seq {
			testutil.ChildFatalf(t, "tail gave row %d, want %d", got, seq)
		}
		if err := growCheck(r, plan, seq, row); err != nil {
			testutil.ChildFatalf(t, "%v", err)
		}
	}
	testutil.Report("done %d %d", rows, len(r.Schema().Cols))
}

// TestIterReadRow: the iterator's checked copy gives each row in the
// layout of the buffer's size (the schema's now, or the base's), with no
// allocation in a scan; RangeSeq on a closed reader is ErrClosed.
func TestIterReadRow(t *testing.T) {
	plan := growPlan()
	db, live := testutil.DB(t)
	w := growWriter(t, db, live, plan, 2000)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, "grow", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	full := make([]byte, r.Schema().RowSize)
	base := make([]byte, r.Schema().Prefix(r.Schema().Base()).RowSize)
	var it reader.Iter
	if err := r.RangeSeq(0, 2000, &it); err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		if err := it.ReadRow(full); err != nil {
			t.Fatal(err)
		}
		if err := growCheck(r, plan, it.Seq(), full); err != nil {
			t.Fatal(err)
		}
		if err := it.ReadRow(base); err != nil {
			t.Fatal(err)
		}
		if !format.Valid(it.Seq(), base) || store.Row(base).Ts() != store.Row(full).Ts() || store.Row(base).F64(r.Schema().ColAt(2)) != store.Row(full).F64(r.Schema().ColAt(2)) {
			t.Fatalf("row %d in the base layout differs", it.Seq())
		}
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	// NextInto copies as ReadRow does, into either layout.
	for _, dst := range [][]byte{full, base} {
		if err := r.RangeSeq(0, 2000, &it); err != nil {
			t.Fatal(err)
		}
		n := 0
		for ; it.NextInto(dst); n++ {
			got := append([]byte(nil), dst...)
			if err := it.ReadRow(dst); err != nil || !bytes.Equal(got, dst) {
				t.Fatalf("row %d: NextInto's %d-byte copy %x, ReadRow's %x (%v)", it.Seq(), len(dst), got, dst, err)
			}
		}
		if it.Err() != nil || n != 2000 {
			t.Fatalf("NextInto into %d bytes: %d rows, %v", len(dst), n, it.Err())
		}
	}
	scan := func() {
		if err := r.RangeSeq(0, 2000, &it); err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			if err := it.ReadRow(full); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The background compaction done first, the newest sealed segment
	// included (the live one has durable, checkpointed rows after Sync):
	// a segment compressed during the measured scans is mapped again (a
	// view's one-off cost).
	for deadline := time.Now().Add(20 * time.Second); w.Stats().RawSegs > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("background compaction left %d raw segments", w.Stats().RawSegs)
		}
	}
	scan()
	// The count is the process's: a background pass of the writer's
	// (the postings of the last compaction dropped a pass later)
	// allocates too, once. An allocation of the scan's shows in every
	// try.
	n := testing.AllocsPerRun(5, scan)
	for try := 0; try < 2 && n != 0; try++ {
		n = min(n, testing.AllocsPerRun(5, scan))
	}
	if n != 0 {
		t.Errorf("a scan with ReadRow allocates %v times", n)
	}
	r.Close()
	if err := r.RangeSeq(0, 1, &it); !errors.Is(err, reader.ErrClosed) {
		t.Fatalf("RangeSeq on a closed reader: %v", err)
	}
}

// growWriter opens the grow table in db (live slots in live), closed with
// the test, and appends plan's first rows to it.
func growWriter(t *testing.T, db, live string, plan []growCol, rows uint64) *writer.Writer {
	t.Helper()
	w, err := writer.Open(db, "grow", growOptions(live))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	growAppend(t, w, plan, rows)
	return w
}
