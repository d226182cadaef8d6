package ingest

import (
	"sync"
	"time"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/writer"
)

// Loader stores parsed lines into the tables of a database from the calling
// goroutine, by the server's rules: a table is created from its first line,
// a line naming a tag or field it lacks adds the column, omitted columns
// get their defaults and a line
// without a timestamp gets the current time (never before the table's last
// row). It is what package load (`tickdb ingest`) stores files through.
//
// Check validates a line against the tables as they are and as the lines
// checked before it would leave them, storing nothing, so a whole file can
// be checked first and stored only if every line passes (Checks are
// forgotten by Reset). Append stores a line.
//
// A Loader is for one goroutine. Close makes every row durable.
type Loader struct {
	s *sink
	c *checker
	// group runs the tables' background work (a file of many tables
	// costs a few threads), when the loader made it.
	group *writer.Group
}

// NewLoader opens a loader on o.DB with o.Writer as every table's writer
// options and o.LiveRoot for the live segments (the listener options are
// not used). Tables that exist are opened when first named.
func NewLoader(o *Options) *Loader {
	opts := o.withDefaults()
	ld := &Loader{}
	if opts.Writer.Group == nil {
		// Without one (the buffers could not be mapped) each table runs
		// its own goroutines, as a lone writer does.
		if g, err := writer.NewGroup(&opts.Group); err == nil {
			ld.group, opts.Writer.Group = g, g
		}
	}
	var wg sync.WaitGroup
	ld.s = newSink(opts, newMetrics(), nil, &wg)
	ld.c = newChecker(ld.s)
	return ld
}

// Check validates l without storing anything; a bad line gives a
// *LineError (its Line is for the caller to set). A line refused as out of
// order is counted in its table's out-of-order counter, as Append and the
// listeners count one.
func (ld *Loader) Check(l *lineproto.Line) error {
	ld.s.now = time.Now().UnixNano()
	err := ld.c.line(l)
	ld.s.countLate(l.Measurement, err)
	return err
}

// Reset forgets what Check has seen.
func (ld *Loader) Reset() { ld.c = newChecker(ld.s) }

// Append stores l: a bad line (one Check would reject, or a late row the
// table refuses) gives a *LineError and stores nothing; another error is
// a write failure.
func (ld *Loader) Append(l *lineproto.Line) error {
	ld.s.now = time.Now().UnixNano()
	_, err := ld.s.store(l)
	ld.s.countLate(l.Measurement, err)
	return err
}

// Publish makes the rows appended so far visible to readers.
func (ld *Loader) Publish() { ld.s.publish() }

// Rows returns each table's row count as of the last Publish.
func (ld *Loader) Rows() map[string]uint64 {
	out := map[string]uint64{}
	for name, t := range ld.s.tables {
		out[name] = t.w.Len()
	}
	return out
}

// Close publishes, makes every row durable and closes the tables.
func (ld *Loader) Close() error {
	ld.s.publish()
	ld.s.closeTables()
	if ld.group != nil {
		if err := ld.group.Close(); err != nil && ld.s.err == nil {
			ld.s.err = err
		}
		ld.group = nil
	}
	return ld.s.err
}

// Stats returns each table's final writer counters (after Close).
func (ld *Loader) Stats() map[string]writer.Stats { return ld.s.snapshot() }
