// Package ingest is the server that `tickdb serve` runs, and the table
// rules it shares with the bulk loader:
//
//   - the server (Start, Server): an epoll TCP listener for the line
//     protocol (listener_linux.go) and the HTTP API (http*.go, listed on
//     Server.Handler: writes, queries, /tail, /metrics, /settings and the
//     web console), over one writer goroutine that owns every table
//     (sink.go), fed through bounded rings (ring.go, record.go), with its
//     Prometheus metrics (metrics.go);
//   - the table rules (table.go): how a parsed line becomes a row of its
//     table, below. Loader (loader.go, loader_bulk.go) applies them from
//     the calling goroutine, for package load, which bulk-loads ILP and
//     CSV files (`tickdb ingest`).
//
// Lines are read by package lineproto (Parser, Line), the one
// line-protocol codec, which also holds the error of a bad line
// (lineproto.LineError, lineproto.ErrBadLine) and its Reason, the label
// the server counts rejections by.
//
// A table is created from the first line that names it: ts, then the tags
// as sym columns, then the fields (float → f64, integer → i64, boolean →
// bool, string → sym, stored like a tag), in the line's order. A later line
// may omit any (stored as NaN, 0, false or the empty symbol); a value of
// another type makes the line bad; a tag or field the table lacks adds the
// column, typed the same way, once the whole line is known good
// (writer.Writer.AddColumn; rows before read it as missing). A line
// without a timestamp gets the writer's clock, never earlier than the
// table's last row. A row more than Options.MaxFuture ahead of the clock,
// and one whose timestamp reads as seconds, ms or µs given as ns, are bad
// lines (reasons future and ts_unit; timecheck.go), so that no single row
// makes later real-time rows late. docs/DESIGN.md ("Ingestion") has the
// whole path.
//
// # Concurrency
//
// A Loader belongs to one goroutine. A Server's methods are safe from any
// goroutine. Inside a Server, a fixed number of event-loop goroutines
// (each blocking in epoll_wait) parse lines and hand encoded records to
// the writer goroutine through bounded single-producer rings (ring.go, the
// package's only file with atomics besides http_chunks.go's one flag); an
// HTTP write's goroutine parses its body as it arrives into staged rows, a
// large body in chunks on a few goroutines (http_write.go, http_stage.go,
// http_chunks.go), and hands them to the writer through a channel, which
// applies a large
// request a slice at a time between other work (sink_txn.go). Only the
// writer goroutine touches tables. Every table's background work
// (flushing, preparing, checkpointing) runs on one writer.Group the
// server makes (Options.Group sizes it): a few threads whatever the
// number of tables.
// A GET /tail stream is one HTTP goroutine with its own reader.Reader: it
// follows the table through its own read-only mapping and never slows the
// writer (a client too slow to take its events is cut off instead).
//
// # Durability
//
// A line accepted over TCP is stored and published once the writer
// goroutine drains its batch, and durable within the flush interval (the
// table's writer.Options). POST /write answers 204 only once every row of
// the request is durable. Server.Close (SIGINT/SIGTERM in serve) stores
// every line the event loops had read, makes every table durable and
// closes it; bytes still unread in the kernel are not accepted.
//
// A full disk (or quota, or a disk failing with EIO) refuses HTTP writes
// with 503 and Retry-After before any row of them is stored, holds TCP
// lines (backpressure: nothing is dropped while the server runs; lines
// still held at Close are counted as rejected), keeps reads going and says
// degraded on /health; tables take rows again by themselves once there is
// room (room.go, health.go).
//
// # Caveats
//
// Bad lines are skipped, counted and logged (at most 10 lines a second),
// never stored in part. Over TCP nothing tells the client; over HTTP the
// request fails whole with 400. HTTP writes are bounded (Options): the
// body on the wire and decompressed (413), the memory all of them hold
// together (503 with Retry-After), the time a body or its headers may
// stall (408), the connections open (503 at accept). A table's name must be a valid table name
// ([A-Za-z0-9_.-]); symbols (tag values and string fields) are at most
// 4 KiB; a line needs at least one field. A line break inside a string
// value must be escaped: lines are split at a raw one.
package ingest
