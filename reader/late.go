package reader

import (
	"errors"
	"math"
	"os"
	"path/filepath"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/store"
)

// Late rows (writer.Options.LateWindow) are stored in arrival order, each
// with an entry in late.idx (seq, ts, the newest ts before it, symbol).
// The time index keys every row by the newest ts up to it (a late row's
// entry's prev), which never decreases, so a seek still finds the first
// row from which every row arrived at or after t. A time-ordered read is
// then a merge: the rows that arrived in order (ts = that key) walked as
// before, skipping the late ones, and the late rows whose ts lies in the
// window, read by seq through late.idx, ordered by (ts, seq) in a small
// heap. Late entries are taken into the heap in seq order while their
// lowest possible ts (prev minus the table's late window) is not past the
// next in-order row's ts, so the heap holds only the late rows of about
// one window, and every row comes out in (ts, seq) order.

// lateFor makes sure late.idx is mapped and covers n entries. A table
// written only by versions before late rows has no such file and no late
// rows.
func (r *Reader) lateFor(n uint64) error {
	if n == 0 {
		return nil
	}
	if r.late == nil {
		l, err := index.OpenLateIndex(filepath.Join(r.dir, format.LateIdxName), r.ctl.TableID, nil)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return format.Corruptf(filepath.Join(r.dir, format.LateIdxName), 0, "file missing, the table has %d late rows", n)
			}
			return err
		}
		r.late = l
	}
	if !r.late.Covers(n) {
		return format.Corruptf(r.late.Path(), format.BlockSize, "shorter than the %d published late rows", n)
	}
	return nil
}

// keyAt is row seq's time key: its ts, or for a late row (one of the
// first nlate entries) the newest ts before it.
func (r *Reader) keyAt(seq uint64, ts int64, nlate uint64) int64 {
	if nlate == 0 {
		return ts
	}
	if j := r.late.SearchSeq(nlate, seq); j < nlate && r.late.Seq(j) == seq {
		return r.late.Prev(j)
	}
	return ts
}

// hasLate reports whether rows [a, b) hold a late row (of the first nlate).
func (r *Reader) hasLate(a, b, nlate uint64) bool {
	if nlate == 0 {
		return false
	}
	j := r.late.SearchSeq(nlate, a)
	return j < nlate && r.late.Seq(j) < b
}

// lateCand is a late row waiting in an iterator's heap.
type lateCand struct {
	ts  int64
	seq uint64
}

func (a lateCand) less(b lateCand) bool { return a.ts < b.ts || a.ts == b.ts && a.seq < b.seq }

// lateIter is an iterator's merge state (inactive when n is 0).
type lateIter struct {
	n       uint64 // published late entries at positioning (0: no merge)
	win     int64  // the table's late window
	skip    uint64 // next entry to check the walked rows against
	skipSeq uint64 // its seq (MaxUint64: none)
	j, jend uint64 // entries still to take into the heap
	nextLB  int64  // the lowest ts entry j can have (MaxInt64: none)
	first   uint64 // rows below it are deleted (retention)
	heap    []lateCand
	have    bool   // an in-order row is waiting (iseq, irow)
	done    bool   // the in-order walk has ended
	iseq    uint64 // the waiting in-order row
	its     int64
	irow    []byte // its copy, when a late row went out before it
	icopy   bool   // irow holds it (else it.row does)
	row     []byte // the late row handed out
}

// initLate sets up the merge for a range [from, to) whose in-order walk
// starts at seq a, when the table has late rows.
func (it *Iter) initLate(from, to int64, a uint64, snap index.Snap) error {
	r := it.r
	l := &it.lt
	l.n = 0
	if snap.Late == 0 {
		return nil
	}
	if err := r.lateFor(snap.Late); err != nil {
		return err
	}
	n := snap.Late
	l.n, l.win, l.first = n, r.ctl.LateWindow(), snap.FirstSeq
	l.setSkip(r, r.late.SearchSeq(n, a))
	// A late row with ts >= from has prev > ts >= from; one with ts < to
	// has prev - win <= ts < to.
	l.jend = n
	if to <= math.MaxInt64-l.win {
		l.jend = r.late.SearchPrev(n, to+l.win)
	}
	l.setJ(r, max(r.late.SearchPrev(n, from), r.late.SearchSeq(n, snap.FirstSeq)))
	l.heap = l.heap[:0]
	l.have, l.done, l.icopy = false, false, false
	if cap(l.row) < int(r.rowSize) {
		l.row = make([]byte, r.rowSize)
		l.irow = make([]byte, r.rowSize)
	}
	return nil
}

func saturatingAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// nextLate is Next when the range has late rows: the merge.
func (it *Iter) nextLate() bool {
	l := &it.lt
	r := it.r
	if !l.have && !l.done {
		for {
			if !it.nextInner() {
				if it.err != nil {
					return false
				}
				l.done = true
				break
			}
			s := it.cur
			if s >= l.skipSeq {
				for l.skipSeq < s {
					l.setSkip(r, l.skip+1)
				}
				if s == l.skipSeq {
					continue // a late row: it comes through the heap
				}
			}
			l.have, l.iseq, l.its, l.icopy = true, s, it.row.Ts(), false
			break
		}
	}
	// Take the late rows that may come before the waiting row.
	for l.j < l.jend && (!l.have || l.nextLB <= l.its) {
		e := r.late.At(l.j)
		l.setJ(r, l.j+1)
		if e.Ts < it.from || e.Ts > it.hi || (it.sym && e.Sym != it.id) {
			continue
		}
		l.push(lateCand{ts: e.Ts, seq: e.Seq})
	}
	if len(l.heap) > 0 && (!l.have || l.heap[0].less(lateCand{ts: l.its, seq: l.iseq})) {
		c := l.pop()
		if l.have && !l.icopy {
			// Reading the late row may reuse the buffer the waiting row
			// lies in (a compressed segment's block): keep a copy.
			l.irow = append(l.irow[:0], it.row...) // its own length: rows of earlier layouts are shorter
			l.icopy = true
		}
		if err := r.readLate(c, it.sym, it.id, l.row); err != nil {
			it.err = err
			return false
		}
		if !format.Valid(c.seq, l.row) || store.Row(l.row).Ts() != c.ts {
			it.err = format.Corruptf(r.late.Path(), format.BlockSize, "late entry for row %d says ts %d, the row has %d", c.seq, c.ts, store.Row(l.row).Ts())
			return false
		}
		it.row, it.cur = l.row, c.seq
		return true
	}
	if !l.have {
		return false
	}
	l.have = false
	if l.icopy {
		it.row = l.irow
	}
	it.cur = l.iseq
	return true
}

// setSkip moves the skip cursor to entry k (caching its seq).
func (l *lateIter) setSkip(r *Reader, k uint64) {
	l.skip, l.skipSeq = k, math.MaxUint64
	if k < l.n {
		l.skipSeq = r.late.Seq(k)
	}
}

// setJ moves the heap's cursor to entry j (caching its lowest ts).
func (l *lateIter) setJ(r *Reader, j uint64) {
	l.j, l.nextLB = j, math.MaxInt64
	if j < l.jend {
		l.nextLB = index.LowerTs(r.late.Prev(j), l.win)
	}
}

func (l *lateIter) push(c lateCand) {
	h := append(l.heap, c)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	l.heap = h
}

func (l *lateIter) pop() lateCand {
	h := l.heap
	c := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		m, a, b := i, 2*i+1, 2*i+2
		if a < n && h[a].less(h[m]) {
			m = a
		}
		if b < n && h[b].less(h[m]) {
			m = b
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	l.heap = h
	return c
}

// readLate reads late row c into dst. A symbol's iterator reads one that
// is in a clustered compressed segment from the symbol's own blocks
// (cseg.Segment.SymRowInto): through Get it would decode the rank frame
// of its block, every symbol's rows, for each late row; anything else
// goes through ReadRow.
func (r *Reader) readLate(c lateCand, sym bool, id uint32, dst []byte) error {
	if n := c.seq >> r.shift; sym && n < r.ctl.CmpSegs() && c.seq >= r.first {
		if v, err := r.view(n); err == nil && v.kind == viewCompressed {
			ok, err := v.z.SymRowInto(id, c.seq, c.ts, dst)
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
		}
	}
	return r.ReadRow(c.seq, dst)
}
