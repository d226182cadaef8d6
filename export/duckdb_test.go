package export_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/internal/harness/duckjs"
	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// TestExportDuckDB reads a Parquet export back with a real DuckDB, through
// its Node API pinned in testdata/duckdb (package.json, package-lock.json),
// and checks every row against the table: ts to the nanosecond (DuckDB's
// epoch_ns), its type (TIMESTAMP_NS, the one DuckDB type that keeps nine
// digits), every value bit for bit, the date partition column and the file
// each row came from; and that a filter on a nanosecond ts selects the
// same rows in DuckDB as in Go, row-group statistics and all.
//
// It needs node and testdata/duckdb/node_modules, which .ci/run installs
// ("npm ci --prefix export/testdata/duckdb"); without them it skips, or
// fails when CI is set. The test never installs anything itself.
func TestExportDuckDB(t *testing.T) {
	node := duckjs.Node(t)
	rows, cut := duckdbRows()
	db, live := testutil.DB(t)
	w := openWriter(t, db, live, 0)
	must(t, appendRows(w, rows))
	must(t, w.Close())
	r := openTicks(t, db)
	out := filepath.Join(t.TempDir(), "ds")
	// Small row groups and files: DuckDB reads many of each, across dates.
	res, err := export.Run(context.Background(), r, out, &export.Options{RowGroupRows: 100, FileRows: 250, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != int64(len(rows)) || res.Partitions() != len(wantDates(rows)) || len(res.Files) <= res.Partitions() {
		t.Fatalf("export: %d rows, %d partitions, %d files; want %d rows, %d partitions, more files than partitions",
			res.Rows, res.Partitions(), len(res.Files), len(rows), len(wantDates(rows)))
	}

	// A filter from a ts 8 ns after the row before it, in the same µs:
	// DuckDB must select from that exact ns on.
	var wantAfter int
	for _, row := range rows {
		if row.ts >= cut {
			wantAfter++
		}
	}
	src := fmt.Sprintf("read_parquet(%s, hive_partitioning = true, filename = true, file_row_number = true)",
		duckjs.SQLString(filepath.Join(out, "**", "*.parquet")))
	// A session zone other than UTC, as a user's may be: ts must not
	// depend on it.
	got := duckjs.Run(t, node,
		"SET TimeZone = 'America/New_York'",
		"SELECT typeof(ts), epoch_ns(ts), sym, price, size, venue, bid, buy, date, filename FROM "+src+
			" ORDER BY filename, file_row_number",
		fmt.Sprintf("SELECT count(*) FROM %s WHERE ts >= make_timestamp_ns(%d)", src, cut),
	)
	if err := got.Results[0].Error; err != "" {
		t.Fatalf("DuckDB: %s", err)
	}
	all := got.Results[1]
	t.Logf("DuckDB %s read %d rows in %d files", got.Version, len(all.Rows), len(res.Files))
	if all.Error != "" {
		t.Fatalf("DuckDB: %s", all.Error)
	}
	wantTypes := []string{"VARCHAR", "BIGINT", "VARCHAR", "DOUBLE", "BIGINT", "VARCHAR", "DOUBLE", "BOOLEAN", "DATE", "VARCHAR"}
	if !slices.Equal(all.Types, wantTypes) {
		t.Errorf("DuckDB column types %v, want %v", all.Types, wantTypes)
	}
	if len(all.Rows) != len(rows) {
		t.Fatalf("DuckDB read %d rows, want %d", len(all.Rows), len(rows))
	}
	// The files in name order are in time order: rows come back as
	// written, file after file.
	var wantFile []string
	for _, f := range res.Files {
		for range f.Rows {
			wantFile = append(wantFile, filepath.ToSlash(f.Path))
		}
	}
	bad := 0
	for i, dr := range all.Rows {
		want := rows[i]
		var errs []string
		check := func(col string, got any, want any) {
			if got != want {
				errs = append(errs, fmt.Sprintf("%s %v, want %v", col, got, want))
			}
		}
		check("typeof(ts)", dr.Str(t, 0), "TIMESTAMP_NS")
		check("epoch_ns(ts)", dr.I64(t, 1), want.ts)
		check("sym", dr.Str(t, 2), want.sym)
		check("price", dr.F64(t, 3), f64Bits(want.price))
		check("size", dr.I64(t, 4), want.size)
		check("venue", dr.Str(t, 5), want.venue)
		check("bid", dr.F64(t, 6), f64Bits(want.bid))
		check("buy", dr[7], any(want.buy))
		check("date", dr.Str(t, 8), dateOf(want.ts))
		rel, _ := filepath.Rel(out, dr.Str(t, 9))
		check("file", filepath.ToSlash(rel), wantFile[i])
		if len(errs) > 0 {
			t.Errorf("row %d (ts %d): %s", i, want.ts, strings.Join(errs, "; "))
			if bad++; bad == 5 {
				t.FailNow()
			}
		}
	}
	if after := got.Results[2]; after.Error != "" {
		t.Errorf("DuckDB, filtering on ts: %s", after.Error)
	} else if n := after.Rows[0].I64(t, 0); n != int64(wantAfter) {
		t.Errorf("DuckDB counts %d rows with ts >= %d, want %d", n, cut, wantAfter)
	}
}

// duckdbRows are the rows TestExportDuckDB exports: ts whose nine
// sub-second digits are all nonzero, over four UTC dates, with the last
// ns of each date (.999999999), the first (midnight) and the one after
// it, and ties; the other columns as genRows makes them (missing f64s,
// -0, a subnormal, infinities, symbols that need quoting). cut is the
// second of two ts 8 ns apart in one µs.
func duckdbRows() (rows []trow, cut int64) {
	rng := rand.New(rand.NewPCG(11, 13))
	day := int64(24 * time.Hour)
	first := (t0/day + 1) * day // the first midnight after t0
	var ts []int64
	for range 1200 {
		sec := t0/1e9 + rng.Int64N(3*86400)
		frac := int64(0)
		for range 9 {
			frac = frac*10 + 1 + rng.Int64N(9) // each digit 1-9
		}
		ts = append(ts, sec*1e9+frac)
	}
	for _, m := range []int64{first, first + day} {
		ts = append(ts, m-1, m-1, m, m+1) // a tie on the last ns of a date
	}
	cut = first + 12*3600*1e9 + 123_456_789
	ts = append(ts, cut-8, cut)
	slices.Sort(ts)
	rows = genRows(len(ts), time.Hour, 17, t0)
	for i := range rows {
		rows[i].ts = ts[i]
	}
	return rows, cut
}

// f64Bits is v's IEEE 754 bits in hex, as query.js prints a DOUBLE, or
// NULL for a NaN: the export writes tickdb's missing value as a null.
func f64Bits(v float64) string {
	if math.IsNaN(v) {
		return "NULL"
	}
	return fmt.Sprintf("%016x", math.Float64bits(v))
}
