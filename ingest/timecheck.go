package ingest

// The time rule (SPEC §6): no single row can make later real-time rows
// late, and a timestamp in the wrong unit is a bad line whose message
// names the fix. It is one rule in one place, applied where a row is
// about to be stored (sink.appendTs: the TCP listener's fast and decoded
// paths, HTTP's apply pass, the Loader's store pass), before a line adds
// columns (sink.addColumns), and where lines are checked before any is
// stored (checker.line: HTTP's check pass, the Loader's check pass).

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// DefaultMaxFuture is Options.MaxFuture's default: a row may be up to a
// minute ahead of the server's clock (feed handlers' clocks differ by
// milliseconds; a minute leaves room for a badly kept one). A row further
// ahead would make every real-time row after it late.
const DefaultMaxFuture = time.Minute

// MaxFutureOff, as Options.MaxFuture (any negative value does), turns the
// far-future check off: a table then takes rows at any time ahead.
const MaxFutureOff time.Duration = -1

// unitGate bounds the timestamps that may be in the wrong unit: below
// it, query.GuessUnit decides; real-time ns are far above it, so the
// common line pays one comparison. 2^53 ns is about 104 days after the
// epoch; GuessUnit's largest hit (now + UnitWindow read as µs) stays
// below it until the year 2204.
const unitGate = 1 << 53

// unitFix says how a sender gives its timestamps' unit, for messages: in
// unit (ns per unit; 0 or 1: ns), through HTTP's precision parameter or
// through --ts-unit (Options.TsUnit: the TCP listener, tickdb ingest).
type unitFix struct {
	unit time.Duration
	http bool
}

// fixOf is the unitFix of the listener's and the Loader's lines.
func fixOf(o *Options) unitFix { return unitFix{unit: o.TsUnit} }

// aheadOf reports whether ts lies more than fut ns ahead of now (fut as
// uint64(Options.MaxFuture): a negative, off, is above any difference).
func aheadOf(ts, now int64, fut uint64) bool {
	return ts > now && uint64(ts)-uint64(now) > fut
}

// oddTs reports whether a line's timestamp needs the slow look: too far
// ahead, or small enough to be in the wrong unit.
func oddTs(ts, now int64, fut uint64) bool {
	return aheadOf(ts, now, fut) || uint64(ts-1) < unitGate-1
}

// checkTime applies the time rule to a line about to be stored in table t
// (at ts when hasTs, else at the stamped time): nil, or the *LineError to
// refuse it with. The common line costs three comparisons, and nothing is
// allocated but for a bad line.
func (s *sink) checkTime(t *table, ts int64, hasTs bool) error {
	fut, last := uint64(s.opts.MaxFuture), t.w.LastTs()
	if (!hasTs || !oddTs(ts, s.now, fut)) && !aheadOf(last, s.now, fut) {
		return nil
	}
	return s.timeErr(t.name, t, ts, hasTs, last, s.now, fixOf(s.opts))
}

// checkNewTime is checkTime for a line that would create its table.
func (s *sink) checkNewTime(l *lineproto.Line) error {
	if !l.HasTs || !oddTs(l.Ts, s.now, uint64(s.opts.MaxFuture)) {
		return nil
	}
	return s.timeErr(string(l.Measurement), nil, l.Ts, true, math.MinInt64, s.now, fixOf(s.opts))
}

