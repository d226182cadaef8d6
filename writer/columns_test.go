package writer_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Columns that grow, under SIGKILL: a writer process is killed after
// each step of AddColumn in turn (and once while appending), restarted,
// and goes on; every row reads back as the model says, every acknowledged
// (synced) row survives, and the table verifies.

const growWriter = "grow-writer"

// growAdds: columns added at rows (512 rows a segment of 32-byte rows):
// mid-segment, at a boundary, two at once.
var growAdds = []struct {
	col store.Column
	at  uint64
}{
	{store.Column{Name: "x", Type: store.TypeF64}, 300},
	{store.Column{Name: "flag", Type: store.TypeBool}, 512},
	{store.Column{Name: "venue", Type: store.TypeSym}, 900},
	{store.Column{Name: "n", Type: store.TypeI64}, 900},
}

// growValue sets column i of row seq (schema s) to the model's value.
func growValue(w *writer.Writer, s *store.Schema, i int, row store.Row, seq uint64) error {
	c := s.ColAt(i)
	switch s.Cols[i].Name {
	case "ts":
		row.SetTs(int64(1e18) + int64(seq)*1000)
	case "sym":
		id, err := w.SymbolString("S" + strconv.Itoa(int(seq%7)))
		if err != nil {
			return err
		}
		row.SetSym(c, id)
	case "price":
		row.SetF64(c, float64(seq)/4)
	case "size":
		row.SetI64(c, int64(seq))
	case "x":
		row.SetF64(c, float64(seq)+0.5)
	case "flag":
		row.SetBool(c, seq%3 == 0)
	case "venue":
		id, err := w.SymbolString("V" + strconv.Itoa(int(seq%5)))
		if err != nil {
			return err
		}
		row.SetSym(c, id)
	case "n":
		row.SetI64(c, int64(seq)*7)
	}
	return nil
}

// growCheckRow checks row seq against the model: the columns added after
// it read as missing.
func growCheckRow(r *reader.Reader, seq uint64, row store.Row) string {
	s := r.Schema()
	for i, c := range s.Cols {
		col := s.ColAt(i)
		added := uint64(0)
		for _, a := range growAdds {
			if a.col.Name == c.Name {
				added = a.at
			}
		}
		var ok bool
		switch c.Name {
		case "ts":
			ok = row.Ts() == int64(1e18)+int64(seq)*1000
		case "sym":
			name, _ := r.SymbolName(row.Sym(col))
			ok = name == "S"+strconv.Itoa(int(seq%7))
		case "price":
			ok = row.F64(col) == float64(seq)/4
		case "size":
			ok = row.I64(col) == int64(seq)
		case "x":
			ok = (seq < added && math.IsNaN(row.F64(col))) || row.F64(col) == float64(seq)+0.5
		case "flag":
			ok = row.Bool(col) == (seq >= added && seq%3 == 0)
		case "venue":
			name, _ := r.SymbolName(row.Sym(col))
			ok = (seq < added && name == "") || (seq >= added && name == "V"+strconv.Itoa(int(seq%5)))
		case "n":
			ok = (seq < added && row.I64(col) == 0) || (seq >= added && row.I64(col) == int64(seq)*7)
		}
		if !ok {
			return "row " + strconv.FormatUint(seq, 10) + " column " + c.Name
		}
	}
	return ""
}

