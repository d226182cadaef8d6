package lineproto

import (
	"errors"
	"fmt"
	"strconv"
)

// The errors an Encoder reports at End: each is a line it cannot write so
// that it reads back as given. Errors from End wrap one of them with the
// name at fault; callers branch with errors.Is.
var (
	// ErrNoField: the line has no field. The line protocol needs at least
	// one, and tickdb, like InfluxDB, rejects a line with tags alone.
	ErrNoField = errors.New("lineproto: a line needs at least one field")
	// ErrName: an empty measurement, key or tag value, or a measurement
	// starting with '#' (a comment line) or a tab (skipped as a blank).
	ErrName = errors.New("lineproto: name cannot be written")
	// ErrOrder: a tag after a field; tags come first.
	ErrOrder = errors.New("lineproto: tag after a field")
)

// nameError names the part of the line at fault. It runs only on bad
// input, so its fmt call costs the good lines nothing.
func nameError(err error, what, name, why string) error {
	if name == "" {
		return fmt.Errorf("%w: %s %s", err, what, why)
	}
	return fmt.Errorf("%w: %s %q %s", err, what, name, why)
}

// ErrBadLine is what every rejected line satisfies through errors.Is: the
// concrete error is a *LineError that says what was wrong and where, so
// callers can count and skip the line and go on with the next. Parser's
// rejections are bad lines, and so are the rejections of the readers and
// table rules that take Lines: ingest's (the listener, the HTTP API and
// the tables) and load's (CSV files), which is why the type lives here,
// with the parser, below them all.
var ErrBadLine = errors.New("lineproto: bad line")

// Reason is a bounded category of rejection. It is a metrics label (the
// listener counts rejected lines by it), so the set stays small and fixed;
// the details go into LineError.Msg. The set is one for every reader of
// lines, so that a line has the same reason whoever rejects it.
type Reason uint8

// The rejection reasons. Parser emits Syntax through NoField; the
// listener, the table rules (package ingest) and the CSV reader (package
// load) emit the others.
const (
	ReasonSyntax        Reason = iota + 1 // malformed line: missing '=', empty name, stray text
	ReasonEscape                          // a backslash at the very end of the line, escaping nothing
	ReasonNumber                          // a malformed or out-of-range number
	ReasonValue                           // a field value that is no number, boolean or string, or a symbol over the length limit
	ReasonTimestamp                       // a malformed or out-of-range timestamp
	ReasonDuplicate                       // a tag or field key given twice in one line
	ReasonNoField                         // a line with no field (tags alone, or nothing after the measurement)
	ReasonTooLong                         // a line longer than the listener's limit
	ReasonName                            // a table or column name the store cannot take
	ReasonUnknownColumn                   // a CSV header column the table does not have (a line adds it)
	ReasonType                            // a field whose kind does not match its column
	ReasonOutOfOrder                      // a timestamp before the table's last row
	ReasonTableFull                       // the table cannot take more rows or columns
	ReasonFuture                          // a timestamp too far ahead of the server's clock
	ReasonTsUnit                          // a timestamp that reads as seconds, ms or µs given as ns
	numReasons                            // one past the last reason: sizes per-reason arrays
)

// String returns the reason as a snake_case metrics label.
func (r Reason) String() string {
	switch r {
	case ReasonSyntax:
		return "syntax"
	case ReasonEscape:
		return "escape"
	case ReasonNumber:
		return "number"
	case ReasonValue:
		return "value"
	case ReasonTimestamp:
		return "timestamp"
	case ReasonDuplicate:
		return "duplicate"
	case ReasonNoField:
		return "no_field"
	case ReasonTooLong:
		return "too_long"
	case ReasonName:
		return "name"
	case ReasonUnknownColumn:
		return "unknown_column"
	case ReasonType:
		return "type_mismatch"
	case ReasonOutOfOrder:
		return "out_of_order"
	case ReasonTableFull:
		return "table_full"
	case ReasonFuture:
		return "future"
	case ReasonTsUnit:
		return "ts_unit"
	}
	return "unknown"
}

// LineError is a rejected line: what (Reason, Msg) and where. Line is the
// 1-based line number, which Parse leaves 0 for the caller that counts lines
// to set; Col is the 1-based byte offset within the line where the problem
// is (0 when it is about the line as a whole). errors.Is(err, ErrBadLine)
// holds for every *LineError.
type LineError struct {
	Line   int
	Col    int
	Reason Reason
	Msg    string
}

// Error returns "line 3, byte 17: <msg>", leaving out the parts that are 0.
func (e *LineError) Error() string {
	s := ""
	if e.Line > 0 {
		s = "line " + strconv.Itoa(e.Line) + ", "
	}
	if e.Col > 0 {
		s += "byte " + strconv.Itoa(e.Col) + ", "
	}
	if s == "" {
		return e.Msg
	}
	return s[:len(s)-2] + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrBadLine) hold.
func (e *LineError) Unwrap() error { return ErrBadLine }
