package suite

import (
	"github.com/tickdb/tickdb/internal/gen"
)

// System is one store under test, opened on an empty directory. The suite
// calls Ingest once with every tick, in batches as a feed handler would,
// then Seal, then the queries, then Close.
type System interface {
	// Ingest stores ticks, in ts order, in batches of the system's natural
	// write unit (the suite passes 1,000 ticks a call), in the store's
	// fastest mode that still ends on disk (no fsync per batch).
	Ingest(batch []gen.Tick) error
	// Seal makes everything ingested durable and queryable (flush, close
	// a write-ahead log, publish), as an ingest process does at its end.
	Seal() error
	// Query returns the answer to q (q.Want is ignored): the rows of q.Sym
	// (or of every symbol, with AllSymbols) with q.From <= ts < q.To.
	Query(q Query) (Answer, error)
	// Close releases the store; the suite removes its directory after.
	Close() error
}

// Peer names a System and opens it.
type Peer struct {
	Name string
	// Open opens an empty store in dir (which exists and is empty) for
	// the symbols d.Symbols.
	Open func(dir string, d *Data) (System, error)
}
