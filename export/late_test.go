package export_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/writer"
)

// Exports of tables with late rows (writer.Options.LateWindow), checked
// against a brute-force model: every partition must hold the rows of its
// date, and the dataset, partitions and parts in name order, the rows of
// the range sorted by (ts, seq).

// lateWin is the test tables' late window.
const lateWin = int64(90 * time.Second)

// genLateRows makes n rows from start, most in order (ties among them),
// share of them late: up to lateWin behind the newest, some equal to an
// earlier row's ts. Within the window after a midnight, a tenth of the
// rows more are late, stamped on the date before. size is the row's seq,
// so that rows with equal ts are told apart.
func genLateRows(n int, share float64, seed uint64, start int64) []trow {
	rng := rand.New(rand.NewPCG(seed, 11))
	base := genRows(n, 0, seed, start)
	rows := make([]trow, n)
	day := int64(24 * time.Hour)
	newest := start
	for i := range rows {
		ts := newest
		mid := (newest / day) * day
		switch x := rng.Float64(); {
		case i == 0:
		case newest-mid < lateWin && x < 0.1:
			ts = mid - 1 - rng.Int64N(lateWin-(newest-mid)) // the date before
		case x < share:
			ts = newest - 1 - rng.Int64N(lateWin)
			if rng.IntN(4) == 0 {
				// An earlier row's ts, if it is inside the window.
				if j := i - 1 - rng.IntN(min(i, 20)); newest-rows[j].ts <= lateWin {
					ts = rows[j].ts
				}
			}
		case x < 0.4:
			// a tie
		default:
			// Time runs slower around midnights: every date change has
			// rows within the window on both sides of it.
			step := int64(3 * time.Minute)
			if h := newest % day; h < int64(10*time.Minute) || h > day-int64(10*time.Minute) {
				step = int64(5 * time.Second)
			}
			ts = newest + 1 + rng.Int64N(step)
		}
		newest = max(newest, ts)
		rows[i] = base[i]
		rows[i].ts, rows[i].size = ts, int64(i)
	}
	return rows
}

// makeLateTable writes rows into a new table "ticks" with a late window
// (small segments), and returns the database and live directories.
func makeLateTable(t *testing.T, rows []trow) (db, live string) {
	t.Helper()
	db, live = testutil.DB(t)
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: testSchema(), LiveDir: live, SegmentSize: 64 << 10,
		HotBytes: -1, LateWindow: time.Duration(lateWin)})
	if err != nil {
		t.Fatal(err)
	}
	must(t, appendRows(w, rows))
	st := w.Stats()
	must(t, w.Close())
	t.Logf("%d rows, %d late", len(rows), st.Late)
	if st.Late == 0 && len(rows) > 100 {
		t.Fatal("the table has no late row")
	}
	return db, live
}

// timeOrder is the rows of [from, to) (each bound only when its has flag
// is set) sorted by (ts, seq): what an export must hold, in order.
func timeOrder(rows []trow, from, to int64, hasFrom, hasTo bool) []trow {
	var out []trow
	for _, r := range rows {
		if (!hasFrom || r.ts >= from) && (!hasTo || r.ts < to) {
			out = append(out, r)
		}
	}
	// Stable: rows with equal ts stay in seq order.
	slices.SortStableFunc(out, func(a, b trow) int { return cmp.Compare(a.ts, b.ts) })
	return out
}

// crossings counts the late rows stamped on an earlier date than a row
// before them: those that a seq-order export would put in the wrong
// partition.
func crossings(rows []trow) int {
	n := 0
	newest := int64(math.MinInt64)
	for _, r := range rows {
		if r.ts < newest && dateOf(r.ts) != dateOf(newest) {
			n++
		}
		newest = max(newest, r.ts)
	}
	return n
}

// rowGroups is the rows of each row group of a Parquet file.
func rowGroups(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var n []int64
	for _, rg := range pf.RowGroups() {
		n = append(n, rg.NumRows())
	}
	return n
}

