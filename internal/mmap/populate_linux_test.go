package mmap

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// present reports whether the page holding b[0] has a page table entry in
// this process (/proc/self/pagemap bit 63; readable without privileges,
// unlike the frame numbers).
func present(t *testing.T, pm *os.File, b []byte) bool {
	t.Helper()
	var e [8]byte
	if _, err := pm.ReadAt(e[:], int64(uintptr(unsafe.Pointer(&b[0]))/4096*8)); err != nil {
		t.Fatalf("read pagemap: %v", err)
	}
	return binary.LittleEndian.Uint64(e[:])>>63 != 0
}

// TestPopulatorMapsAgain: pages of a shared file mapping whose entries
// were dropped (as a checkpoint does before its msync) are mapped again
// by a Populator, in runs and one by one, more than one process_madvise
// batch of them; the file's bytes are unchanged; a range past the file's
// end is skipped without failing the rest.
func TestPopulatorMapsAgain(t *testing.T) {
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatalf("open pagemap: %v", err)
	}
	defer pm.Close()
	const pages = 4000 // > populateBatch ranges added below
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(pages * 4096); err != nil {
		t.Fatal(err)
	}
	b, err := MapShared(f, (pages+16)*4096, true) // 16 pages past the end
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(b)
	for pg := range pages {
		binary.LittleEndian.PutUint64(b[pg*4096+8:], uint64(pg)*7+1)
	}
	if err := DropMapping(b[:pages*4096]); err != nil {
		t.Fatal(err)
	}
	if err := MsyncSync(b[:pages*4096]); err != nil {
		t.Fatal(err)
	}
	for pg := range pages {
		if present(t, pm, b[pg*4096:]) {
			t.Fatalf("page %d still mapped after DropMapping", pg)
		}
	}
	// want: pages 3k and 3k+1 (runs of two), and the last one.
	want := func(pg int) bool { return pg%3 != 2 || pg == pages-1 }
	p := NewPopulator()
	defer p.Close()
	for pg := 0; pg < pages; pg++ {
		switch {
		case pg%3 == 0 && pg+1 < pages:
			err = p.Add(b[pg*4096 : (pg+2)*4096])
			pg++
		case want(pg):
			err = p.Add(b[pg*4096 : (pg+1)*4096])
		}
		if err != nil {
			t.Fatalf("Add page %d: %v", pg, err)
		}
	}
	if err := p.Add(b[(pages+2)*4096 : (pages+3)*4096]); err != nil { // past the end: skipped
		t.Fatal(err)
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	// (Only the pages added are checked: the kernel may map the rest of
	// a large folio with a page.)
	for pg := range pages {
		if want(pg) && !present(t, pm, b[pg*4096:]) {
			t.Fatalf("page %d not mapped after Flush", pg)
		}
	}
	for pg := range pages {
		if got := binary.LittleEndian.Uint64(b[pg*4096+8:]); got != uint64(pg)*7+1 {
			t.Fatalf("page %d holds %d, want %d", pg, got, uint64(pg)*7+1)
		}
	}
	if err := p.Flush(); err != nil { // empty: nothing to do
		t.Fatal(err)
	}
}

// TestPrefetchTouch: Prefetch of any index, in range or not, of an empty
// or nil slice, neither faults nor changes anything; Touch maps every
// page of an anonymous region it reads.
func TestPrefetchTouch(t *testing.T) {
	s := make([]uint64, 100)
	for _, i := range []uint64{0, 99, 100, 1 << 40} {
		Prefetch(s, i)
	}
	Prefetch([]uint64(nil), 5)
	Prefetch(s[:0], 1<<20)
	for i, v := range s {
		if v != 0 {
			t.Fatalf("s[%d] = %d after Prefetch", i, v)
		}
	}
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatalf("open pagemap: %v", err)
	}
	defer pm.Close()
	b, err := MapAnon(64 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(b)
	Touch(b[100:]) // from inside the first page: its first boundary on
	Touch(b[:0])
	for pg := 1; pg < 64; pg++ {
		if !present(t, pm, b[pg*4096:]) {
			t.Fatalf("page %d not mapped after Touch", pg)
		}
	}
}
