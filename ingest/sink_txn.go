package ingest

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/store"
)

// The writer goroutine's side of an HTTP write request (a txn of staged
// rows, http_stage.go): check every row, then store them all.
//
// A large request is applied a slice of rows at a time (txnSlice), and
// between slices the writer goes on with everyone else: the event loops'
// batches and other requests, as long as they touch none of the tables
// the request writes (its tables are locked until it ends: a batch that
// names one waits, and so does its loop; a request that names one waits
// its turn). So a request of millions of rows delays other tables' writers
// by one slice, not by the whole request, and still nothing can come
// between its check and its store on its own tables, which is what makes
// the check's verdict hold. Its rows are published when it ends, all at
// once (the locked tables are skipped by publish meanwhile).
//
// Each table's rows take one of two ways, in both passes:
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

// txnSlice is how many rows the writer checks or stores of one request
// before it turns to other work (about 2 ms of storing): a request of at
// most this many rows is applied at once.
const txnSlice = 1 << 14

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

// checkCursor is where the check of one staged table stands.
type checkCursor struct {
	t     *stagedTable
	it    stageIter
	rc    runCols
	l     lineproto.Line
	st    *checkState
	limit uint64 // rows from this line on are not checked
}

func (k *checkCursor) init(t *stagedTable, limit uint64) {
	k.t, k.st, k.limit = t, nil, limit
	k.it.init(t)
}

// staged checks up to n more rows of k's table and reports whether it is
// done; on a bad row, the row's line and its error.
func (c *checker) staged(k *checkCursor, n int) (done bool, line uint64, err error) {
	it := &k.it
	for ; n > 0; n-- {
		if !it.next() || it.line >= k.limit {
			return true, 0, nil
		}
		if it.first || k.st == nil || it.any(k.rc.slow) {
			it.asLine(&k.l)
			if err := c.line(&k.l); err != nil {
				return true, it.line, err
			}
			k.st = c.seen[string(k.t.name)]
			k.rc.resolve(k.t, it.r, k.st.lo)
			continue
		}
		ts, has := it.ts()
		if err := c.time(k.st, ts, has); err != nil {
			return true, it.line, err
		}
	}
	return false, 0, nil
}

// storeCursor is where the store of one staged table stands.
type storeCursor struct {
	t  *stagedTable
	it stageIter
	rc runCols
	tb *table
	// ids is the table's symbol id of each of the request's symbols for
	// t, or noSym until first used.
	ids []uint32
}

const noSym = ^uint32(0)

func (k *storeCursor) init(t *stagedTable) {
	k.t, k.tb = t, nil
	k.it.init(t)
	k.ids = k.ids[:0]
	for range t.symEnd {
		k.ids = append(k.ids, noSym)
	}
}

// symbol is the table's id of the request's symbol whose id is at v.
func (k *storeCursor) symbol(v []byte) (uint32, error) {
	local := binary.LittleEndian.Uint32(v)
	if id := k.ids[local]; id != noSym {
		return id, nil
	}
	id, err := k.tb.w.Symbol(k.t.sym(local))
	if err == nil {
		k.ids[local] = id
	}
	return id, err
}

