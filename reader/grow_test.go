package reader_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// A reader kept open across a table's growth (writer.AddColumns, which
// closes the table and rewrites the segment rows are appended to in the
// new layout: docs/FORMAT.md §15) reads every row, old and new, through
// every read path, whether it has read the table's segments before the
// growth or not, and whether its caller reloads the schema or leaves the
// reader to load it when it meets the new layout.

// keptBase is the ts of row 0 of the kept-reader tables; row seq has ts
// keptBase+seq, symbol keptSym(seq), price seq/4, size seq, and (from
// the row the column was added at) fee seq+0.5.
var keptBase = time.Date(2024, 1, 2, 14, 30, 0, 0, time.UTC).UnixNano()

const keptSyms = 3

func keptSym(seq uint64) string { return "S" + strconv.Itoa(int(seq%keptSyms)) }

// keptAppend appends rows [w.Len(), to) to w, with fee when w's schema
// has it, and publishes them.
func keptAppend(t *testing.T, w *writer.Writer, to uint64) {
	t.Helper()
	s := w.Schema()
	fee, hasFee := s.Col("fee")
	for seq := w.Len(); seq < to; seq++ {
		row := w.NewRow()
		row.SetTs(keptBase + int64(seq))
		id, err := w.SymbolString(keptSym(seq))
		if err != nil {
			t.Fatal(err)
		}
		row.SetSym(s.ColAt(1), id)
		row.SetF64(s.ColAt(2), float64(seq)/4)
		row.SetI64(s.ColAt(3), int64(seq))
		if hasFee {
			row.SetF64(fee, float64(seq)+0.5)
		}
		if _, err := w.Append(row); err != nil {
			t.Fatalf("append row %d: %v", seq, err)
		}
	}
	w.Publish()
}

