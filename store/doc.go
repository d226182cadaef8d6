// Package store owns tickdb's files: the table schema, the fixed-width row
// encoding and its check word, segment file headers, the symbol dictionary
// records, file names and magics, and the memory-mapping gateway.
//
// Every byte written here is part of the on-disk contract described in
// docs/FORMAT.md; a change to any constant marked "on-disk contract" needs a
// format version bump.
//
// # Concurrency
//
// The types here are plain values (Schema, Row, Col) or helpers over mapped
// bytes. Row is a view into someone else's memory: it is valid for as long as
// the mapping or buffer it points into, and the owner of that memory decides
// how long that is (see reader.Reader and writer.Writer).
//
// # Durability
//
// store itself does no I/O scheduling: it creates, maps and checks files. The
// writer package decides when bytes become durable.
//
// # Caveats
//
// Only linux/amd64 and linux/arm64 are supported: the published words rely on
// aligned 8-byte loads and stores being single-copy atomic, and the mmap
// helpers use Linux madvise flags.
package store
