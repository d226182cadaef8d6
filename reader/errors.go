package reader

import (
	"errors"
	"fmt"
)

var (
	// ErrNotVisible: the sequence number has not been published yet.
	ErrNotVisible = errors.New("reader: row not published yet")
	// ErrTruncated: the row was deleted by retention; the table now starts
	// at Reader.FirstSeq(). Get returns it as a *TruncatedError, which names
	// the new first row.
	ErrTruncated = errors.New("reader: row deleted by retention")
	// ErrUnavailable: the row was published but its live copy is gone and
	// it never became durable (the machine restarted under a running
	// writer); a writer reopening the table cuts it.
	ErrUnavailable = errors.New("reader: row published but neither live nor durable")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("reader: closed")
	// ErrCompacted: a symbol query met postings entries dropped after
	// their rows were compacted while it ran (the rows are in a clustered
	// compressed segment now, read through its directory) and could not
	// carry on there by itself (a range that merges late rows): query
	// again. A range without late rows goes on through the segment's
	// directory.
	ErrCompacted = errors.New("reader: rows compacted during the query; query again")
	// ErrUnknownSymbol: no such symbol in the table's dictionary.
	ErrUnknownSymbol = errors.New("reader: unknown symbol")
)

// TruncatedError is Get's error for a row retention deleted:
// errors.Is(err, ErrTruncated) holds, and First is the table's first row
// now (where a reader can go on from).
type TruncatedError struct {
	Seq   uint64 // the row asked for
	First uint64 // the table's first row
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("reader: row %d deleted by retention; the table starts at row %d", e.Seq, e.First)
}

// Is makes errors.Is(err, ErrTruncated) true.
func (e *TruncatedError) Is(target error) bool { return target == ErrTruncated }
