package writer

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// TestAppendFastPathMatches holds the fused 32-byte append paths (append32,
// appendRows32) to the general one (append): the same rows, with late
// rows, unknown symbols, segment rolls every 128 rows and time-index
// growth, appended with AppendBatch in random batch sizes, with Append, and
// row by row through append, must leave byte-identical row areas, time
// index, postings and dictionary.
func TestAppendFastPathMatches(t *testing.T) {
	s := store.TickSchema()
	symCol, _ := s.Col("sym")
	const n = 20000
	rng := rand.New(rand.NewPCG(3, 5))
	rows := make([]byte, n*32)
	ts := int64(1000)
	for i := 0; i < n; i++ {
		r := store.Row(rows[i*32 : i*32+32])
		ts += int64(rng.IntN(3))
		t := ts
		if rng.IntN(50) == 0 {
			t -= 10 // late
		}
		r.SetTs(t)
		binary.LittleEndian.PutUint64(r[8:], rng.Uint64())
		binary.LittleEndian.PutUint64(r[16:], rng.Uint64())
		id := uint32(rng.IntN(5))
		if rng.IntN(70) == 0 {
			id = 99 // unknown
		}
		r.SetSym(symCol, id)
	}
	type mode int
	const (
		general mode = iota
		single
		batch
	)
	db := t.TempDir()
	open := func(name string) *Writer {
		// CompactAge -1: the raw files are compared byte for byte (the
		// background compaction runs at different times in each).
		w, err := Open(db, name, &Options{Schema: s, SegmentSize: 4096, TimeStride: 4, LiveDir: filepath.Join(t.TempDir(), "live"), CompactAge: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, sym := range []string{"A", "B", "C", "D", "E"} {
			if _, err := w.SymbolString(sym); err != nil {
				t.Fatal(err)
			}
		}
		return w
	}
	names := []string{"general", "single", "batch"}
	var counts []uint64
	for m, name := range names {
		w := open(name)
		brng := rand.New(rand.NewPCG(9, 9))
		for i := 0; i < n; {
			switch mode(m) {
			case general:
				_, _ = w.append(rows[i*32 : i*32+32])
				i++
			case single:
				_, _ = w.Append(rows[i*32 : i*32+32])
				i++
			case batch:
				k := min(n-i, 1+brng.IntN(200))
				_, got, err := w.AppendBatch(rows[i*32 : (i+k)*32])
				if err != nil {
					got++ // skip the refused row
				} else if got != k {
					t.Fatalf("AppendBatch stored %d of %d with no error", got, k)
				}
				i += got
			}
			if i%300 == 0 {
				w.Publish()
			}
		}
		counts = append(counts, w.Len())
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if counts[1] != counts[0] || counts[2] != counts[0] || counts[0] < n*9/10 {
		t.Fatalf("rows stored: %v", counts)
	}
	read := func(name, file string) []byte {
		b, err := os.ReadFile(filepath.Join(db, name, file))
		if err != nil {
			t.Fatal(err)
		}
		// Past the header (it holds the table id), and without the zeros
		// at the end: the index files' size depends on when the preparer
		// grew them.
		return bytes.TrimRight(b[format.BlockSize:], "\x00")
	}
	files := []string{format.SymName, format.TimeIdxName, format.PostName}
	for seg := uint64(0); seg <= counts[0]/128; seg++ {
		files = append(files, filepath.Base(format.SegPath("", seg)))
	}
	for _, f := range files {
		want := read(names[0], f)
		for _, name := range names[1:] {
			if got := read(name, f); !bytes.Equal(got, want) {
				t.Errorf("%s: %s differs from the general path's", name, f)
			}
		}
	}
}
