package main

import (
	"encoding/csv"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// exportRow is one row of the export tests' table.
type exportRow struct {
	ts    int64
	sym   string
	price float64 // NaN: missing
	size  int64
	buy   bool
}

// exportT0 is the first row's ts: 2024-03-09T23:59:59.999999999Z, the
// last ns of a date.
var exportT0 = time.Date(2024, 3, 9, 23, 59, 59, 999_999_999, time.UTC).UnixNano()

// exportRows are the export tests' rows: three dates (the first and last
// ns of a date among them), symbols that need CSV quoting, a missing
// price, ties.
func exportRows() []exportRow {
	h := int64(time.Hour)
	return []exportRow{
		{exportT0, "AAPL", 189.5, 100, true},
		{exportT0 + 1, "MSFT", 410.25, -7, false},
		{exportT0 + 1, "a,b", math.NaN(), 0, true},
		{exportT0 + 2*h, `q"uote`, 1e-7, math.MaxInt64, false},
		{exportT0 + 24*h, "AAPL", -0.5, math.MinInt64, true},
		{exportT0 + 24*h + 1, "ünï", 1.5e300, 3, false},
	}
}

// writeExportTable writes exportRows into table "trades" of a new
// database and returns the database directory.
func writeExportTable(t *testing.T) string {
	t.Helper()
	db, live := testutil.DB(t)
	s := store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64}, store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "buy", Type: store.TypeBool},
	)
	w, err := writer.Open(db, "trades", &writer.Options{Schema: s, LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	row := s.NewRow()
	for _, r := range exportRows() {
		id, err := w.SymbolString(r.sym)
		if err != nil {
			t.Fatal(err)
		}
		row.SetTs(r.ts)
		row.SetSym(s.ColAt(1), id)
		row.SetF64(s.ColAt(2), r.price)
		row.SetI64(s.ColAt(3), r.size)
		row.SetBool(s.ColAt(4), r.buy)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// readExportParquet reads every Parquet file under dir (partitions and
// parts in name order) with the library, checking the partition of each
// row and the ts column's logical type.
func readExportParquet(t *testing.T, dir string) (rows []exportRow, files []string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "date=*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(paths)
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		files = append(files, rel)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			f.Close()
			t.Fatalf("%s: %v", rel, err)
		}
		if lt := pf.Metadata().Schema[1].LogicalType.String(); lt != "TIMESTAMP(isAdjustedToUTC=false,unit=NANOS)" {
			t.Errorf("%s: ts logical type %s", rel, lt)
		}
		if cc := pf.Metadata().RowGroups[0].Columns[0].MetaData.Codec; cc != format.Zstd {
			t.Errorf("%s: codec %v, want zstd", rel, cc)
		}
		buf := make([]parquet.Row, 16)
		for _, rg := range pf.RowGroups() {
			rr := rg.Rows()
			for {
				n, err := rr.ReadRows(buf)
				for _, v := range buf[:n] {
					r := exportRow{ts: v[0].Int64(), sym: string(v[1].ByteArray()), price: math.NaN(), size: v[3].Int64(), buy: v[4].Boolean()}
					if !v[2].IsNull() {
						r.price = v[2].Double()
					}
					if d := time.Unix(0, r.ts).UTC().Format("2006-01-02"); filepath.Dir(rel) != "date="+d {
						t.Errorf("%s: row of %s", rel, d)
					}
					rows = append(rows, r)
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", rel, err)
				}
			}
			rr.Close()
		}
		f.Close()
	}
	return rows, files
}

func sameExportRows(t *testing.T, got, want []exportRow) {
	t.Helper()
	eq := func(a, b exportRow) bool {
		pa, pb := math.Float64bits(a.price), math.Float64bits(b.price)
		return a.ts == b.ts && a.sym == b.sym && a.size == b.size && a.buy == b.buy &&
			(pa == pb || math.IsNaN(a.price) && math.IsNaN(b.price))
	}
	if !slices.EqualFunc(got, want, eq) {
		t.Errorf("rows:\n got %+v\nwant %+v", got, want)
	}
}

var exportSummaryRE = regexp.MustCompile(`^exported (\S+) rows of trades to (\d+) (parquet|csv) files? in (\d+) date partitions? under (\S+) \(.*\) in \S+\n$`)

func TestExportParquetCommand(t *testing.T) {
	db := writeExportTable(t)
	want := exportRows()
	for _, tc := range []struct {
		name   string
		args   []string
		want   []exportRow
		files  []string
		nparts string
	}{
		{"all", nil, want, []string{"date=2024-03-09/part-00000.parquet", "date=2024-03-10/part-00000.parquet", "date=2024-03-11/part-00000.parquet"}, "3"},
		{"from to rfc3339", []string{"--from", "2024-03-10T00:00:00Z", "--to", "2024-03-11T00:00:00.000000001Z"}, want[1:], []string{"date=2024-03-10/part-00000.parquet", "date=2024-03-11/part-00000.parquet"}, "2"},
		{"to ns", []string{"--to", strconv.FormatInt(want[4].ts, 10)}, want[:4], []string{"date=2024-03-09/part-00000.parquet", "date=2024-03-10/part-00000.parquet"}, "2"},
		{"nothing", []string{"--from", "2030-01-01"}, nil, nil, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "ds")
			code, stdout, stderr := runCLI(append([]string{"export", "--db", db, "--table", "trades", "--format", "parquet", "--out", out}, tc.args...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			m := exportSummaryRE.FindStringSubmatch(stdout)
			if m == nil || m[1] != strconv.Itoa(len(tc.want)) || m[2] != strconv.Itoa(len(tc.files)) || m[4] != tc.nparts || m[5] != out {
				t.Errorf("stdout %q: want %d rows, %d files, %s partitions under %s", stdout, len(tc.want), len(tc.files), tc.nparts, out)
			}
			got, files := readExportParquet(t, out)
			sameExportRows(t, got, tc.want)
			if !slices.Equal(files, tc.files) {
				t.Errorf("files %v, want %v", files, tc.files)
			}
		})
	}
}

func TestExportCSVCommand(t *testing.T) {
	db := writeExportTable(t)
	out := filepath.Join(t.TempDir(), "ds")
	code, stdout, stderr := runCLI("export", "--db", db, "--table", "trades", "--format", "csv", "--out", out)
	if code != 0 || stderr != "" || !exportSummaryRE.MatchString(stdout) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// The row at exportT0+24h is the last ns of 2024-03-10, the one after
	// it the first of 2024-03-11.
	want := map[string][][]string{
		"date=2024-03-09/part-00000.csv": {
			{"ts", "sym", "price", "size", "buy"},
			{"2024-03-09T23:59:59.999999999Z", "AAPL", "189.5", "100", "true"},
		},
		"date=2024-03-10/part-00000.csv": {
			{"ts", "sym", "price", "size", "buy"},
			{"2024-03-10T00:00:00.000000000Z", "MSFT", "410.25", "-7", "false"},
			{"2024-03-10T00:00:00.000000000Z", "a,b", "", "0", "true"},
			{"2024-03-10T01:59:59.999999999Z", `q"uote`, "1e-07", "9223372036854775807", "false"},
			{"2024-03-10T23:59:59.999999999Z", "AAPL", "-0.5", "-9223372036854775808", "true"},
		},
		"date=2024-03-11/part-00000.csv": {
			{"ts", "sym", "price", "size", "buy"},
			{"2024-03-11T00:00:00.000000000Z", "ünï", "1.5e+300", "3", "false"},
		},
	}
	paths, _ := filepath.Glob(filepath.Join(out, "date=*", "*"))
	if len(paths) != len(want) {
		t.Errorf("files %v, want %d", paths, len(want))
	}
	for _, p := range paths {
		rel, _ := filepath.Rel(out, p)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if !slices.EqualFunc(recs, want[rel], slices.Equal) {
			t.Errorf("%s:\n got %q\nwant %q", rel, recs, want[rel])
		}
		// Every value parses back to the row's (price bit for bit).
		for _, rec := range recs[1:] {
			ts, err := time.Parse(time.RFC3339Nano, rec[0])
			if err != nil || filepath.Dir(rel) != "date="+ts.UTC().Format("2006-01-02") {
				t.Errorf("%s: ts %s (%v) in the wrong partition", rel, rec[0], err)
			}
			if rec[2] != "" {
				v, err := strconv.ParseFloat(rec[2], 64)
				if err != nil || !slices.ContainsFunc(exportRows(), func(r exportRow) bool {
					return r.ts == ts.UnixNano() && math.Float64bits(r.price) == math.Float64bits(v)
				}) {
					t.Errorf("%s: price %s does not round-trip (%v)", rel, rec[2], err)
				}
			}
		}
	}
}

// TestExportProcess runs "tickdb export" as a separate process, as a user
// would, and reads the dataset back; then a failing one.
func TestExportProcess(t *testing.T) {
	db := writeExportTable(t)
	out := filepath.Join(t.TempDir(), "ds")
	code, stdout, stderr := execCLI(t, "export", "--db", db, "--table", "trades", "--out", out)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if m := exportSummaryRE.FindStringSubmatch(stdout); m == nil || m[1] != "6" || m[3] != "parquet" {
		t.Errorf("stdout %q", stdout)
	}
	got, _ := readExportParquet(t, out)
	sameExportRows(t, got, exportRows())
	// Again into the same directory: refused, one line, nothing changed.
	code, stdout, stderr = execCLI(t, "export", "--db", db, "--table", "trades", "--out", out)
	want := "tickdb: export: partition already holds files: " + filepath.Join(out, "date=2024-03-09") + " holds 1 (part-00000.parquet); remove them or export elsewhere\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("second export: exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, stdout, stderr, want)
	}
}

