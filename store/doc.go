// Package store is what a program needs to describe a table and its rows:
// the schema (Schema, Column, ColType), the fixed-width row (Row, read and
// written through a column's Col), the limits of a schema, a table name's
// rules, and the errors every package returns for damaged data
// (CorruptError, ErrCorrupt), a bad schema (ErrSchema), a missing table
// (ErrNoTable) and a write off Linux (ErrUnsupported).
//
// How these bytes sit in files (headers, names, check words, the
// mappings) is the format's business, in tickdb's internal packages and
// docs/FORMAT.md; a schema and a row's layout are part of that contract.
//
// # Concurrency
//
// The types here are plain values. A Schema is immutable once built and
// safe for concurrent use. Row is a view into someone else's memory: it is
// valid for as long as the mapping or buffer it points into, and the owner
// of that memory decides how long that is (see reader.Reader and
// writer.Writer).
//
// # Durability
//
// store does no I/O. The writer package decides when rows become durable.
//
// # Caveats
//
// A Row handed out by a reader points into a read-only mapping: writing
// through it faults.
package store
