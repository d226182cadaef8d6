package ingest

import (
	"errors"
	"strconv"
)

// ErrBadLine is what every rejected line-protocol line satisfies through
// errors.Is: the concrete error is a *LineError that says what was wrong
// and where, so callers can count and skip the line and go on with the next.
var ErrBadLine = errors.New("ingest: bad line")

// Reason is a bounded category of rejection. It is a metrics label, so the
// set stays small and fixed; the details go into LineError.Msg.
type Reason uint8

// The rejection reasons. The parser emits Syntax through NoField; the
// listener and the table layer emit the others.
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
