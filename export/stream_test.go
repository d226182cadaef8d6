package export_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/query"
)

// TestParquetStream writes a table's rows (a range of them, and none)
// through a ParquetStream with small row groups and reads the file back:
// the schema, codec and metadata of Run's files (readParquet checks
// them), every row in order, the row groups cut at RowGroupRows.
func TestParquetStream(t *testing.T) {
	db, rows := makeTable(t, 5000, time.Hour, 7)
	r := openTicks(t, db)
	for _, tc := range []struct {
		name   string
		q      query.Query
		groups int
	}{
		{"all", query.Query{Table: "ticks"}, 4},
		{"range", query.Query{Table: "ticks", From: rows[1000].ts, To: rows[2600].ts, HasFrom: true, HasTo: true}, 0},
		{"none", query.Query{Table: "ticks", From: rows[4999].ts + 1, HasFrom: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []trow
			for _, row := range rows {
				if (!tc.q.HasFrom || row.ts >= tc.q.From) && (!tc.q.HasTo || row.ts < tc.q.To) {
					want = append(want, row)
				}
			}
			var buf bytes.Buffer
			ps, err := export.NewParquetStream(&buf, r, &export.Options{RowGroupRows: 1500})
			if err != nil {
				t.Fatal(err)
			}
			n, err := query.RunFunc(context.Background(), r, tc.q, ps.Row)
			if err != nil {
				t.Fatal(err)
			}
			if err := ps.Close(); err != nil {
				t.Fatal(err)
			}
			if n != int64(len(want)) || ps.Rows() != n {
				t.Fatalf("%d rows run, %d streamed, want %d", n, ps.Rows(), len(want))
			}
			path := filepath.Join(t.TempDir(), "q.parquet")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			compareRows(t, readParquet(format.Zstd)(t, path), want)
			if tc.groups > 0 {
				if got := countRowGroups(t, path); got != tc.groups {
					t.Errorf("%d row groups, want %d", got, tc.groups)
				}
			}
		})
	}
}

func countRowGroups(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return len(pf.RowGroups())
}