// keptSession opens the trades table (creating it on the first call),
// adds fee first when grow is set, appends rows up to to and closes it
// unless keepOpen, in which case the writer is returned open.
func keptSession(t *testing.T, db string, opts writer.Options, grow bool, to uint64, keepOpen bool) *writer.Writer {
	t.Helper()
	w, err := writer.Open(db, "trades", &opts)
	if err != nil {
		t.Fatal(err)
	}
	if grow {
		if err := w.AddColumns(store.Column{Name: "fee", Type: store.TypeF64}); err != nil {
			t.Fatal(err)
		}
	}
	keptAppend(t, w, to)
	if keepOpen {
		t.Cleanup(func() { w.Close() })
		return w
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return nil
}

// keptRow checks row seq (a view or copy of any layout) against the model,
// fee included when r's schema has it and fee is set (the rows from grownAt
// have it, the others read it as NaN).
func keptRow(r *reader.Reader, seq, grownAt uint64, row store.Row) error {
	s := r.Schema()
	if len(row) == 0 {
		return fmt.Errorf("row %d: empty", seq)
	}
	if got, want := row.Ts(), keptBase+int64(seq); got != want {
		return fmt.Errorf("row %d (%d bytes): ts %d, want %d", seq, len(row), got, want)
	}
	if got := row.F64(s.ColAt(2)); got != float64(seq)/4 {
		return fmt.Errorf("row %d (%d bytes): price %v, want %v", seq, len(row), got, float64(seq)/4)
	}
	if got := row.I64(s.ColAt(3)); got != int64(seq) {
		return fmt.Errorf("row %d (%d bytes): size %d", seq, len(row), got)
	}
	name, err := r.SymbolName(row.Sym(s.ColAt(1)))
	if err != nil || name != keptSym(seq) {
		return fmt.Errorf("row %d (%d bytes): sym %q (%v), want %q", seq, len(row), name, err, keptSym(seq))
	}
	if fee, ok := s.Col("fee"); ok {
		got := row.F64(fee)
		if seq < grownAt && !math.IsNaN(got) || seq >= grownAt && got != float64(seq)+0.5 {
			return fmt.Errorf("row %d (%d bytes): fee %v (column added at row %d)", seq, len(row), got, grownAt)
		}
	}
	return nil
}

// keptScan scans every row of r with the order and workers given and
// checks what it reads: fee too when the schema has it.
func keptScan(t *testing.T, r *reader.Reader, order reader.ScanOrder, workers int, rows, grownAt uint64) {
	t.Helper()
	cols := []int{0, 1, 2}
	fee := r.Schema().Index("fee")
	if fee >= 0 {
		cols = append(cols, fee)
	}
	var sc reader.Scan
	defer sc.Close()
	if err := r.Scan(reader.ScanSpec{Cols: cols, From: math.MinInt64, To: reader.ToEnd, Order: order, Seqs: true, Workers: workers}, &sc); err != nil {
		t.Fatalf("scan (order %d, %d workers): %v", order, workers, err)
	}
	var seqs []uint64
	for sc.Next() {
		b := sc.Block()
		for i, seq := range b.Seqs() {
			if got := b.I64(0)[i]; got != keptBase+int64(seq) {
				t.Fatalf("scan: row %d ts %d", seq, got)
			}
			if got := b.F64(2)[i]; got != float64(seq)/4 {
				t.Fatalf("scan: row %d price %v", seq, got)
			}
			if fee >= 0 {
				got := b.F64(3)[i]
				if seq < grownAt && !math.IsNaN(got) || seq >= grownAt && got != float64(seq)+0.5 {
					t.Fatalf("scan: row %d fee %v (added at row %d)", seq, got, grownAt)
				}
			}
			seqs = append(seqs, seq)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan (order %d, %d workers): %v after %d rows", order, workers, err, len(seqs))
	}
	if order == reader.OrderAny {
		slices.Sort(seqs)
	}
	if uint64(len(seqs)) != rows {
		t.Fatalf("scan (order %d, %d workers): %d rows, want %d", order, workers, len(seqs), rows)
	}
	for i, seq := range seqs {
		if seq != uint64(i) {
			t.Fatalf("scan (order %d, %d workers): row %d at %d", order, workers, seq, i)
		}
	}
}

// keptScanAll scans every row in both orders, on one goroutine and on
// several.
func keptScanAll(t *testing.T, r *reader.Reader, rows, grownAt uint64) {
	t.Helper()
	for _, order := range []reader.ScanOrder{reader.OrderSeq, reader.OrderAny} {
		for _, workers := range []int{1, 3} {
			keptScan(t, r, order, workers, rows, grownAt)
		}
	}
}

// keptReadAll checks every read path of r over rows [0, rows), the rows
// from grownAt on having fee.
func keptReadAll(t *testing.T, r *reader.Reader, rows, grownAt uint64) {
	t.Helper()
	// Read first through the path the reader took before the growth (it
	// meets the segment it read in the old layout there).
	keptScanAll(t, r, rows, grownAt)
	if got, err := r.SeekTime(math.MinInt64); err != nil || got != 0 {
		t.Fatalf("seek to the start: %d, %v", got, err)
	}
	for _, seq := range []uint64{0, grownAt - 1, grownAt, rows / 2, rows - 1} {
		if got, err := r.SeekTime(keptBase + int64(seq)); err != nil || got != seq {
			t.Fatalf("seek to row %d's ts: %d, %v", seq, got, err)
		}
	}
	if got, err := r.SeekTime(keptBase + int64(rows)); err != nil || got != rows {
		t.Fatalf("seek past the end: %d, %v", got, err)
	}
	for seq := range rows {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatalf("get %d: %v", seq, err)
		}
		if err := keptRow(r, seq, grownAt, row); err != nil {
			t.Fatalf("get: %v", err)
		}
		buf := make(store.Row, r.Schema().RowSize)
		if err := r.ReadRow(seq, buf); err != nil {
			t.Fatalf("read row %d: %v", seq, err)
		}
		if err := keptRow(r, seq, grownAt, buf); err != nil {
			t.Fatalf("read row: %v", err)
		}
	}
	if _, hasFee := r.Schema().Col("fee"); !hasFee {
		t.Fatalf("the reader has read rows with fee and its schema has %d columns", len(r.Schema().Cols))
	}
	var it reader.Iter
	if err := r.Range(math.MinInt64, reader.ToEnd, &it); err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for ; it.Next(); n++ {
		if it.Seq() != n {
			t.Fatalf("range: row %d, want %d", it.Seq(), n)
		}
		if err := keptRow(r, it.Seq(), grownAt, it.Row()); err != nil {
			t.Fatalf("range: %v", err)
		}
	}
	if it.Err() != nil || n != rows {
		t.Fatalf("range: %d rows, %v; want %d", n, it.Err(), rows)
	}
	var l reader.Latest
	if err := r.Latest(reader.ToEnd, &l); err != nil {
		t.Fatal(err)
	}
	dst := make(store.Row, r.Schema().RowSize)
	for k := range uint64(keptSyms) {
		name := keptSym(k)
		id, ok := r.SymbolID([]byte(name))
		if !ok {
			t.Fatalf("symbol %s unknown", name)
		}
		want := []uint64{}
		for seq := k; seq < rows; seq += keptSyms {
			want = append(want, seq)
		}
		if err := r.RangeSym(math.MinInt64, reader.ToEnd, id, &it); err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for it.Next() {
			if err := keptRow(r, it.Seq(), grownAt, it.Row()); err != nil {
				t.Fatalf("range sym %s: %v", name, err)
			}
			got = append(got, it.Seq())
		}
		if it.Err() != nil || !slices.Equal(got, want) {
			t.Fatalf("range sym %s: %d rows, %v; want %d", name, len(got), it.Err(), len(want))
		}
		seq, ok, err := l.Sym(id, dst)
		if err != nil || !ok || seq != want[len(want)-1] {
			t.Fatalf("latest %s: row %d, %v, %v; want %d", name, seq, ok, err, want[len(want)-1])
		}
		if err := keptRow(r, seq, grownAt, dst); err != nil {
			t.Fatalf("latest: %v", err)
		}
	}
	keptScanAll(t, r, rows, grownAt)
}

// TestReaderKeptAcrossGrowth: readers opened before a column is added,
// that read the table before it (a Scan of every row, which maps the
// segments; then again after another writer session), read every row
// after it, with and without ReloadSchema: rows of the new layout in the
// segment they read before (rewritten by the writer's open), in a later
// segment, and in a segment that was compressed (Close compresses a last
// segment of 4,096 rows or more) before the growth.
func TestReaderKeptAcrossGrowth(t *testing.T) {
	const raw = -1 // CompactAge: segments stay raw
	cases := []struct {
		name   string
		seg    int64         // SegmentSize
		cmpAge time.Duration // CompactAge
		// rows before the growth: first session, second session; the
		// grown rows end at total.
		first, second, total uint64
	}{
		{"same segment", 0, 0, 1, 2, 3},
		{"same segment, more rows", 16 << 10, 0, 100, 300, 400},
		// 512 rows a segment: the grown rows in segment 0 (rewritten)
		// and the next two.
		{"later segment", 16 << 10, raw, 400, 510, 1300},
		{"later segment, compacted", 16 << 10, 0, 400, 510, 1300},
		// Segment 0 full before the growth: the grown rows in segment 1.
		{"full segment", 16 << 10, raw, 400, 512, 700},
		{"full segment, compacted", 16 << 10, 0, 400, 512, 700},
		// Close compresses segment 0 (4,096 rows or more).
		{"compressed", 0, 0, 3000, 5000, 5100},
		// 8,192 rows a segment: segment 1 compressed at close.
		{"compressed, later segment", 256 << 10, 0, 5000, 8192 + 4100, 8192*2 + 50},
	}
	for _, c := range cases {
		for _, open := range []bool{false, true} {
			name := c.name
			if open {
				name += ", writer open"
			}
			t.Run(name, func(t *testing.T) {
				db, live := testutil.DB(t)
				opts := writer.Options{LiveDir: live, SegmentSize: c.seg, CompactAge: c.cmpAge}
				create := opts
				create.Schema = store.TickSchema()
				keptSession(t, db, create, false, c.first, false)
				var rs [2]*reader.Reader // [0] reloads the schema, [1] does not
				for i := range rs {
					r, err := reader.Open(db, "trades", nil)
					if err != nil {
						t.Fatal(err)
					}
					defer r.Close()
					keptScan(t, r, reader.OrderAny, 1, c.first, math.MaxUint64)
					rs[i] = r
				}
				keptSession(t, db, opts, false, c.second, false)
				for _, r := range rs {
					r.ReloadSchema()
					keptScan(t, r, reader.OrderAny, 1, c.second, math.MaxUint64)
				}
				keptSession(t, db, opts, true, c.total, open)
				if !rs[0].ReloadSchema() {
					t.Fatal("ReloadSchema after the growth: no change")
				}
				for i, r := range rs {
					t.Run([]string{"reloaded", "not reloaded"}[i], func(t *testing.T) {
						keptReadAll(t, r, c.total, c.second)
						if testutil.Race || open {
							return // (the open writer's compaction allocates too)
						}
						// Mapped again once: Get allocates nothing after.
						get := func() {
							for seq := range c.total {
								if _, err := r.Get(seq); err != nil {
									t.Fatal(err)
								}
							}
						}
						if n := testing.AllocsPerRun(3, get); n != 0 {
							t.Errorf("Get of every row allocates %v times", n)
						}
					})
				}
				fresh, err := reader.Open(db, "trades", nil)
				if err != nil {
					t.Fatal(err)
				}
				defer fresh.Close()
				keptReadAll(t, fresh, c.total, c.second)
			})
		}
	}
}
