package index

import (
	"fmt"
	"slices"

	"github.com/tickdb/tickdb/internal/format"
)

// firstSlots is the data blocks a symbol's first directory names: 511, or
// smallSlots in version 3.
func (p *Postings) firstSlots() int {
	if p.shift == lineShift {
		return smallSlots
	}
	return dirSlots
}

// Reset rebuilds the writer's cursors after a restart so that the postings
// hold exactly the rows below seq. Addresses at or past limit (the
// published or checkpointed NextChunk) are not trusted: links to them are
// cut. A symbol whose first directory is at or past limit (its postings
// were never checkpointed) starts empty in that cleared directory.
// Allocation resumes past limit and past every such directory. dirs[i] is
// symbol i's first directory.
//
// With punched (the table's postings floor is above 0), a data block that
// reads as all zeros and follows only such blocks (from the first block
// PunchBelow punches: Punchable) was punched out below the floor
// (PunchBelow): it counts as full of rows below seq and stays in the chain
// (a reader takes its zeros as rows compacted below the floor), and the
// symbol's rows from seq on go into blocks after it.
func (pw *PostWriter) Reset(dirs []uint64, seq, limit uint64, punched bool) error {
	p := pw.p
	wpu := p.wpu
	limit = max(limit, pw.firstAddr())
	next := limit
	for _, d := range dirs {
		if d >= next {
			next = d + 1
		}
	}
	if !p.Covers(next) {
		need := (next<<p.shift + format.BlockSize - 1) / format.BlockSize
		if err := p.Grow(need + need/4 + 16); err != nil {
			return err
		}
	}
	pw.next = next
	pw.syms = pw.syms[:0]
	if cap(pw.syms) < len(dirs) {
		pw.grow(len(dirs))
	}
	w := pw.w
	v3 := p.shift == lineShift
	nfirst := p.firstSlots()
	var chunks []uint64
	for id, first := range dirs {
		if first == 0 {
			return format.Corruptf(p.m.Path, 0, "symbol %d has no postings directory", id)
		}
		if first >= limit {
			clearWords(w[first*wpu : (first+1)*wpu])
			c, err := pw.alloc(p.blockUnits(0))
			if err != nil {
				return err
			}
			w[first*wpu+1] = c
			s := symPost{dir: first, slot: 2, first: v3}
			pw.open(&s, c, 0)
			pw.syms = append(pw.syms, s)
			continue
		}
		// Cut directory links and slots that point at untrusted blocks.
		// Space is allocated in increasing order, so the chain left
		// behind goes strictly forward below limit, and every walk of it
		// below ends.
		dir, nslots := first, nfirst
		for {
			for i := 1; i <= nslots; i++ {
				if c := w[dir*wpu+uint64(i)]; c >= limit {
					clearWords(w[dir*wpu+uint64(i) : dir*wpu+uint64(nslots)+1])
					clearWords(w[dir*wpu : dir*wpu+1])
					break
				}
			}
			nx := w[dir*wpu]
			if nx == 0 {
				break
			}
			// Only a full directory is linked (nextData); readers follow
			// no other link, so one out of a partial directory is cut.
			full := w[dir*wpu+uint64(nslots)] != 0
			if full && nx <= dir {
				return format.Corruptf(p.m.Path, p.WordOff(dir, 0), "symbol %d: directory %d links back to %d", id, dir, nx)
			}
			if !full || nx >= limit {
				w[dir*wpu] = 0
				break
			}
			dir, nslots = nx, dirSlots
		}
		var err error
		if chunks, err = p.DataChunks(chunks[:0], first, limit); err != nil {
			return fmt.Errorf("symbol %d: %w", id, err)
		}
		// Find the last block holding a row below seq; clear what follows.
		// (A version 2 or 3 block closed early whose repeated last row is
		// below seq is full; one whose last row is not is cut before it.)
		keep, fill := -1, 0
		for j := len(chunks) - 1; j >= 0 && keep < 0; j-- {
			c, n := chunks[j], p.BlockLen(uint64(j))
			zero := true
			for i := n - 1; i >= 0; i-- {
				e := p.Entry(c, i)
				if e != 0 && e-1 < seq {
					keep, fill = j, i+1
					break
				}
				zero = zero && e == 0
			}
			// A block of zeros is a punched one only where punched blocks
			// are, first among the chain's punchable blocks: one after a
			// block with rows is empty (a version 2 or 3 block whose
			// first row was cut, or a chunk a version 1 writer allocated
			// ahead), and dropped.
			if keep < 0 && zero && punched && p.Punchable(uint64(j)) &&
				(j == p.punchFrom || p.Entry(chunks[j-1], p.BlockLen(uint64(j-1))-1) == 0) {
				keep, fill = j, n
			}
		}
		if keep < 0 {
			keep, fill = 0, 0
		}
		// Re-walk the directories to drop the slots of blocks after keep.
		s := symPost{}
		dir, nslots, isFirst, pos := first, nfirst, v3, 0
		for dir != 0 {
			partial := false
			for i := 1; i <= nslots; i++ {
				c := w[dir*wpu+uint64(i)]
				if c == 0 {
					partial = true // DataChunks stops here too
					break
				}
				switch {
				case pos < keep:
				case pos == keep:
					// Later slots and the link are dropped (stray ones too).
					clearWords(w[dir*wpu+uint64(i)+1 : dir*wpu+uint64(nslots)+1])
					clearWords(w[dir*wpu : dir*wpu+1])
					s = symPost{dir: dir, slot: int32(i + 1), first: isFirst}
					pw.resume(&s, c, uint64(pos), fill)
				default:
					w[dir*wpu+uint64(i)] = 0
				}
				pos++
			}
			nx := w[dir*wpu]
			if (pos > keep || partial) && nx != 0 {
				w[dir*wpu] = 0
				break
			}
			dir, nslots, isFirst = nx, dirSlots, false
		}
		if s.dir == 0 {
			// No data block at all (its slot was past limit): give it one
			// in a directory cleared of whatever was left.
			c, err := pw.alloc(p.blockUnits(0))
			if err != nil {
				return err
			}
			clearWords(w[first*wpu : (first+1)*wpu])
			w[first*wpu+1] = c
			s = symPost{dir: first, slot: 2, first: v3}
			pw.open(&s, c, 0)
		}
		// A full block (fill == its entries) stays current: the symbol's
		// next row takes a new one (Advance).
		pw.syms = append(pw.syms, s)
	}
	return nil
}

