package ingest

import (
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/tickdb/tickdb/writer"
)

// What a full disk (or a failing one) gets from the server.
//
// A table's writer reserves room for its next rows ahead of them and
// refuses rows it has no room for (writer.ErrNoSpace), or takes none while
// its flusher cannot write (writer.ErrIO), storing nothing of them; it
// takes rows again by itself once there is room (writer/room.go).
//
//   - An HTTP write asks every table it writes for room for all of its
//     rows (writer.Reserve) before it appends any: refused, it is answered
//     503 with Retry-After and nothing of it is stored, so a retry is safe.
//     A table the request creates is created first (an empty table may
//     stay behind a refused request).
//   - Line-protocol batches are held, not dropped: the writer goroutine
//     stops at the first line it has no room for and tries that ring again
//     every holdRetry, the ring fills, the event loop stops reading, and
//     TCP flow control slows the clients (as when the writer is slow).
//     Other rings go on. Nothing is lost while the server runs; at
//     shutdown the lines still held are counted as rejected (no_space,
//     io_error) and logged, since they were never stored.
//   - /health says degraded, with each table's reason, and
//     tickdb_table_condition says which condition each table is in
//     (health.go).

// holdRetry is how long a ring whose line found no room waits before the
// writer goroutine tries it again.
const holdRetry = 10 * time.Millisecond

// unavailable says whether err is a table's refusal for want of room or
// of a working disk (as opposed to bad input or a failure for good), and
// which condition.
func unavailable(err error) (writer.Condition, bool) {
	switch {
	case err == nil:
		return writer.CondOK, false
	case errors.Is(err, writer.ErrNoSpace), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return writer.CondNoSpace, true
	case errors.Is(err, writer.ErrIO), errors.Is(err, syscall.EIO), errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return writer.CondIOError, true
	}
	return writer.CondOK, false
}

// partialError is a request's failure for want of room after some of its
// rows were stored (a request larger than the room a writer reserves at
// once: writer.Reserve). Its lines before Line were stored and will be
// durable; the rest were not.
type partialError struct {
	Line int
	Err  error
}

func (e *partialError) Error() string {
	return fmt.Sprintf("lines before line %d of this request were stored, line %d and after were not: %v", e.Line, e.Line, e.Err)
}

func (e *partialError) Unwrap() error { return e.Err }

// reserveRun asks every table request r writes for room for its rows,
// opening (or creating, from its first staged row) the tables not open
// yet, before any row is appended: it runs once the whole request is
// checked. Its error, when a table has no room, matches writer.ErrNoSpace
// or writer.ErrIO (or the creating error's ENOSPC).
func (s *sink) reserveRun(r *txnRun) error {
	for _, st := range r.t.tables {
		tb, ok := s.tables[string(st.name)]
		if !ok {
			var it stageIter
			it.init(st)
			if !it.next() {
				continue
			}
			it.asLine(&s.line)
			var err error
			if tb, err = s.table(&s.line); err != nil {
				s.noteRefused(err)
				return err
			}
		}
		// The table's rows in every stage (a table staged in several
		// chunks asks for the same room again: a compare).
		if err := tb.w.Reserve(int(min(r.t.rows[string(st.name)], math.MaxInt32))); err != nil {
			return err
		}
	}
	return nil
}

// storeFailed is the error a request's store loop ends with at line:
// past reserveRun, a refusal for want of room means the lines before it
// are stored (partialError).
func storeFailed(err error, line uint64) error {
	if _, ok := unavailable(err); ok {
		return &partialError{Line: int(line), Err: err}
	}
	return err
}

// holdLine reports whether a line-protocol line's error is a refusal for
// want of room, and if so marks the batch being applied held: the line
// is tried again later (applyBatch stops there), not rejected.
func (s *sink) holdLine(err error) bool {
	if _, ok := unavailable(err); !ok {
		return false
	}
	s.holdErr = err
	s.noteRefused(err)
	return true
}

// held reports whether ring i waits before its held batch is tried again
// (never while stopping: the held lines are then dropped, drainHeld).
func (s *sink) held(i int) bool {
	if s.heldUntil[i].IsZero() {
		return false
	}
	select {
	case <-s.stopc:
		return false
	default:
	}
	return time.Now().Before(s.heldUntil[i])
}

// hold marks ring i held after its batch b stopped for want of room (at
// b.applied); stopping, it drops the rest of b instead and reports true
// (the slot is to be released).
func (s *sink) hold(i int, b *batch) bool {
	err := s.holdErr
	s.holdErr = nil
	select {
	case <-s.stopc:
		s.dropHeld(b, err)
		return true
	default:
	}
	if s.heldUntil[i].IsZero() {
		s.heldN.add(1)
		s.log.Warn("ingest: holding line-protocol lines until there is room", "loop", i, "err", err)
	}
	s.heldUntil[i] = time.Now().Add(holdRetry)
	return false
}

// unheld clears ring i's hold once its batch went through.
func (s *sink) unheld(i int) {
	if !s.heldUntil[i].IsZero() {
		s.heldUntil[i] = time.Time{}
		s.heldN.add(-1)
		s.log.Info("ingest: line-protocol lines flow again", "loop", i)
	}
}

// dropHeld counts the lines of b not applied (from b.applied) as rejected
// for err's condition: the server is stopping without room for them.
func (s *sink) dropHeld(b *batch, err error) {
	cond, _ := unavailable(err)
	n := 0
	for p := b.applied; p < len(b.buf); {
		rec := b.buf[p : p+recordLen(b.buf[p:])]
		if r, bad := recordRejected(rec); bad {
			s.m.rejected(s.label(recordMeasurement(rec)), r.String())
		} else {
			s.m.rejected(s.label(recordMeasurement(rec)), cond.String())
			n++
		}
		p += len(rec)
	}
	b.applied = len(b.buf)
	s.log.Error("ingest: stopping with line-protocol lines that found no room: not stored", "lines", n, "err", err)
}

// idleWait is how long the idle writer goroutine may sleep: d, or less
// when a held ring is due to be tried again.
func (s *sink) idleWait(d time.Duration) time.Duration {
	now := time.Now()
	for _, u := range s.heldUntil {
		if !u.IsZero() {
			d = min(d, max(u.Sub(now), time.Millisecond))
		}
	}
	return d
}

// noteRefused remembers a refusal for the server's condition (a table
// that could not be created for lack of room has no writer to ask):
// /health reports it for refusedFor after the last one.
func (s *sink) noteRefused(err error) {
	cond, ok := unavailable(err)
	if !ok {
		return
	}
	s.statsMu.Lock()
	s.refused = refusal{cond: cond, err: err.Error(), at: time.Now()}
	s.statsMu.Unlock()
}

// refusal is the server's last refusal for want of room.
type refusal struct {
	cond writer.Condition
	err  string
	at   time.Time
}

// refusedFor is how long a refusal keeps /health degraded when no table
// reports a condition (a table that could not be created).
const refusedFor = 2 * time.Second
