package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// retainDB makes table "t" with 128-row segments holding n rows, ts
// 1 ms apart, and returns the open writer (closed by the caller or at the
// end of the test).
func retainDB(t *testing.T, n int) (db string, w *writer.Writer) {
	t.Helper()
	db, live := testutil.DB(t)
	s := store.TickSchema()
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, SegmentSize: 4096, LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	symc, _ := s.Col("sym")
	id, _ := w.SymbolString("AAA")
	row := w.NewRow()
	for i := 0; i < n; i++ {
		row.SetTs(int64(i) * 1_000_000)
		row.SetSym(symc, id)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	w.Publish()
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	return db, w
}

func TestRetainCommand(t *testing.T) {
	db, w := retainDB(t, 10*128+5) // segments 0..10
	// A running writer holds the table: retain says where retention runs.
	code, _, errs := execCLI(t, "retain", "--db", db, "--max-bytes", "1")
	if code != 1 || !strings.Contains(errs, "locked by another writer") || !strings.Contains(errs, "--retain-bytes") {
		t.Fatalf("retain on a held table: exit %d: %s", code, errs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seg := format.SegFileSize(32, 128)
	code, out, errs := execCLI(t, "retain", "--db", db, "--table", "t", "--max-bytes", strconv.FormatInt(3*seg, 10))
	if code != 0 || !strings.Contains(out, "t: deleted 8 segments (1,024 rows") || !strings.Contains(out, "first row now 1,024") {
		t.Fatalf("retain --max-bytes: exit %d\n%s\n%s", code, out, errs)
	}
	// By age: the last row's ts is 1,284 ms, so --max-age 100ms deletes
	// the segments all of whose rows are before 1,184 ms: segment 8 (rows
	// 1,024-1,151) is, segment 9 (1,152-1,279) is not.
	code, out, errs = execCLI(t, "retain", "--db", db, "--max-age", "100ms")
	if code != 0 || !strings.Contains(out, "first row now 1,152") {
		t.Fatalf("retain --max-age: exit %d\n%s\n%s", code, out, errs)
	}
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.FirstSeq() != 9*128 || r.Len() != 10*128+5 {
		t.Fatalf("first %d, count %d", r.FirstSeq(), r.Len())
	}
	// Raw or compressed in the background (segment 9 was the newest
	// sealed one), segment 8's file is gone.
	for _, path := range []string{format.SegPath(filepath.Join(db, "t"), 8), format.ZSegPath(filepath.Join(db, "t"), 8)} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("segment 8 still there: %v", err)
		}
	}
	// stat and verify see the deleted rows as such.
	code, out, errs = runCLI("stat", "--db", db)
	if code != 0 || !strings.Contains(out, "first row") || !strings.Contains(out, "1,152") {
		t.Fatalf("stat after retention: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs = runCLI("verify", "--db", db); code != 0 {
		t.Fatalf("verify after retention: exit %d\n%s\n%s", code, out, errs)
	}
}

func TestRetainCommandBadInput(t *testing.T) {
	db, w := retainDB(t, 10)
	w.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"retain", "--db", db}, "give --max-age, --max-bytes or both"},
		{[]string{"retain", "--db", db, "--max-age", "-1h"}, "negative"},
		{[]string{"retain", "--db", db, "--max-bytes", "lots"}, "is not a size"},
		{[]string{"retain", "--db", db, "--table", "nope", "--max-age", "1h"}, `no table "nope"`},
	} {
		code, _, errs := runCLI(c.args...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}
