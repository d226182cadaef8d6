package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// treeSum is a checksum of every file under dir: names, sizes, contents.
func treeSum(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "%s %v\n", rel, d.IsDir())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestReadOnly: statements that would write, or reach files, the network
// or extensions, fail with a clear error, and the database directory is
// the same, byte for byte, afterwards.
func TestReadOnly(t *testing.T) {
	db := t.TempDir()
	base := time.Date(2024, 1, 2, 14, 30, 0, 0, time.UTC).UnixNano()
	writeTicks(t, db, "trades", []tick{{base, "AAPL", 1, 1}, {base + 1, "MSFT", 2, 2}})
	secret := filepath.Join(t.TempDir(), "secret.csv")
	if err := os.WriteFile(secret, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeSum(t, db)
	s := openSession(t, db, &Options{MemoryLimit: "1GB", Timeout: time.Minute})
	for _, c := range []struct{ q, want string }{
		{"INSERT INTO trades VALUES (now(), 'X', 1, 1)", "INSERT statements are not allowed"},
		{"UPDATE trades SET price = 0", "UPDATE statements are not allowed"},
		{"DELETE FROM trades", "DELETE statements are not allowed"},
		{"CREATE TABLE trades2 (x INT)", "CREATE statements are not allowed"},
		{"DROP VIEW trades", "DROP statements are not allowed"},
		{"ALTER VIEW trades RENAME TO t2", "ALTER statements are not allowed"},
		{fmt.Sprintf("COPY (SELECT * FROM trades) TO '%s/out.csv'", db), "COPY statements are not allowed"},
		{fmt.Sprintf("SELECT * FROM read_csv('%s')", secret), "disabled"},
		{fmt.Sprintf("ATTACH '%s/x.duckdb'", db), "ATTACH statements are not allowed"},
		{"INSTALL httpfs", "LOAD/INSTALL statements are not allowed"},
		{"LOAD httpfs", "LOAD/INSTALL statements are not allowed"},
		{"SET enable_external_access = true", "lock"},
		{"SET memory_limit = '100GB'", "lock"},
	} {
		rows, err := s.Query(context.Background(), c.q)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.want)) {
			t.Errorf("%s: error %v, want one that says %q", c.q, err, c.want)
		}
		if strings.Contains(c.want, "not allowed") && !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: %v is not ErrReadOnly", c.q, err)
		}
	}
	// Reads still work.
	var n int
	rows, err := s.Query(context.Background(), "SELECT count(*) FROM trades")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		rows.Scan(&n)
	}
	rows.Close()
	if n != 2 {
		t.Fatalf("count %d, want 2", n)
	}
	if after := treeSum(t, db); after != before {
		t.Fatal("the database directory changed")
	}
}

// TestLiveAndGrown: rows published after the engine opened are visible to
// the next statement; a table created later appears; a column added later
// reads NULL for the older rows.
func TestLiveAndGrown(t *testing.T) {
	db := t.TempDir()
	base := time.Date(2024, 1, 2, 14, 30, 0, 0, time.UTC).UnixNano()
	writeTicks(t, db, "trades", []tick{{base, "AAPL", 1, 1}})
	s := openSession(t, db, nil)
	count := func(q string) int {
		t.Helper()
		rows, err := s.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			rows.Scan(&n)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("SELECT count(*) FROM trades"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
	writeTicks(t, db, "trades", []tick{{base + 1, "MSFT", 2, 2}}) // reopens and appends
	writeTicks(t, db, "quotes", []tick{{base + 2, "IBM", 3, 3}})  // a new table
	if n := count("SELECT count(*) FROM trades"); n != 2 {
		t.Fatalf("%d rows after an append, want 2", n)
	}
	if n := count("SELECT count(*) FROM quotes"); n != 1 {
		t.Fatalf("%d rows in the new table, want 1", n)
	}

	// Grow the table by two columns and append a row that has them.
	w, err := writer.Open(db, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddColumns(store.Column{Name: "fee", Type: store.TypeF64}, store.Column{Name: "venue", Type: store.TypeSym}); err != nil {
		t.Fatal(err)
	}
	schema := w.Schema()
	fee, _ := schema.Col("fee")
	venue, _ := schema.Col("venue")
	sym, _ := schema.Col("sym")
	row := w.NewRow()
	row.SetTs(base + 3)
	id, _ := w.SymbolString("AAPL")
	row.SetSym(sym, id)
	row.SetF64(fee, 0.25)
	xnas, _ := w.SymbolString("XNAS")
	row.SetSym(venue, xnas)
	if _, err := w.Append(row); err != nil {
		t.Fatal(err)
	}
	w.Publish()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count("SELECT count(*) FROM trades WHERE fee IS NULL AND venue IS NULL"); n != 2 {
		t.Fatalf("%d older rows read the new columns as NULL, want 2", n)
	}
	if n := count("SELECT count(*) FROM trades WHERE fee = 0.25 AND venue = 'XNAS' AND sym = 'AAPL'"); n != 1 {
		t.Fatalf("%d new rows with the new columns, want 1", n)
	}
}
