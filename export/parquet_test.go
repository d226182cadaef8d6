package export_test

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// readDataset reads every file of an exported dataset back, partitions
// and parts in name order (= time order), checking that each file lies in
// a date=YYYY-MM-DD directory, is named part-NNNNN.ext, and holds only
// rows of its date; read decodes one file.
func readDataset(t *testing.T, dir, ext string, read func(t *testing.T, path string) []trow) (rows []trow, files []string) {
	t.Helper()
	parts, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	partRE := regexp.MustCompile(`^date=(\d{4}-\d{2}-\d{2})$`)
	fileRE := regexp.MustCompile(`^part-\d{5}` + regexp.QuoteMeta(ext) + `$`)
	for _, p := range parts {
		m := partRE.FindStringSubmatch(p.Name())
		if m == nil || !p.IsDir() {
			t.Errorf("%s: not a date partition", p.Name())
			continue
		}
		ents, err := os.ReadDir(filepath.Join(dir, p.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) == 0 {
			t.Errorf("%s: empty partition", p.Name())
		}
		for i, f := range ents {
			if !fileRE.MatchString(f.Name()) {
				t.Errorf("%s/%s: not a part file", p.Name(), f.Name())
				continue
			}
			if want := "part-0000" + string(rune('0'+i)) + ext; i < 10 && f.Name() != want {
				t.Errorf("%s/%s: want %s (parts numbered from 0)", p.Name(), f.Name(), want)
			}
			rel := filepath.Join(p.Name(), f.Name())
			files = append(files, rel)
			got := read(t, filepath.Join(dir, rel))
			for _, r := range got {
				if d := dateOf(r.ts); d != m[1] {
					t.Fatalf("%s: row ts %d (%s) in partition %s", rel, r.ts, d, m[1])
				}
			}
			rows = append(rows, got...)
		}
	}
	return rows, files
}

// wantColumns is the Parquet schema the test table must get: name,
// physical type, repetition, logical type.
var wantColumns = []struct {
	name    string
	typ     format.Type
	rep     format.FieldRepetitionType
	logical string
}{
	{"ts", format.Int64, format.Required, "TIMESTAMP(isAdjustedToUTC=false,unit=NANOS)"},
	{"sym", format.ByteArray, format.Required, "STRING"},
	{"price", format.Double, format.Optional, ""},
	{"size", format.Int64, format.Required, "INT(64,true)"},
	{"venue", format.ByteArray, format.Required, "STRING"},
	{"bid", format.Double, format.Optional, ""},
	{"buy", format.Boolean, format.Required, ""},
}

// readParquet opens one Parquet file with the library, checks its schema
// (names, order, types, the ts logical type), its metadata, codec and the
// symbol columns' dictionary encoding, and decodes its rows.
func readParquet(codec format.CompressionCodec) func(t *testing.T, path string) []trow {
	return func(t *testing.T, path string) []trow {
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
		md := pf.Metadata()
		if len(md.Schema) != 1+len(wantColumns) {
			t.Fatalf("%s: %d schema elements, want %d", path, len(md.Schema), 1+len(wantColumns))
		}
		for i, w := range wantColumns {
			e := md.Schema[1+i]
			typ, _ := e.Type.Get()
			rep, _ := e.RepetitionType.Get()
			if e.Name != w.name || typ != w.typ || rep != w.rep || e.LogicalType.String() != w.logical {
				t.Errorf("%s: column %d is %s %v %v %q, want %s %v %v %q", path, i, e.Name, typ, rep, e.LogicalType.String(), w.name, w.typ, w.rep, w.logical)
			}
		}
		// Not adjusted to UTC, so that DuckDB reads it as TIMESTAMP_NS;
		// and no converted type, which would say µs or ms (or, read by
		// the old rules, a UTC instant).
		if ts, ok := md.Schema[1].LogicalType.Value.(*format.TimestampType); !ok || ts.IsAdjustedToUTC {
			t.Errorf("%s: ts logical type %v, want TIMESTAMP not adjusted to UTC", path, md.Schema[1].LogicalType.Value)
		} else if _, ok := ts.Unit.Value.(*format.NanoSeconds); !ok {
			t.Errorf("%s: ts unit %v, want NANOS", path, ts.Unit.Value)
		}
		if ct, ok := md.Schema[1].ConvertedType.Get(); ok {
			t.Errorf("%s: ts converted type %v, want none", path, ct)
		}
		if v, _ := pf.Lookup("tickdb.table"); v != "ticks" {
			t.Errorf("%s: tickdb.table metadata %q, want ticks", path, v)
		}
		for _, rg := range md.RowGroups {
			for ci, c := range rg.Columns {
				if c.MetaData.Codec != codec {
					t.Errorf("%s: column %d codec %v, want %v", path, ci, c.MetaData.Codec, codec)
				}
				if typ, _ := md.Schema[1+ci].Type.Get(); typ == format.ByteArray && !slices.Contains(c.MetaData.Encoding, format.RLEDictionary) {
					t.Errorf("%s: sym column %d encodings %v, want dictionary", path, ci, c.MetaData.Encoding)
				}
			}
		}
		var out []trow
		buf := make([]parquet.Row, 512)
		for _, rg := range pf.RowGroups() {
			rr := rg.Rows()
			for {
				n, err := rr.ReadRows(buf)
				for _, row := range buf[:n] {
					out = append(out, decodeParquetRow(t, row))
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					rr.Close()
					t.Fatalf("%s: %v", path, err)
				}
			}
			rr.Close()
		}
		if int64(len(out)) != pf.NumRows() {
			t.Errorf("%s: read %d rows, footer says %d", path, len(out), pf.NumRows())
		}
		return out
	}
}

func decodeParquetRow(t *testing.T, row parquet.Row) trow {
	t.Helper()
	if len(row) != len(wantColumns) {
		t.Fatalf("row of %d values, want %d", len(row), len(wantColumns))
	}
	f64 := func(v parquet.Value) float64 {
		if v.IsNull() {
			return math.NaN()
		}
		return v.Double()
	}
	return trow{
		ts: row[0].Int64(), sym: string(row[1].ByteArray()), price: f64(row[2]), size: row[3].Int64(),
		venue: string(row[4].ByteArray()), bid: f64(row[5]), buy: row[6].Boolean(),
	}
}

// compareRows fails unless got and want are the same rows: ts to the ns,
// symbols exactly, floats bit for bit (NaN = missing, any NaN).
func compareRows(t *testing.T, got, want []trow) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d rows, want %d", len(got), len(want))
	}
	bad := 0
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.ts != w.ts || g.sym != w.sym || g.venue != w.venue || g.size != w.size || g.buy != w.buy ||
			!sameFloat(g.price, w.price) || !sameFloat(g.bid, w.bid) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, g, w)
			if bad++; bad == 5 {
				t.FailNow()
			}
		}
	}
}

