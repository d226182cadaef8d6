package query

import (
	"fmt"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// scan walks the rows of one table with from <= ts < to (every published
// row up to the end of the table when !hasTo), optionally only symbol id,
// handing out each as a copy checked against its check word, as Run does:
// the shared row source of Bars and AsOf.
//
// With no To the range is reader.ToEnd: the rows stamped exactly
// MaxInt64 are in it.
type scan struct {
	it  reader.Iter
	row store.Row // the current row: a checked copy, owned by the caller until next
	err error
}

// start positions s over r's rows in [from, to) (!hasTo: to the end,
// reader.ToEnd), only symbol id's when sym is set (through its postings,
// at a cost proportional to its rows).
func (s *scan) start(r *reader.Reader, from, to int64, hasTo, sym bool, id uint32) error {
	st := r.Schema()
	*s = scan{it: s.it, row: s.row}
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

// next advances to the next row and copies it into s.row, checked
// (reader.Iter.NextInto); false at the end or on error (s.err). Bars and
// AsOf call NextInto themselves, in loops that keep their state in
// locals.
func (s *scan) next() bool {
	for {
		if !s.it.NextInto(s.row) {
			if !s.more() {
				return false
			}
			continue
		}
		return true
	}
}

// more ends the range, keeping its error; it reports whether more rows
// follow (never: the range is one pass).
func (s *scan) more() bool {
	if s.err == nil {
		s.err = s.it.Err()
	}
	return false
}
