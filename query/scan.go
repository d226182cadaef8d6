package query

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

var le = binary.LittleEndian

// scan walks the rows of one table with from <= ts < to (every published
// row up to the end of the table when !hasTo), optionally only symbol id,
// handing out each as a copy checked against its check word, as Run does:
// the shared row source of Bars and AsOf.
//
// A range ends before the first row with ts >= to, so with no To (to =
// MaxInt64) the rows stamped exactly MaxInt64 are still due after it:
// scan reads them in a second pass (one seek; there are none in a real
// table), filtered by symbol, like Run.
type scan struct {
	r   *reader.Reader
	it  reader.Iter
	row store.Row // the current row: a checked copy, owned by the caller until next
	seq uint64    // the current row's sequence number
	err error

	tailDue bool   // the MaxInt64 pass is still to come
	vis     uint64 // published count before the range: the end of the MaxInt64 pass
	filter  bool   // MaxInt64 pass: see drop
	sym     bool
	id      uint32
	symCol  store.Col
}

// start positions s over r's rows in [from, to) (to = MaxInt64 and
// !hasTo: to the end), only symbol id's when sym is set (through its
// postings, at a cost proportional to its rows).
func (s *scan) start(r *reader.Reader, from, to int64, hasTo, sym bool, id uint32) error {
	st := r.Schema()
	*s = scan{r: r, it: s.it, row: s.row, sym: sym, id: id}
	if len(s.row) != st.RowSize {
		s.row = st.NewRow()
	}
	if !hasTo {
		to = math.MaxInt64
	}
	if sym {
		if st.SymCol < 0 {
			return fmt.Errorf("%w: table has no sym column", ErrBadQuery)
		}
		s.symCol = st.ColAt(st.SymCol)
	}
	s.vis = r.Count() // before the range: see Run
	s.tailDue = !hasTo
	if sym {
		return r.RangeSym(from, to, id, &s.it)
	}
	return r.Range(from, to, &s.it)
}

// next advances to the next row; false at the end or on error (s.err).
// Hot loops (Bars) inline it by hand: see take.
func (s *scan) next() bool {
	for {
		if !s.it.Next() {
			if !s.more() {
				return false
			}
			continue
		}
		if !s.take() {
			return false
		}
		if !s.drop(s.row) {
			return true
		}
	}
}

// take copies the iterator's current row into s.row and checks it
// against its check word, reading it again when the view was recycled
// under it; false on an error (s.err). It is not inlined (copyChecked
// alone is over the compiler's budget), so the hottest loops, Bars and
// AsOf, repeat copyChecked's body in place.
func (s *scan) take() bool {
	s.seq = s.it.Seq()
	v := s.it.Row()
	if len(v) != 32 || len(s.row) != 32 {
		return s.takeSlow(v)
	}
	return copyChecked(s.seq, v, s.row) || s.reread(s.seq)
}

// takeSlow is take for rows of other sizes.
func (s *scan) takeSlow(v store.Row) bool {
	if len(v) != len(s.row) {
		// Another of the table's layouts (docs/FORMAT.md §15).
		if err := s.r.CopyRow(s.seq, s.row, v); err != nil {
			s.err = err
			return false
		}
		return store.Valid(s.seq, s.row) || s.reread(s.seq)
	}
	copy(s.row, v)
	return store.Valid(s.seq, s.row) || s.reread(s.seq)
}

// reread reads row seq again, checked, when the copy of its view failed
// its check word: a live slot recycled under the view.
func (s *scan) reread(seq uint64) bool {
	if err := s.r.ReadRow(seq, s.row); err != nil {
		s.err = err
		return false
	}
	if !store.Valid(seq, s.row) {
		s.err = fmt.Errorf("%w: row %d fails its check word", store.ErrCorrupt, seq)
		return false
	}
	return true
}

// more ends the current pass; it reports whether another one has begun.
func (s *scan) more() bool {
	if s.err == nil {
		s.err = s.it.Err()
	}
	if s.err != nil || !s.tailDue {
		return false
	}
	s.tailDue = false
	a, err := s.r.SeekTime(math.MaxInt64)
	if err != nil {
		s.err = err
		return false
	}
	if a >= s.vis {
		return false
	}
	s.r.RangeSeq(a, s.vis, &s.it)
	s.filter = true
	return true
}

// drop reports whether the MaxInt64 pass skips row: the pass walks the
// rows from the first whose time key is MaxInt64 in seq order, and takes
// those stamped MaxInt64 (of the symbol, if one was asked for); late rows
// among them were in the range already.
func (s *scan) drop(row store.Row) bool {
	return s.filter && (row.Ts() != math.MaxInt64 || s.sym && row.Sym(s.symCol) != s.id)
}

// copyChecked copies row v (sequence number seq) into dst and reports
// whether the copy passes its check word; the common 32-byte row is
// loaded into registers once, checked there and stored. Rows of other
// sizes report false with dst untouched when the sizes differ, for the
// caller's slow path (takeSlow).
func copyChecked(seq uint64, v, dst store.Row) bool {
	if len(v) != 32 || len(dst) != 32 {
		return false
	}
	w0, w1, w2, w3 := le.Uint64(v[0:]), le.Uint64(v[8:]), le.Uint64(v[16:]), le.Uint64(v[24:])
	le.PutUint64(dst[0:], w0)
	le.PutUint64(dst[8:], w1)
	le.PutUint64(dst[16:], w2)
	le.PutUint64(dst[24:], w3)
	return uint32(w3>>32) == store.Check32(seq, w0, w1, w2, uint32(w3))
}
