package export

import "errors"

var (
	// ErrBadOptions is matched by every error that blames Run's options (a
	// format, codec, size or time range that cannot be) rather than the
	// table or the file system.
	ErrBadOptions = errors.New("export: bad option")
	// ErrExists: a date partition the export would write already holds
	// files. Run refuses before it writes anything, rather than mixing two
	// exports' rows in one partition or overwriting files a reader may be
	// using.
	ErrExists = errors.New("export: partition already holds files")
)
