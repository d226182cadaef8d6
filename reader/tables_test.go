package reader_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// TestTables: a database's tables are its directories with a control
// file, sorted; a table being created, a plain directory, a file and a
// bad name are not tables, and a missing database has none.
func TestTables(t *testing.T) {
	db, live := testutil.DB(t)
	for _, name := range []string{"quotes", "trades"} {
		w, err := writer.Open(db, name, &writer.Options{Schema: store.TickSchema(), LiveDir: filepath.Join(live, name), SegmentSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{".trades2.tmp-1", "empty", "bad name"} {
		if err := os.Mkdir(filepath.Join(db, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(db, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := reader.Tables(db)
	if err != nil || !slices.Equal(got, []string{"quotes", "trades"}) {
		t.Fatalf("Tables = %q, %v", got, err)
	}
	for name, want := range map[string]bool{"quotes": true, "trades": true, "empty": false, "nope": false, ".trades2.tmp-1": false} {
		if reader.Exists(db, name) != want {
			t.Errorf("Exists(%q) = %v", name, !want)
		}
	}
	if got, err := reader.Tables(filepath.Join(db, "missing")); err != nil || got != nil {
		t.Fatalf("Tables of a missing database = %q, %v", got, err)
	}
}
