package reader

import "errors"

var (
	// ErrNotVisible: the sequence number has not been published yet.
	ErrNotVisible = errors.New("reader: row not published yet")
	// ErrTruncated: the row was deleted by retention; the table now starts
	// at Reader.First().
	ErrTruncated = errors.New("reader: row deleted by retention")
	// ErrUnavailable: the row was published but its live copy is gone and
	// it never became durable (the machine restarted under a running
	// writer); a writer reopening the table cuts it.
	ErrUnavailable = errors.New("reader: row published but neither live nor durable")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("reader: closed")
	// ErrUnknownSymbol: no such symbol in the table's dictionary.
	ErrUnknownSymbol = errors.New("reader: unknown symbol")
)
