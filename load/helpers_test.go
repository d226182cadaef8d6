package load

import (
	"os"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/tablecheck"
	"github.com/tickdb/tickdb/reader"
)

// tableRows reads every row of table as text lines "ts col=value ..." in
// schema order, symbols by name, and fails unless there are count rows.
func tableRows(t *testing.T, db, table string, count int) []string {
	t.Helper()
	rows, err := tablecheck.Rows(db, table)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != count {
		t.Fatalf("table %s: %d rows, want %d:\n%s", table, len(rows), count, strings.Join(rows, "\n"))
	}
	return rows
}

// verifyAll checks every table in db: clean, and nothing unpublished.
func verifyAll(t testing.TB, db string) {
	t.Helper()
	ents, err := os.ReadDir(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		rep, err := reader.Verify(db, e.Name(), nil)
		if err != nil || rep.Unpublished != 0 {
			t.Errorf("verify %s: %+v, %v", e.Name(), rep, err)
		}
	}
}
