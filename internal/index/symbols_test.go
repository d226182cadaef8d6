package index

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

func newSymbols(t *testing.T) (string, *Symbols) {
	t.Helper()
	path := filepath.Join(t.TempDir(), format.SymName)
	if err := CreateSymbols(path, testID, vfs.OS); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSymbols(path, testID, vfs.OS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return path, s
}

func openSymbolsRO(t *testing.T, path string) *Symbols {
	t.Helper()
	s, err := OpenSymbols(path, testID, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var symNames = []string{"AAPL", "MSFT", "BRK.B", "", "with space, comma=eq", "12345678", strings.Repeat("L", store.MaxSymLen), "Z"}

func appendAll(t *testing.T, s *Symbols, names []string) {
	t.Helper()
	for i, n := range names {
		id, err := s.Append([]byte(n), uint64(100+i))
		if err != nil {
			t.Fatal(err)
		}
		if int(id) != s.Len()-1 {
			t.Fatalf("Append(%q) = %d with %d symbols", n, id, s.Len())
		}
	}
}

func TestSymbolsAppendLookup(t *testing.T) {
	_, s := newSymbols(t)
	if s.Len() != 0 || s.End() != format.BlockSize {
		t.Fatalf("empty dictionary: len %d end %d", s.Len(), s.End())
	}
	appendAll(t, s, symNames)
	end := uint64(format.BlockSize)
	for i, n := range symNames {
		id, ok := s.Lookup([]byte(n))
		if !ok || id != uint32(i) {
			t.Errorf("Lookup(%q) = %d, %v; want %d", n[:min(len(n), 20)], id, ok, i)
		}
		if s.Name(uint32(i)) != n || s.Dir(uint32(i)) != uint64(100+i) || s.Dirs()[i] != uint64(100+i) {
			t.Errorf("symbol %d: name %q dir %d", i, s.Name(uint32(i))[:min(len(n), 20)], s.Dir(uint32(i)))
		}
		end += uint64(format.SymEntrySize(len(n)))
	}
	if s.End() != end {
		t.Errorf("End = %d, want %d", s.End(), end)
	}
	if _, ok := s.Lookup([]byte("NOPE")); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
	if s.Name(uint32(len(symNames))) != "" {
		t.Error("Name of an unknown id is not empty")
	}
	if _, err := s.Append(make([]byte, store.MaxSymLen+1), 1); err == nil {
		t.Error("Append of an over-long name succeeded")
	}
	// A duplicate entry (never written by the writer, which looks up
	// first) keeps the first id for its name.
	id, _ := s.Append([]byte("AAPL"), 999)
	if got, _ := s.Lookup([]byte("AAPL")); got != 0 || id != uint32(len(symNames)) {
		t.Errorf("duplicate: appended as %d, Lookup gives %d", id, got)
	}
}

func TestSymbolsLookupAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	_, s := newSymbols(t)
	appendAll(t, s, symNames)
	name := []byte("BRK.B")
	if n := testing.AllocsPerRun(1000, func() { s.Lookup(name) }); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

func TestSymbolsRefresh(t *testing.T) {
	path, w := newSymbols(t)
	r := openSymbolsRO(t, path)
	if err := r.Refresh(0, format.BlockSize); err != nil || r.Len() != 0 {
		t.Fatalf("Refresh(0) = %v, len %d", err, r.Len())
	}
	// Publish in steps, as the writer does through the control file.
	for i, n := range symNames {
		w.Append([]byte(n), uint64(100+i))
		if err := r.Refresh(uint64(w.Len()), w.End()); err != nil {
			t.Fatalf("Refresh after %d: %v", i, err)
		}
		if r.Len() != i+1 || r.Name(uint32(i)) != n || r.Dir(uint32(i)) != uint64(100+i) || r.End() != w.End() {
			t.Fatalf("reader after %d: len %d end %d", i, r.Len(), r.End())
		}
		if id, ok := r.Lookup([]byte(n)); !ok || id != uint32(i) {
			t.Fatalf("reader Lookup(%d) = %d, %v", i, id, ok)
		}
	}
	// An older count is a no-op.
	if err := r.Refresh(2, format.BlockSize); err != nil || r.Len() != len(symNames) {
		t.Fatalf("Refresh(older) = %v, len %d", err, r.Len())
	}

	cases := []struct {
		name  string
		count uint64
		end   func(w *Symbols) uint64
		off   func(w *Symbols) int64
	}{
		{"count_past_entries", 2, func(*Symbols) uint64 { return format.BlockSize + 24 }, func(*Symbols) int64 { return format.BlockSize + 24 }},
		{"end_inside_entry", 1, func(*Symbols) uint64 { return format.BlockSize + 10 }, func(*Symbols) int64 { return format.BlockSize }},
		{"end_past_file", 1, func(*Symbols) uint64 { return 1 << 30 }, func(*Symbols) int64 { return 1 << 30 }},
		{"end_past_reservation", 1, func(*Symbols) uint64 { return symReserve + 8 }, func(*Symbols) int64 { return symReserve + 8 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh := openSymbolsRO(t, path)
			err := fresh.Refresh(tc.count, tc.end(w))
			wantCorrupt(t, err, path, tc.off(w))
		})
	}
	t.Run("damaged_entry", func(t *testing.T) {
		_, w := newSymbols(t)
		appendAll(t, w, symNames[:3])
		second := int64(format.BlockSize + format.SymEntrySize(len(symNames[0])))
		w.m.b[second+format.SymEntryHeader] ^= 1 // a name byte of entry 1
		fresh := openSymbolsRO(t, w.Path())
		err := fresh.Refresh(3, w.End())
		wantCorrupt(t, err, w.Path(), second)
		if fresh.Len() != 1 {
			t.Errorf("entries before the damage: %d, want 1", fresh.Len())
		}
	})
}

func TestSymbolsScan(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(w *Symbols)
		want   int
	}{
		{"all_entries", func(*Symbols) {}, len(symNames)},
		{"damaged_fourth_entry", func(w *Symbols) {
			off := format.BlockSize
			for _, n := range symNames[:3] {
				off += format.SymEntrySize(len(n))
			}
			w.m.b[off+4] ^= 0xFF // its check word
		}, 3},
		{"torn_first_entry", func(w *Symbols) { clear(w.m.b[format.BlockSize+8 : format.BlockSize+16]) }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, w := newSymbols(t)
			appendAll(t, w, symNames)
			tc.mutate(w)
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			// Recovery scans past the published count (none published here).
			s, err := OpenSymbols(path, testID, vfs.OS)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Scan(); got != tc.want || s.Len() != tc.want {
				t.Fatalf("Scan = %d (len %d), want %d", got, s.Len(), tc.want)
			}
			for i := range tc.want {
				if s.Name(uint32(i)) != symNames[i] {
					t.Errorf("symbol %d = %q", i, s.Name(uint32(i)))
				}
			}
			if s.Scan() != tc.want {
				t.Error("a second Scan found more")
			}
		})
	}
	t.Run("empty_file", func(t *testing.T) {
		_, w := newSymbols(t)
		if w.Scan() != 0 {
			t.Fatal("Scan of an empty dictionary found entries")
		}
	})
}

func TestSymbolsTruncate(t *testing.T) {
	for _, keep := range []int{0, 1, 3, len(symNames) - 1, len(symNames), len(symNames) + 5} {
		t.Run(fmt.Sprint("keep_", keep), func(t *testing.T) {
			path, w := newSymbols(t)
			appendAll(t, w, symNames)
			w.Truncate(keep)
			k := min(keep, len(symNames))
			end := uint64(format.BlockSize)
			for _, n := range symNames[:k] {
				end += uint64(format.SymEntrySize(len(n)))
			}
			if w.Len() != k || w.End() != end {
				t.Fatalf("after Truncate(%d): len %d end %d, want %d %d", keep, w.Len(), w.End(), k, end)
			}
			for i, n := range symNames {
				id, ok := w.Lookup([]byte(n))
				if ok != (i < k) || ok && id != uint32(i) {
					t.Errorf("Lookup(symbol %d) = %d, %v after Truncate(%d)", i, id, ok, keep)
				}
			}
			// New entries take the next ids and overwrite the old tail.
			id, err := w.Append([]byte("NEW"), 7)
			if err != nil || id != uint32(k) {
				t.Fatalf("Append after Truncate = %d, %v", id, err)
			}
			r := openSymbolsRO(t, path)
			if err := r.Refresh(uint64(w.Len()), w.End()); err != nil {
				t.Fatal(err)
			}
			if r.Name(uint32(k)) != "NEW" || r.Dir(uint32(k)) != 7 {
				t.Errorf("reader sees %q", r.Name(uint32(k)))
			}
		})
	}
}

func TestSymbolsGrow(t *testing.T) {
	path, w := newSymbols(t)
	r := openSymbolsRO(t, path)
	const n = 5000 // 5000 * 32 bytes is past the 64 KiB the file starts with
	for i := range n {
		if _, err := w.Append(fmt.Appendf(nil, "SYM%012d", i), uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := os.Stat(path)
	if uint64(st.Size()) < w.End() {
		t.Fatalf("file is %d bytes, entries end at %d", st.Size(), w.End())
	}
	if err := r.Refresh(n, w.End()); err != nil {
		t.Fatal(err)
	}
	if r.Len() != n || r.Name(n-1) != fmt.Sprintf("SYM%012d", n-1) {
		t.Fatalf("reader len %d", r.Len())
	}
	if err := w.SyncTo(w.End()); err != nil {
		t.Fatal(err)
	}
}

func TestSymbolsOpenErrors(t *testing.T) {
	path, w := newSymbols(t)
	w.Close()
	other := testID
	other[3] ^= 1
	_, err := OpenSymbols(path, other, nil)
	wantCorrupt(t, err, path, 16)
	flipByte(path, 33)
	_, err = OpenSymbols(path, testID, nil)
	wantCorrupt(t, err, path, 32)
}

// TestSymbolsManyLookup: ids found by name through every way a dictionary
// is filled (appends, one refresh of all, refreshes in steps, a scan),
// across the table's growths; names not there are not found; after a
// truncation the names cut are gone and the rest stay; a name twice in a
// (damaged) dictionary finds its first id.
func TestSymbolsManyLookup(t *testing.T) {
	const n = 20_000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("O%07dC", i*7)
	}
	path, w := newSymbols(t)
	appendAll(t, w, names[:n-1])
	if _, err := w.Append([]byte(names[3]), 1); err != nil { // a duplicate
		t.Fatal(err)
	}
	check := func(what string, s *Symbols, k int) {
		t.Helper()
		for i, name := range names[:k] {
			if i == n-1 {
				name = names[3]
			}
			want := uint32(i)
			if i == n-1 {
				want = 3
			}
			if id, ok := s.Lookup([]byte(name)); !ok || id != want {
				t.Fatalf("%s: Lookup(%q) = %d, %v; want %d", what, name, id, ok, want)
			}
		}
		for _, absent := range []string{"O0000001C", "", "O9999999C", names[min(k, n-2)] + "x"} {
			if id, ok := s.Lookup([]byte(absent)); ok {
				t.Fatalf("%s: Lookup(%q) = %d of an absent name", what, absent, id)
			}
		}
		if k < n-1 {
			if _, ok := s.Lookup([]byte(names[k])); ok {
				t.Fatalf("%s: Lookup(%q), symbol %d of %d, found", what, names[k], k, s.Len())
			}
		}
	}
	check("appended", w, n)
	r := openSymbolsRO(t, path)
	if err := r.Refresh(n, w.End()); err != nil {
		t.Fatal(err)
	}
	check("refreshed at once", r, n)
	r2 := openSymbolsRO(t, path)
	for k := 1; k <= n; k = k*3 + 1 {
		if err := r2.Refresh(uint64(k), w.End()); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("refreshed to %d", k), r2, k)
	}
	r3 := openSymbolsRO(t, path)
	if got := r3.Scan(); got != n {
		t.Fatalf("Scan found %d symbols, want %d", got, n)
	}
	check("scanned", r3, n)
	r3.Truncate(777)
	check("truncated", r3, 777)
}
