package cseg

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tickdb/tickdb/store"
)

// copyFetcher fills a sparse copy of a segment file from the original's
// bytes, noting each range it was asked for and each byte it wrote.
type copyFetcher struct {
	mu     sync.Mutex
	src    []byte
	dst    *os.File
	have   []bool
	asked  [][2]int64
	copied int64
	fail   error
}

func newCopyFetcher(t *testing.T, src []byte) (*copyFetcher, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seg-0000000003.zdat")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(len(src))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &copyFetcher{src: src, dst: f, have: make([]bool, len(src))}, path
}

func (c *copyFetcher) Fetch(off, n int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	c.asked = append(c.asked, [2]int64{off, off + n})
	for i := off; i < off+n; i++ {
		if c.have[i] {
			continue
		}
		j := i
		for j < off+n && !c.have[j] {
			c.have[j] = true
			j++
		}
		if _, err := c.dst.WriteAt(c.src[i:j], i); err != nil {
			return err
		}
		c.copied += j - i
		i = j
	}
	return nil
}

func (c *copyFetcher) fetched() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.copied
}

// TestFetched reads a compressed segment from a sparse file that a
// Fetcher fills: every read gives the original's rows, a one-symbol read
// brings in that symbol's blocks (with the header and the tables) and
// nothing else, and a failing Fetcher's error is the read's.
func TestFetched(t *testing.T) {
	f := clusteredFile(t)
	s, h := f.s, f.h

	// One symbol: its blocks only.
	cf, path := newCopyFetcher(t, f.data)
	g, err := OpenFetched(path, s, h, nil, cf)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	opened := cf.fetched()
	indexOff := f.indexOff()
	if want := int64(headerSize) + int64(len(f.data)) - (indexOff - 8); opened != want {
		t.Fatalf("open fetched %d bytes, want the header and the tables: %d", opened, want)
	}
	first, nb, _, ok := g.Sym(42)
	if !ok {
		t.Fatal("no symbol 42")
	}
	var blockBytes int64
	for k := first; k < first+nb; k++ {
		blockBytes += int64(g.entry(k).len)
	}
	g.WillNeed(first, first+nb)
	var rows []byte
	var seqs []uint64
	for k := first; k < first+nb; k++ {
		if rows, seqs, err = g.SymBlock(k, rows, seqs); err != nil {
			t.Fatal(err)
		}
		want, wantSeqs := symRows(s, f.rows, h.SegNo*h.RowsPerSeg, 42)
		if k == first && nb == 1 && (!bytes.Equal(rows, want) || !slicesEqual(seqs, wantSeqs)) {
			t.Fatalf("symbol 42's rows differ from the original's")
		}
	}
	if got := cf.fetched() - opened; got != blockBytes {
		t.Fatalf("symbol 42's blocks fetched %d bytes, want its %d blocks' %d", got, nb, blockBytes)
	}

	// Every row, in seq order and one by one: the original's.
	cf2, path2 := newCopyFetcher(t, f.data)
	g2, err := OpenFetched(path2, s, h, nil, cf2)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if got := decodeAll(t, g2); !bytes.Equal(got, f.rows) {
		t.Fatalf("rows differ from byte %d", firstDiff(got, f.rows))
	}
	cf3, path3 := newCopyFetcher(t, f.data)
	g3, err := OpenFetched(path3, s, h, nil, cf3)
	if err != nil {
		t.Fatal(err)
	}
	defer g3.Close()
	one := make([]byte, s.RowSize)
	for _, i := range []uint64{h.Rows - 1, 0, BlockRows + 17} {
		if err := g3.RowInto(i, one); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(one, f.rows[int(i)*s.RowSize:][:s.RowSize]) {
			t.Fatalf("row %d differs", i)
		}
	}
	if cf3.fetched() >= int64(len(f.data)) {
		t.Fatalf("three rows fetched the whole file (%d bytes)", cf3.fetched())
	}
	// The column reader brings in its block too.
	var cr ColReader
	if _, err := cr.Open(g3, first); err != nil {
		t.Fatal(err)
	}

	// A Fetcher that fails: the read fails with its error.
	boom := errors.New("server down")
	cf4, path4 := newCopyFetcher(t, f.data)
	g4, err := OpenFetched(path4, s, h, nil, cf4)
	if err != nil {
		t.Fatal(err)
	}
	defer g4.Close()
	cf4.fail = boom
	if _, err := g4.Block(0, nil); !errors.Is(err, boom) {
		t.Fatalf("Block with a failing fetcher: %v, want %v", err, boom)
	}
	if _, _, err := g4.SymBlock(first, nil, nil); !errors.Is(err, boom) {
		t.Fatalf("SymBlock with a failing fetcher: %v, want %v", err, boom)
	}
	if _, err := cr.Open(g4, first); !errors.Is(err, boom) {
		t.Fatalf("ColReader.Open with a failing fetcher: %v, want %v", err, boom)
	}
	if _, err := OpenFetched(path4, s, h, nil, cf4); !errors.Is(err, boom) {
		t.Fatalf("open with a failing fetcher: %v, want %v", err, boom)
	}

	// Version 1: its blocks one by one.
	s1 := store.TickSchema()
	h1 := Header{TableID: testTableID, SegNo: 3, RowSize: s1.RowSize, RowsPerSeg: 1 << 14, Rows: 3*BlockRows + 5}
	rows1 := genRows(s1, int(h1.Rows), h1.SegNo, h1.RowsPerSeg, 9)
	p1, _ := encodeFileVersion(t, t.TempDir(), s1, h1, rows1, VersionSeqOrder)
	data1, err := os.ReadFile(p1)
	if err != nil {
		t.Fatal(err)
	}
	cf5, path5 := newCopyFetcher(t, data1)
	g5, err := OpenFetched(path5, s1, h1, nil, cf5)
	if err != nil {
		t.Fatal(err)
	}
	defer g5.Close()
	before := cf5.fetched()
	out, err := g5.Block(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, rows1[2*BlockRows*s1.RowSize:][:len(out)]) {
		t.Fatal("version 1 block 2 differs")
	}
	if got, want := cf5.fetched()-before, int64(g5.entry(2).len); got != want {
		t.Fatalf("version 1 block 2 fetched %d bytes, want %d", got, want)
	}
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
