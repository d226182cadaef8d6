package index

import "github.com/tickdb/tickdb/internal/format"

// A symbol's chain, as readers walk it. Space is allocated in increasing
// order, so a chain goes strictly forward: every directory's data blocks
// lie after it, each next directory after the blocks before it. A reader
// treats any link that goes back as damage, which also bounds every walk,
// and ignores addresses at or past the published NextChunk (allocated,
// not yet published). Only a full directory links to a next one.

// DataChunks appends to dst the addresses of the data blocks of the
// symbol whose first directory is dir, in chain order (block j of the
// chain is dst[j] of an empty dst), skipping blocks at or past next (the
// published NextChunk: allocated but not yet published). Every address
// is validated.
func (p *Postings) DataChunks(dst []uint64, dir, next uint64) ([]uint64, error) {
	if !p.Covers(next) {
		return dst, format.Corruptf(p.m.Path, int64(next)<<p.shift, "published chunk count %d is past the end of the file", next)
	}
	if dir == 0 {
		return dst, nil
	}
	if dir >= next {
		return dst, format.Corruptf(p.m.Path, int64(dir)<<p.shift, "directory %d out of range (next %d)", dir, next)
	}
	prev := dir
	if p.shift == lineShift {
		// The first directory: one line naming the growing blocks.
		for i := 1; i <= smallSlots; i++ {
			c := p.w[dir*p.wpu+uint64(i)]
			if c == 0 || c >= next {
				return dst, nil
			}
			if err := p.checkBlock(dir, i, uint64(i-1), c, prev, next); err != nil {
				return dst, err
			}
			prev = c
			dst = append(dst, c)
		}
		nx := p.w[dir*p.wpu]
		if nx == 0 || nx >= next {
			return dst, nil // none yet, or not yet published
		}
		if err := p.checkDir(dir, nx, prev); err != nil {
			return dst, err
		}
		dir = nx
	}
	// 4 KiB directories of 511 data chunks.
	for {
		base := dir * p.wpu
		prevDir := dir
		prev = dir
		for i := 1; i < ChunkWords; i++ {
			c := p.w[base+uint64(i)]
			if c == 0 || c >= next {
				return dst, nil
			}
			if err := p.checkBlock(dir, i, bigClass, c, prev, next); err != nil {
				return dst, err
			}
			prev = c
			dst = append(dst, c)
		}
		nx := p.w[base]
		if nx == 0 || nx >= next {
			return dst, nil // the last one, or the next not yet published
		}
		if err := p.checkDir(prevDir, nx, prev); err != nil {
			return dst, err
		}
		dir = nx
	}
}

// checkBlock validates data block c of class j (bigClass: a 4 KiB block)
// named by slot i of directory dir, after address prev.
func (p *Postings) checkBlock(dir uint64, i int, j uint64, c, prev, next uint64) error {
	if c <= prev {
		return format.Corruptf(p.m.Path, p.WordOff(dir, i), "directory %d slot %d: data block %d is not after %d", dir, i, c, prev)
	}
	if p.shift == lineShift {
		if c+p.blockUnits(j) > next {
			return format.Corruptf(p.m.Path, p.WordOff(dir, i), "directory %d slot %d: data block %d of %d lines ends past the published %d", dir, i, c, p.blockUnits(j), next)
		}
		if j >= bigClass && c%chunkLines != 0 {
			return format.Corruptf(p.m.Path, p.WordOff(dir, i), "directory %d slot %d: data block %d is not 4 KiB aligned", dir, i, c)
		}
	}
	return nil
}

// checkDir validates directory nx, linked from directory dir after
// address prev.
func (p *Postings) checkDir(dir, nx, prev uint64) error {
	if nx <= prev {
		return format.Corruptf(p.m.Path, p.WordOff(dir, 0), "directory %d links back to %d", dir, nx)
	}
	if p.shift == lineShift && nx%chunkLines != 0 {
		return format.Corruptf(p.m.Path, p.WordOff(dir, 0), "directory %d links to %d, not 4 KiB aligned", dir, nx)
	}
	return nil
}