// lateExport runs one export of table "ticks" in db and checks it
// against the model: rows, order, partitions, files and their sizes,
// row groups, progress.
func lateExport(t *testing.T, db string, rows []trow, opts export.Options) {
	t.Helper()
	r := openTicks(t, db)
	want := timeOrder(rows, opts.From, opts.To, opts.HasFrom, opts.HasTo)
	out := filepath.Join(t.TempDir(), "ds")
	var progress [][2]int64
	opts.Progress = func(done, total int64) { progress = append(progress, [2]int64{done, total}) }
	res, err := export.Run(context.Background(), r, out, &opts)
	if err != nil {
		t.Fatal(err)
	}
	ext, read := ".parquet", readParquet(format.Zstd)
	if opts.Format == export.FormatCSV {
		ext, read = ".csv", readCSV
	}
	got, files := readDataset(t, out, ext, read)
	compareRows(t, got, want)
	if res.Rows != int64(len(want)) || res.Partitions() != len(wantDates(want)) || len(res.Files) != len(files) {
		t.Errorf("result: %d rows, %d partitions, %d files; want %d, %d, %d", res.Rows, res.Partitions(), len(res.Files), len(want), len(wantDates(want)), len(files))
	}
	// Files and row groups hold about FileRows and RowGroupRows rows: a
	// cut's rows differ from its seqs' by the late rows around it.
	const slack = 150
	var sum int64
	for i, f := range res.Files {
		if i < len(files) && f.Path != files[i] {
			t.Errorf("result file %d is %s, want %s", i, f.Path, files[i])
		}
		if f.Rows == 0 || opts.FileRows > 0 && f.Rows > opts.FileRows+slack {
			t.Errorf("%s: %d rows (FileRows %d)", f.Path, f.Rows, opts.FileRows)
		}
		sum += f.Rows
		if ext == ".parquet" && opts.RowGroupRows > 0 {
			for _, n := range rowGroups(t, filepath.Join(out, f.Path)) {
				if n == 0 || n > int64(opts.RowGroupRows)+slack {
					t.Errorf("%s: a row group of %d rows (RowGroupRows %d)", f.Path, n, opts.RowGroupRows)
				}
			}
		}
	}
	if sum != res.Rows {
		t.Errorf("files hold %d rows, result says %d", sum, res.Rows)
	}
	if opts.FileRows > 0 && len(want) > 3*int(opts.FileRows) && len(files) <= len(wantDates(want)) {
		t.Errorf("%d files for %d dates: FileRows %d split no date", len(files), len(wantDates(want)), opts.FileRows)
	}
	last := progress[len(progress)-1]
	if len(progress) < 2 || progress[0][0] != 0 || last != [2]int64{res.Rows, res.Rows} ||
		!slices.IsSortedFunc(progress, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) }) {
		t.Errorf("progress calls %v, want from 0, non-decreasing, ending at %d of %d", progress, res.Rows, res.Rows)
	}
	if !opts.HasFrom && !opts.HasTo && progress[0][1] != res.Rows {
		t.Errorf("progress total %d, want %d (the whole table)", progress[0][1], res.Rows)
	}
}

// TestExportLateRows: random late mixes, exported whole and in windows,
// as CSV and as Parquet (small files and row groups, several workers),
// before and after the table is compacted.
func TestExportLateRows(t *testing.T) {
	seed := testutil.Seed(t, 0)
	day := int64(24 * time.Hour)
	for i, share := range []float64{0.01, 0.2} {
		t.Run(fmt.Sprintf("late=%v", share), func(t *testing.T) {
			rows := genLateRows(12_000, share, seed+uint64(i), t0)
			if n := crossings(rows); n < 5 {
				t.Fatalf("only %d late rows cross a midnight", n)
			} else {
				t.Logf("%d late rows stamped on the date before a row that came before them", n)
			}
			db, live := makeLateTable(t, rows)
			dates := wantDates(timeOrder(rows, 0, 0, false, false))
			if len(dates) < 3 {
				t.Fatalf("%d dates, want >= 3", len(dates))
			}
			mid := (t0/day + 1) * day
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			type window struct {
				name           string
				from, to       int64
				hasFrom, hasTo bool
			}
			windows := []window{
				{"all", 0, 0, false, false},
				{"from midnight", mid, 0, true, false},
				{"to midnight", 0, mid + day, false, true},
				{"midnight to midnight", mid, mid + day, true, true},
			}
			for range 3 {
				a, b := rows[rng.IntN(len(rows))].ts, rows[rng.IntN(len(rows))].ts
				windows = append(windows, window{"rows' ts", min(a, b), max(a, b), true, true})
			}
			check := func(t *testing.T) {
				for _, w := range windows {
					for _, o := range []export.Options{
						{Format: export.FormatCSV},
						{Format: export.FormatCSV, FileRows: 700},
						{RowGroupRows: 97, FileRows: 500, Workers: 3},
						{RowGroupRows: 1000, Workers: 1},
					} {
						o.From, o.To, o.HasFrom, o.HasTo = w.from, w.to, w.hasFrom, w.hasTo
						t.Run(fmt.Sprintf("%s/%v/file=%d/group=%d", w.name, o.Format, o.FileRows, o.RowGroupRows), func(t *testing.T) {
							lateExport(t, db, rows, o)
						})
					}
				}
			}
			t.Run("raw", check)
			w, err := writer.Open(db, "ticks", &writer.Options{LiveDir: live})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.CloseCompacted(0); err != nil {
				t.Fatal(err)
			}
			t.Run("compacted", check)
		})
	}
}

