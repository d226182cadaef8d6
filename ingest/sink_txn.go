package ingest

import (
	"encoding/binary"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/store"
)

// The writer goroutine's side of an HTTP write request: checking and
// storing one table's staged rows (http_stage.go). Both passes take the
// same two ways through a table's rows:
//
//   - The first row of each run (the line that brought new keys), and any
//     row the fast way cannot take, is rebuilt as a line (stageIter.asLine)
//     and goes through the same code as a line from a socket: checker.line
//     to check it, sink.store to store it (opening or creating the table,
//     adding columns, interning symbols). A table's rows take this way at
//     most once per slot the request has for it, plus once per bad row.
//   - Every other row of the run has its keys resolved already, once for
//     the run: its values are checked by one mask test (a slot whose
//     column does not take its values), its time by checker.time, and it
//     is stored by writing its values into the table's row buffer and
//     appending it with appendTs. Symbols go from the request's ids to the
//     table's through a per-request map filled on first use.
//
// So the rules each row meets stay in one place each: checker.line and
// checker.time for the check, sink.store and sink.appendTs for the store.

// runCols maps the slots of a run to a table's columns: the column of
// each slot, and the presence mask of the slots whose column is missing
// or does not take the slot's values (such a row takes the slow way).
type runCols struct {
	col  []int
	slow []byte
}

// resolve fills rc for run r of t against lo.
func (rc *runCols) resolve(t *stagedTable, r *stageRun, lo *layout) {
	rc.col = rc.col[:0]
	n := r.rowSize - r.presOff
	if cap(rc.slow) < n {
		rc.slow = make([]byte, n)
	}
	rc.slow = rc.slow[:n]
	clear(rc.slow)
	for k := 0; k < r.nslots; k++ {
		sl := &t.slots[k]
		c, ok := lo.cols[string(sl.key)]
		if !ok || !sl.class.fits(lo.at[c].Type) {
			c = -1
			rc.slow[(k+1)>>3] |= 1 << ((k + 1) & 7)
		}
		rc.col = append(rc.col, c)
	}
}

// staged checks table t's staged rows whose lines come before line
// limit, and returns the line of the first bad one with its error.
func (c *checker) staged(t *stagedTable, limit uint64) (uint64, error) {
	var it stageIter
	var rc runCols
	var l lineproto.Line
	var st *checkState
	for it.init(t); it.next(); {
		if it.line >= limit {
			break
		}
		if it.first || st == nil || it.any(rc.slow) {
			it.asLine(&l)
			if err := c.line(&l); err != nil {
				return it.line, err
			}
			st = c.seen[string(t.name)]
			rc.resolve(t, it.r, st.lo)
			continue
		}
		ts, has := it.ts()
		if err := c.time(st, ts, has); err != nil {
			return it.line, err
		}
	}
	return 0, nil
}

// storeStaged stores table t's staged rows (checked already), marking the
// table in touched. An error is a write failure, or a bad line the check
// did not foresee; the rows before it stay stored.
func (s *sink) storeStaged(t *stagedTable, touched map[*table]bool) error {
	var it stageIter
	var rc runCols
	var tb *table
	// The table's symbol id of each of the request's symbols for t, or
	// noSym until first used.
	const noSym = ^uint32(0)
	ids := make([]uint32, len(t.symEnd))
	for i := range ids {
		ids[i] = noSym
	}
	symbol := func(v []byte) (uint32, error) {
		local := binary.LittleEndian.Uint32(v)
		if id := ids[local]; id != noSym {
			return id, nil
		}
		id, err := tb.w.Symbol(t.sym(local))
		if err == nil {
			ids[local] = id
		}
		return id, err
	}
	l := &s.line
	for it.init(t); it.next(); {
		if it.first || tb == nil || it.any(rc.slow) {
			it.asLine(l)
			var err error
			if tb, err = s.store(l); err != nil {
				return withLine(err, it.line)
			}
			touched[tb] = true
			rc.resolve(t, it.r, tb.layout)
			continue
		}
		var set uint64
		for k, c := range rc.col {
			if !it.has(k) {
				continue
			}
			sl := &t.slots[k]
			col := tb.at[c]
			v := it.cur[sl.off:]
			switch sl.class {
			case classTag, classString:
				id, err := symbol(v)
				if err != nil {
					return err
				}
				tb.row.SetSym(col, id)
			case classBool:
				tb.row.SetBool(col, v[0] != 0)
			case classFloat:
				copy(tb.row[col.Off:col.Off+8], v[:8])
			default: // an integer
				if col.Type == store.TypeF64 {
					tb.row.SetF64(col, float64(int64(binary.LittleEndian.Uint64(v))))
				} else {
					copy(tb.row[col.Off:col.Off+8], v[:8])
				}
			}
			set |= 1 << c
		}
		if err := tb.fillMissing(set); err != nil {
			return err
		}
		ts, has := it.ts()
		if err := s.appendTs(tb, ts, has); err != nil {
			return withLine(err, it.line)
		}
	}
	return nil
}
