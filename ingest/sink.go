package ingest

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// sink is the single writer goroutine of a server: it drains the event
// loops' rings and the HTTP requests, turns records into rows of their
// tables (opening or creating each table on its first line), appends them
// and publishes once per drained batch. All tables' writers are driven
// from this one goroutine, locked to its OS thread and, with Options.CPU,
// to a CPU.
type sink struct {
	opts    *Options
	log     *slog.Logger
	m       *metrics
	rings   []*ring
	park    *parker
	txc     chan *txn
	tables  map[string]*table
	failed  map[string]failedOpen
	last    *table
	line    lineproto.Line
	meta    recordMeta
	reads   []int64 // read times of the batches applied since the last publish
	now     int64
	stopc   chan struct{} // closed by stop: drain what is queued, then exit
	donec   chan struct{}
	loopsWG *sync.WaitGroup // producers still running; the sink exits after them
	cur     *txnRun         // the HTTP request being applied a slice at a time (sink_txn.go)
	waiting []*txn          // requests queued behind it
	err     error           // the first error closing the tables

	statsMu sync.Mutex
	stats   map[string]writer.Stats
	lastSt  time.Time
	refused refusal // the last refusal for want of room, under statsMu (room.go)

	// Line-protocol lines held for want of room (room.go): the refusal
	// that stopped the batch being applied, when each ring may be tried
	// again (zero: not held), and how many rings are held.
	holdErr   error
	heldUntil []time.Time
	heldN     gauge

	// touched are the tables with rows appended since the last publish
	// (table.dirty), stale those whose counters may have moved since the
	// last copy (table.stale): a publish round and a stats copy cost the
	// tables written, not every table open.
	touched, stale []*table
}

// failedOpen remembers a table that could not be opened, so a stream of
// lines for it costs a map lookup each, not a failed open each.
type failedOpen struct {
	err   error
	until time.Time
}

// txn is an HTTP request's staged rows (http_stage.go), applied all or
// nothing. A large body is staged in chunks on several goroutines
// (http_chunks.go), a stage per chunk; the writer goroutine reads the
// stages in line order.
type txn struct {
	// tables is every stage's tables, stage by stage, so that each table's
	// rows come in line order; rows is each table's rows in all stages.
	tables    []*stagedTable
	rows      map[string]uint64
	total     uint64 // rows in all
	truncLine uint64 // the stages' truncLine (only the last may have one)
	prec      int64  // the request's precision: ns per unit of its timestamps
	res       chan txnResult
}

func newTxn(stages []*stage, prec int64) *txn {
	t := &txn{rows: map[string]uint64{}, prec: prec, res: make(chan txnResult, 1)}
	for _, st := range stages {
		t.tables = append(t.tables, st.tables...)
		for _, tb := range st.tables {
			t.rows[string(tb.name)] += tb.rows
		}
		t.total += st.rows
		if st.truncLine != 0 {
			t.truncLine = st.truncLine
		}
	}
	return t
}

// txnResult says how a txn ended: err is a *LineError naming the request's
// line, or a write failure; waits are the row counts to wait durable for.
type txnResult struct {
	err   error
	waits []durableWait
}

type durableWait struct {
	w  *writer.Writer
	n  uint64
	wg *sync.WaitGroup // the table's waiters, released by wait or release
}

// wait waits until every table the request wrote has its rows durable,
// then releases the waits.
func (r *txnResult) wait() error {
	var err error
	for _, dw := range r.waits {
		if err == nil {
			err = dw.w.WaitDurable(dw.n)
		}
		dw.wg.Done()
	}
	r.waits = nil
	return err
}

// release lets go of the waits without waiting.
func (r *txnResult) release() {
	for _, dw := range r.waits {
		dw.wg.Done()
	}
	r.waits = nil
}

func newSink(o *Options, m *metrics, rings []*ring, loops *sync.WaitGroup) *sink {
	return &sink{
		opts: o, log: o.Logger, m: m, rings: rings, park: newParker(), txc: make(chan *txn),
		tables: map[string]*table{}, failed: map[string]failedOpen{},
		stopc: make(chan struct{}), donec: make(chan struct{}), loopsWG: loops,
		stats: map[string]writer.Stats{}, reads: make([]int64, 0, 256),
		heldUntil: make([]time.Time, len(rings)),
	}
}

// submit hands an HTTP request's records to the writer goroutine and waits
// for the outcome.
func (s *sink) submit(t *txn) txnResult {
	select {
	case s.txc <- t:
	case <-s.donec:
		return txnResult{err: errors.New("ingest: server is shutting down")}
	}
	return <-t.res
}

