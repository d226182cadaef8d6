// Package pgwire serves the Postgres wire protocol (version 3.0) in front
// of DuckDB, reached through database/sql: psql, JDBC, psycopg, pgx,
// node-postgres, DBeaver and Grafana connect to tickdb as to a Postgres 15.
//
// The Backend opens one Session per client connection; the server runs
// each statement through Session.Query and writes the rows to the socket
// as *sql.Rows yields them.
//
// # Protocol library
//
// Messages are encoded and decoded by github.com/jackc/pgx/v5/pgproto3,
// the codec inside pgx; the server logic (startup, authentication, the
// simple and extended query flows, portals, cancellation) is here.
// pgproto3 was chosen over github.com/jeroenrinzema/psql-wire because the
// latter owns the protocol flow and hides what this server must control:
// per-column binary result formats chosen at Bind, Describe of a
// statement before it runs, Execute with a row limit and PortalSuspended,
// CancelRequest with our own process IDs and secrets, and ErrorResponse
// fields such as Position.
//
// # What the server answers itself
//
//   - SSLRequest and GSSEncRequest: 'N' (no encryption); then the
//     StartupMessage, cleartext password authentication when
//     Options.Token is set (28P01 on a mismatch), ParameterStatus
//     (server_version "15.0 (tickdb)", UTF8, DateStyle "ISO, MDY",
//     TimeZone UTC, ...), BackendKeyData, ReadyForQuery.
//   - Settings DuckDB does not have (SET extra_float_digits, datestyle,
//     search_path, statement_timeout, application_name, SET SESSION
//     CHARACTERISTICS, ...): accepted and ignored. SHOW of the Postgres
//     settings clients read (transaction isolation level, server_version,
//     search_path, ...) and SELECT version() are answered with constants.
//     Other SETs and SHOWs go to DuckDB.
//   - BEGIN, COMMIT, ROLLBACK and DISCARD ALL are answered with their
//     command tags and the transaction status Postgres would report, but
//     run nothing in DuckDB: the tables are views of tickdb's files and a
//     client's BEGIN must not pin a DuckDB snapshot for as long as it
//     stays open.
//   - psql's catalog queries (\dt, \d NAME, \d, \l, \dn, \dv, \d+, \dt+)
//     and Grafana's table list are rewritten for DuckDB's pg_catalog and
//     information_schema (catalog.go); \dt lists views as well as tables,
//     since tickdb tables are DuckDB views.
//   - COPY ... TO STDOUT (psql's \copy) in text or CSV format.
//
// # Types
//
// DuckDB types map to Postgres OIDs (types.go): BOOLEAN bool, TINYINT and
// SMALLINT int2, INTEGER int4, BIGINT int8, HUGEINT, UBIGINT and DECIMAL
// numeric, FLOAT float4, DOUBLE float8, VARCHAR text, DATE date, TIME
// time, TIMESTAMP[_NS|_MS|_S] timestamp, TIMESTAMPTZ timestamptz, INTERVAL
// interval, BLOB bytea, UUID uuid; every other type (LIST, STRUCT, MAP,
// ENUM, ...) is text holding DuckDB's own string form. Every type has a
// binary format as well as the text one.
//
// Timestamps are nanosecond precision in tickdb. Their text form carries
// every nanosecond digit (2023-11-14 22:13:20.123456789; Postgres would
// print at most six). Their binary form is Postgres's int64 microseconds
// since 2000-01-01, which cannot: nanoseconds are cut toward minus
// infinity. Drivers that read binary (pgx, JDBC for some calls) therefore
// see microseconds; ask for text, or select epoch_ns(ts), to keep them.
//
// # Concurrency
//
// A Server's methods may be called from any goroutine. Each client
// connection is served by a goroutine of its own (a DuckDB query is a
// blocking call, so an event loop would gain nothing), which calls its
// Session one call at a time; a short-lived goroutine per running
// statement watches for a client that hangs up. A CancelRequest cancels
// the context of the target session's running statement; Close cancels
// all of them and waits for every connection's goroutine.
//
// # Durability
//
// None of its own: the server keeps nothing but per-connection state.
//
// # Caveats
//
//   - The server streams what its Session gives it, in pieces of 256 KiB,
//     and never holds a whole result. duckdb-go (v2.10506.0) through
//     database/sql materializes a result before its first row (SQLRows);
//     tickdb's engine runs what it can as DuckDB streaming results
//     (sql/engine, stream.go), so those start at once and hold a few
//     chunks.
//   - A statement is described (Describe of a statement, before Bind) by
//     planning it inside SELECT * FROM (...) LIMIT 0 with stand-in
//     parameters; other row-returning statements (INSERT ... RETURNING,
//     PRAGMA, CALL, EXPLAIN) run between BEGIN TRANSACTION and ROLLBACK.
//     A Session must therefore run all its queries on one DuckDB
//     connection. A Describe of a portal starts its query.
//   - Parameters of undeclared type are reported as type 0 in
//     ParameterDescription (drivers then send text) and passed to DuckDB
//     as strings, which it casts like literals.
//   - Error positions come from DuckDB's "LINE n:" excerpt; characters of
//     double display width before the error shift them.
//   - COPY FROM STDIN and the function-call protocol are refused; there is
//     no TLS (put a TLS proxy in front for remote clients).
package pgwire
