package export_test

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tickdb/tickdb/export"
)

// readCSV reads one exported CSV file with encoding/csv: a header row,
// then ts as RFC 3339 (nine fractional digits, UTC), the columns in
// schema order, an empty f64 field for a missing value.
func readCSV(t *testing.T, path string) []trow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if want := []string{"ts", "sym", "price", "size", "venue", "bid", "buy"}; len(recs) == 0 || !slices.Equal(recs[0], want) {
		t.Fatalf("%s: header %q, want %q", path, recs[:min(len(recs), 1)], want)
	}
	f64 := func(s string) float64 {
		if s == "" {
			return math.NaN()
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return v
	}
	out := make([]trow, 0, len(recs)-1)
	for _, rec := range recs[1:] {
		ts, err := time.Parse("2006-01-02T15:04:05.000000000Z", rec[0])
		if err != nil {
			t.Fatalf("%s: ts %q: %v", path, rec[0], err)
		}
		size, err := strconv.ParseInt(rec[3], 10, 64)
		if err != nil {
			t.Fatalf("%s: size %q: %v", path, rec[3], err)
		}
		buy, err := strconv.ParseBool(rec[6])
		if err != nil {
			t.Fatalf("%s: buy %q: %v", path, rec[6], err)
		}
		out = append(out, trow{ts: ts.UnixNano(), sym: rec[1], price: f64(rec[2]), size: size, venue: rec[4], bid: f64(rec[5]), buy: buy})
	}
	return out
}

func TestCSVRoundTrip(t *testing.T) {
	db, rows := makeTable(t, 30_000, 80*time.Hour, 8)
	r := openTicks(t, db)
	for _, tc := range []struct {
		name string
		opts export.Options
	}{
		{"one file per date", export.Options{Format: export.FormatCSV}},
		{"parts", export.Options{Format: export.FormatCSV, FileRows: 4000}},
		{"range", export.Options{Format: export.FormatCSV, From: rows[1000].ts, To: rows[20000].ts, HasFrom: true, HasTo: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "ds")
			res, err := export.Run(context.Background(), r, out, &tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var want []trow
			for _, row := range rows {
				if (!tc.opts.HasFrom || row.ts >= tc.opts.From) && (!tc.opts.HasTo || row.ts < tc.opts.To) {
					want = append(want, row)
				}
			}
			got, files := readDataset(t, out, ".csv", readCSV)
			compareRows(t, got, want)
			if res.Rows != int64(len(want)) || len(res.Files) != len(files) || res.Partitions() != len(wantDates(want)) {
				t.Errorf("result: %d rows, %d files, %d partitions; want %d, %d, %d", res.Rows, len(res.Files), res.Partitions(), len(want), len(files), len(wantDates(want)))
			}
		})
	}
}
