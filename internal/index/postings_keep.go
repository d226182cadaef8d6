package index

import (
	"math"
	"math/bits"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
)

// A checkpoint writes post.idx back (msync), having dropped the writer's
// page table entries of it first (mappedFile.sync), and the writer's
// next store into each page faults it back in. At a hundred symbols
// that is a few pages a checkpoint. At a million, every row's entry
// lands on another page, the writer stores into tens of thousands of
// pages between two checkpoints and faulted on each of them again after
// each checkpoint: about 20 µs a fault on the reference VM (where a page
// table change is an exit to the hypervisor), a quarter of the writer's
// time at a million symbols. (Keeping the entries instead costs more:
// writeback then write-protects each page with a TLB shootdown, about
// 30 µs a page of the checkpointer's time there, and the writer still
// faults.)
//
// A writer of many symbols therefore remembers the pages its rows'
// entries went to (KeepMapped; PrefetchEntry, which the look-ahead calls
// for every row) and, once a checkpoint has written them back
// (Repopulate, between batches: the checkpoint writes the file back a
// chunk at a time and says how far it got, so this follows it closely),
// maps them again with a few system calls (mmap.Populator): about 2 µs a
// page, and the first store then costs what a first touch costs (about
// 8 µs there, a third of a fault). A page mapped again this way is
// dirty whether or not a row lands in it before the next checkpoint,
// which then writes it once more; a page no row touched since is not
// mapped again, so the set follows the pages in use.

// KeepMapped makes the writer remember the pages of post.idx
// PrefetchEntry sees, to map them again after each checkpoint
// (Repopulate). Writer goroutine only; it stays on until Release.
func (pw *PostWriter) KeepMapped() {
	if pw.pop != nil {
		return
	}
	pw.pop = mmap.NewPopulator()
	pw.seen = pw.p.m.synced.Load()
	pw.pages = make([]uint64, 0, (pw.p.m.size.Load()/format.BlockSize+63)/64+64)
}

// markPage remembers that a store will go to the page of file offset at.
func (pw *PostWriter) markPage(at uint64) {
	pg := at / format.BlockSize
	w := int(pg / 64)
	for w >= len(pw.pages) {
		pw.pages = append(pw.pages, 0) // (a new word in a while, as the file grows)
	}
	pw.pages[w] |= 1 << (pg % 64)
}

// Repopulate maps the pages remembered that a checkpoint has written
// back since the last call again, writable, and forgets them. It does
// nothing without KeepMapped, or when no checkpoint wrote anything.
// Writer goroutine only, between appends.
func (pw *PostWriter) Repopulate() {
	if pw.pop == nil {
		return
	}
	now := pw.p.m.synced.Load()
	if now == pw.seen {
		return
	}
	const lowMask = 1<<32 - 1
	was := pw.seen
	pw.seen = now
	p0, o0, p1, o1 := was>>32, was&lowMask, now>>32, now&lowMask
	switch {
	case p1 == p0:
		pw.repopulate(o0, o1)
	case p1 == p0+1:
		pw.repopulate(o0, math.MaxUint64) // the rest of the previous pass
		pw.repopulate(0, o1)
	default:
		pw.repopulate(0, math.MaxUint64)
	}
	_ = pw.pop.Flush() // an optimisation: a store faults otherwise
}

// repopulate queues the remembered pages from page lo below page hi,
// and forgets them.
func (pw *PostWriter) repopulate(lo, hi uint64) {
	size := uint64(pw.p.m.size.Load()) / format.BlockSize
	hi = min(hi, size, uint64(len(pw.pages))*64)
	for pg := lo; pg < hi; {
		word := pw.pages[pg/64] >> (pg % 64)
		if word == 0 {
			pg = (pg/64 + 1) * 64
			continue
		}
		pg += uint64(bits.TrailingZeros64(word))
		if pg >= hi {
			break
		}
		// A run of remembered pages: one range.
		end := pg
		for end < hi && pw.pages[end/64]&(1<<(end%64)) != 0 {
			pw.pages[end/64] &^= 1 << (end % 64)
			end++
		}
		_ = pw.pop.Add(pw.b[pg*format.BlockSize : end*format.BlockSize])
		pg = end
	}
}
