// Package query runs queries over open table readers and writes the rows
// out: the one implementation behind GET /query, GET /latest and the CLI
// commands that print rows (query, tail, bars, asof, latest).
//
// A Query selects rows by time ([From, To)), optionally one symbol, up to a
// Limit; Run walks them with the reader's zero-copy iterators (the symbol's
// postings when Sym is set) and hands each to an Encoder, which writes one
// of four formats:
//
//	table  ts                              sym                    price          size
//	       2023-11-14T22:13:20.000000000Z  AAPL                   189.5           100
//	csv    ts,sym,price,size
//	       2023-11-14T22:13:20.000000000Z,AAPL,189.5,100
//	json   {"ts":"2023-11-14T22:13:20.000000000Z","sym":"AAPL","price":189.5,"size":100}
//	ilp    ticks,sym=AAPL price=189.5,size=100i 1700000000000000000
//
// json is one object per line (NDJSON), with no enclosing array, so that
// a stream (tail, a long query) can be read line by line.
//
// Bars computes OHLCV bars by time bucket (like kdb's xbar) and AsOf
// joins each row of one table with the last row of another at or before
// it (like kdb's aj); both stream in one pass and print through the same
// Encoder, fed computed rows (NewValuesEncoder, Values) rather than table
// rows. RunBars and RunAsOf wire them to an Encoder. Latest gives each
// symbol's last row at or before a time (like kdb's select last by sym,
// QuestDB's LATEST ON), one per symbol in name order, each found through
// the symbol's index; RunLatest writes them as Run writes rows.
//
// ts prints as RFC 3339 in UTC with nine fractional digits (fixed width, so
// it sorts) or, with TsNs, as integer ns; ilp always prints ns. A missing
// value (an f64 NaN) is an empty csv field, a json null and an omitted ilp
// field; the table format prints NaN (and leaves a missing value of a
// computed row, such as the right columns of an unmatched join row,
// blank). A second ts column (an as-of join's <right>_ts) prints like ts,
// and in ilp as an integer field. Floats print in the shortest form
// that parses back to the same float64 (plain decimal for magnitudes in
// [1e-6, 1e21), exponent form outside). ParseTime, ParseFormat and
// ParseTsFormat parse the matching command-line and URL arguments.
//
// # Concurrency
//
// An Encoder and a Run, Bars or AsOf are for one goroutine, like the
// Readers they read. None blocks a table's writer: they read published
// rows only.
//
// # Durability
//
// Run, Bars and AsOf read published rows, durable or not (see the reader
// package). Without To they read up to the rows published when they
// start, not the ones published while they run; AsOf takes each table's
// count on its own.
//
// # Caveats
//
//   - Bars and AsOf check every row they read against its check word, as
//     Run does (a live slot recycled under a slow reader is read again);
//     that costs about an eighth of a join. The rows of a table's last,
//     unsealed segment come one Get at a time (the reader's fast path
//     covers sealed segments only), about twice the cost per row.
//   - Over a range that holds compacted rows, Bars over every symbol and
//     AsOf read column scans (reader.Scan: only the columns they use,
//     decoded on goroutines of the scan's own); a range with late rows
//     is read row by row as before, in ts order.
//   - bars in ilp: the measurement is "<table>_bars" and the symbol a
//     tag, so that the lines load into a table of their own.
//   - Output is buffered (32 KiB, growing to 256 KiB as a long output goes
//     on: fewer, larger writes): call Flush to hand it on early (tail,
//     HTTP streaming) and Close to end it; nothing is written before either
//     or 32 KiB of rows, so a caller can still drop it after an early error.
//   - json: integers above 2^53 lose precision in JavaScript readers; ±Inf
//     print as null, like NaN (JSON has no spelling for them).
//   - ilp: lines are written by lineproto.Encoder, the one writer of line
//     protocol in tickdb, with its escaping rule: a backslash before ',',
//     ' ', '=' and '\\' in names and symbols, and a line break as \n or \r,
//     so every symbol tickdb stores reads back exactly through tickdb's
//     parser (InfluxDB reads \n, \r and \\ as written). ±Inf fields are
//     omitted like NaN (InfluxDB has no spelling for them). A line needs a
//     field (tickdb and InfluxDB reject tags alone), so a row whose fields
//     are all missing gets its first f64 column as NaN (InfluxDB rejects
//     that line: it has no row without a field), or, in a table of sym
//     columns alone, its last sym column as a string field, which tickdb
//     stores back in that sym column; a row with neither is skipped. An
//     empty symbol has no tag (a tag value cannot be empty).
//   - csv lines end in LF, not RFC 4180's CRLF; a symbol is quoted when it
//     holds a comma, quote or line break, starts or ends with a blank, or
//     is empty.
//   - table: column widths are fixed by the schema, so a longer value
//     shifts the rest of its line; symbols with control characters print Go
//     quoted.
package query
