package load

import (
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"
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