// timeErr is the time rule's slow path: the error for a line of table
// name (t: the open table, or nil for one the lines create) with
// timestamp ts (hasTs: given, else stamped), when the table's newest ts
// is last and the clock reads now; nil when the line is good after all.
// The order: a timestamp in the wrong unit (it is also late or far ahead
// as it stands, but the unit is what to fix), then one too far ahead,
// then what a far-future row already in the table does to the line.
func (s *sink) timeErr(name string, t *table, ts int64, hasTs bool, last, now int64, fix unitFix) error {
	o := s.opts
	if hasTs {
		if !o.Allow1970 {
			if g := query.GuessUnit(ts, now); g != 0 {
				return &lineproto.LineError{Reason: lineproto.ReasonTsUnit, Msg: unitMsg(ts, g, fix)}
			}
		}
		if o.MaxFuture >= 0 && aheadOf(ts, now, uint64(o.MaxFuture)) {
			return &lineproto.LineError{Reason: lineproto.ReasonFuture, Msg: fmt.Sprintf(
				"timestamp %d (%s) is %s ahead of the server's clock (%s), more than the %v max-future allows: one such row would make every real-time row after it late; check the sender's clock and timestamp unit",
				ts, query.FormatNs(ts), aheadText(ts, now), query.FormatNs(now), o.MaxFuture)}
		}
	}
	if o.MaxFuture < 0 || !aheadOf(last, now, uint64(o.MaxFuture)) {
		return nil
	}
	// The table's newest row is itself too far ahead: stored before the
	// check existed, or with it off.
	win := o.Writer.LateWindow
	if hasTs && (ts >= last || uint64(last)-uint64(ts) <= uint64(win)) {
		return nil // not late, or a late row within the window: stored as given
	}
	if hasTs && o.Writer.OutOfOrder == writer.OutOfOrderReject {
		return s.lateErr(t, name, ts, last, now, fix)
	}
	what := "has no timestamp, and would be stored at"
	if hasTs {
		what = fmt.Sprintf("(%s) is later than the late window, and --out-of-order stamp would store it at", query.FormatNs(ts))
	}
	return &lineproto.LineError{Reason: lineproto.ReasonFuture, Msg: fmt.Sprintf("the line %s the time of table %s's newest row, %s ahead of the server's clock; %s",
		what, name, aheadText(last, now), s.farNote(t, name, last, now))}
}

// lateErr is the out_of_order error for a line at ts that table name
// (t, nil when the lines create it) refuses: before its newest ts, last,
// by more than the late window. It says both times in RFC 3339 too, what
// ts would be in the unit it seems to be in, and, when the newest row is
// far ahead of the clock, which row that is and the way out.
func (s *sink) lateErr(t *table, name string, ts, last, now int64, fix unitFix) error {
	msg := lateMsg(ts, last, s.opts.Writer.LateWindow, "the last row of table "+name)
	if g := query.GuessUnit(ts, now); g != 0 {
		msg += "; " + unitMsg(ts, g, fix)
	}
	if fut := s.opts.MaxFuture; fut >= 0 && aheadOf(last, now, uint64(fut)) {
		msg += "; " + s.farNote(t, name, last, now)
	}
	return &lineproto.LineError{Reason: lineproto.ReasonOutOfOrder, Msg: msg}
}

// lateMsg says why a line's timestamp ts was refused: before what (whose
// ts is last) by more than the late window win.
func lateMsg(ts, last int64, win time.Duration, what string) string {
	if win <= 0 {
		return fmt.Sprintf("timestamp %d (%s) is before %s (%d, %s); the table takes no late rows (late window 0)",
			ts, query.FormatNs(ts), what, last, query.FormatNs(last))
	}
	return fmt.Sprintf("timestamp %d (%s) is before %s (%d, %s) by more than the late window (%v)",
		ts, query.FormatNs(ts), what, last, query.FormatNs(last), win)
}

// unitMsg says that ts (ns, read from a timestamp in fix's unit) seems to
// be in unit g as ns, and how to say so: the sender's unit is fix.unit ×
// g, when that is a unit the fix can name.
func unitMsg(ts int64, g time.Duration, fix unitFix) string {
	in := max(fix.unit, time.Nanosecond)
	raw, meant := ts/int64(in), ts*int64(g)
	msg := fmt.Sprintf("timestamp %d read as %s is %s, but as %s it is %s", raw, query.UnitName(in),
		query.FormatNs(ts), query.UnitName(g*in), query.FormatNs(meant))
	if name, ok := unitFlag(g * in); ok {
		if fix.http {
			msg += "; send precision=" + name
		} else {
			msg += "; give --ts-unit " + name
		}
	}
	return msg + " (data really from the first weeks of 1970: --allow-1970)"
}

// unitFlag is how --ts-unit and precision= spell unit u.
func unitFlag(u time.Duration) (string, bool) {
	switch u {
	case time.Second:
		return "s", true
	case time.Millisecond:
		return "ms", true
	case time.Microsecond:
		return "us", true
	case time.Nanosecond:
		return "ns", true
	}
	return "", false
}

