// Package load bulk-loads files into a database: line-protocol (ILP) and
// CSV files, by the table rules of `tickdb serve`, which it shares by
// storing through ingest.Loader. It is what `tickdb ingest` runs; the
// command adds only its flags, the progress bar and what it prints.
//
// Use: New with Options, File for each file in turn, Close (which makes
// every stored row durable). Stats says what was stored; Options.Report
// receives each bad line (a *lineproto.LineError naming its line and,
// where known, byte), Options.Progress each step of a pass.
//
// The rules: a table that does not exist is created from its first row;
// an ILP line naming a tag or field the table lacks adds the column (the
// rows before read it as missing; a CSV header names only existing
// columns of a table that exists); a row may omit columns (stored as NaN,
// 0, false or ""); a row earlier than its table's newest row is a bad line
// unless it is within Options.Writer.LateWindow of it (then it is stored
// as a late row). A row without a time gets the time its file's load
// began, or its table's last row's time when that is later.
//
// ILP lines are read by lineproto.Parser, timestamps in ns (or
// Options.TsUnit); each line's measurement names its table, unless
// Options.Table replaces it. Rows meet serve's time rule (ingest's
// MaxFuture, Allow1970), measured from the time the file's load began.
//
// CSV (csv.go) is RFC 4180 with a header row naming "ts" and the other
// columns, in any order, into Options.Table. ts is RFC 3339 or integer ns
// since the epoch (or Options.TsUnit); an empty cell is an omitted value. For a table that
// exists, cells are read by its columns' types; a new table gets ts and
// the header's other columns in header order, each typed by its non-empty
// cells in the first 1,000 rows: i64 if they are all integers, f64 if all
// numbers, bool if all true/false, sym otherwise (f64 for a column with no
// value there). The scanner is a hand-written one rather than
// encoding/csv; docs/BENCHMARKS.md ("Why the CSV scanner is not
// encoding/csv") says why.
//
// A file is all or nothing unless Options.SkipBad: it is parsed and
// checked against its table, storing nothing, and stored only if every
// line passed; a file with a bad line gives a *FileError, and the next
// file is loaded. With SkipBad a file is read once and its bad lines are
// skipped and counted.
//
// # Concurrency
//
// A Loader is for one goroutine. During File it runs one producer
// goroutine of its own, which reads and parses the file ahead while the
// caller's goroutine checks or stores, and which has ended when File
// returns. Report and Progress are called on the caller's goroutine.
//
// # Durability
//
// Rows are published batch by batch as File stores them (readers see
// them), and durable once Close returns. An error that stops a load (a
// write failure, ctx done) keeps the rows stored before it.
//
// # Caveats
//
//   - File reads a file twice without SkipBad, so it needs a file it can
//     seek; the CLI copies stdin to a temporary file first.
//   - A record longer than 64 MiB (an unclosed CSV quote, say) stops the
//     load.
//   - Linux only, as ingest and the writer it stores through are.
package load