// run is the writer goroutine.
func (s *sink) run() {
	defer close(s.donec)
	// Pinned when asked: locked to its thread, and the thread to the CPU.
	// Unpinned, it stays a plain goroutine, which wakes faster when the
	// machine has no core to spare for it.
	if s.opts.PinCPU {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var set unix.CPUSet
		set.Set(s.opts.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			s.log.Warn("ingest: cannot pin the writer", "cpu", s.opts.CPU, "err", err)
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	loopsDone := make(chan struct{})
	go func() { s.loopsWG.Wait(); close(loopsDone) }()
	stopping, producersGone := false, false
	idle := 0
	for {
		work := s.drain()
		if s.cur != nil || len(s.waiting) > 0 {
			s.advance()
			work = true
		}
		select {
		case t := <-s.txc:
			s.take(t)
			work = true
		default:
		}
		if work {
			s.publish()
			idle = 0
			continue
		}
		if !stopping {
			select {
			case <-s.stopc:
				stopping = true
			default:
			}
		}
		if stopping && !producersGone {
			select {
			case <-loopsDone:
				producersGone = true
				continue // drain once more after the last publish
			default:
			}
		}
		if producersGone {
			break
		}
		s.refreshStats(false)
		if idle++; idle < 64 {
			runtime.Gosched()
			continue
		}
		s.park.sleep()
		if s.pending() {
			s.park.awake()
			continue
		}
		var gone <-chan struct{} // watched only once stopping: it is closed at once when there are no loops
		if stopping {
			gone = loopsDone
		}
		timer.Reset(s.idleWait(50 * time.Millisecond))
		select {
		case t := <-s.txc:
			s.park.awake()
			s.take(t)
			s.publish()
			idle = 0
		case <-s.stopc:
			stopping = true
		case <-gone:
		case <-s.park.wakec:
		case <-timer.C:
		}
		timer.Stop()
		s.park.awake()
		s.refreshStats(false)
	}
	s.closeTables()
}

// pending reports whether any ring holds a batch to apply now (not one
// held for want of room).
func (s *sink) pending() bool {
	for i, r := range s.rings {
		if !r.empty() && !s.held(i) {
			return true
		}
	}
	return false
}

// drain applies up to a few batches from every ring, round-robin, so one
// busy connection's loop cannot starve the others.
func (s *sink) drain() bool {
	work := false
	for i, r := range s.rings {
		if s.held(i) {
			continue // no room for its next line yet (room.go)
		}
		for range 4 {
			b := r.peek()
			if b == nil || s.cur != nil && s.touchesLocked(b) {
				break // (a batch for a locked table waits, and its ring)
			}
			from := b.applied
			if !s.applyBatch(b) {
				work = work || b.applied != from
				if !s.hold(i, b) {
					break
				}
			}
			s.unheld(i)
			if b.readNs != 0 && len(s.reads) < cap(s.reads) {
				s.reads = append(s.reads, b.readNs)
			}
			r.release()
			work = true
		}
	}
	return work
}

// applyBatch applies b's records from b.applied on and reports whether
// it got to the end; it stops at a line its table has no room for, which
// stays first (b.applied: room.go).
func (s *sink) applyBatch(b *batch) bool {
	t0 := time.Now()
	s.now = t0.UnixNano()
	// At many symbols, each record's symbol is pushed to its table's
	// look-ahead a few records before it is applied (writer.Ahead).
	var ahead *writer.Ahead
	if t := s.last; t != nil && t.symTag >= 0 && t.ahead.Useful() {
		ahead = t.ahead
		defer ahead.Reset() // before the batch's buffer goes back to its loop
	}
	q, lead := b.applied, 0 // the next record to push, and how many are pushed but not applied
	for p := b.applied; p < len(b.buf); {
		for ahead != nil && lead < writer.AheadRows && q < len(b.buf) {
			next := b.buf[q : q+recordLen(b.buf[q:])]
			ahead.Push(s.aheadSym(next))
			q += len(next)
			lead++
		}
		lead--
		rec := b.buf[p : p+recordLen(b.buf[p:])]
		if r, bad := recordRejected(rec); bad {
			// Logged by the loop; counted here, after the lines before it.
			s.m.rejected(s.label(recordMeasurement(rec)), r.String())
		} else if !s.applyFast(rec) {
			decodeRecord(rec, &s.line, &s.meta)
			s.applyLine(&s.line, &s.meta)
		}
		if s.holdErr != nil {
			b.applied = p
			return false
		}
		p += len(rec)
	}
	b.applied = 0 // done: nothing held
	s.m.applySec.Observe(time.Since(t0).Seconds())
	s.m.batchRows.Observe(float64(b.recs))
	if s.opts.slowApply > 0 {
		time.Sleep(s.opts.slowApply)
	}
	return true
}

// aheadSym is the symbol of rec's postings column, when rec is for the
// last table used and has its cached key order, or nil.
func (s *sink) aheadSym(rec []byte) []byte {
	t := s.last
	if t == nil || t.symTag < 0 || string(recordMeasurement(rec)) != t.name {
		return nil
	}
	return recordTag(rec, t.symTag)
}

// applyFast appends one record whose table is the last one used and whose
// keys come in that table's cached order, the common case, without
// decoding it into a Line. It reports false when the record needs
// applyLine (and then has changed nothing).
func (s *sink) applyFast(rec []byte) bool {
	t := s.last
	if t == nil || string(recordMeasurement(rec)) != t.name {
		return false
	}
	ok, err := t.fillRecord(rec)
	if !ok {
		return false
	}
	if err == nil {
		ts, has := recordTs(rec)
		err = s.appendTs(t, ts, has)
	}
	if err != nil {
		var m recordMeta
		decodeRecord(rec, &s.line, &m)
		s.reject(s.line.Measurement, &m, err)
	}
	return true
}

// applyLine appends one streamed line, or counts and logs why not.
func (s *sink) applyLine(l *lineproto.Line, m *recordMeta) {
	if _, err := s.store(l); err != nil {
		s.reject(l.Measurement, m, err)
	}
}

// store appends one decoded line to its table (opened or created on first
// use), at s.now when it has no timestamp, and returns the table.
func (s *sink) store(l *lineproto.Line) (*table, error) {
	t, err := s.table(l)
	if err == nil {
		err = t.fill(l)
	}
	if err == errAddColumns {
		err = s.addColumns(t, l)
	}
	if err == nil {
		err = s.append(t, l)
	}
	return t, err
}

// addColumns adds the columns l names that table t lacks and fills t.row
// from l, once the rest of the line is known good: fill has checked its
// keys and values, and a line the table would refuse as out of order adds
// nothing.
func (s *sink) addColumns(t *table, l *lineproto.Line) error {
	if err := s.checkTime(t, l.Ts, l.HasTs); err != nil {
		return err
	}
	if last := t.w.LastTs(); l.HasTs && l.Ts < last && s.opts.Writer.OutOfOrder == writer.OutOfOrderReject {
		if win := s.opts.Writer.LateWindow; uint64(last)-uint64(l.Ts) > uint64(win) {
			return s.lateErr(t, t.name, l.Ts, last, s.now, fixOf(s.opts))
		}
	}
	if err := t.addColumns(l); err != nil {
		if _, bad := asLineErr(err); !bad {
			s.log.Error("ingest: cannot add a column", "table", t.name, "err", err)
			s.drop(t)
		}
		return err
	}
	err := t.fill(l)
	if err == errAddColumns {
		err = fmt.Errorf("ingest: table %s: the added columns do not resolve", t.name)
	}
	return err
}

// drop forgets table t, whose writer failed and is closed: the next line
// that names it opens it again.
func (s *sink) drop(t *table) {
	if s.tables[t.name] == t {
		delete(s.tables, t.name)
	}
	if s.last == t {
		s.last = nil
	}
}

// append stores t.row (filled from l) with l's timestamp, or the arrival
// time when the line has none. Arrival time never goes backwards within a
// table, so a line without a timestamp is never out of order.
func (s *sink) append(t *table, l *lineproto.Line) error {
	return s.appendTs(t, l.Ts, l.HasTs)
}

func (s *sink) appendTs(t *table, lineTs int64, hasTs bool) error {
	ts := s.now
	if hasTs {
		ts = lineTs
	} else if last := t.w.LastTs(); ts < last {
		ts = last
	}
	if err := s.checkTime(t, ts, hasTs); err != nil {
		return err
	}
	// A late row is refused here, as the checker and addColumns refuse
	// one, and counted where it is rejected (countRejected): the writer
	// would count it too.
	if last := t.w.LastTs(); hasTs && ts < last && uint64(last)-uint64(ts) > uint64(s.opts.Writer.LateWindow) &&
		s.opts.Writer.OutOfOrder == writer.OutOfOrderReject {
		return s.lateErr(t, t.name, ts, last, s.now, fixOf(s.opts))
	}
	t.row.SetTs(ts)
	if _, err := t.w.Append(t.row); err != nil {
		return err
	}
	if !t.dirty {
		t.dirty = true
		s.touched = append(s.touched, t)
	}
	t.accepted++
	t.wrote = s.now
	if !t.stale {
		t.stale = true
		s.stale = append(s.stale, t)
	}
	return nil
}

// reject counts a line that was not stored and logs it (rate-limited).
func (s *sink) reject(tableName []byte, m *recordMeta, err error) {
	if s.holdLine(err) {
		return // no room: held and tried again, not rejected (room.go)
	}
	if le, ok := asLineErr(err); ok {
		le.Line = int(m.lineNo)
	}
	s.countRejected(tableName, err)
	s.m.logBad(s.log, "ingest: line rejected", "conn", m.conn, "line", m.lineNo, "table", string(tableName), "err", err)
}

// countRejected counts a line that was not stored, for err: in the
// rejected-lines metric by table and reason and, for an out_of_order line
// of an open table, in the table's own out-of-order counter
// (writer.CountOutOfOrder: tickdb stat, /api/tables and reader.Stat read
// it) and in the stats copy /metrics shows. The table's counts come
// first, so whoever has seen the metric sees the same count everywhere.
// The sink refuses late lines itself (appendTs, addColumns, the checker),
// so the writer never counted them. Only the writer goroutine may call it.
func (s *sink) countRejected(tableName []byte, err error) {
	reason := "write_error"
	if le, ok := asLineErr(err); ok {
		reason = le.Reason.String()
	}
	s.countLate(tableName, err)
	s.m.rejected(s.label(tableName), reason)
}

// countLate counts an out_of_order err (any other is not counted) in the
// open table name's out-of-order counter and its stats copy, as
// countRejected; the Loader, which has no metrics to keep, calls it alone.
func (s *sink) countLate(name []byte, err error) {
	le, ok := asLineErr(err)
	if !ok || le.Reason != lineproto.ReasonOutOfOrder {
		return
	}
	t, ok := s.tables[string(name)]
	if !ok {
		return // a table the request would have created: nothing to count in
	}
	n := t.w.CountOutOfOrder()
	s.statsMu.Lock()
	if st, ok := s.stats[t.name]; ok {
		st.OutOfOrder = n
		s.stats[t.name] = st
	}
	s.statsMu.Unlock()
}

// label is a table's name for the metrics, or "" when no such table is
// open: bad input must not grow the set of labels. Only the writer
// goroutine may call it; the others call knownLabel.
func (s *sink) label(name []byte) string {
	if t, ok := s.tables[string(name)]; ok {
		return t.name
	}
	return ""
}

// knownLabel is label for the HTTP handlers (and an event loop that
// stops), which count the lines they cannot parse themselves: it looks
// name up among the tables of the last stats copy (every open table is in
// it from its opening on), under statsMu. It runs for bad lines only. (An
// HTTP request's lines are all applied before it is answered, so a table
// an earlier request created is known.)
func (s *sink) knownLabel(name []byte) string {
	if len(name) == 0 {
		return ""
	}
	s.statsMu.Lock()
	_, ok := s.stats[string(name)]
	s.statsMu.Unlock()
	if !ok {
		return ""
	}
	return string(name)
}

// publish makes every table's new rows visible and moves the counters.
func (s *sink) publish() {
	t0 := time.Now()
	defer func() { s.m.publishSec.Observe(time.Since(t0).Seconds()) }()
	keep := s.touched[:0]
	for _, t := range s.touched {
		// dirty is false when the table was published since (an HTTP
		// request's end), and its writer is closed when it was dropped
		// since. A table an HTTP request in progress has locked is
		// published when the request ends (sink_txn.go): it stays.
		if t.dirty && s.cur != nil && s.cur.locksName(t.name) && s.tables[t.name] == t {
			keep = append(keep, t)
			continue
		}
		if t.dirty && s.tables[t.name] == t {
			t.w.Publish()
			s.m.addAccepted(t.name, t.accepted)
			t.accepted = 0
		}
		t.dirty = false
	}
	clear(s.touched[len(keep):])
	s.touched = keep
	if len(s.reads) > 0 {
		now := time.Now().UnixNano()
		for _, r := range s.reads {
			s.m.readToVisible(now - r)
		}
		s.reads = s.reads[:0]
	}
	s.refreshStats(false)
}

// table returns the table l names, opening or creating it on first use.
func (s *sink) table(l *lineproto.Line) (*table, error) {
	if t := s.last; t != nil && string(l.Measurement) == t.name {
		return t, nil
	}
	if t, ok := s.tables[string(l.Measurement)]; ok {
		s.last = t
		return t, nil
	}
	name := string(l.Measurement)
	if f, ok := s.failed[name]; ok && time.Now().Before(f.until) {
		return nil, f.err
	}
	t, err := s.open(name, l)
	if err != nil {
		if _, bad := asLineErr(err); !bad {
			s.failed[name] = failedOpen{err: err, until: time.Now().Add(time.Second)}
			s.log.Error("ingest: cannot open table", "table", name, "err", err)
		}
		return nil, err
	}
	delete(s.failed, name)
	s.tables[name] = t
	s.last = t
	s.copyStats(t)
	return t, nil
}

// open opens table name, creating it with the schema of l when it does not
// exist.
func (s *sink) open(name string, l *lineproto.Line) (*table, error) {
	if err := store.ValidTableName(name); err != nil {
		return nil, &lineproto.LineError{Reason: lineproto.ReasonName, Msg: err.Error()}
	}
	o := s.opts.Writer
	o.Logger = s.log
	if s.opts.LiveRoot != "" {
		o.LiveDir = filepath.Join(s.opts.LiveRoot, name)
	}
	if _, err := os.Stat(filepath.Join(s.opts.DB, name, format.CtlName)); errors.Is(err, os.ErrNotExist) {
		if err := s.checkNewTime(l); err != nil {
			return nil, err // a bad line creates no table
		}
		schema, lerr := schemaFor(l)
		if lerr != nil {
			return nil, lerr
		}
		o.Schema = schema
	}
	w, err := writer.Open(s.opts.DB, name, &o)
	if err != nil {
		return nil, err
	}
	s.log.Info("ingest: table open", "table", name, "rows", w.Len(), "schema", w.Schema().String())
	t := newTable(name, w, s.log)
	s.noteFar(t)
	return t, nil
}

// openExisting opens every table already in the database, so a restart
// recovers them (and makes their rows durable) at once rather than on
// their next line. A table that cannot be opened is logged and retried
// when a line names it.
func (s *sink) openExisting() {
	names, _ := reader.Tables(s.opts.DB) // none yet: a fresh database
	for _, name := range names {
		t, err := s.open(name, nil)
		if err != nil {
			s.log.Error("ingest: cannot open table", "table", name, "err", err)
			continue
		}
		s.tables[t.name] = t
	}
	s.refreshStats(true)
}

// checker validates lines against the tables as they are and, for a table
// an earlier checked line would create, against the schema that line
// gives, time order included, storing nothing.
type checker struct {
	s    *sink
	seen map[string]*checkState
	idx  []int
	fix  unitFix // how the lines' senders give a timestamp's unit
}

type checkState struct {
	lo     *layout
	lastTs int64
}

func newChecker(s *sink) *checker {
	return &checker{s: s, seen: map[string]*checkState{}, idx: make([]int, store.MaxColumns), fix: fixOf(s.opts)}
}

// line checks one line; a bad one gives a *LineError (Line left 0).
func (c *checker) line(l *lineproto.Line) error {
	st := c.seen[string(l.Measurement)]
	if st == nil {
		lo, lastTs, err := c.s.layoutFor(l)
		if err != nil {
			return err
		}
		st = &checkState{lo: lo, lastTs: lastTs}
		c.seen[string(l.Measurement)] = st
	}
	if n := len(l.Tags) + len(l.Fields); n >= len(c.idx) {
		return tooManyKeys(n)
	}
	missing, lerr := st.lo.resolve(l, c.idx)
	if lerr != nil {
		return lerr
	}
	if missing > 0 {
		// The line adds columns: the lines after it are checked against
		// the table as it will have them.
		_, s, lerr := st.lo.grow(l, c.idx)
		if lerr != nil {
			return lerr
		}
		st.lo = newLayout(st.lo.name, s)
	}
	return c.time(st, l.Ts, l.HasTs)
}

// time checks a row's time against its table's (the time rule of
// timecheck.go, then the late window under the reject policy) and moves
// the table's last time as storing the row would. It is the one time
// check of a line (line) or of a staged row (staged) about to be stored,
// as appendTs is the one place a row gets its time when it is.
func (c *checker) time(st *checkState, ts int64, hasTs bool) error {
	name, now, fut := st.lo.name, c.s.now, uint64(c.s.opts.MaxFuture)
	if hasTs && oddTs(ts, now, fut) || aheadOf(st.lastTs, now, fut) {
		if err := c.s.timeErr(name, c.s.tables[name], ts, hasTs, st.lastTs, now, c.fix); err != nil {
			return err
		}
	}
	if !hasTs {
		// Stored at the writer's clock, never before the table's last
		// row (appendTs); s.now is the time of the request being
		// checked (0 for a Loader's check, which stores later).
		st.lastTs = max(st.lastTs, now)
		return nil
	}
	win := c.s.opts.Writer.LateWindow
	if ts < st.lastTs && uint64(st.lastTs)-uint64(ts) > uint64(win) && c.s.opts.Writer.OutOfOrder == writer.OutOfOrderReject {
		return c.s.lateErr(c.s.tables[name], name, ts, st.lastTs, now, c.fix)
	}
	st.lastTs = max(st.lastTs, ts)
	return nil
}

// layoutFor returns the layout a request's line is checked against: the
// table's, opening it if it exists, or else the one l would create (the
// table is created only when the request is stored).
func (s *sink) layoutFor(l *lineproto.Line) (*layout, int64, error) {
	name := string(l.Measurement)
	if t, ok := s.tables[name]; ok {
		return newLayout(name, t.schema), t.w.LastTs(), nil
	}
	if err := store.ValidTableName(name); err != nil {
		return nil, 0, &lineproto.LineError{Reason: lineproto.ReasonName, Msg: err.Error()}
	}
	if reader.Exists(s.opts.DB, name) {
		t, err := s.table(l)
		if err != nil {
			return nil, 0, err
		}
		return newLayout(name, t.schema), t.w.LastTs(), nil
	}
	schema, lerr := schemaFor(l)
	if lerr != nil {
		return nil, 0, lerr
	}
	return newLayout(name, schema), math.MinInt64, nil
}

func withLine(err error, line uint64) error {
	if le, ok := asLineErr(err); ok {
		le.Line = int(line)
	}
	return err
}

// refreshStats copies the writer counters of the tables written lately
// for /metrics, at most every 100 ms; forced, every table's. A table's
// counters move in the background (its durable rows, flushes, hot
// segments) only after rows are appended to it, so one is copied again
// while it has rows not yet durable or had rows within the last second,
// and then left alone: a thousand idle tables cost nothing here.
func (s *sink) refreshStats(force bool) {
	now := time.Now()
	if !force && now.Sub(s.lastSt) < 100*time.Millisecond {
		return
	}
	s.lastSt = now
	if force {
		s.statsMu.Lock()
		for name, t := range s.tables {
			s.stats[name] = t.w.Stats()
		}
		s.statsMu.Unlock()
	}
	keep := s.stale[:0]
	for _, t := range s.stale {
		if s.tables[t.name] != t {
			t.stale = false // dropped: its writer is closed
			continue
		}
		st := t.w.Stats()
		s.statsMu.Lock()
		s.stats[t.name] = st
		s.statsMu.Unlock()
		if st.Durable < st.Appended || now.UnixNano()-t.wrote < int64(time.Second) {
			keep = append(keep, t)
		} else {
			t.stale = false
		}
	}
	clear(s.stale[len(keep):])
	s.stale = keep
}

// copyStats copies table t's writer counters for /metrics.
func (s *sink) copyStats(t *table) {
	st := t.w.Stats()
	s.statsMu.Lock()
	s.stats[t.name] = st
	s.statsMu.Unlock()
}

// snapshot returns the last copied writer counters.
func (s *sink) snapshot() map[string]writer.Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	out := make(map[string]writer.Stats, len(s.stats))
	for k, v := range s.stats {
		out[k] = v
	}
	return out
}

// closeTables makes every table durable and closes it.
func (s *sink) closeTables() {
	s.refreshStats(true)
	for name, t := range s.tables {
		if err := t.w.Close(); err != nil {
			s.log.Error("ingest: close table", "table", name, "err", err)
			if s.err == nil {
				s.err = fmt.Errorf("close table %s: %w", name, err)
			}
		}
		st := t.w.Stats()
		s.statsMu.Lock()
		s.stats[name] = st
		s.statsMu.Unlock()
		s.log.Info("ingest: table closed", "table", name, "rows", st.Appended, "durable", st.Durable)
	}
}
