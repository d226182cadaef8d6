// Package reader reads tickdb tables, in the writer's process or any other,
// without locks: get a row by sequence number in O(1), seek by time in
// O(log n), iterate a time range (optionally one symbol, at a cost
// proportional to that symbol's rows) without copying, scan a time range
// column by column (Scan: the named columns' vectors a block of rows at a
// time, compressed segments decoding only those columns, on several
// goroutines if asked), find each symbol's last row at or before a time
// through its index (Latest), tail new rows with a choice of idle
// strategy, and verify a table read-only.
//
// # Concurrency
//
// A Reader is for one goroutine; open one per goroutine or process (a
// Scan's decoding goroutines are the Scan's own business: they stop when
// it ends, is closed, or the Reader closes). Readers
// never block the writer and never see a torn or unpublished row: they load
// the published count with an acquire load (or the seqlock for multi-word
// state) and only then read rows below it.
//
// # Durability
//
// Readers see what is published, durable or not. Durable reports how much
// of it is on disk.
//
// # Caveats
//
// Rows are views into read-only mappings. A row of a sealed durable segment
// stays valid until Close; a row read from a live slot stays valid until the
// writer recycles the slot (LiveSlots-1 segments later); Reader.ReadRow and
// Iter.ReadRow copy with a recycle check. Rows of durable segments are
// validated (check word) the first time each 4 KiB block is read. A table
// whose columns grew holds rows of several layouts: a row is a view of its
// own (shorter for older rows), and store.Row's getters read a column it
// lacks as missing; the copies take any layout into the buffer's.
//
// A range is [from, to); to = ToEnd (math.MaxInt64) is the end of the
// table, the rows stamped MaxInt64 included.
//
// # Archived tables
//
// A table archived in object storage (package archive) is opened with
// archive.OpenReader(ctx, "s3://bucket/prefix", table, opts), which
// returns an archive.Reader embedding a *Reader: every method and every
// query package works on it as on a local table. It builds a table
// directory in a local cache whose compressed segments are sparse files
// filled on demand (Options.Fetch), so a query fetches what it reads.
package reader
