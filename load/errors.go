package load

import (
	"errors"

	"github.com/tickdb/tickdb/internal/textfmt"
)

// ErrBadFile is what a *FileError satisfies through errors.Is: a file
// that stored nothing because of bad input.
var ErrBadFile = errors.New("load: file stored nothing: bad input")

// FileError is a file that stored nothing because of bad input: a CSV
// header that cannot be used (Header, a *lineproto.LineError), or, without
// Options.SkipBad, Bad bad lines, each given to Options.Report. A Loader
// goes on with the next file after one.
type FileError struct {
	File   string // the name given to File
	Bad    int64  // bad lines found (0 for a bad header)
	Header error  // the bad header, or nil
}

// Error returns "FILE: <the header's fault>" or "FILE: 3 bad lines;
// nothing stored from it".
func (e *FileError) Error() string {
	if e.Header != nil {
		return e.File + ": " + e.Header.Error()
	}
	lines := " bad lines"
	if e.Bad == 1 {
		lines = " bad line"
	}
	return e.File + ": " + textfmt.Commas(e.Bad) + lines + "; nothing stored from it"
}

// Unwrap makes errors.Is(err, ErrBadFile) hold, and errors.Is(err,
// lineproto.ErrBadLine) and errors.As to its *lineproto.LineError for a
// bad header.
func (e *FileError) Unwrap() []error {
	if e.Header != nil {
		return []error{ErrBadFile, e.Header}
	}
	return []error{ErrBadFile}
}