func TestExportErrors(t *testing.T) {
	db := writeExportTable(t)
	full := t.TempDir()
	if code, _, stderr := runCLI("export", "--db", db, "--table", "trades", "--out", full, "--from", "2024-03-11"); code != 0 {
		t.Fatal(stderr)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "new")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no table", []string{"--out", out}, "tickdb: no table given (--table); tables in " + db + ": trades\n"},
		{"missing table", []string{"--table", "quotes", "--out", out}, `tickdb: no table "quotes" in ` + db + "; tables: trades\n"},
		{"no out", []string{"--table", "trades"}, "tickdb: export: no output directory (--out DIR)\n"},
		{"bad format", []string{"--table", "trades", "--out", out, "--format", "json"}, `tickdb: invalid argument "json" for "--format" flag: export: bad option: unknown format "json" (want parquet or csv)` + "\n"},
		{"bad compression", []string{"--table", "trades", "--out", out, "--compression", "lzo"}, `tickdb: invalid argument "lzo" for "--compression" flag: export: bad option: unknown compression "lzo" (want zstd, snappy or none)` + "\n"},
		{"bad time", []string{"--table", "trades", "--out", out, "--from", "yesterday"}, `tickdb: invalid argument "yesterday" for "--from" flag: `},
		{"from after to", []string{"--table", "trades", "--out", out, "--from", "2024-03-11", "--to", "2024-03-10"}, "tickdb: export: query: bad argument: from 2024-03-11T00:00:00Z is after to 2024-03-10T00:00:00Z (from is inclusive, to exclusive: swap them?)\n"},
		{"partition taken", []string{"--table", "trades", "--out", full, "--format", "csv"}, "tickdb: export: partition already holds files: " + filepath.Join(full, "date=2024-03-11") + " holds 1 (part-00000.parquet); remove them or export elsewhere\n"},
		{"out is a file", []string{"--table", "trades", "--out", file}, "tickdb: export trades: mkdir " + file + ": not a directory\n"},
		{"extra arg", []string{"--table", "trades", "--out", out, "now"}, "tickdb: unknown command \"now\" for \"tickdb export\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"export", "--db", db}, tc.args...)...)
			if code != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q; want 1, nothing", code, stdout)
			}
			if !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting %q", stderr, tc.want)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed export left %s behind (%v)", out, err)
	}
}