// clearWords zeroes ws, storing only from its first word that is not zero
// already: a restart's Reset dirties no page of a symbol it leaves as it
// was (a write to each symbol's pages would cost a million page faults,
// and their writeback, at a million symbols).
func clearWords(ws []uint64) {
	for i, v := range ws {
		if v != 0 {
			clear(ws[i:])
			return
		}
	}
}

// clearBytes is clearWords for bytes.
func clearBytes(b []byte) {
	for len(b) >= 8 {
		if le.Uint64(b) != 0 {
			clear(b)
			return
		}
		b = b[8:]
	}
	for i, v := range b {
		if v != 0 {
			clear(b[i:])
			return
		}
	}
}

// PunchBelow frees the data blocks of the symbols whose first directories
// are dirs whose entries all name rows below floor (the postings floor,
// published before): each is punched out of the file (it reads as zeros,
// and its disk blocks are freed). Only 4 KiB blocks are punched (in
// version 3 a symbol's first, smaller blocks share pages and stay). A
// symbol's last data block, which the writer still appends to, and
// directories are kept. Blocks already punched are skipped. Writer only
// (the checkpointer, with the writer's postings cursors untouched). It
// returns the blocks punched.
func (p *Postings) PunchBelow(dirs []uint64, next, floor uint64) (int, error) {
	var punch, chunks []uint64
	for _, dir := range dirs {
		var err error
		if chunks, err = p.DataChunks(chunks[:0], dir, next); err != nil {
			return 0, err
		}
		for i, c := range chunks {
			j := uint64(i)
			if i == len(chunks)-1 {
				break // the symbol's current block
			}
			if !p.Punchable(j) {
				continue
			}
			last := p.Entry(c, p.BlockLen(j)-1) // a block closed early repeats it
			if last == 0 {
				continue // punched already
			}
			if last-1 >= floor {
				break // reaches the floor, and so do the blocks after it
			}
			punch = append(punch, c)
		}
	}
	slices.Sort(punch)
	step := uint64(1) << (chunkShift - p.shift)
	for i := 0; i < len(punch); {
		j := i + 1
		for j < len(punch) && punch[j] == punch[j-1]+step {
			j++
		}
		off, n := int64(punch[i])<<p.shift, int64(j-i)*format.BlockSize
		if err := p.m.punch(off, n); err != nil {
			return 0, fmt.Errorf("index: punch %s [%d, %d): %w", p.m.Path, off, off+n, err)
		}
		i = j
	}
	return len(punch), nil
}

// Trim cuts the file at address n (the room grown ahead of the
// published NextChunk goes): maintenance when a table closes.
func (p *Postings) Trim(n uint64) error { return p.m.trim(int64(n) << p.shift) }