// ParseTsUnit reads a --ts-unit value: s, ms, us (or u) or ns (or n).
func ParseTsUnit(s string) (time.Duration, error) {
	switch s {
	case "s":
		return time.Second, nil
	case "ms":
		return time.Millisecond, nil
	case "us", "u", "µs":
		return time.Microsecond, nil
	case "ns", "n", "":
		return time.Nanosecond, nil
	}
	return 0, fmt.Errorf("ingest: timestamp unit %q: want s, ms, us or ns", s)
}

// validTsUnit checks Options.TsUnit.
func validTsUnit(u time.Duration) error {
	if _, ok := unitFlag(u); !ok && u != 0 {
		return fmt.Errorf("ingest: TsUnit %v: want time.Second, Millisecond, Microsecond or Nanosecond", u)
	}
	return nil
}

// aheadText says how far ts is ahead of now: a duration up to two days,
// then days, then years.
func aheadText(ts, now int64) string {
	d := uint64(ts) - uint64(now)
	switch {
	case d < uint64(time.Minute):
		return time.Duration(d).Round(time.Millisecond).String()
	case d < uint64(48*time.Hour):
		return time.Duration(d).Round(time.Second).String()
	case d < uint64(730*24*time.Hour):
		return fmt.Sprintf("%.1f days", float64(d)/float64(24*time.Hour))
	}
	return fmt.Sprintf("%.0f years", float64(d)/float64(8766*time.Hour))
}

// farRow is the row that put a table's newest ts too far ahead.
type farRow struct {
	seq   uint64
	ts    int64
	known bool // seq and ts were read from the table; else seq is the last row's
}

// farRowOf finds the first row of t more than max-future ahead of now
// (once: it is kept in t), reading the table's published rows.
func (s *sink) farRowOf(t *table, now int64) farRow {
	if t.far != nil {
		return *t.far
	}
	f := farRow{seq: t.w.Len() - 1, ts: t.w.LastTs()}
	if r, err := reader.Open(s.opts.DB, t.name, nil); err == nil {
		limit := int64(math.MaxInt64)
		if fut := s.opts.MaxFuture; fut >= 0 && now <= math.MaxInt64-int64(fut) {
			limit = now + int64(fut)
		}
		if seq, err := r.SeekTime(limit + 1); err == nil && seq < r.Len() {
			if row, err := r.Get(seq); err == nil {
				f = farRow{seq: seq, ts: row.Ts(), known: true}
			}
		}
		r.Close()
	}
	t.far = &f
	return f
}

// farNote names the far-future row of table name (t, nil when unknown)
// and the way out.
func (s *sink) farNote(t *table, name string, last, now int64) string {
	row := fmt.Sprintf("its newest ts, %d (%s)", last, query.FormatNs(last))
	if t != nil {
		if f := s.farRowOf(t, now); f.known {
			row = fmt.Sprintf("row seq %d, ts %d (%s)", f.seq, f.ts, query.FormatNs(f.ts))
		}
	}
	return fmt.Sprintf("table %s holds %s, stored before the max-future check refused such rows; the way out: %s", name, row, s.recipe(name, now))
}

// recipe is the way out for a table holding a far-future row: copy its
// other rows into a fresh table of the same name (docs/DESIGN.md,
// Ingestion, "A table holding a far-future row").
func (s *sink) recipe(name string, now int64) string {
	db := s.opts.DB
	to := query.FormatNs(now - now%int64(time.Second))
	return fmt.Sprintf("stop the server, then tickdb query --db %s --table %s --to %s --format ilp > %s.ilp; move %s out of the database; tickdb ingest --db %s %s.ilp",
		db, name, to, name, filepath.Join(db, name), db, name)
}

// noteFar logs an error when table t, just opened, holds a row more than
// max-future ahead of the clock: every real-time row would be late.
func (s *sink) noteFar(t *table) {
	fut := s.opts.MaxFuture
	now := time.Now().UnixNano()
	if fut < 0 || !aheadOf(t.w.LastTs(), now, uint64(fut)) {
		return
	}
	f := s.farRowOf(t, now)
	attrs := []any{"table", t.name, "ts", f.ts, "time", query.FormatNs(f.ts), "ahead", aheadText(f.ts, now)}
	if f.known {
		attrs = append(attrs, "seq", f.seq)
	}
	attrs = append(attrs, "way_out", s.recipe(t.name, now))
	s.log.Error("ingest: table holds a row far ahead of the clock; its lines with real timestamps, or none, will be refused (out_of_order or future)", attrs...)
}