// storeStaged stores up to n more rows of k's table (checked already),
// marking the table in touched, and reports whether it is done. An error
// is a write failure, or a bad line the check did not foresee; the rows
// before it stay stored.
func (s *sink) storeStaged(k *storeCursor, n int, touched map[*table]bool) (bool, error) {
	it, t := &k.it, k.t
	for ; n > 0; n-- {
		if !it.next() {
			return true, nil
		}
		if it.first || k.tb == nil || it.any(k.rc.slow) {
			it.asLine(&s.line)
			tb, err := s.store(&s.line)
			if err != nil {
				return true, withLine(err, it.line)
			}
			k.tb = tb
			touched[tb] = true
			k.rc.resolve(t, it.r, tb.layout)
			continue
		}
		tb := k.tb
		var set uint64
		for i, c := range k.rc.col {
			if !it.has(i) {
				continue
			}
			sl := &t.slots[i]
			col := tb.at[c]
			v := it.cur[sl.off:]
			switch sl.class {
			case classTag, classString:
				id, err := k.symbol(v)
				if err != nil {
					return true, err
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
			return true, err
		}
		ts, has := it.ts()
		if err := s.appendTs(tb, ts, has); err != nil {
			return true, withLine(err, it.line)
		}
	}
	return false, nil
}

// txnRun is a request being applied: checked table by table, then stored
// table by table, a slice at a time.
type txnRun struct {
	t       *txn
	now     int64 // the request's clock: rows without a timestamp get it
	c       *checker
	storing bool
	ti      int // the table being checked or stored
	check   checkCursor
	store   storeCursor
	// The first bad row found so far: its table, line and error.
	bad     *stagedTable
	badLine uint64
	badErr  error
	touched map[*table]bool
	busy    time.Duration // the writer's time on it
}

// startRun begins applying t.
func (s *sink) startRun(t *txn) *txnRun {
	r := &txnRun{t: t, now: time.Now().UnixNano(), c: newChecker(s), badLine: math.MaxUint64, touched: map[*table]bool{}}
	r.c.fix = unitFix{unit: time.Duration(max(t.prec, 1)), http: true} // hints name precision=
	if len(t.tables) > 0 {
		r.check.init(t.tables[0], r.badLine)
	}
	return r
}

// step checks or stores about n more rows of r and reports whether r has
// ended (and its client has been answered).
func (s *sink) step(r *txnRun, n int) (ended bool) {
	t0 := time.Now()
	defer func() {
		if r.busy += time.Since(t0); ended {
			s.m.writeApply.Observe(r.busy.Seconds())
		}
	}()
	s.now = r.now
	tables := r.t.tables
	for !r.storing {
		if r.ti == len(tables) {
			if err := s.checked(r); err != nil {
				s.finish(r, err)
				return true
			}
			if err := s.reserveRun(r); err != nil {
				s.finish(r, err) // no room: nothing appended (room.go)
				return true
			}
			r.storing, r.ti = true, 0
			if len(tables) > 0 {
				r.store.init(tables[0])
			}
			break
		}
		done, line, err := r.c.staged(&r.check, n)
		if err != nil && line < r.badLine {
			r.bad, r.badLine, r.badErr = tables[r.ti], line, withLine(err, line)
		}
		if !done {
			return false
		}
		if r.ti++; r.ti < len(tables) {
			r.check.init(tables[r.ti], r.badLine)
		}
	}
	for r.ti < len(tables) {
		done, err := s.storeStaged(&r.store, n, r.touched)
		if err != nil {
			// Past reserveRun, a refusal for want of room leaves the
			// lines before it stored (storeFailed says which).
			err = storeFailed(err, r.store.it.line)
			// check passed, so this is a write failure: the rows before
			// it stay (they may already be visible), and the client
			// hears why.
			s.finish(r, err)
			return true
		}
		if !done {
			return false
		}
		if r.ti++; r.ti < len(tables) {
			r.store.init(tables[r.ti])
		}
	}
	s.finish(r, nil)
	return true
}

// checked ends r's check: the first bad row's error, counted and logged,
// or nil when every row will be stored.
func (s *sink) checked(r *txnRun) error {
	if r.badErr != nil {
		if _, ok := asLineErr(r.badErr); ok {
			s.countRejected(r.bad.name, r.badErr)
			s.m.logBad(s.log, "ingest: request rejected", "table", string(r.bad.name), "err", r.badErr)
		}
		return r.badErr
	}
	if n := r.t.truncLine; n != 0 {
		return withLine(&lineproto.LineError{Reason: lineproto.ReasonTableFull, Msg: errStageTruncated.Error()}, n)
	}
	return nil
}

// finish publishes what r stored and answers its client: err, or the
// counts to wait durable for.
func (s *sink) finish(r *txnRun, err error) {
	res := txnResult{err: err}
	for tb := range r.touched {
		if s.tables[tb.name] != tb {
			continue // dropped: its writer failed adding a column
		}
		tb.w.Publish()
		tb.dirty = false
		s.m.addAccepted(tb.name, tb.accepted)
		tb.accepted = 0
		if err == nil {
			tb.waiters.Add(1)
			res.waits = append(res.waits, durableWait{w: tb.w, n: tb.w.Len(), wg: &tb.waiters})
		}
	}
	r.t.res <- res
}

// locks reports whether r's request writes table name.
func (r *txnRun) locks(name []byte) bool {
	_, ok := r.t.rows[string(name)]
	return ok
}

func (r *txnRun) locksName(name string) bool {
	_, ok := r.t.rows[name]
	return ok
}

// disjoint reports whether request t writes none of the tables r does.
func (r *txnRun) disjoint(t *txn) bool {
	for name := range t.rows {
		if r.locksName(name) {
			return false
		}
	}
	return true
}

// touchesLocked reports whether batch b has a record of a table the
// current request locks.
func (s *sink) touchesLocked(b *batch) bool {
	for p := 0; p < len(b.buf); {
		rec := b.buf[p : p+recordLen(b.buf[p:])]
		if s.cur.locks(recordMeasurement(rec)) {
			return true
		}
		p += len(rec)
	}
	return false
}

// take receives a request: applied at once when it is small and touches
// none of the current request's tables, begun as the current request when
// there is none, queued otherwise.
func (s *sink) take(t *txn) {
	small := t.total <= txnSlice
	switch {
	case s.cur == nil && len(s.waiting) == 0:
		r := s.startRun(t)
		if small {
			s.step(r, math.MaxInt)
		} else {
			s.cur = r // advance applies it, a slice at a time
		}
	case s.cur != nil && small && s.cur.disjoint(t):
		s.step(s.startRun(t), math.MaxInt)
	default:
		s.waiting = append(s.waiting, t)
	}
}

// advance steps the current request by one slice and, when it ends,
// takes up the queued requests in order.
func (s *sink) advance() {
	if s.cur != nil && s.step(s.cur, txnSlice) {
		s.cur = nil
	}
	for s.cur == nil && len(s.waiting) > 0 {
		t := s.waiting[0]
		s.waiting[0] = nil
		s.waiting = s.waiting[1:]
		r := s.startRun(t)
		if t.total <= txnSlice {
			s.step(r, math.MaxInt)
		} else {
			s.cur = r
		}
	}
}
