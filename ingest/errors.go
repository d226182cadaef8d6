package ingest

import "errors"

// ErrBadLine is what every rejected line-protocol line satisfies through
// errors.Is: the concrete error is a *LineError that says what was wrong
// and where, so callers can count and skip the line and go on with the next.
var ErrBadLine = errors.New("ingest: bad line")
