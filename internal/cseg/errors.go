package cseg

import "errors"

var (
	// ErrClosed is returned by Block on a closed Segment.
	ErrClosed = errors.New("cseg: segment closed")
	// ErrArgs reports a call that breaks the API's contract (a block number
	// out of range, rows that do not match the header, a schema whose row
	// size is not the header's): a bug in the caller, not bad data. Bad
	// data is a *store.CorruptError (errors.Is(err, store.ErrCorrupt)).
	ErrArgs = errors.New("cseg: bad arguments")
	// ErrStopped is EncodeParallel's error when its stop channel closed
	// before the encoding was done: nothing was written.
	ErrStopped = errors.New("cseg: encoding stopped")
)
