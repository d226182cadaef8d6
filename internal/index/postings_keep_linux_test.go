package index

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"os"
	"testing"
	"unsafe"

	"github.com/tickdb/tickdb/internal/format"
)

// TestKeepMappedRepopulate: a writer of many symbols that keeps its
// post.idx pages mapped (KeepMapped) remembers the pages of the entries
// PrefetchEntry saw; a checkpoint's Sync drops their mapping; Repopulate
// maps exactly the remembered pages again (checked in
// /proc/self/pagemap), forgets them, and does nothing when no Sync ran
// since; the postings read back as written through several rounds.
func TestKeepMappedRepopulate(t *testing.T) {
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatalf("open pagemap: %v", err)
	}
	defer pm.Close()
	mapped := func(b []byte) bool {
		var e [8]byte
		if _, err := pm.ReadAt(e[:], int64(uintptr(unsafe.Pointer(&b[0]))/4096*8)); err != nil {
			t.Fatalf("read pagemap: %v", err)
		}
		return binary.LittleEndian.Uint64(e[:])>>63 != 0
	}
	p := newPostings(t, format.PostVersion3)
	pw := NewPostWriter(p, 0)
	defer pw.Release()
	pw.KeepMapped()
	m := &postModel{}
	const nsyms = 4000
	for range nsyms {
		m.newSymbol(t, pw)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	seq := uint64(0)
	for round := range 4 {
		for range 30_000 {
			id := uint32(rng.IntN(nsyms))
			pw.PrefetchEntry(id)
			m.add(t, pw, id, seq)
			seq++
		}
		var marked []uint64
		for w, word := range pw.pages {
			for ; word != 0; word &= word - 1 {
				marked = append(marked, uint64(w*64+bits.TrailingZeros64(word)))
			}
		}
		if len(marked) < 100 {
			t.Fatalf("round %d: %d pages remembered for 30,000 rows over %d symbols", round, len(marked), nsyms)
		}
		pw.Repopulate() // no Sync since the last: nothing to do
		if n := countPages(pw.pages); n != len(marked) {
			t.Fatalf("round %d: Repopulate without a Sync forgot pages (%d of %d left)", round, n, len(marked))
		}
		if err := p.Sync(pw.NextChunk()); err != nil {
			t.Fatal(err)
		}
		for _, pg := range marked {
			if mapped(pw.b[pg*format.BlockSize:]) {
				t.Fatalf("round %d: page %d mapped after Sync", round, pg)
			}
		}
		pw.Repopulate()
		if n := countPages(pw.pages); n != 0 {
			t.Fatalf("round %d: %d pages still remembered after Repopulate", round, n)
		}
		for _, pg := range marked {
			if !mapped(pw.b[pg*format.BlockSize:]) {
				t.Fatalf("round %d: page %d not mapped again by Repopulate", round, pg)
			}
		}
		checkModel(t, p, m, pw.NextChunk())
	}
}

func countPages(pages []uint64) int {
	n := 0
	for _, w := range pages {
		n += bits.OnesCount64(w)
	}
	return n
}
