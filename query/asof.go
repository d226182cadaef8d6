package query

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// AsOfQuery asks for an as-of join: every row of the left table with
// From <= ts < To (each only when its Has flag is set, as in Query), of
// symbol Sym or of every symbol with Sym "", joined with the last row of
// the right table of the same symbol whose ts is at or before it, and,
// with HasTolerance, no more than Tolerance (inclusive) before it. Left
// and Right name the tables for error messages, the ilp measurement
// (Left) and the prefix of colliding right column names (Right).
type AsOfQuery struct {
	Left, Right    string
	Sym            string
	From, To       int64
	HasFrom, HasTo bool
	Tolerance      time.Duration
	HasTolerance   bool
}

// AsOf runs the as-of join q asks for, like kdb's aj, over the open
// readers left and right, and passes every selected left row to fn, in
// time (= sequence) order, with its match: the right row of the same
// symbol with the greatest ts <= the left row's ts (among equal ts, the
// one with the greater sequence number), or nil when there is none or,
// with HasTolerance, when it is more than Tolerance older than the left
// row. It returns how many left rows it passed.
//
// The symbol is each table's first sym column (store.Schema.SymCol),
// matched by name: the two tables' dictionaries differ, so each left id
// is mapped to the right's once. A table without a sym column, a
// negative Tolerance or a Sym on a table without a sym column is an
// ErrBadQuery error; a Sym the left table does not hold selects no rows.
//
// One pass over both tables, merged by time: the right rows up to each
// left row's ts are read before it, keeping the last one per symbol, so
// memory is one row per right symbol. The right rows read are those with
// From - Tolerance <= ts < To (no To: to the end of the table). Without a
// tolerance, a match may be any amount older than From: each right
// symbol's last row before From is found first, as a latest-row query
// finds it (reader.Latest: a search of its postings, or of a compressed
// segment's directory, not a read of everything before From). With Sym set both sides walk that symbol's
// postings, at a cost proportional to its rows. It checks ctx every few
// thousand rows.
//
// The rows passed to fn are copies checked against their check words,
// valid only during the call.
func AsOf(ctx context.Context, left, right *reader.Reader, q AsOfQuery, fn func(l, r store.Row) error) (int64, error) {
	if q.HasTolerance && q.Tolerance < 0 {
		return 0, fmt.Errorf("%w: tolerance %v is negative", ErrBadQuery, q.Tolerance)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ls, rs := left.Schema(), right.Schema()
	for _, t := range []struct {
		name string
		s    *store.Schema
	}{{q.Left, ls}, {q.Right, rs}} {
		if t.s.SymCol < 0 {
			return 0, fmt.Errorf("%w: table %s has no sym column to join on", ErrBadQuery, t.name)
		}
	}
	x := &asofRun{left: left, right: right, fn: fn, lsym: ls.ColAt(ls.SymCol), rsym: rs.ColAt(rs.SymCol),
		last: make([]store.Row, right.Symbols()), tol: -1}
	if q.HasTolerance {
		x.tol = int64(q.Tolerance)
	}
	from, rfrom := int64(math.MinInt64), int64(math.MinInt64)
	if q.HasFrom {
		from = q.From
		if q.HasTolerance {
			rfrom = satSub(from, x.tol)
		}
	}
	var lid, rid uint32
	bySym := q.Sym != ""
	rightAny := true // some right row may match
	if bySym {
		var ok bool
		if lid, ok = left.SymbolID([]byte(q.Sym)); !ok {
			return 0, nil
		}
		rid, rightAny = right.SymbolID([]byte(q.Sym))
	}
	if rightAny && q.HasFrom && !q.HasTolerance {
		// Without a tolerance a match may be older than From by any
		// amount: find each symbol's last row before From through its
		// postings rather than read the right table from its start.
		if err := x.seed(ctx, from, bySym, rid); err != nil {
			return 0, q.wrap(err)
		}
		rfrom = from
	}
	if !bySym {
		// Every symbol, over compacted history: column scans of both
		// tables, in seq order (time order, unless a range has late rows:
		// then Range, as below).
		done, err := x.runScans(ctx, from, rfrom, q, rightAny)
		if done || err != nil {
			return x.n, q.wrap(err)
		}
	}
	if rightAny {
		if err := x.rs.start(right, rfrom, q.To, q.HasTo, bySym, rid); err != nil {
			return 0, q.wrap(err)
		}
		x.rmore = x.rs.next()
		if x.rs.err != nil {
			return 0, q.wrap(x.rs.err)
		}
	}
	if err := x.ls.start(left, from, q.To, q.HasTo, bySym, lid); err != nil {
		return 0, q.wrap(err)
	}
	err := x.run(ctx)
	return x.n, q.wrap(err)
}

// asofRun is one AsOf call's state.
type asofRun struct {
	left, right *reader.Reader
	fn          func(l, r store.Row) error
	ls, rs      scan
	rmore       bool // rs holds a row not yet folded into last
	lsym, rsym  store.Col
	tol         int64 // -1: none
	// last is the latest right row read, by right symbol id (nil: none);
	// l2r maps a left symbol id to the right's: 0 unknown yet, 1 none,
	// else id+2.
	last  []store.Row
	l2r   []uint32
	spare []store.Row // row buffers for symbols seen for the first time
	n     int64
	// rowSize is the right rows' size when the column scans run (0: the
	// right scan's row's, or the right schema's).
	rowSize int
}

func (x *asofRun) run(ctx context.Context) error {
	// The loops below are scan.next by hand, for both tables (a call per
	// row beside NextInto's costs about a tenth of the join), and keep the
	// state they touch per row in locals.
	ls, rs := &x.ls, &x.rs
	lit, rit := &ls.it, &rs.it
	l := ls.row
	rmore, rsym, lsym, last := x.rmore, x.rsym, x.lsym, x.last
	l2r, tol, fn := x.l2r, x.tol, x.fn
	var rts int64 // ts of the pending right row rs.row
	if rmore {
		rts = rs.row.Ts()
	}
	k := 0
	for {
		// The iterator's checked copy (NextInto): one call a row.
		if !lit.NextInto(l) {
			if !ls.more() {
				return ls.err
			}
			continue
		}
		if k++; k == ctxEvery {
			k = 0
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		ts := l.Ts()
		// Fold in the right rows up to ts: the last one per symbol wins,
		// so among equal ts the greater sequence number does. A row is
		// kept by swapping buffers, not copied.
		for rmore && rts <= ts {
			id := rs.row.Sym(rsym)
			if int(id) >= len(last) {
				x.last = append(x.last, make([]store.Row, int(id)+1-len(x.last))...)
				last = x.last
			}
			old := last[id]
			if old == nil {
				old = x.newRow()
			}
			last[id], rs.row = rs.row, old
			for {
				if !rit.NextInto(rs.row) {
					if rmore = rs.more(); !rmore {
						if rs.err != nil {
							return rs.err
						}
						break
					}
					continue
				}
				rts = rs.row.Ts()
				break
			}
		}
		var m store.Row
		id := l.Sym(lsym)
		if int(id) >= len(l2r) || l2r[id] == 0 {
			if err := x.resolve(id); err != nil {
				return err
			}
			l2r, last = x.l2r, x.last // resolve may grow them
		}
		if rid := l2r[id]; rid > 1 {
			m = last[rid-2]
			// rts <= ts, so the unsigned difference is exact.
			if m != nil && tol >= 0 && uint64(ts)-uint64(m.Ts()) > uint64(tol) {
				m = nil
			}
		}
		if err := fn(l, m); err != nil {
			return err
		}
		x.n++
	}
}

// runScans is run over column scans of every column of both tables:
// the left rows with from <= ts < To, the right ones with rfrom <= ts <
// To (none unless rightAny), each in seq order. It reports false, having
// read nothing, when either range has late rows (the scans' seq order is
// then not time order), or neither holds compressed rows.
func (x *asofRun) runScans(ctx context.Context, from, rfrom int64, q AsOfQuery, rightAny bool) (bool, error) {
	to := int64(reader.ToEnd)
	if q.HasTo {
		to = q.To
	}
	all := func(s *store.Schema) []int {
		c := make([]int, len(s.Cols))
		for i := range c {
			c[i] = i
		}
		return c
	}
	ls, rs := x.left.Schema(), x.right.Schema()
	var lsc, rsc reader.Scan
	defer lsc.Close()
	defer rsc.Close()
	if err := x.left.Scan(reader.ScanSpec{Cols: all(ls), From: from, To: to, Seqs: true}, &lsc); err != nil {
		return true, err
	}
	if !rightAny {
		rfrom, to = 1, 0 // nothing
	}
	if err := x.right.Scan(reader.ScanSpec{Cols: all(rs), From: rfrom, To: to, Seqs: true}, &rsc); err != nil {
		return true, err
	}
	if lsc.Late() || rsc.Late() || !lsc.Compressed() && !rsc.Compressed() {
		return false, nil // (over raw rows alone the iterators are as fast)
	}
	x.rowSize = rs.RowSize // (the right's layout as the scan reads it)
	lrow := make(store.Row, ls.RowSize)
	last, l2r, tol, fn := x.last, x.l2r, x.tol, x.fn
	lsymVec, rsymVec := ls.SymCol, rs.SymCol
	// The right rows not read yet: block rb's from ri on. A right row is
	// copied out of its block only when a left row takes it as its match,
	// or before its block goes: pend[id] is the row of rb that is right
	// symbol id's last one (-1: last[id] holds it), pendIDs the ids with
	// one.
	var rb *reader.Block
	var rts []int64
	var rsym []uint32
	ri, rmore := 0, true
	pend := make([]int32, len(last))
	for i := range pend {
		pend[i] = -1
	}
	var pendIDs []uint32
	take := func(id uint32) error {
		err := rsc.RowInto(int(pend[id]), last[id])
		pend[id] = -1
		return err
	}
	for lsc.Next() {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		lb := lsc.Block()
		lsym := lb.Sym(lsymVec)
		for i, ts := range lb.I64(0) {
			// Fold in the right rows up to ts: the last one per symbol
			// wins, so among equal ts the greater sequence number does.
			for rmore {
				if ri == len(rts) {
					for _, id := range pendIDs {
						if pend[id] >= 0 {
							if err := take(id); err != nil {
								return true, err
							}
						}
					}
					pendIDs = pendIDs[:0]
					if rmore = rsc.Next(); !rmore {
						if err := rsc.Err(); err != nil {
							return true, err
						}
						break
					}
					rb, ri = rsc.Block(), 0
					rts, rsym = rb.I64(0), rb.Sym(rsymVec)
					continue
				}
				if rts[ri] > ts {
					break
				}
				id := rsym[ri]
				if int(id) >= len(last) {
					x.last = append(x.last, make([]store.Row, int(id)+1-len(x.last))...)
					last = x.last
				}
				for int(id) >= len(pend) {
					pend = append(pend, -1)
				}
				if last[id] == nil {
					last[id] = x.newRow()
				}
				if pend[id] < 0 {
					pendIDs = append(pendIDs, id)
				}
				pend[id] = int32(ri)
				ri++
			}
			var m store.Row
			id := lsym[i]
			if int(id) >= len(l2r) || l2r[id] == 0 {
				if err := x.resolve(id); err != nil {
					return true, err
				}
				l2r, last = x.l2r, x.last // resolve may grow them
			}
			if rid := l2r[id]; rid > 1 {
				k := rid - 2
				if int(k) < len(pend) && pend[k] >= 0 {
					if err := take(k); err != nil {
						return true, err
					}
				}
				m = last[k]
				// Its ts <= ts, so the unsigned difference is exact.
				if m != nil && tol >= 0 && uint64(ts)-uint64(m.Ts()) > uint64(tol) {
					m = nil
				}
			}
			if err := lsc.RowInto(i, lrow); err != nil {
				return true, err
			}
			if err := fn(lrow, m); err != nil {
				return true, err
			}
			x.n++
		}
	}
	return true, lsc.Err()
}

// resolve maps left symbol id to the right's id by name.
func (x *asofRun) resolve(id uint32) error {
	if int(id) >= len(x.l2r) {
		x.l2r = append(x.l2r, make([]uint32, int(id)+1-len(x.l2r))...)
	}
	name, err := x.left.SymbolName(id)
	if err != nil {
		return err
	}
	x.l2r[id] = 1
	if rid, ok := x.right.SymbolID([]byte(name)); ok {
		x.l2r[id] = rid + 2
		if int(rid) >= len(x.last) {
			x.last = append(x.last, make([]store.Row, int(rid)+1-len(x.last))...)
		}
	}
	return nil
}

// newRow returns a row buffer for a right symbol's first row, carved
// from a slab so that the symbols cost one allocation per 64.
func (x *asofRun) newRow() store.Row {
	if len(x.spare) == 0 {
		rs := len(x.rs.row) // the right scan's layout (its schema when it started)
		if x.rowSize != 0 {
			rs = x.rowSize
		} else if rs == 0 {
			rs = x.right.Schema().RowSize
		}
		slab := make([]byte, 64*rs)
		for i := 0; i < 64; i++ {
			x.spare = append(x.spare, store.Row(slab[i*rs:(i+1)*rs:(i+1)*rs]))
		}
	}
	r := x.spare[len(x.spare)-1]
	x.spare = x.spare[:len(x.spare)-1]
	return r
}

// seed puts into last the last right row with ts < from of every right
// symbol (only symbol id with sym): the rows a latest-row query at
// from-1 returns (reader.Latest: per symbol a search of its postings, or
// of a compressed segment's directory and the one data block that holds
// it), rather than every right row before from.
func (x *asofRun) seed(ctx context.Context, from int64, sym bool, id uint32) error {
	ids := []uint32{id}
	if !sym {
		n := x.right.Symbols()
		ids = make([]uint32, n)
		for i := range ids {
			ids[i] = uint32(i)
		}
		if n > len(x.last) {
			x.last = append(x.last, make([]store.Row, n-len(x.last))...)
		}
	} else if int(id) >= len(x.last) {
		x.last = append(x.last, make([]store.Row, int(id)+1-len(x.last))...)
	}
	if from == math.MinInt64 {
		return nil // no row is before it
	}
	var l reader.Latest
	if err := x.right.Latest(from-1, &l); err != nil {
		return err
	}
	row := make(store.Row, x.right.Schema().RowSize)
	for k, rid := range ids {
		if k%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if _, ok, err := l.Sym(rid, row); err != nil {
			return err
		} else if ok {
			if x.last[rid] == nil {
				x.last[rid] = x.newRow()
			}
			copy(x.last[rid], row)
		}
	}
	return nil
}

// satAdd is a + b, saturated at MaxInt64 (a, b >= 0).
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// satSub is a - b, saturated at MinInt64 (b >= 0).
func satSub(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// wrap names the query's tables in an error from below.
func (q *AsOfQuery) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("asof %s/%s: %w", q.Left, q.Right, err)
}

// asofCol is where one output value of a join comes from.
type asofCol struct {
	right bool
	col   store.Col
}

// asofCols returns the output columns of a join of left and right
// (schemas ls and rs, the right table named right): the left's columns,
// then "<right>_ts", then the right's other columns but its sym key
// column, a name that collides with an earlier one prefixed "<right>_"
// (again, until it no longer does). Syms of the left use lookup 0, of the
// right lookup 1.
func asofCols(ls, rs *store.Schema, right string) ([]Column, []asofCol) {
	var cols []Column
	var src []asofCol
	taken := map[string]bool{}
	add := func(name string, t store.ColType, r bool, c store.Col) {
		for taken[name] {
			name = right + "_" + name
		}
		taken[name] = true
		d := 0
		if r {
			d = 1
		}
		cols = append(cols, Column{Name: name, Type: t, Dict: d})
		src = append(src, asofCol{right: r, col: c})
	}
	for i, c := range ls.Cols {
		add(c.Name, c.Type, false, ls.ColAt(i))
	}
	add(right+"_ts", store.TypeTs, true, rs.ColAt(0))
	for i, c := range rs.Cols {
		if i == 0 || i == rs.SymCol {
			continue
		}
		add(c.Name, c.Type, true, rs.ColAt(i))
	}
	return cols, src
}

// NewAsOfEncoder returns an Encoder for the rows of the join q of left
// and right, for RunAsOf. Its columns are SPEC's: the left's, then
// "<right>_ts", then the right's other columns except its sym key column,
// those whose name collides with a left column's prefixed "<right>_".
// The ilp measurement is the left table's name.
func NewAsOfEncoder(w io.Writer, f Format, tsf TsFormat, left, right *reader.Reader, q AsOfQuery) (*Encoder, error) {
	cols, _ := asofCols(left.Schema(), right.Schema(), q.Right)
	return NewValuesEncoder(w, f, tsf, cols, q.Left, left.SymbolName, right.SymbolName)
}

// RunAsOf runs AsOf and writes every joined row to enc, which
// NewAsOfEncoder made for the same readers and q, the right columns
// missing where there is no match; it returns the rows written. The
// caller closes enc.
func RunAsOf(ctx context.Context, left, right *reader.Reader, q AsOfQuery, enc *Encoder) (int64, error) {
	_, src := asofCols(left.Schema(), right.Schema(), q.Right)
	if enc.vrow == nil || len(enc.cols)+1 != len(src) {
		return 0, fmt.Errorf("query: the encoder was not made by NewAsOfEncoder")
	}
	v := make([]uint64, len(src))
	none := make([]bool, len(src))
	for i, c := range src {
		none[i] = c.right
	}
	return AsOf(ctx, left, right, q, func(l, r store.Row) error {
		for i := range src {
			c := &src[i]
			row := l
			if c.right {
				if r == nil {
					v[i] = 0
					continue
				}
				row = r
			}
			v[i] = word(row, c.col)
		}
		if r == nil {
			return enc.Values(v, none)
		}
		return enc.Values(v, nil)
	})
}

// word is column c of row as Encoder.Values takes it.
func word(row store.Row, c store.Col) uint64 {
	switch c.Type {
	case store.TypeSym:
		return uint64(row.Sym(c))
	case store.TypeBool:
		if row.Bool(c) {
			return 1
		}
		return 0
	default: // ts, i64, f64: the 8 bytes as they are
		return uint64(row.I64(c))
	}
}