// wantDates is the sorted distinct dates of rows.
func wantDates(rows []trow) []string {
	var d []string
	for _, r := range rows {
		if s := dateOf(r.ts); len(d) == 0 || d[len(d)-1] != s {
			d = append(d, s)
		}
	}
	return d
}

func TestParquetRoundTrip(t *testing.T) {
	db, rows := makeTable(t, 60_000, 80*time.Hour, 1)
	dates := wantDates(rows)
	if len(dates) < 3 {
		t.Fatalf("test table spans %d dates, want >= 3", len(dates))
	}
	for _, tc := range []struct {
		name string
		opts export.Options
		want format.CompressionCodec
	}{
		{"zstd", export.Options{}, format.Zstd},
		{"snappy small groups and files, 3 workers", export.Options{Compression: export.CompressionSnappy, RowGroupRows: 1000, FileRows: 7000, Workers: 3}, format.Snappy},
		{"uncompressed, 1 worker", export.Options{Compression: export.CompressionNone, RowGroupRows: 999, Workers: 1}, format.Uncompressed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openTicks(t, db)
			out := filepath.Join(t.TempDir(), "out", "ds")
			var progress []int64
			opts := tc.opts
			opts.Progress = func(n, total int64) {
				if total != int64(len(rows)) {
					t.Errorf("progress total %d, want %d", total, len(rows))
				}
				progress = append(progress, n)
			}
			res, err := export.Run(context.Background(), r, out, &opts)
			if err != nil {
				t.Fatal(err)
			}
			got, files := readDataset(t, out, ".parquet", readParquet(tc.want))
			compareRows(t, got, rows)
			if res.Rows != int64(len(rows)) || res.Partitions() != len(dates) || len(res.Files) != len(files) {
				t.Errorf("result: %d rows, %d partitions, %d files; want %d, %d, %d", res.Rows, res.Partitions(), len(res.Files), len(rows), len(dates), len(files))
			}
			var sum int64
			for i, f := range res.Files {
				if i < len(files) && f.Path != files[i] {
					t.Errorf("result file %d is %s, want %s", i, f.Path, files[i])
				}
				st, err := os.Stat(filepath.Join(out, f.Path))
				if err != nil || st.Size() != f.Bytes {
					t.Errorf("%s: stat %v, %v; result says %d bytes", f.Path, st, err, f.Bytes)
				}
				if opts.FileRows > 0 && f.Rows > opts.FileRows {
					t.Errorf("%s: %d rows, more than FileRows %d", f.Path, f.Rows, opts.FileRows)
				}
				sum += f.Rows
			}
			if sum != res.Rows {
				t.Errorf("files hold %d rows, result says %d", sum, res.Rows)
			}
			if opts.FileRows > 0 && len(files) <= len(dates) {
				t.Errorf("%d files for %d dates: FileRows %d did not split a date", len(files), len(dates), opts.FileRows)
			}
			if len(progress) == 0 || progress[len(progress)-1] != res.Rows || !slices.IsSorted(progress) {
				t.Errorf("progress calls %v, want non-decreasing, ending at %d", progress, res.Rows)
			}
			t.Logf("%d rows, %d files, %d bytes (%.1f bytes/row)", res.Rows, len(res.Files), res.Bytes(), float64(res.Bytes())/float64(res.Rows))
		})
	}
}

