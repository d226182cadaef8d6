// Package index owns tickdb's published index: the control file (schema,
// geometry and the seqlock-published words every reader polls), the sparse
// time index and the per-symbol postings.
//
// # Concurrency
//
// One writer process stores into these mappings; any number of reader
// processes load from them. The writer publishes with release stores and
// readers observe with acquire loads (mmap.StoreRelease64 and
// mmap.LoadAcquire64); multi-word state is read through a seqlock with a
// bounded retry. Writer-side types (methods named Set*, Publish, Append*) may
// be called by the writer's goroutines only; reader-side methods are safe from
// any goroutine.
//
// # Durability
//
// The control, time-index and postings files live on the database's own file
// system and reach the disk through the page cache. They are derived from the
// segments: the writer checkpoints them (msync) and rebuilds anything past the
// checkpoint on open, so nothing here is on the durability path of a row.
//
// # Caveats
//
// The index files are mapped with a large fixed virtual size and grow
// underneath the mapping; a reader never touches a byte past what has been
// published, so it never touches a page past the end of the file. The
// virtual sizes (post.idx 256 GiB, ts.idx and sym.dat 16 GiB each) bound a
// table's lifetime rows (about 90 billion with a symbol column, 34 billion
// in a version 1 post.idx) and the tables one process can map at once
// (about 400 in 128 TiB).
package index
