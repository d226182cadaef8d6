package export_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// TestExportAddedColumns: a table whose columns were added as it grew
// (writer.AddColumn, docs/FORMAT.md §15) exports file for file, byte for
// byte, as a table created with every column whose rows hold the missing
// values (NaN, "") before each column's first row: CSV and Parquet, one
// worker and several, raw and compacted.
func TestExportAddedColumns(t *testing.T) {
	full := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64}, store.Column{Name: "qty", Type: store.TypeF64},
		store.Column{Name: "venue", Type: store.TypeSym}, store.Column{Name: "n", Type: store.TypeI64})
	const rows = 30_000
	addAt := []int{0, 0, 0, 7_000, 12_345, 12_345} // by column of full
	write := func(s *store.Schema, grow, compact bool) *reader.Reader {
		db, live := testutil.DB(t)
		w, err := writer.Open(db, "ticks", &writer.Options{Schema: s, LiveDir: live, SegmentSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		for i := range rows {
			for c := range full.Cols {
				if grow && addAt[c] == i && i > 0 {
					if err := w.AddColumn(full.Cols[c]); err != nil {
						t.Fatal(err)
					}
				}
			}
			ws := w.Schema()
			row := w.NewRow()
			ts := int64(1_700_000_000_000_000_000) + int64(i)*int64(7_919_000_000) // several days
			row.SetTs(ts)
			sym, _ := w.SymbolString([]string{"AAPL", "MSFT", "X Y"}[i%3])
			row.SetSym(ws.ColAt(1), sym)
			row.SetF64(ws.ColAt(2), float64(i)/8)
			if c, ok := ws.Col("qty"); ok {
				v := math.NaN()
				if i >= addAt[3] {
					v = float64(i % 100)
				}
				row.SetF64(c, v)
			}
			if c, ok := ws.Col("venue"); ok {
				v := ""
				if i >= addAt[4] {
					v = []string{"XNAS", "ARCX"}[i%2]
				}
				id, _ := w.SymbolString(v)
				row.SetSym(c, id)
			}
			if c, ok := ws.Col("n"); ok && i >= addAt[5] {
				row.SetI64(c, int64(i))
			}
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
		}
		if compact {
			if _, err := w.CloseCompacted(0); err != nil {
				t.Fatal(err)
			}
		} else if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := reader.Open(db, "ticks", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	base := store.MustSchema(full.Cols[:3]...)
	for _, compact := range []bool{false, true} {
		a, b := write(full, false, compact), write(base, true, compact)
		for _, o := range []export.Options{
			{Format: export.FormatCSV, Workers: 1},
			{Format: export.FormatParquet, Workers: 1, RowGroupRows: 4000},
			{Format: export.FormatParquet, Workers: 3, RowGroupRows: 4000},
		} {
			outA, outB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
			ra, err := export.Run(context.Background(), a, outA, &o)
			if err != nil {
				t.Fatal(err)
			}
			rb, err := export.Run(context.Background(), b, outB, &o)
			if err != nil {
				t.Fatal(err)
			}
			if ra.Rows != rows || rb.Rows != rows || len(ra.Files) != len(rb.Files) || len(ra.Files) < 2 {
				t.Fatalf("compact %v %+v: %d rows in %d files, %d in %d", compact, o, ra.Rows, len(ra.Files), rb.Rows, len(rb.Files))
			}
			for i := range ra.Files {
				fa, fb := ra.Files[i], rb.Files[i]
				relA, relB := fa.Path, fb.Path
				da, err := os.ReadFile(filepath.Join(outA, fa.Path))
				if err != nil {
					t.Fatal(err)
				}
				db, err := os.ReadFile(filepath.Join(outB, fb.Path))
				if err != nil {
					t.Fatal(err)
				}
				if relA != relB || !bytes.Equal(da, db) {
					t.Fatalf("compact %v %+v: file %s (%d bytes) and %s (%d bytes) differ", compact, o, relA, len(da), relB, len(db))
				}
			}
		}
	}
}