// TestParquetRange: From/To select [From, To), and the partitions are
// those of the selected rows only.
func TestParquetRange(t *testing.T) {
	db, rows := makeTable(t, 20_000, 80*time.Hour, 2)
	r := openTicks(t, db)
	day := int64(24 * time.Hour)
	mid := (t0/day + 1) * day // midnight after t0
	for _, tc := range []struct {
		name           string
		from, to       int64
		hasFrom, hasTo bool
	}{
		{"from midnight", mid, 0, true, false},
		{"to midnight", 0, mid, false, true},
		{"one day and a bit", mid + 1, mid + day + 3*int64(time.Hour), true, true},
		{"a row's exact ts", rows[5000].ts, rows[15000].ts, true, true},
		{"empty", mid + 10*day, 0, true, false},
		{"from = to", mid, mid, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []trow
			for _, row := range rows {
				if (!tc.hasFrom || row.ts >= tc.from) && (!tc.hasTo || row.ts < tc.to) {
					want = append(want, row)
				}
			}
			out := filepath.Join(t.TempDir(), "ds")
			res, err := export.Run(context.Background(), r, out, &export.Options{From: tc.from, To: tc.to, HasFrom: tc.hasFrom, HasTo: tc.hasTo})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := readDataset(t, out, ".parquet", readParquet(format.Zstd))
			compareRows(t, got, want)
			if res.Rows != int64(len(want)) || res.Partitions() != len(wantDates(want)) {
				t.Errorf("result: %d rows in %d partitions, want %d in %d", res.Rows, res.Partitions(), len(want), len(wantDates(want)))
			}
		})
	}
}

