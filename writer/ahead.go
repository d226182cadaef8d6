package writer

// Ahead starts the memory loads that appending a row of a table of many
// symbols waits on, a few rows before the row is appended, so that they
// overlap instead of following one another.
//
// At a million symbols each row's append makes three random accesses
// into hundreds of MB, each a cache and TLB miss: the symbol's slot in
// the dictionary (to find its id), the symbol's postings cursor (to find
// where its entry goes) and the postings line the entry is stored in.
// Each depends on the one before, and a row's other work is too long
// for the CPU to run ahead into the next row's, so they cost three
// memory latencies a row (about 1.2 µs on the reference VM). A caller
// that knows the symbols of the rows it is about to append (the server
// has a batch of lines) pushes each row's symbol AheadRows rows before
// appending it; each push advances a pipeline of prefetches
// (mmap.Prefetch, which neither waits nor faults): the slot of the row
// just pushed, the cursor of the row pushed aheadProbe pushes before
// (whose slot is in cache by then: its id is found), and the postings
// line of the row pushed aheadEntry pushes before (whose cursor is).
// The append then finds all three in cache. Nothing is changed: a
// prediction that turns out wrong (a new symbol, a row that is
// rejected) costs only the prefetch.
//
// Below AheadMinSymbols the dictionary and the cursors fit in the CPU's
// caches and the pipeline would cost more than it saves: Useful says
// whether to bother.
//
// An Ahead belongs to its writer's goroutine. The names pushed are not
// copied: they must stay unchanged until Reset (the caller resets it
// before it lets go of the buffer they point into).
type Ahead struct {
	w    *Writer
	n    uint64 // pushes since Reset
	rows [aheadRing]aheadRow
}

type aheadRow struct {
	name []byte // nil: a row with nothing to prefetch
	h    uint64
	id   uint32
	ok   bool // id is the name's
}

const (
	// AheadRows is how many rows before its append a row's symbol is
	// pushed: the pipeline's depth plus a row or two.
	AheadRows = aheadEntry + 2
	// aheadProbe and aheadEntry are the pushes between a row's slot
	// prefetch and its probe and cursor prefetch, and between that and
	// its line prefetch: a few rows' work each, at least a memory
	// latency (BenchmarkStageSinkSymbols in ingest tunes them).
	aheadProbe = 3
	aheadEntry = 6
	aheadRing  = 8 // > aheadEntry, a power of two
	// AheadMinSymbols is the dictionary size from which the pipeline
	// pays: about 2 MiB of dictionary slots and 2 MiB of cursors, past
	// the L2 caches of the reference VM.
	AheadMinSymbols = 1 << 15
)

// Ahead returns an Ahead for w's appends.
func (w *Writer) Ahead() *Ahead { return &Ahead{w: w} }

// Useful reports whether the table has symbols enough for the pipeline
// to pay (AheadMinSymbols) and a postings column.
func (a *Ahead) Useful() bool {
	w := a.w
	if w.closed || w.symOff < 0 || w.nsyms < AheadMinSymbols {
		return false
	}
	// Rows spread over this many symbols write into pages of post.idx
	// by the thousand between checkpoints: map them again after each
	// (index.PostWriter.KeepMapped).
	w.pw.KeepMapped()
	return true
}

// Push records the symbol of the row to be appended AheadRows appends
// from now (nil: none, or not known) and advances the pipeline. It
// allocates nothing.
func (a *Ahead) Push(name []byte) {
	w := a.w
	if w.closed {
		return
	}
	i := a.n
	a.n++
	if i >= aheadEntry {
		if e := &a.rows[(i-aheadEntry)%aheadRing]; e.ok {
			w.pw.PrefetchEntry(e.id)
		}
	}
	if i >= aheadProbe {
		if p := &a.rows[(i-aheadProbe)%aheadRing]; p.name != nil {
			if p.id, p.ok = w.syms.LookupHash(p.name, p.h); p.ok {
				w.pw.PrefetchCursor(p.id)
			}
		}
	}
	r := &a.rows[i%aheadRing]
	r.name, r.ok = name, false
	if name != nil {
		r.h = w.syms.Hash(name)
		w.syms.PrefetchSlot(r.h)
	}
}

// Reset forgets the rows pushed, and the names they point into, and
// after a checkpoint maps the postings pages the rows since used again
// (index.PostWriter.Repopulate). The caller calls it
// between batches of appends.
func (a *Ahead) Reset() {
	a.n = 0
	for i := range a.rows {
		a.rows[i] = aheadRow{}
	}
	if !a.w.closed {
		a.w.pw.Repopulate()
	}
}
