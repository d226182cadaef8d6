// Package tablecheck holds test helpers that need the reader package (kept
// out of internal/testutil, which index's own tests import).
package tablecheck

import (
	"testing"

	"github.com/tickdb/tickdb/reader"
)

// Verify runs reader.Verify on a table and fails t unless it is clean,
// holds exactly rows published rows, no unpublished tail, and one postings
// entry per row (the rows compacted below the postings floor aside).
func Verify(t testing.TB, db, name string, rows uint64) {
	t.Helper()
	rep, err := reader.Verify(db, name, nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if rep.Rows != rows || rep.Unpublished != 0 || rep.Postings+rep.Compacted != rows {
		t.Fatalf("verify: %+v, want %d rows", rep, rows)
	}
}