// TestExportRefusesExisting: a partition that the export would write and
// that holds a file stops it before it writes anything; an empty one, or
// one of another date, does not.
func TestExportRefusesExisting(t *testing.T) {
	db, rows := makeTable(t, 5_000, 60*time.Hour, 3)
	r := openTicks(t, db)
	dates := wantDates(rows)
	out := t.TempDir()
	// Another date's partition and an empty one of a date written: fine.
	must(t, os.MkdirAll(filepath.Join(out, "date=2001-01-01"), 0o755))
	must(t, os.WriteFile(filepath.Join(out, "date=2001-01-01", "part-00000.parquet"), []byte("x"), 0o644))
	must(t, os.MkdirAll(filepath.Join(out, "date="+dates[1]), 0o755))
	if _, err := export.Run(context.Background(), r, out, nil); err != nil {
		t.Fatalf("first export: %v", err)
	}
	before := listTree(t, out)
	// The same again: every partition holds a file now.
	_, err := export.Run(context.Background(), r, out, nil)
	if !errors.Is(err, export.ErrExists) || !strings.Contains(err.Error(), "date="+dates[0]) {
		t.Fatalf("second export: %v, want ErrExists naming date=%s", err, dates[0])
	}
	// A range whose only date is the last: refused on that one.
	_, err = export.Run(context.Background(), r, out, &export.Options{From: rows[len(rows)-1].ts, HasFrom: true, Format: export.FormatCSV})
	if !errors.Is(err, export.ErrExists) || !strings.Contains(err.Error(), "date="+dates[len(dates)-1]) {
		t.Fatalf("export of the last date: %v, want ErrExists naming date=%s", err, dates[len(dates)-1])
	}
	if after := listTree(t, out); !slices.Equal(before, after) {
		t.Errorf("a refused export changed the directory:\nbefore %v\nafter  %v", before, after)
	}
}