func TestAddColumnCrash(t *testing.T) {
	const rows = 1400
	db, live := testutil.DB(t)
	start := func(kill int) *testutil.Child {
		return testutil.StartChild(t, "TestChildGrowWriter", growWriter, &testutil.ChildOptions{Env: []string{
			"TICKDB_DB=" + db, "TICKDB_LIVE=" + live, "TICKDB_ROWS=" + strconv.Itoa(rows), "TICKDB_KILLSTEP=" + strconv.Itoa(kill)}})
	}
	var acked uint64
	run := func(kill int, killAt uint64) {
		t.Helper()
		c := start(kill)
		for {
			line, err := c.Next(time.Minute)
			if err != nil {
				if kill == 0 && killAt == 0 {
					t.Fatalf("writer (kill step %d): %v\n%s", kill, err, c.Log())
				}
				break // killed itself at the step
			}
			switch f := splitFields(line); f[0] {
			case "open":
				if n, _ := strconv.ParseUint(f[1], 10, 64); n < acked {
					t.Fatalf("writer reopened with %d rows, %d were acknowledged", n, acked)
				}
			case "acked":
				acked, _ = strconv.ParseUint(f[1], 10, 64)
				if killAt > 0 && acked >= killAt {
					c.Kill()
				}
			case "error":
				t.Fatalf("writer: %s", line)
			}
			if f := splitFields(line); f[0] == "done" {
				break
			}
		}
		err := c.Wait(time.Minute)
		if killed := err != nil && strings.Contains(err.Error(), "killed"); killed != (kill != 0 || killAt != 0) {
			t.Fatalf("writer (kill step %d, at row %d): exit %v\n%s", kill, killAt, err, c.Log())
		}
		t.Logf("writer (kill step %d, at row %d): %d rows acknowledged, exit %v", kill, killAt, acked, err)
	}
	// Each AddColumn step in turn: steps 1-3 inside AddColumn, 4 and 5
	// inside the next open's rewrite of the last segment, 6 after it.
	for step := 1; step <= 6; step++ {
		run(step, 0)
		if step == 3 {
			os.RemoveAll(live) // and a machine restart among them
		}
	}
	run(0, 1100) // killed while appending, after the adds
	run(0, 0)
	if acked != rows {
		t.Fatalf("%d rows acknowledged at the end, want %d", acked, rows)
	}
	tablecheck.Verify(t, db, "ticks", rows)
	r, err := reader.Open(db, "ticks", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for seq := range uint64(rows) {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		if bad := growCheckRow(r, seq, row); bad != "" {
			t.Fatal(bad)
		}
	}
	if got := len(r.Schema().Cols); got != 8 {
		t.Fatalf("%d columns, want 8", got)
	}
}

func splitFields(line string) []string { return append(strings.Fields(line), "", "") }

// TestChildGrowWriter is TestAddColumnCrash's writer process.
func TestChildGrowWriter(t *testing.T) {
	testutil.ChildRole(t, growWriter)
	db, live := testutil.EnvString(t, "TICKDB_DB"), testutil.EnvString(t, "TICKDB_LIVE")
	rows := testutil.EnvUint(t, "TICKDB_ROWS")
	kill := int(testutil.EnvUint(t, "TICKDB_KILLSTEP"))
	o := &writer.Options{SegmentSize: 16 << 10, LiveSlots: 2, HotBytes: -1, LiveDir: live}
	if _, err := os.Stat(filepath.Join(db, "ticks")); err != nil {
		o.Schema = store.TickSchema()
	}
	writer.SetColumnHook(o, func(step int) {
		if step == kill {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	})
	w, err := writer.Open(db, "ticks", o)
	if err != nil {
		testutil.ChildFatalf(t, "open: %v", err)
	}
	testutil.Report("open %d", w.Len())
	for w.Len() < rows {
		seq := w.Len()
		for _, a := range growAdds {
			if a.at == seq && w.Schema().Index(a.col.Name) < 0 {
				if err := w.AddColumn(a.col); err != nil {
					testutil.ChildFatalf(t, "add %s: %v", a.col.Name, err)
				}
			}
		}
		s := w.Schema()
		row := w.NewRow()
		for i := range s.Cols {
			if err := growValue(w, s, i, row, seq); err != nil {
				testutil.ChildFatalf(t, "%v", err)
			}
		}
		if _, err := w.Append(row); err != nil {
			testutil.ChildFatalf(t, "append %d: %v", seq, err)
		}
		if seq%50 == 49 || seq+1 == rows {
			if err := w.Sync(); err != nil {
				testutil.ChildFatalf(t, "sync: %v", err)
			}
			testutil.Report("acked %d", w.Len())
		}
	}
	if err := w.Close(); err != nil {
		testutil.ChildFatalf(t, "close: %v", err)
	}
	testutil.Report("done %d", rows)
}

// TestAddColumnsCounters: AddColumns adds several columns in one reopen,
// the writer's counters go on from where they were, and a bad column (a
// name in use, a bad type) is refused with nothing changed.
func TestAddColumnsCounters(t *testing.T) {
	db, live := testutil.DB(t)
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: store.TickSchema(), LiveDir: live, SegmentSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	row := w.NewRow()
	id, err := w.SymbolString("S")
	if err != nil {
		t.Fatal(err)
	}
	row.SetSym(w.Schema().ColAt(1), id)
	for i := range 1000 {
		row.SetTs(int64(i))
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := w.Stats()
	if before.Flushes == 0 {
		t.Fatal("no flushes counted")
	}
	for _, bad := range [][]store.Column{
		{{Name: "a", Type: store.TypeF64}, {Name: "price", Type: store.TypeF64}},
		{{Name: "a", Type: store.TypeTs}},
		{{Name: "", Type: store.TypeF64}},
	} {
		if err := w.AddColumns(bad...); err == nil {
			t.Fatalf("AddColumns(%v): no error", bad)
		}
	}
	if got := len(w.Schema().Cols); got != 4 {
		t.Fatalf("a refused AddColumns changed the schema: %s", w.Schema())
	}
	if err := w.AddColumns(store.Column{Name: "a", Type: store.TypeF64}, store.Column{Name: "b", Type: store.TypeBool}); err != nil {
		t.Fatal(err)
	}
	if got := w.Schema().String(); got != "ts:ts,sym:sym,price:f64,size:i64,a:f64,b:bool" {
		t.Fatalf("schema %s", got)
	}
	after := w.Stats()
	if after.Flushes < before.Flushes || after.FlushBytes < before.FlushBytes || after.Appended != 1000 || after.Durable != 1000 {
		t.Fatalf("counters went back: before %+v, after %+v", before, after)
	}
	grown := w.NewRow()
	grown.SetTs(2000)
	grown.SetSym(w.Schema().ColAt(1), id)
	if _, err := w.Append(grown); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(row); !errors.Is(err, writer.ErrRowSize) {
		t.Fatalf("a row of the old size: %v, want ErrRowSize", err)
	}
}

// BenchmarkAddColumn: what AddColumn costs a writer whose current segment
// (64 MiB, the default) is half full (1 M rows of 32 bytes): the close,
// the rewrite of those rows in the new layout and the reopen. The report
// is per column added.
func BenchmarkAddColumn(b *testing.B) {
	b.ReportAllocs()
	db, live := testutil.DB(b)
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: store.TickSchema(), LiveDir: live})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	id, _ := w.SymbolString("S")
	fill := func(n int) {
		s := w.Schema()
		row := w.NewRow()
		row.SetSym(s.ColAt(1), id)
		for range n {
			row.SetTs(int64(w.Len()))
			if _, err := w.Append(row); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	fill(1 << 20)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := w.AddColumn(store.Column{Name: "c" + strconv.Itoa(i), Type: store.TypeBool}); err != nil {
			b.Fatal(err)
		}
		if i == 50 {
			b.Fatal("too many iterations for a table's 60 columns: use -benchtime=Nx")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/column")
}
