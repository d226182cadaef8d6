package export

import (
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// scanner copies the rows between two cuts out of a table, in time order,
// a batch at a time, each row checked against its check word: the rows of
// a reader's iterator are views into the mapping, and one of a live slot
// that the writer recycles under the view would be wrong; a copy that
// passes its check is not.
//
// In a table without late rows (when Run started) the rows between two
// cuts are those between their seqs, already in time order: the scanner
// walks them with reader.RangeSeq, whose Next hands out rows of a checked
// block without a call into the reader, and allocates nothing. With late
// rows it reads reader.Range from the first cut's ts, which merges the
// late rows in by (ts, seq), keeps the rows published when Run started
// and stops at the second cut. The range runs to the end (reader.ToEnd,
// which holds the rows stamped MaxInt64 too) rather than just past the
// second cut's ts, which costs nothing (Next is lazy).
type scanner struct {
	r     *reader.Reader
	it    reader.Iter
	batch []byte // batchRows rows
	rs    int

	// The time-order walk (late rows): whether it is on, the rows
	// published at Run's start, the cuts, and the walk's state.
	late     bool
	vis      uint64
	from, to cut
	done     bool
}

// newScanner reads r's rows into batches of rows of schema s's layout
// (r's schema when the export began: a row of another layout, written
// before a column was added or after, is relaid out into it).
func newScanner(r *reader.Reader, s *store.Schema, late bool, vis uint64) *scanner {
	rs := s.RowSize
	return &scanner{r: r, batch: make([]byte, batchRows*rs), rs: rs, late: late, vis: vis}
}

// start positions the scanner at the rows [from, to).
func (s *scanner) start(from, to cut) error {
	if !s.late {
		return s.r.RangeSeq(from.seq, to.seq, &s.it)
	}
	s.from, s.to, s.done = from, to, false
	return s.r.Range(from.ts, reader.ToEnd, &s.it)
}

// fill copies the next rows, up to batchRows, into batch and returns how
// many; 0 at the end of the range.
func (s *scanner) fill() (int, error) {
	if s.late {
		return s.fillLate()
	}
	// The loop of every export of a table without late rows: kept as it
	// was before late rows, copyRow's body inline.
	n := 0
	for n < batchRows && s.it.Next() {
		if err := s.it.ReadRow(s.batch[n*s.rs : (n+1)*s.rs]); err != nil { // a checked copy
			return 0, err
		}
		n++
	}
	return n, s.it.Err()
}

// fillLate is fill in time order with late rows.
func (s *scanner) fillLate() (int, error) {
	n := 0
	for n < batchRows && !s.done {
		if !s.it.Next() {
			if err := s.it.Err(); err != nil {
				return 0, err
			}
			s.done = true
			break
		}
		seq, row := s.it.Seq(), s.it.Row()
		ts := row.Ts()
		switch {
		case seq >= s.vis:
			continue // published since Run started
		case s.from.holds(ts, seq):
			continue // ts = from.ts, before from's seq
		case !s.to.holds(ts, seq):
			s.done = true
			continue
		}
		if err := s.copyRow(n); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// copyRow copies the iterator's current row into batch slot i, checked.
func (s *scanner) copyRow(i int) error { return s.it.ReadRow(s.batch[i*s.rs : (i+1)*s.rs]) }
