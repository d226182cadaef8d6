// Package tickdb is an embedded, memory-mapped time-series store for
// market ticks. This package holds no code; it says where to start.
//
// One process writes a table, any number read it, in the same process or
// others, without locks:
//
//   - [github.com/tickdb/tickdb/store]: describe a table (Schema, Column)
//     and read or build its rows (Row); the errors every package returns.
//   - [github.com/tickdb/tickdb/writer]: Open a table for writing (creating
//     it), Append rows, Publish them to readers, Sync them to disk; compact,
//     retain, add columns. Linux only.
//   - [github.com/tickdb/tickdb/reader]: Open a table for reading, on
//     Linux, macOS or Windows: Get a row by sequence number, iterate a time
//     range for all symbols or one, the last row of each symbol (Latest),
//     Tail new rows, Verify a table.
//   - [github.com/tickdb/tickdb/query]: scans with filters, OHLCV bars,
//     as-of joins, and the CSV, JSON and line-protocol writers the CLI
//     prints with.
//   - [github.com/tickdb/tickdb/export]: a table or a time range to
//     Parquet or CSV files, partitioned by date.
//   - [github.com/tickdb/tickdb/ingest]: the network server (line protocol
//     over TCP and HTTP, queries over HTTP, Prometheus metrics, the web
//     console) and the table rules a line meets. Linux only.
//   - [github.com/tickdb/tickdb/load]: bulk loads of line-protocol and CSV
//     files into tables, under the same table rules. Linux only.
//   - [github.com/tickdb/tickdb/lineproto]: the line protocol's one codec,
//     a parser and an encoder with one escaping rule.
//
// The command tickdb (cmd/tickdb) wraps all of these; examples/ holds
// runnable programs and a Python reader. docs/DESIGN.md explains the
// design, docs/FORMAT.md every byte on disk, docs/BENCHMARKS.md the
// measurements. Everything under internal/ (the index files, the
// compressed segment codecs, the file format, the mappings) is the
// machinery behind these packages and may change without notice.
package tickdb
