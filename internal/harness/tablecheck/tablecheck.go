// Package tablecheck holds test helpers that need the reader package (kept
// out of internal/harness/testutil, which index's own tests import).
package tablecheck

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
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

// VerifyAll runs reader.Verify on every table of db and fails t unless
// each is clean with nothing unpublished.
func VerifyAll(t testing.TB, db string) {
	t.Helper()
	names, err := reader.Tables(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		rep, err := reader.Verify(db, name, nil)
		if err != nil || rep.Unpublished != 0 {
			t.Errorf("verify %s: %+v, %v", name, rep, err)
		}
	}
}

// Rows reads every row of a table as a text line "ts col=value ..." in
// schema order, symbols by name, floats as %g: what tests compare a
// table's contents with.
func Rows(db, table string) ([]string, error) {
	r, err := reader.Open(db, table, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s := r.Schema()
	var out []string
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		return nil, err
	}
	for it.Next() {
		out = append(out, formatRow(r, s, it.Row()))
	}
	return out, it.Err()
}

func formatRow(r *reader.Reader, s *store.Schema, row store.Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", row.Ts())
	for i := 1; i < len(s.Cols); i++ {
		c := s.ColAt(i)
		b.WriteString(" " + s.Cols[i].Name + "=")
		switch c.Type {
		case store.TypeSym:
			name, err := r.SymbolName(row.Sym(c))
			if err != nil {
				name = "?" + err.Error()
			}
			b.WriteString(name)
		case store.TypeF64:
			fmt.Fprintf(&b, "%g", row.F64(c))
		case store.TypeI64:
			fmt.Fprintf(&b, "%d", row.I64(c))
		case store.TypeBool:
			fmt.Fprintf(&b, "%t", row.Bool(c))
		}
	}
	return b.String()
}
