package writer_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Tiny segments: 4096 bytes of 32-byte rows = 128 rows per segment.
const (
	tinySeg  = 4096
	tinyRows = 128
)

// wtTable is a tick table under test: its directories and schema columns.
type wtTable struct {
	db, live, name string
	s              *store.Schema
	sym, px, sz    store.Col
	group          *writer.Group // nil: writers of their own goroutines
}

func newWtTable(t *testing.T) *wtTable {
	t.Helper()
	db, live := testutil.DB(t)
	s := store.TickSchema()
	tb := &wtTable{db: db, live: live, name: "ticks", s: s}
	if groupEnv {
		tb.group = testGroup(t, nil)
	}
	tb.sym, _ = s.Col("sym")
	tb.px, _ = s.Col("price")
	tb.sz, _ = s.Col("size")
	return tb
}

func (tb *wtTable) dir() string { return filepath.Join(tb.db, tb.name) }

// opts returns options with the table's schema and live dir; mod edits
// them.
func (tb *wtTable) opts(mod func(*writer.Options)) *writer.Options {
	o := &writer.Options{Schema: tb.s, LiveDir: tb.live, SegmentSize: tinySeg, Group: tb.group}
	if mod != nil {
		mod(o)
	}
	return o
}

// groupEnv, set, runs the tests' writers in a writer.Group (one per
// test): TICKDB_WRITER_GROUP=1 go test ./writer.
var groupEnv = os.Getenv("TICKDB_WRITER_GROUP") != ""

// testGroup starts a writer.Group that t's cleanup closes (after the
// writers' cleanups, which run first), failing t if a writer is still
// open then.
func testGroup(t testing.TB, o *writer.GroupOptions) *writer.Group {
	t.Helper()
	g, err := writer.NewGroup(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("group close: %v", err)
		}
	})
	return g
}

