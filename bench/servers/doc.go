// Package servers is the server-level benchmark: `tickdb serve` with its
// default flags against ClickHouse (Debian's clickhouse-server), both real
// server processes on 127.0.0.1, fed and asked over HTTP by one client in
// the same run, every answer checked against the data. `cd bench && go run
// . servers` runs it (docs/BENCHMARKS.md, "Server against ClickHouse").
//
// # The protocol
//
// The data set is the suite's (suite.Generate: N ticks of 100 symbols from
// the fixed seed). Both servers start on directories of their own under
// Config.Dir, on free loopback ports. Each is fed every tick in requests
// of Config.Batch rows, one after the other on one keep-alive connection:
// line protocol to tickdb's POST /write (table ticks: ts, sym tag, price
// f64, size i64), CSV to ClickHouse's INSERT ... FORMAT CSV. The bodies
// are built before the timing (the client's formatting is reported apart);
// the ingest time runs until the last request is acknowledged: tickdb
// answers 204 once every row of it is durable, ClickHouse 200 once it
// wrote the rows as a part (without fsync). The server's CPU time over
// the ingest comes from /proc, and tickdb's writer's share of each request
// from its own metrics (tickdb_http_write_apply_seconds). Then the disk
// bytes per tick
// (st_blocks of the table's directory; tickdb's live segments and the
// copies of its newest sealed ones live in /dev/shm, reported apart), the
// wait for background work (ClickHouse's merges; tickdb has none with the
// defaults) and the disk again; then Reps queries of each kind on the
// running servers, the two servers taking turns to go first; then a clean
// stop of both and the disk again; then, for each of ColdReps queries of
// each kind: both servers' files evicted from the page cache
// (suite.Evict), both started, the query asked of each, both stopped.
//
// The queries, all answered as CSV with ts in ns: the rows of one symbol
// over 1 % of the time span (random symbols and places), every row of one
// symbol (the symbols with about 1 % of the ticks), the 1-second OHLCV
// bars of one symbol (the same symbols), and the newest row of every
// symbol. A query is timed from the request until the whole answer is
// read; the answer is parsed and checked after: row counts and a ts/price
// mix (suite.Answer) for rows, every bar, every symbol's newest row. Ties
// of equal timestamps may be broken either way for a bar's open and close
// and for the newest row (ClickHouse's argMin/argMax do not know arrival
// order); anything else that differs from the data fails the run.
//
// # ClickHouse
//
// Debian's package (18.16 on bookworm) runs from copies of
// /etc/clickhouse-server/config.xml and users.xml rewritten to use the
// run's directory for every path, free ports for HTTP, native and
// interserver traffic (never 8123, 9000 and 9009), and 127.0.0.1 as its
// only listen_host. The table: MergeTree PARTITION BY day ORDER BY (sym,
// ts), ts Int64 ns, sym String. Where clickhouse-server is not installed
// the benchmark says so and runs tickdb alone.
//
// # tickdb
//
// The tickdb binary is built from this tree (go build ./cmd/tickdb, into
// the run's directory) unless Config.TickDB names one, and started as
// `tickdb serve --db DIR --http ADDR --ilp ADDR` with every other flag at
// its default.
//
// # Concurrency
//
// Run owns every server process it starts and stops them all, and removes
// their directories, before it returns (also on error or cancellation);
// the processes get SIGTERM if the benchmark's process dies first.
package servers
