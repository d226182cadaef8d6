package reader_test

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// writeTicks writes n rows over 3 symbols into db/name with tiny segments
// (128 rows) and returns the open writer. mod, if not nil, changes the
// writer's options.
func writeTicks(t *testing.T, db, live, name string, n int, mod func(*writer.Options)) *writer.Writer {
	t.Helper()
	s := store.TickSchema()
	o := &writer.Options{Schema: s, SegmentSize: 4096, LiveDir: live}
	if mod != nil {
		mod(o)
	}
	w, err := writer.Open(db, name, o)
	if err != nil {
		t.Fatal(err)
	}
	symc, _ := s.Col("sym")
	size, _ := s.Col("size")
	var ids []uint32
	for _, name := range []string{"AAA", "BBB", "CCC"} {
		id, err := w.SymbolString(name)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	row := s.NewRow()
	for i := 0; i < n; i++ {
		row.SetTs(int64(i / 2))
		row.SetSym(symc, ids[i%len(ids)])
		row.SetI64(size, int64(i))
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestVerifyCleanWhileWriterOpen(t *testing.T) {
	db, live := testutil.DB(t)
	w := writeTicks(t, db, live, "t", 1000, nil)
	rep, err := reader.Verify(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Rows of compressed segments below the postings floor have no
	// postings entries: Compacted counts them.
	if rep.Rows != 1000 || rep.Postings+rep.Compacted != 1000 || rep.Symbols != 3 || rep.TimeEntries != (1000+63)/64 {
		t.Fatalf("report %+v", rep)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err = reader.Verify(db, "t", nil); err != nil || rep.Rows != 1000 {
		t.Fatalf("after close: %+v %v", rep, err)
	}
}

func TestVerifyFindsFlippedByte(t *testing.T) {
	db, live := testutil.DB(t)
	// Raw segments: the test damages seg-N.dat.
	w := writeTicks(t, db, live, "t", 1000, func(o *writer.Options) { o.CompactAge = -1 })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Row 300 is row 44 of segment 2 (128 rows per segment).
	path := format.SegPath(db+"/t", 2)
	off := int64(format.BlockSize + 44*32 + 9)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0}
	f.ReadAt(b, off)
	b[0] ^= 0x10
	f.WriteAt(b, off)
	f.Close()
	_, err = reader.Verify(db, "t", nil)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("want CorruptError, got %v", err)
	}
	if ce.Path != path || ce.Offset != off-9 {
		t.Fatalf("got %s at %d, want %s at %d", ce.Path, ce.Offset, path, off-9)
	}
}

// TestVerifySymbolsCountTheKeyColumn: the symbols Verify reports are the
// key sym column's distinct values, not the dictionary every sym column
// shares; each sym column's values are counted apart, the rows written
// before a column was added reading it as the empty symbol.
func TestVerifySymbolsCountTheKeyColumn(t *testing.T) {
	db, live := testutil.DB(t)
	w := writeTicks(t, db, live, "t", 100, nil) // sym: AAA, BBB, CCC
	if err := w.AddColumn(store.Column{Name: "status", Type: store.TypeSym}); err != nil {
		t.Fatal(err)
	}
	halted, err := w.SymbolString("halted")
	if err != nil {
		t.Fatal(err)
	}
	s := w.Schema()
	symc, _ := s.Col("sym")
	status, _ := s.Col("status")
	aaa, _ := w.SymbolString("AAA")
	row := s.NewRow()
	row.SetTs(1000)
	row.SetSym(symc, aaa)
	row.SetSym(status, halted)
	if _, err := w.Append(row); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := reader.Verify(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	// status: "halted", and missing (the empty symbol) in the 100 rows
	// before it.
	want := []reader.SymColumnValues{{Name: "sym", Values: 3}, {Name: "status", Values: 2}}
	if rep.Rows != 101 || rep.Symbols != 3 || rep.Dictionary != 4 || !slices.Equal(rep.SymColumns, want) {
		t.Fatalf("report: %d rows, %d symbols, dictionary %d, columns %+v; want 101, 3, 4, %+v", rep.Rows, rep.Symbols, rep.Dictionary, rep.SymColumns, want)
	}
	// SymbolsWithRows finds the same symbols from the index, not a scan.
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	n, err := r.SymbolsWithRows(r.Symbols(), func(id uint32) {
		name, _ := r.SymbolName(id)
		names = append(names, name)
	})
	if err != nil || n != 3 || !slices.Equal(names, []string{"AAA", "BBB", "CCC"}) {
		t.Fatalf("SymbolsWithRows: %d %q %v; want 3 [AAA BBB CCC]", n, names, err)
	}
}
