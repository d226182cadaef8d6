package query

import (
	"encoding/binary"
	"fmt"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

var le = binary.LittleEndian

// scan walks the rows of one table with from <= ts < to (every published
// row up to the end of the table when !hasTo), optionally only symbol id,
// handing out each as a copy checked against its check word, as Run does:
// the shared row source of Bars and AsOf.
//
// With no To the range is reader.ToEnd: the rows stamped exactly
// MaxInt64 are in it.
type scan struct {
	r   *reader.Reader
	it  reader.Iter
	row store.Row // the current row: a checked copy, owned by the caller until next
	seq uint64    // the current row's sequence number
	err error
}

// start positions s over r's rows in [from, to) (!hasTo: to the end,
// reader.ToEnd), only symbol id's when sym is set (through its postings,
// at a cost proportional to its rows).
func (s *scan) start(r *reader.Reader, from, to int64, hasTo, sym bool, id uint32) error {
	st := r.Schema()
	*s = scan{r: r, it: s.it, row: s.row}
	if len(s.row) != st.RowSize {
		s.row = st.NewRow()
	}
	if !hasTo {
		to = reader.ToEnd
	}
	if sym && st.SymCol < 0 {
		return fmt.Errorf("%w: table has no sym column", ErrBadQuery)
	}
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
		return s.take()
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
		return s.takeSlow()
	}
	return copyChecked(s.seq, v, s.row) || s.reread(s.seq)
}

// takeSlow is take for rows of other sizes: the iterator's checked copy
// (reader.Iter.ReadRow). The 32-byte path (copyChecked, and its copies
// inlined by hand in Bars and AsOf) is that copy with the check computed
// in registers.
func (s *scan) takeSlow() bool {
	if err := s.it.ReadRow(s.row); err != nil {
		s.err = err
		return false
	}
	return true
}

// reread reads row seq again, checked, when the copy of its view failed
// its check word: a live slot recycled under the view.
func (s *scan) reread(seq uint64) bool {
	if err := s.r.ReadRow(seq, s.row); err != nil {
		s.err = err
		return false
	}
	if !format.Valid(seq, s.row) {
		s.err = fmt.Errorf("%w: row %d fails its check word", store.ErrCorrupt, seq)
		return false
	}
	return true
}

// more ends the range, keeping its error; it reports whether more rows
// follow (never: the range is one pass).
func (s *scan) more() bool {
	if s.err == nil {
		s.err = s.it.Err()
	}
	return false
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
	return uint32(w3>>32) == format.Check32(seq, w0, w1, w2, uint32(w3))
}