// Chain is a symbol's chain of data blocks for a search that reads only
// what it needs (Latest): the directories are walked once (a word per 511
// blocks), a block's address is read when asked for. The zero value is
// ready for LoadChain; a Chain's buffer is reused.
type Chain struct {
	p      *Postings
	first  uint64   // version 3: the first directory (a line)
	nfirst uint64   // version 3: the blocks it names
	dirs   []uint64 // the 4 KiB directories, in order
	n      uint64   // the blocks below next
	next   uint64
	bad    error
}

// LoadChain points ch at the chain of the symbol whose first directory is
// dir, below next (the published NextChunk).
func (p *Postings) LoadChain(ch *Chain, dir, next uint64) error {
	*ch = Chain{p: p, dirs: ch.dirs[:0], next: next}
	if !p.Covers(next) {
		return format.Corruptf(p.m.Path, int64(next)<<p.shift, "published chunk count %d is past the end of the file", next)
	}
	if dir == 0 {
		return nil
	}
	if dir >= next {
		return format.Corruptf(p.m.Path, int64(dir)<<p.shift, "directory %d out of range (next %d)", dir, next)
	}
	if p.shift == lineShift {
		ch.first = dir
		for ch.nfirst < smallSlots {
			if c := p.w[dir*p.wpu+ch.nfirst+1]; c == 0 || c >= next {
				break
			}
			ch.nfirst++
		}
		ch.n = ch.nfirst
		nx := p.w[dir*p.wpu]
		if ch.nfirst < smallSlots || nx == 0 || nx >= next {
			return nil
		}
		if err := p.checkDir(dir, nx, p.w[dir*p.wpu+smallSlots]); err != nil {
			return err
		}
		dir = nx
	}
	ch.dirs = append(ch.dirs, dir)
	for {
		nx := p.w[dir*p.wpu]
		if nx == 0 || nx >= next {
			break // the last one, or the next not yet published
		}
		if err := p.checkDir(dir, nx, dir); err != nil {
			return err
		}
		ch.dirs = append(ch.dirs, nx)
		dir = nx
	}
	// The last directory's slots fill from the first, in allocation order.
	d := ch.dirs[len(ch.dirs)-1]
	lo, hi := 1, ChunkWords
	for lo < hi {
		m := (lo + hi) / 2
		if c := p.w[d*p.wpu+uint64(m)]; c != 0 && c < next {
			lo = m + 1
		} else {
			hi = m
		}
	}
	ch.n += uint64(len(ch.dirs)-1)*dirSlots + uint64(lo-1)
	return nil
}

// Len is the chain's published blocks.
func (ch *Chain) Len() uint64 { return ch.n }

// Block is the address of block j (< Len). A directory word out of range
// is damage: Block then notes it (Err) and returns 0, an address whose
// reads stay inside the file (the header).
func (ch *Chain) Block(j uint64) uint64 {
	p := ch.p
	var d uint64
	var i int
	if j < ch.nfirst {
		d, i = ch.first, int(j)+1
		c := p.w[d*p.wpu+uint64(i)]
		if c > d && c+p.blockUnits(j) <= ch.next && (j < bigClass || c%chunkLines == 0) {
			return c
		}
	} else {
		q := j - ch.nfirst
		d, i = ch.dirs[q/dirSlots], int(q%dirSlots)+1
		c := p.w[d*p.wpu+uint64(i)]
		if c > d && c < ch.next && (p.shift == chunkShift || c%chunkLines == 0) {
			return c
		}
	}
	if ch.bad == nil {
		c := p.w[d*p.wpu+uint64(i)]
		ch.bad = format.Corruptf(p.m.Path, p.WordOff(d, i), "directory %d slot %d: data block %d out of range (next %d)", d, i, c, ch.next)
	}
	return 0
}

// Err is the damage Block met, if any.
func (ch *Chain) Err() error { return ch.bad }
