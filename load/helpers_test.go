package load

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// tableRows reads every row of table as text lines "ts col=value ..." in
// schema order, symbols by name, and fails unless there are count rows.
func tableRows(t *testing.T, db, table string, count int) []string {
	t.Helper()
	r, err := reader.Open(db, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := r.Schema()
	var rows []string
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		row := it.Row()
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
		rows = append(rows, b.String())
	}
	if err := it.Err(); err != nil {
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