// TestExportCancel: a cancelled export stops and removes what it wrote,
// leaving the directory as it found it.
func TestExportCancel(t *testing.T) {
	db, _ := makeTable(t, 150_000, 80*time.Hour, 4)
	r := openTicks(t, db)
	parent := t.TempDir()
	must(t, os.WriteFile(filepath.Join(parent, "keep"), nil, 0o644))
	out := filepath.Join(parent, "a", "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Progress comes after every row group: cancel when two files are
	// complete, while the workers build the next row groups.
	opts := &export.Options{RowGroupRows: 1000, FileRows: 10_000, Progress: func(done, _ int64) {
		if done >= 25_000 {
			cancel()
		}
	}}
	_, err := export.Run(ctx, r, out, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("export: %v, want context.Canceled", err)
	}
	if got := listTree(t, parent); !slices.Equal(got, []string{"keep"}) {
		t.Errorf("after a cancelled export the directory holds %v, want only keep", got)
	}
}

func TestExportErrors(t *testing.T) {
	db, _ := makeTable(t, 100, time.Hour, 5)
	r := openTicks(t, db)
	file := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		name string
		dir  string
		opts *export.Options
		want string
	}{
		{"from after to", t.TempDir(), &export.Options{From: 2, To: 1, HasFrom: true, HasTo: true}, "export: bad option: from 1970-01-01T00:00:00.000000002Z is after to 1970-01-01T00:00:00.000000001Z"},
		{"bad format", t.TempDir(), &export.Options{Format: 9}, "export: bad option: format format(9)"},
		{"negative row groups", t.TempDir(), &export.Options{RowGroupRows: -1}, "export: bad option: -1 rows per row group"},
		{"out is a file", file, nil, "export ticks: mkdir " + file + ": not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := export.Run(context.Background(), r, tc.dir, tc.opts)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParquetSchema prints the schema of the test table, as the export
// writes it.
func TestParquetSchema(t *testing.T) {
	got := export.ParquetSchema(testSchema())
	t.Logf("\n%s", got)
	for _, want := range []string{
		"message tickdb {",
		"required int64 ts (TIMESTAMP(isAdjustedToUTC=false,unit=NANOS));",
		"required binary sym (STRING);",
		"optional double price;",
		"required int64 size (INT(64,true));",
		"required boolean buy;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("schema has no %q", want)
		}
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:required|optional) \S+ (\w+)`).FindAllStringSubmatch(got, -1) {
		names = append(names, m[1])
	}
	if want := []string{"ts", "sym", "price", "size", "venue", "bid", "buy"}; !slices.Equal(names, want) {
		t.Errorf("columns %v, want %v (schema order)", names, want)
	}
}

// listTree lists the paths under dir, relative, sorted.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestExportLiveTable exports a table whose writer keeps appending, with
// two live slots so that the slots the export reads are recycled under
// it: the export holds exactly the rows published when it started, every
// one right.
func TestExportLiveTable(t *testing.T) {
	db, live := testutil.DB(t)
	w := openWriter(t, db, live, 2)
	first := genRows(30_000, 30*time.Hour, 6, t0)
	must(t, appendRows(w, first))
	r := openTicks(t, db)
	more := genRows(200_000, 30*time.Hour, 7, first[len(first)-1].ts)
	done := make(chan error, 1)
	go func() { done <- appendRows(w, more) }()
	for _, f := range []export.Format{export.FormatParquet, export.FormatCSV} {
		out := filepath.Join(t.TempDir(), "ds")
		res, err := export.Run(context.Background(), r, out, &export.Options{Format: f, RowGroupRows: 500, Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		// The writer may have published more before the export's start.
		if res.Rows < int64(len(first)) {
			t.Fatalf("%v: exported %d rows, want at least %d", f, res.Rows, len(first))
		}
		want := append(slices.Clone(first), more[:res.Rows-int64(len(first))]...)
		var got []trow
		if f == export.FormatCSV {
			got, _ = readDataset(t, out, ".csv", readCSV)
		} else {
			got, _ = readDataset(t, out, ".parquet", readParquet(format.Zstd))
		}
		compareRows(t, got, want)
	}
	must(t, <-done)
}

// TestExportExtremeDates: dates before the epoch (negative ts, rounded
// down to their day), and the first and last ns a ts can hold.
func TestExportExtremeDates(t *testing.T) {
	db, live := testutil.DB(t)
	w := openWriter(t, db, live, 0)
	var rows []trow
	for _, ts := range []int64{math.MinInt64, math.MinInt64 + 1, -int64(time.Hour), -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64, math.MaxInt64} {
		rows = append(rows, trow{ts: ts, sym: "X", venue: "V", price: float64(ts), bid: math.NaN(), size: ts, buy: ts > 0})
	}
	must(t, appendRows(w, rows))
	must(t, w.Close())
	r := openTicks(t, db)
	for _, f := range []export.Format{export.FormatParquet, export.FormatCSV} {
		out := t.TempDir()
		res, err := export.Run(context.Background(), r, out, &export.Options{Format: f, FileRows: 2})
		if err != nil {
			t.Fatal(err)
		}
		var got []trow
		var files []string
		if f == export.FormatCSV {
			got, files = readDataset(t, out, ".csv", readCSV)
		} else {
			got, files = readDataset(t, out, ".parquet", readParquet(format.Zstd))
		}
		compareRows(t, got, rows)
		// Two rows a file: the last date's three rows make two parts.
		var want []string
		for _, p := range []string{"date=1677-09-21/part-00000", "date=1969-12-31/part-00000", "date=1970-01-01/part-00000", "date=2262-04-11/part-00000", "date=2262-04-11/part-00001"} {
			want = append(want, p+"."+f.String())
		}
		if !slices.Equal(files, want) || res.Rows != int64(len(rows)) {
			t.Errorf("%v: %d rows in files %v, want %d in %v", f, res.Rows, files, len(rows), want)
		}
	}
}