// TestExportLateRowsExtremes: late rows next to the first and the last ns
// a ts can hold, among rows stamped MaxInt64 (which a half-open range
// leaves out), with files of one or two rows; with two, a date's first
// file is planned empty (its end is cut at a late row stamped before
// every row of the date that came before it) and not written.
func TestExportLateRowsExtremes(t *testing.T) {
	const day = int64(24 * time.Hour)
	var rows []trow
	for i, ts := range []int64{
		math.MinInt64 + 5, math.MinInt64, math.MinInt64 + 5, math.MinInt64 + 1, // late to the first day
		-3, -7, 0, -1, 2, // late across the epoch
		day + 100, day + 200, day + 50, day + 300, // the date's first file, cut at its late row, is empty
		math.MaxInt64 - 10, math.MaxInt64, math.MaxInt64 - 5, math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64, math.MaxInt64 - 10,
	} {
		rows = append(rows, trow{ts: ts, sym: "X", venue: "V", price: float64(i), bid: math.NaN(), size: int64(i), buy: ts > 0})
	}
	db, _ := makeLateTable(t, rows)
	for _, o := range []export.Options{
		{Format: export.FormatCSV},
		{Format: export.FormatCSV, FileRows: 1},
		{FileRows: 2, RowGroupRows: 1, Workers: 3},
		{From: math.MinInt64 + 1, To: math.MaxInt64, HasFrom: true, HasTo: true},
		{From: -5, HasFrom: true, Format: export.FormatCSV},
		{From: math.MaxInt64 - 5, HasFrom: true, FileRows: 1},
		{From: math.MaxInt64, HasFrom: true},
		{To: 0, HasTo: true, Format: export.FormatCSV},
	} {
		t.Run(fmt.Sprintf("%v/file=%d/from=%v:%d/to=%v:%d", o.Format, o.FileRows, o.HasFrom, o.From, o.HasTo, o.To), func(t *testing.T) {
			lateExport(t, db, rows, o)
		})
	}
}

// TestExportLateLiveTable: while a writer appends rows, late ones among
// them, into two live slots recycled under the export, the export holds
// exactly the rows published when it started, in time order.
func TestExportLateLiveTable(t *testing.T) {
	db, live := testutil.DB(t)
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: testSchema(), LiveDir: live, SegmentSize: 64 << 10,
		LiveSlots: 2, HotBytes: -1, LateWindow: time.Duration(lateWin)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	rows := genLateRows(150_000, 0.1, 5, t0)
	first := 20_000
	must(t, appendRows(w, rows[:first]))
	r := openTicks(t, db)
	done := make(chan error, 1)
	go func() { done <- appendRows(w, rows[first:]) }()
	for _, f := range []export.Format{export.FormatParquet, export.FormatCSV} {
		out := filepath.Join(t.TempDir(), "ds")
		res, err := export.Run(context.Background(), r, out, &export.Options{Format: f, RowGroupRows: 500, Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows < int64(first) {
			t.Fatalf("%v: exported %d rows, want at least %d", f, res.Rows, first)
		}
		var got []trow
		if f == export.FormatCSV {
			got, _ = readDataset(t, out, ".csv", readCSV)
		} else {
			got, _ = readDataset(t, out, ".parquet", readParquet(format.Zstd))
		}
		compareRows(t, got, timeOrder(rows[:res.Rows], 0, 0, false, false))
	}
	must(t, <-done)
}