// open opens the table's writer; the test closes it (a Close left to the
// cleanup is a test bug, but the cleanup keeps goleak quiet about it).
func (tb *wtTable) open(t *testing.T, mod func(*writer.Options)) *writer.Writer {
	t.Helper()
	w, err := writer.Open(tb.db, tb.name, tb.opts(mod))
	if err != nil {
		t.Fatalf("writer.Open: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func (tb *wtTable) reader(t *testing.T) *reader.Reader {
	t.Helper()
	r, err := reader.Open(tb.db, tb.name, nil)
	if err != nil {
		t.Fatalf("reader.Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// row fills a row for seq: ts = 1000 + seq/2 (ties), price and size from
// seq, the given symbol.
func (tb *wtTable) row(seq uint64, sym uint32) store.Row {
	r := tb.s.NewRow()
	tb.fill(r, seq, sym)
	return r
}

func (tb *wtTable) fill(r store.Row, seq uint64, sym uint32) {
	r.SetTs(wtTs(seq))
	r.SetSym(tb.sym, sym)
	r.SetF64(tb.px, float64(seq)+0.5)
	r.SetI64(tb.sz, int64(seq*3))
}

func wtTs(seq uint64) int64 { return 1000 + int64(seq/2) }

func withTs(r store.Row, ts int64) store.Row { r.SetTs(ts); return r }

func polName(p writer.FlushPolicy) string {
	return map[writer.FlushPolicy]string{writer.FlushInterval: "interval", writer.FlushOnSync: "sync", writer.FlushNone: "none"}[p]
}

// checkRow asserts that got is row seq as fill wrote it, with symbol sym.
func (tb *wtTable) checkRow(t *testing.T, got store.Row, seq uint64, sym uint32) {
	t.Helper()
	if len(got) != tb.s.RowSize || !format.Valid(seq, got) {
		t.Fatalf("row %d: %d bytes, valid %v", seq, len(got), len(got) == tb.s.RowSize && format.Valid(seq, got))
	}
	if got.Ts() != wtTs(seq) || got.Sym(tb.sym) != sym || got.F64(tb.px) != float64(seq)+0.5 || got.I64(tb.sz) != int64(seq*3) {
		t.Fatalf("row %d = ts %d sym %d px %v sz %d", seq, got.Ts(), got.Sym(tb.sym), got.F64(tb.px), got.I64(tb.sz))
	}
}

// appendN appends rows [from, from+n) over the given symbol ids, round
// robin, and returns the symbol of each row.
func (tb *wtTable) appendN(t *testing.T, w *writer.Writer, from, n uint64, ids []uint32) {
	t.Helper()
	r := tb.s.NewRow()
	for seq := from; seq < from+n; seq++ {
		tb.fill(r, seq, ids[seq%uint64(len(ids))])
		got, err := w.Append(r)
		if err != nil {
			t.Fatalf("Append(%d): %v", seq, err)
		}
		if got != seq {
			t.Fatalf("Append returned seq %d, want %d", got, seq)
		}
	}
}

func (tb *wtTable) symbols(t *testing.T, w *writer.Writer, names ...string) []uint32 {
	t.Helper()
	var ids []uint32
	for _, n := range names {
		id, err := w.SymbolString(n)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// checkAll reads rows [0, n) through a fresh reader and compares them.
func (tb *wtTable) checkAll(t *testing.T, n uint64, ids []uint32) {
	t.Helper()
	r := tb.reader(t)
	if c := r.Len(); c != n {
		t.Fatalf("reader Count = %d, want %d", c, n)
	}
	for seq := range n {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatalf("Get(%d): %v", seq, err)
		}
		tb.checkRow(t, row, seq, ids[seq%uint64(len(ids))])
	}
	if _, err := r.Get(n); !errors.Is(err, reader.ErrNotVisible) {
		t.Fatalf("Get(%d) past the end: %v", n, err)
	}
}

// verify runs the read-only table check.
func (tb *wtTable) verify(t *testing.T) {
	t.Helper()
	if _, err := reader.Verify(tb.db, tb.name, nil); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestOpenCreates(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	for _, name := range []string{format.CtlName, format.SymName, format.TimeIdxName, format.PostName, format.LockName, format.SegName(0)} {
		if _, err := os.Stat(filepath.Join(tb.dir(), name)); err != nil {
			t.Errorf("table file %s: %v", name, err)
		}
	}
	if w.LiveDir() != tb.live || w.Dir() != tb.dir() || !w.Schema().Equal(tb.s) {
		t.Errorf("LiveDir %q Dir %q Schema %s", w.LiveDir(), w.Dir(), w.Schema())
	}
	if _, err := os.Stat(filepath.Join(tb.live, format.SlotName(0))); err != nil {
		t.Errorf("live slot 0: %v", err)
	}
	if w.Len() != 0 || w.LastTs() != math.MinInt64 || len(w.NewRow()) != 32 {
		t.Errorf("new writer: len %d last ts %d", w.Len(), w.LastTs())
	}
	ents, _ := os.ReadDir(tb.db)
	if len(ents) != 1 || ents[0].Name() != tb.name {
		t.Errorf("database holds %v, want only the table (no temp dirs)", ents)
	}
	r := tb.reader(t)
	if !r.Schema().Equal(tb.s) || r.SegmentRows() != tinyRows || r.WriterPid() != os.Getpid() {
		t.Errorf("reader: schema %s, %d rows per segment, writer pid %d", r.Schema(), r.SegmentRows(), r.WriterPid())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if r.WriterPid() != 0 {
		t.Errorf("writer pid %d after Close", r.WriterPid())
	}
}

func TestOpenErrors(t *testing.T) {
	tb := newWtTable(t)
	cases := []struct {
		name  string
		table string
		opts  *writer.Options
		want  error
	}{
		{"missing_without_schema", "nope", &writer.Options{LiveDir: tb.live}, store.ErrNoTable},
		{"nil_options_missing", "nope", nil, store.ErrNoTable},
		{"bad_table_name", "../escape", tb.opts(nil), store.ErrSchema},
		{"empty_table_name", "", tb.opts(nil), store.ErrSchema},
		{"stride_not_power_of_two", "odd", tb.opts(func(o *writer.Options) { o.TimeStride = 48 }), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := writer.Open(tb.db, tc.table, tc.opts)
			if err == nil {
				w.Close()
				t.Fatal("Open succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Open error %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(tb.db, tc.table, format.CtlName)); err == nil && tc.table != "" {
				t.Error("a failed Open left a table behind")
			}
		})
	}
}

func TestReopenSchema(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	other := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym}, store.Column{Name: "price", Type: store.TypeF64})
	cases := []struct {
		name   string
		schema *store.Schema
		ok     bool
	}{
		{"no_schema_given", nil, true},
		{"same_schema", store.TickSchema(), true},
		{"fewer_columns", other, false},
		{"renamed_column", store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym}, store.Column{Name: "px", Type: store.TypeF64}, store.Column{Name: "size", Type: store.TypeI64}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := writer.Open(tb.db, tb.name, &writer.Options{Schema: tc.schema, LiveDir: tb.live})
			if !tc.ok {
				if !errors.Is(err, store.ErrSchema) {
					if err == nil {
						w.Close()
					}
					t.Fatalf("Open with %v: %v, want ErrSchema", tc.schema, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !w.Schema().Equal(tb.s) {
				t.Errorf("reopened schema %s", w.Schema())
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A failed Open released the lock.
	tb.open(t, func(o *writer.Options) { o.Schema = nil }).Close()
}

func TestAppendPublishVisibility(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	ids := tb.symbols(t, w, "AAA", "BBB")
	r := tb.reader(t)
	tb.appendN(t, w, 0, 10, ids)
	if w.Len() != 10 || w.LastTs() != wtTs(9) {
		t.Fatalf("Len %d LastTs %d", w.Len(), w.LastTs())
	}
	if c := r.Len(); c != 0 {
		t.Fatalf("reader sees %d rows before Publish", c)
	}
	if _, err := r.Get(0); !errors.Is(err, reader.ErrNotVisible) {
		t.Fatalf("Get before Publish: %v", err)
	}
	if s := w.Stats(); s.Appended != 10 || s.Visible != 0 {
		t.Fatalf("stats before Publish %+v", s)
	}
	w.Publish()
	if c := r.Len(); c != 10 {
		t.Fatalf("reader sees %d rows after Publish", c)
	}
	snap, err := r.Snapshot()
	if err != nil || snap.Len != 10 || snap.LastTs != wtTs(9) {
		t.Fatalf("snapshot %+v, %v", snap, err)
	}
	for seq := range uint64(10) {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		tb.checkRow(t, row, seq, ids[seq%2])
	}
	// One more, unpublished, then published.
	tb.appendN(t, w, 10, 1, ids)
	if _, err := r.Get(10); !errors.Is(err, reader.ErrNotVisible) {
		t.Fatalf("Get of an unpublished row: %v", err)
	}
	w.Publish()
	w.Publish() // nothing new: a no-op
	if row, err := r.Get(10); err != nil || row.Ts() != wtTs(10) {
		t.Fatalf("Get(10) = %v", err)
	}
	if s := w.Stats(); s.Visible != 11 || s.Symbols != 2 {
		t.Fatalf("stats %+v", s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tb.verify(t)
}

func TestAppendBatch(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	ids := tb.symbols(t, w, "A", "B", "C")
	rs := tb.s.RowSize
	batch := func(from, n uint64) []byte {
		b := make([]byte, 0, int(n)*rs)
		for seq := from; seq < from+n; seq++ {
			b = append(b, tb.row(seq, ids[seq%3])...)
		}
		return b
	}
	cases := []struct {
		name    string
		rows    func(next uint64) []byte
		wantN   int
		wantErr error
	}{
		{"empty", func(uint64) []byte { return nil }, 0, nil},
		{"one", func(n uint64) []byte { return batch(n, 1) }, 1, nil},
		{"across_rolls", func(n uint64) []byte { return batch(n, 3*tinyRows+7) }, 3*tinyRows + 7, nil},
		{"ragged_length", func(n uint64) []byte { return batch(n, 4)[:4*rs-1] }, 0, writer.ErrRowSize},
		{"late_row_in_the_middle", func(n uint64) []byte {
			b := batch(n, 6)
			store.Row(b[3*rs:]).SetTs(0)
			return b
		}, 3, writer.ErrOutOfOrder},
		{"unknown_symbol_second", func(n uint64) []byte {
			b := batch(n, 5)
			store.Row(b[rs:]).SetSym(tb.sym, 77)
			return b
		}, 1, writer.ErrUnknownSymbol},
	}
	var next uint64
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first, n, err := w.AppendBatch(tc.rows(next))
			if !errors.Is(err, tc.wantErr) || n != tc.wantN || first != next {
				t.Fatalf("AppendBatch = first %d, n %d, %v; want first %d, n %d, %v", first, n, err, next, tc.wantN, tc.wantErr)
			}
			next += uint64(n)
			if w.Len() != next {
				t.Fatalf("Len %d after storing %d", w.Len(), next)
			}
		})
	}
	w.Publish()
	// The rows of every batch are there, numbered densely; the rows after a
	// failing one are not. Rebuild what the table should hold.
	r := tb.reader(t)
	if r.Len() != next {
		t.Fatalf("reader Count %d, want %d", r.Len(), next)
	}
	// Batches used seq-based content starting at their first seq, so every
	// stored row is row(seq).
	for seq := range next {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		tb.checkRow(t, row, seq, ids[seq%3])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tb.verify(t)
}

func TestAppendErrors(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	ids := tb.symbols(t, w, "ONLY")
	tb.appendN(t, w, 0, 3, ids)
	cases := []struct {
		name string
		row  store.Row
		want error
	}{
		{"nil_row", nil, writer.ErrRowSize},
		{"short_row", tb.row(3, ids[0])[:31], writer.ErrRowSize},
		{"long_row", append(tb.row(3, ids[0]), 0), writer.ErrRowSize},
		{"unknown_symbol", tb.row(3, 1), writer.ErrUnknownSymbol},
		{"huge_symbol_id", tb.row(3, math.MaxUint32), writer.ErrUnknownSymbol},
		{"late_row", withTs(tb.row(0, ids[0]), 999), writer.ErrOutOfOrder},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := w.Append(tc.row); !errors.Is(err, tc.want) {
				t.Fatalf("Append: %v, want %v", err, tc.want)
			}
			if w.Len() != 3 {
				t.Fatalf("a rejected row was stored: Len %d", w.Len())
			}
		})
	}
	// Errors are lower case and carry the package prefix.
	for _, err := range []error{writer.ErrRowSize, writer.ErrUnknownSymbol, writer.ErrOutOfOrder, writer.ErrClosed, writer.ErrLocked} {
		if !strings.HasPrefix(err.Error(), "writer: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	}
	// The table goes on after errors.
	tb.appendN(t, w, 3, 5, ids)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tb.checkAll(t, 8, ids)
}

func TestOutOfOrderReject(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	ids := tb.symbols(t, w, "X")
	r := tb.reader(t)
	row := tb.row(0, ids[0])
	row.SetTs(200)
	if _, err := w.Append(row); err != nil {
		t.Fatal(err)
	}
	w.Publish()
	row.SetTs(150)
	if _, err := w.Append(row); !errors.Is(err, writer.ErrOutOfOrder) {
		t.Fatalf("late row: %v, want ErrOutOfOrder", err)
	}
	if s := w.Stats(); s.OutOfOrder != 1 || s.Appended != 1 {
		t.Fatalf("stats after a rejected row: %+v", s)
	}
	// A reader (another process, a metrics scraper) sees the rejection
	// at once, before any Publish: a refused row may be the table's last
	// for a while.
	if got := r.OutOfOrder(); got != 1 {
		t.Fatalf("reader OutOfOrder = %d right after the rejection, want 1", got)
	}
	// A row the caller refused by its own check counts the same way.
	w.CountOutOfOrder()
	if got, st := r.OutOfOrder(), w.Stats(); got != 2 || st.OutOfOrder != 2 || st.Appended != 1 {
		t.Fatalf("after CountOutOfOrder: reader %d, writer %+v, want 2 and 1 row", got, st)
	}
	w.Publish()
	if got := r.OutOfOrder(); got != 2 {
		t.Fatalf("reader OutOfOrder = %d after Publish, want 2", got)
	}
	// Equal ts is not out of order.
	row.SetTs(200)
	if _, err := w.Append(row); err != nil {
		t.Fatalf("equal ts: %v", err)
	}
	row.SetTs(199)
	w.Append(row)
	row.SetTs(math.MinInt64)
	w.Append(row)
	w.Publish()
	if r.OutOfOrder() != 4 || w.Stats().OutOfOrder != 4 || r.Len() != 2 {
		t.Fatalf("reader OutOfOrder %d, writer %d, rows %d", r.OutOfOrder(), w.Stats().OutOfOrder, r.Len())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The counter is kept in the table across writers.
	w2 := tb.open(t, nil)
	if w2.Stats().OutOfOrder != 4 {
		t.Fatalf("OutOfOrder after reopen = %d", w2.Stats().OutOfOrder)
	}
	w2.Close()
}

func TestOutOfOrderStamp(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, func(o *writer.Options) { o.OutOfOrder = writer.OutOfOrderStamp })
	ids := tb.symbols(t, w, "X")
	cases := []struct {
		name   string
		lastTs int64 // ts of the row before the late one
		late   int64
		// the stamped ts is the arrival time, but never before lastTs
		wantLast bool
	}{
		{"past_last_row", 1000, 10, false},
		{"future_last_row", math.MaxInt64 - 10, math.MaxInt64 - 11, true},
	}
	seq := uint64(0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			row := tb.row(seq, ids[0])
			row.SetTs(tc.lastTs)
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
			seq++
			late := tb.row(seq, ids[0])
			late.SetTs(tc.late)
			before := time.Now().UnixNano()
			got, err := w.Append(late)
			after := time.Now().UnixNano()
			if err != nil || got != seq {
				t.Fatalf("late row: seq %d, %v", got, err)
			}
			if late.Ts() != tc.late {
				t.Error("Append changed the caller's row")
			}
			seq++
			w.Publish()
			r := tb.reader(t)
			stored, err := r.Get(got)
			if err != nil {
				t.Fatal(err)
			}
			ts := stored.Ts()
			if ts < tc.lastTs {
				t.Fatalf("stamped ts %d is before the last ts %d", ts, tc.lastTs)
			}
			if tc.wantLast && ts != tc.lastTs || !tc.wantLast && (ts < before || ts > after) {
				t.Fatalf("stamped ts %d, arrival window [%d, %d], last %d", ts, before, after, tc.lastTs)
			}
			if stored.F64(tb.px) != late.F64(tb.px) || stored.I64(tb.sz) != late.I64(tb.sz) || !format.Valid(got, stored) {
				t.Error("stamping changed other columns or the check word is stale")
			}
			if w.LastTs() != ts {
				t.Errorf("LastTs %d, stored %d", w.LastTs(), ts)
			}
		})
	}
	if s := w.Stats(); s.OutOfOrder != 2 {
		t.Errorf("stamped rows counted %d, want 2", s.OutOfOrder)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tb.verify(t)
}

func TestSyncDurable(t *testing.T) {
	for _, pol := range []writer.FlushPolicy{writer.FlushInterval, writer.FlushOnSync, writer.FlushNone} {
		t.Run(polName(pol), func(t *testing.T) {
			tb := newWtTable(t)
			w := tb.open(t, func(o *writer.Options) { o.Flush = pol })
			ids := tb.symbols(t, w, "A", "B")
			ctl, err := index.OpenCtl(filepath.Join(tb.dir(), format.CtlName), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ctl.Close()
			for _, n := range []uint64{1, 5, tinyRows - 6, 1, 3 * tinyRows} {
				from := w.Len()
				tb.appendN(t, w, from, n, ids)
				if err := w.Sync(); err != nil {
					t.Fatal(err)
				}
				if d := ctl.Durable(); d < from+n {
					t.Fatalf("Durable %d after Sync of %d rows", d, from+n)
				}
				if v := ctl.Visible(); v != from+n {
					t.Fatalf("Sync did not publish: visible %d", v)
				}
			}
			if s := w.Stats(); s.Flushes == 0 || s.FlushBytes == 0 || s.Durable < w.Len() {
				t.Errorf("stats %+v", s)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(); !errors.Is(err, writer.ErrClosed) {
				t.Errorf("Sync after Close: %v", err)
			}
		})
	}
}

// TestFlushPolicies: under interval the flusher catches up without Sync;
// under sync and none, a partial segment stays non-durable until Sync, and
// only sealed segments are written meanwhile.
func TestFlushPolicies(t *testing.T) {
	cases := []struct {
		name     string
		pol      writer.FlushPolicy
		catchUp  bool
		interval time.Duration
	}{
		{"interval", writer.FlushInterval, true, time.Millisecond},
		{"interval_slow", writer.FlushInterval, true, 20 * time.Millisecond},
		{"sync", writer.FlushOnSync, false, 0},
		{"none", writer.FlushNone, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := newWtTable(t)
			w := tb.open(t, func(o *writer.Options) { o.Flush = tc.pol; o.FlushInterval = tc.interval })
			ids := tb.symbols(t, w, "A")
			r := tb.reader(t)
			tb.appendN(t, w, 0, 50, ids)
			w.Publish()
			if tc.catchUp {
				waitFor(t, "the flusher to catch up", func() bool { return r.Durable() == 50 })
			} else {
				time.Sleep(30 * time.Millisecond) // several flusher periods
				if d := r.Durable(); d != 0 {
					t.Fatalf("Durable %d without Sync under %s", d, tc.name)
				}
			}
			// Two more segments and a bit: the sealed ones become durable
			// on their own under every policy (slots must be recycled).
			tb.appendN(t, w, 50, 2*tinyRows+10, ids)
			w.Publish()
			sealed := uint64(2 * tinyRows)
			waitFor(t, "sealed segments to become durable", func() bool { return r.Durable() >= sealed })
			if !tc.catchUp {
				time.Sleep(20 * time.Millisecond)
				if d := r.Durable(); d != sealed {
					t.Fatalf("Durable %d, want exactly the %d sealed rows", d, sealed)
				}
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			if d := r.Durable(); d != w.Len() {
				t.Fatalf("Durable %d after Sync, want %d", d, w.Len())
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseFlushPolicy(t *testing.T) {
	cases := []struct {
		in   string
		want writer.FlushPolicy
		ok   bool
	}{
		{"", writer.FlushInterval, true},
		{"interval", writer.FlushInterval, true},
		{"sync", writer.FlushOnSync, true},
		{"none", writer.FlushNone, true},
		{"always", 0, false},
		{"Sync", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := writer.ParseFlushPolicy(tc.in)
			if (err == nil) != tc.ok || tc.ok && got != tc.want {
				t.Fatalf("ParseFlushPolicy(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

// TestSegmentRolls appends across many tiny segments (more than the live
// slots, so slots are recycled) and checks every file and row.
func TestSegmentRolls(t *testing.T) {
	tb := newWtTable(t)
	// Raw segments: every segment file is checked at its raw size.
	w := tb.open(t, func(o *writer.Options) { o.LiveSlots, o.HotBytes, o.CompactAge = 2, -1, -1 })
	ids := tb.symbols(t, w, "A", "B", "C")
	const n = 10*tinyRows + 17
	tb.appendN(t, w, 0, n, ids)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	tb.checkAll(t, n, ids)
	for seg := range uint64(n/tinyRows + 1) {
		st, err := os.Stat(format.SegPath(tb.dir(), seg))
		if err != nil || st.Size() != format.SegFileSize(32, tinyRows) {
			t.Fatalf("segment %d: %v, size %d", seg, err, st.Size())
		}
	}
	slots, _ := os.ReadDir(tb.live)
	if len(slots) != 2 {
		t.Errorf("live dir holds %d files, want the 2 slots", len(slots))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tb.checkAll(t, n, ids)
	tb.verify(t)
}

func TestReopenContinues(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	ids := tb.symbols(t, w, "A", "B")
	const n = 2*tinyRows + 44
	tb.appendN(t, w, 0, n, ids)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		w := tb.open(t, func(o *writer.Options) { o.Schema = nil })
		if w.Len() != n+uint64(round)*100 || w.LastTs() != wtTs(w.Len()-1) {
			t.Fatalf("round %d: reopened with Len %d LastTs %d", round, w.Len(), w.LastTs())
		}
		if got := tb.symbols(t, w, "A", "B"); got[0] != ids[0] || got[1] != ids[1] {
			t.Fatalf("symbol ids changed on reopen: %v, want %v", got, ids)
		}
		if w.SymbolName(ids[1]) != "B" {
			t.Errorf("SymbolName = %q", w.SymbolName(ids[1]))
		}
		tb.appendN(t, w, w.Len(), 100, ids)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tb.checkAll(t, n+300, ids)
	tb.verify(t)
	// A new symbol after reopen takes the next id.
	w = tb.open(t, nil)
	if id := tb.symbols(t, w, "C")[0]; id != 2 {
		t.Errorf("new symbol id %d, want 2", id)
	}
	w.Close()
}

func TestCloseRemovesLiveAndRefusesWork(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, func(o *writer.Options) { o.LiveSlots = 3 })
	ids := tb.symbols(t, w, "A")
	tb.appendN(t, w, 0, 3*tinyRows+1, ids)
	if _, err := os.Stat(tb.live); err != nil {
		t.Fatalf("live dir while open: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tb.live); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("live dir %s after Close: %v", tb.live, err)
	}
	if ok, _ := writer.IsLocked(tb.dir()); ok {
		t.Error("table still locked after Close")
	}
	row := tb.row(3*tinyRows+1, ids[0])
	cases := []struct {
		name string
		do   func() error
	}{
		{"close_again", w.Close},
		{"append", func() error { _, err := w.Append(row); return err }},
		{"append_batch", func() error { _, _, err := w.AppendBatch(row); return err }},
		{"sync", w.Sync},
		{"new_symbol", func() error { _, err := w.SymbolString("NEW"); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, writer.ErrClosed) {
				t.Fatalf("%s after Close: %v, want ErrClosed", tc.name, err)
			}
		})
	}
	w.Publish() // nothing to publish: must not touch the unmapped files
	tb.checkAll(t, 3*tinyRows+1, ids)
}

func TestSecondWriterLocked(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	for _, mod := range []func(*writer.Options){nil, func(o *writer.Options) { o.Schema = nil }} {
		w2, err := writer.Open(tb.db, tb.name, tb.opts(mod))
		if err == nil {
			w2.Close()
			t.Fatal("second writer opened the table")
		}
		if !errors.Is(err, writer.ErrLocked) {
			t.Fatalf("second writer: %v, want ErrLocked", err)
		}
		var le *writer.LockedError
		if !errors.As(err, &le) || le.Pid != os.Getpid() || le.Table != tb.dir() {
			t.Fatalf("LockedError %+v, want pid %d table %s", le, os.Getpid(), tb.dir())
		}
		if !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
			t.Errorf("error %q does not name the pid", err)
		}
	}
	if ok, pid := writer.IsLocked(tb.dir()); !ok || pid != os.Getpid() {
		t.Errorf("IsLocked = %v, %d", ok, pid)
	}
	if pid := writer.LockHolder(tb.dir()); pid != os.Getpid() {
		t.Errorf("LockHolder = %d", pid)
	}
	// The first writer is unaffected.
	ids := tb.symbols(t, w, "A")
	tb.appendN(t, w, 0, 5, ids)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w3 := tb.open(t, nil)
	if w3.Len() != 5 {
		t.Fatalf("writer after the lock was released: Len %d", w3.Len())
	}
	w3.Close()
	var e *writer.LockedError = &writer.LockedError{Table: "t"}
	if !strings.Contains(e.Error(), "pid unknown") {
		t.Errorf("LockedError without pid: %q", e)
	}
}

func TestSymbols(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	r := tb.reader(t)
	names := []string{"AAPL", "with space, comma=eq", "", "é€", strings.Repeat("L", store.MaxSymLen)}
	for i, n := range names {
		id, err := w.Symbol([]byte(n))
		if err != nil || id != uint32(i) {
			t.Fatalf("Symbol(%d) = %d, %v", i, id, err)
		}
		// Published at once, before any row names it.
		got, err := r.SymbolName(id)
		if err != nil || got != n {
			t.Fatalf("reader Symbol(%d) = %q, %v", id, got, err)
		}
		if rid, ok := r.SymbolID([]byte(n)); !ok || rid != id {
			t.Fatalf("reader SymbolID = %d, %v", rid, ok)
		}
	}
	for i, n := range names {
		if id, _ := w.SymbolString(n); id != uint32(i) {
			t.Errorf("SymbolString(%d) again = %d", i, id)
		}
	}
	if _, err := w.Symbol(make([]byte, store.MaxSymLen+1)); err == nil {
		t.Error("an over-long symbol was accepted")
	}
	if s := w.Stats(); s.Symbols != len(names) || r.Symbols() != len(names) {
		t.Errorf("symbol counts: writer %d reader %d", s.Symbols, r.Symbols())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestNoSymColumn(t *testing.T) {
	tb := newWtTable(t)
	tb.s = store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "v", Type: store.TypeF64}, store.Column{Name: "ok", Type: store.TypeBool})
	w := tb.open(t, nil)
	v, _ := tb.s.Col("v")
	ok, _ := tb.s.Col("ok")
	row := tb.s.NewRow()
	for i := range 3 * tinyRows {
		row.SetTs(int64(i))
		row.SetF64(v, float64(i)/3)
		row.SetBool(ok, i%3 == 0)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := tb.reader(t)
	for i := range uint64(3 * tinyRows) {
		got, err := r.Get(i)
		if err != nil || got.F64(v) != float64(i)/3 || got.Bool(ok) != (i%3 == 0) {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	var it reader.Iter
	if err := r.RangeSym(0, 100, 0, &it); err == nil {
		t.Error("RangeSym on a table without a sym column succeeded")
	}
	tb.verify(t)
}

func TestLagAlarm(t *testing.T) {
	tb := newWtTable(t)
	var calls atomic.Int64
	var lag atomic.Uint64
	w := tb.open(t, func(o *writer.Options) {
		o.Flush = writer.FlushNone
		o.MaxLag = 10
		o.OnLag = func(l uint64) { calls.Add(1); lag.Store(l) }
	})
	ids := tb.symbols(t, w, "A")
	start := time.Now()
	for i := range uint64(5) {
		tb.appendN(t, w, i*20, 20, ids)
		w.Publish()
	}
	// Rate-limited to one call per second: one, unless the five publishes
	// took over a second on a busy machine (then at most one per second
	// begun).
	if n, most := calls.Load(), 1+int64(time.Since(start)/time.Second); n < 1 || n > most || lag.Load() < 20 {
		t.Fatalf("OnLag called %d times (at most %d), last lag %d", n, most, lag.Load())
	}
	if s := w.Stats(); s.LagAlarms < 5 {
		t.Errorf("LagAlarms %d, want one per publish over the limit", s.LagAlarms)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLagBlock: under LagBlock, Publish returns once the durable lag is at
// most MaxLag/2, whatever the flush policy (under sync and none the
// flusher must be asked for the rows the wait needs, or it never ends).
func TestLagBlock(t *testing.T) {
	for _, pol := range []writer.FlushPolicy{writer.FlushInterval, writer.FlushOnSync, writer.FlushNone} {
		t.Run(polName(pol), func(t *testing.T) {
			tb := newWtTable(t)
			w := tb.open(t, func(o *writer.Options) {
				o.Flush = pol
				o.FlushInterval = time.Hour // only a wake makes the flusher run
				o.MaxLag = 20
				o.LagPolicy = writer.LagBlock
			})
			ids := tb.symbols(t, w, "A")
			r := tb.reader(t)
			for i := range uint64(4) {
				tb.appendN(t, w, i*50, 50, ids)
				done := make(chan struct{})
				go func() {
					defer close(done)
					w.Publish() // waits until the lag is at most MaxLag/2
				}()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("Publish under LagBlock never returned")
				}
				if lagged := w.Len() - r.Durable(); lagged > 10 {
					t.Fatalf("Publish under LagBlock returned with lag %d", lagged)
				}
			}
			if s := w.Stats(); s.LagAlarms != 4 {
				t.Errorf("LagAlarms = %d, want 4", s.LagAlarms)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPin runs Pin on a goroutine that ends while still locked to its
// thread, so the runtime discards the pinned thread instead of reusing it.
func TestPin(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*writer.Options)
		ok   bool
	}{
		{"no_affinity", nil, true},
		{"cpu_0", func(o *writer.Options) { o.CPU, o.PinCPU = 0, true }, true},
		{"cpu_out_of_range", func(o *writer.Options) { o.CPU, o.PinCPU = 1<<16, true }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := newWtTable(t)
			w := tb.open(t, tc.mod)
			ids := tb.symbols(t, w, "A")
			done := make(chan error)
			go func() {
				err := w.Pin()
				if err == nil {
					_, err = w.Append(tb.row(0, ids[0]))
				}
				done <- err
			}()
			if err := <-done; (err == nil) != tc.ok {
				t.Fatalf("Pin: %v, want ok=%v", err, tc.ok)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("unpin", func(t *testing.T) {
		tb := newWtTable(t)
		w := tb.open(t, nil)
		if err := w.Pin(); err != nil {
			t.Fatal(err)
		}
		w.Unpin()
		w.Close()
	})
}

// TestTornTailCutOnReopen damages a closed table the way a machine crash
// can (rows past the durable count torn, zeroed, stale or missing) and
// checks that the next writer cuts exactly there and keeps the rest; damage
// below the durable count is an error naming the file and offset.
func TestTornTailCutOnReopen(t *testing.T) {
	const n = 2*tinyRows + 44 // segments 0 and 1 full, 44 rows in segment 2
	rowOff := func(seq uint64) int64 { return format.BlockSize + int64(seq%tinyRows)*32 }
	segOf := func(seq uint64) uint64 { return seq / tinyRows }
	type env struct {
		t  *testing.T
		tb *wtTable
	}
	patch := func(e env, seq uint64, f func(store.Row)) {
		path := format.SegPath(e.tb.dir(), segOf(seq))
		fh, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		defer fh.Close()
		row := make(store.Row, 32)
		if _, err := fh.ReadAt(row, rowOff(seq)); err != nil {
			e.t.Fatal(err)
		}
		f(row)
		if _, err := fh.WriteAt(row, rowOff(seq)); err != nil {
			e.t.Fatal(err)
		}
	}
	zero := func(e env, from, to uint64) {
		for s := from; s < to; s++ {
			patch(e, s, func(r store.Row) { clear(r) })
		}
	}
	cases := []struct {
		name    string
		durable uint64
		damage  func(e env)
		cut     uint64 // rows kept; 0 with errPath means Open fails
		errSeg  uint64 // segment named by the error
		errOff  int64
	}{
		{"nothing_torn", 260, func(env) {}, n, 0, 0},
		{"zeroed_rows", 260, func(e env) { zero(e, 280, n) }, 280, 0, 0},
		{"zeroed_from_durable", 260, func(e env) { zero(e, 260, n) }, 260, 0, 0},
		{"flipped_byte", 260, func(e env) { patch(e, 270, func(r store.Row) { r[13] ^= 0x04 }) }, 270, 0, 0},
		{"flipped_check_word", 260, func(e env) { patch(e, 291, func(r store.Row) { r[30] ^= 1 }) }, 291, 0, 0},
		{"half_written_row", 260, func(e env) { patch(e, 290, func(r store.Row) { clear(r[16:]) }) }, 290, 0, 0},
		{"stale_row_of_another_seq", 260, func(e env) {
			var prev store.Row
			patch(e, 279, func(r store.Row) { prev = append(store.Row(nil), r...) })
			patch(e, 280, func(r store.Row) { copy(r, prev) })
		}, 280, 0, 0},
		{"ts_goes_back", 260, func(e env) {
			patch(e, 285, func(r store.Row) { r.SetTs(wtTs(284) - 1); format.Seal(285, r) })
		}, 285, 0, 0},
		{"unknown_symbol", 260, func(e env) {
			patch(e, 288, func(r store.Row) { r.SetSym(e.tb.sym, 99); format.Seal(288, r) })
		}, 288, 0, 0},
		{"durable_at_boundary_next_file_truncated", 2 * tinyRows, func(e env) {
			os.Truncate(format.SegPath(e.tb.dir(), 2), 100)
		}, 2 * tinyRows, 0, 0},
		{"durable_at_boundary_next_file_missing", 2 * tinyRows, func(e env) {
			os.Remove(format.SegPath(e.tb.dir(), 2))
		}, 2 * tinyRows, 0, 0},
		{"torn_in_earlier_segment", 200, func(e env) { zero(e, 250, 252) }, 250, 0, 0},
		{"durable_zero", 0, func(e env) { zero(e, 5, 6) }, 5, 0, 0},
		{"last_durable_row_damaged", 260, func(e env) { patch(e, 259, func(r store.Row) { r[0] ^= 1 }) }, 0, 2, rowOff(259)},
		{"durable_file_truncated", 260, func(e env) {
			os.Truncate(format.SegPath(e.tb.dir(), 2), rowOff(270))
		}, 0, 2, rowOff(270)},
		{"durable_segment_header_damaged", 260, func(e env) {
			fh, _ := os.OpenFile(format.SegPath(e.tb.dir(), 2), os.O_RDWR, 0)
			fh.WriteAt([]byte{0xFF}, 20)
			fh.Close()
		}, 0, 2, 56},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := newWtTable(t)
			// Raw segments (CompactAge -1): the damage is done to their
			// files, rows and headers.
			w := tb.open(t, func(o *writer.Options) { o.CompactAge = -1 })
			ids := tb.symbols(t, w, "A", "B", "C")
			tb.appendN(t, w, 0, n, ids)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			// The crash: the durable count published before it was lower
			// than the rows that reached the files.
			ctl, err := index.OpenCtl(filepath.Join(tb.dir(), format.CtlName), vfs.OS)
			if err != nil {
				t.Fatal(err)
			}
			ctl.SetDurable(tc.durable)
			ctl.SetDurableSegs(tc.durable / tinyRows)
			ctl.Sync()
			ctl.Close()
			tc.damage(env{t, tb})

			w2, err := writer.Open(tb.db, tb.name, tb.opts(nil))
			if tc.cut == 0 {
				if err == nil {
					w2.Close()
					t.Fatal("Open over damaged durable rows succeeded")
				}
				var ce *store.CorruptError
				if !errors.As(err, &ce) || ce.Path != format.SegPath(tb.dir(), tc.errSeg) || ce.Offset != tc.errOff {
					t.Fatalf("Open: %v, want corruption of %s at %d", err, format.SegPath(tb.dir(), tc.errSeg), tc.errOff)
				}
				return
			}
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			t.Cleanup(func() { w2.Close() })
			if w2.Len() != tc.cut {
				t.Fatalf("reopened with %d rows, want the torn tail cut at %d", w2.Len(), tc.cut)
			}
			if tc.cut > 0 && w2.LastTs() != wtTs(tc.cut-1) {
				t.Fatalf("LastTs %d, want %d", w2.LastTs(), wtTs(tc.cut-1))
			}
			// No row of the old run past the cut survives in the durable
			// files (it would pass its check for its seq): the files of
			// later segments were removed, and the preparer may already
			// have made the next one afresh.
			for seq := tc.cut; seq < n; seq++ {
				b, err := os.ReadFile(format.SegPath(tb.dir(), segOf(seq)))
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if off := rowOff(seq); off+32 <= int64(len(b)) && format.Valid(seq, b[off:off+32]) {
					t.Fatalf("row %d of the old run survives past the cut at %d", seq, tc.cut)
				}
			}
			tb.checkAll(t, tc.cut, ids)
			// Appends go on from the cut, and the table checks out.
			tb.appendN(t, w2, tc.cut, 2*tinyRows, ids)
			if err := w2.Close(); err != nil {
				t.Fatal(err)
			}
			tb.checkAll(t, tc.cut+2*tinyRows, ids)
			r := tb.reader(t)
			var it reader.Iter
			for id := range uint32(3) {
				if err := r.RangeSym(math.MinInt64, math.MaxInt64, id, &it); err != nil {
					t.Fatal(err)
				}
				var cnt uint64
				for it.Next() {
					if it.Seq()%3 != uint64(id) {
						t.Fatalf("symbol %d lists row %d", id, it.Seq())
					}
					cnt++
				}
				if err := it.Err(); err != nil {
					t.Fatal(err)
				}
				if want := (tc.cut + 2*tinyRows + 2 - uint64(id)) / 3; cnt != want {
					t.Fatalf("symbol %d has %d rows, want %d", id, cnt, want)
				}
			}
			tb.verify(t)
		})
	}
}

// TestSyncEmpty: Sync on a table with no rows returns at once.
func TestSyncEmpty(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Sync() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Sync of an empty table did not return")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
