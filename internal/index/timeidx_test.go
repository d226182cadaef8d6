package index

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
)

func newTimeIndex(t *testing.T) (string, *TimeIndex) {
	t.Helper()
	path := filepath.Join(t.TempDir(), format.TimeIdxName)
	if err := CreateTimeIndex(path, testID, vfs.OS); err != nil {
		t.Fatal(err)
	}
	ti, err := OpenTimeIndex(path, testID, vfs.OS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ti.Close() })
	return path, ti
}

func TestTimeIndexSetAt(t *testing.T) {
	path, w := newTimeIndex(t)
	initial := uint64(timeInitial-format.BlockSize) / 8
	if w.Capacity() != initial {
		t.Fatalf("Capacity = %d, want %d", w.Capacity(), initial)
	}
	vals := map[uint64]int64{0: math.MinInt64, 1: -1, 2: 0, 3: 1_700_000_000_000_000_000, initial - 1: math.MaxInt64}
	for k, v := range vals {
		w.Set(k, v)
	}
	for k, v := range vals {
		if got := w.At(k); got != v {
			t.Errorf("At(%d) = %d, want %d", k, got, v)
		}
	}
	// Entry k sits at 4096 + 8k, little-endian, on disk.
	if err := w.Sync(initial); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(le.Uint64(b[format.BlockSize+3*8:])); got != vals[3] {
		t.Errorf("entry 3 on disk = %d", got)
	}
	r, err := OpenTimeIndex(path, testID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for k, v := range vals {
		if got := r.At(k); got != v {
			t.Errorf("reader At(%d) = %d, want %d", k, got, v)
		}
	}
}

func TestTimeIndexGrowCovers(t *testing.T) {
	path, w := newTimeIndex(t)
	r, err := OpenTimeIndex(path, testID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c0 := w.Capacity()
	cases := []struct {
		name string
		n    uint64
		want bool
	}{
		{"none", 0, true},
		{"first", 1, true},
		{"all", c0, true},
		{"one_past", c0 + 1, false},
		{"far_past", c0 * 100, false},
		{"past_reservation", timeReserve, false},
	}
	for _, tc := range cases {
		t.Run("before_grow/"+tc.name, func(t *testing.T) {
			if got := r.Covers(tc.n); got != tc.want {
				t.Errorf("Covers(%d) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
	if err := w.Grow(c0 * 10); err != nil {
		t.Fatal(err)
	}
	if w.Capacity() < c0*10 {
		t.Fatalf("Capacity %d after Grow(%d)", w.Capacity(), c0*10)
	}
	if (format.BlockSize+8*w.Capacity())%format.BlockSize != 0 {
		t.Errorf("capacity %d is not whole blocks", w.Capacity())
	}
	w.Set(c0*10-1, 77)
	// The reader refreshes its idea of the size from the file.
	if !r.Covers(c0 * 10) {
		t.Fatal("reader does not see the grown file")
	}
	if r.At(c0*10-1) != 77 {
		t.Errorf("reader At = %d", r.At(c0*10-1))
	}
	if r.Covers(c0*10 + 1000) {
		t.Error("reader covers past the grown size")
	}
	// Growing to less is a no-op.
	if err := w.Grow(1); err != nil || w.Capacity() < c0*10 {
		t.Errorf("Grow(1): %v, capacity %d", err, w.Capacity())
	}
	if err := w.Grow(timeReserve); err == nil {
		t.Error("Grow past the reservation succeeded")
	}
}

func TestTimeIndexOpenErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(path string)
		off    int64
	}{
		{"header_flip", func(p string) { flipByte(p, 20) }, 32},
		{"magic_flip", func(p string) { flipByte(p, 1) }, 0},
		{"truncated", func(p string) { os.Truncate(p, 1000) }, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, w := newTimeIndex(t)
			w.Close()
			tc.mutate(path)
			_, err := OpenTimeIndex(path, testID, nil)
			wantCorrupt(t, err, path, tc.off)
		})
	}
	t.Run("wrong_kind", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x")
		if err := CreatePostings(path, testID, vfs.OS); err != nil {
			t.Fatal(err)
		}
		_, err := OpenTimeIndex(path, testID, nil)
		wantCorrupt(t, err, path, 0)
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := OpenTimeIndex(filepath.Join(t.TempDir(), "x"), testID, nil); !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	})
	t.Run("exists", func(t *testing.T) {
		path, _ := newTimeIndex(t)
		if err := CreateTimeIndex(path, testID, vfs.OS); !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
	})
}

func flipByte(path string, off int64) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	var b [1]byte
	f.ReadAt(b[:], off)
	b[0] ^= 0x10
	f.WriteAt(b[:], off)
}