// TestExportLateRowsCommand: a late row stamped before midnight that
// arrived after it is exported in ts order into its own date's partition.
func TestExportLateRowsCommand(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym})
	w, err := writer.Open(db, "trades", &writer.Options{Schema: s, LiveDir: live, LateWindow: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	row := s.NewRow()
	for _, r := range []struct {
		ts  int64
		sym string
	}{{exportT0, "A"}, {exportT0 + 1, "B"}, {exportT0 - 5, "LATE"}, {exportT0 + 1, "TIE"}} {
		id, err := w.SymbolString(r.sym)
		if err != nil {
			t.Fatal(err)
		}
		row.SetTs(r.ts)
		row.SetSym(s.ColAt(1), id)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ds")
	if code, stdout, stderr := runCLI("export", "--db", db, "--table", "trades", "--format", "csv", "--out", out); code != 0 || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	want := map[string][][]string{
		"date=2024-03-09/part-00000.csv": {{"ts", "sym"}, {"2024-03-09T23:59:59.999999994Z", "LATE"}, {"2024-03-09T23:59:59.999999999Z", "A"}},
		"date=2024-03-10/part-00000.csv": {{"ts", "sym"}, {"2024-03-10T00:00:00.000000000Z", "B"}, {"2024-03-10T00:00:00.000000000Z", "TIE"}},
	}
	paths, _ := filepath.Glob(filepath.Join(out, "date=*", "*"))
	if len(paths) != len(want) {
		t.Errorf("files %v, want %d", paths, len(want))
	}
	for _, p := range paths {
		rel, _ := filepath.Rel(out, p)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || !slices.EqualFunc(recs, want[rel], slices.Equal) {
			t.Errorf("%s: %v\n got %q\nwant %q", rel, err, recs, want[rel])
		}
	}
}
