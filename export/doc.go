// Package export writes a table, or a time range of it, as a dataset that
// other engines read as it is: Apache Parquet (or CSV) files in Hive-style
// date partitions,
//
//	DIR/date=2024-01-02/part-00000.parquet
//	DIR/date=2024-01-03/part-00000.parquet
//	DIR/date=2024-01-03/part-00001.parquet   (a date past Options.FileRows)
//
// which DuckDB (read_parquet('DIR/**/*.parquet', hive_partitioning=true)),
// pandas and pyarrow (pd.read_parquet("DIR")), Polars, Trino and Spark
// take with the date as a partition column. Run is the entry point for a
// dataset; "tickdb export" is a thin layer over it. ParquetStream writes
// one file of the same schema to a stream, of the rows handed to it (the
// server's GET /query?format=parquet).
//
// Rows are written in time order (by ts, then seq), late rows
// (writer.Options.LateWindow) merged in where their ts puts them: each
// row is in the partition of its own ts's date, and within a date the
// files and row groups follow one another in time.
//
// # Parquet schema
//
// One top-level column per table column, same names, same order
// (ParquetSchema prints it):
//
//	ts    required INT64 TIMESTAMP(NANOS, isAdjustedToUTC=false), DELTA_BINARY_PACKED
//	sym   required BYTE_ARRAY STRING, dictionary-encoded (RLE_DICTIONARY)
//	f64   optional DOUBLE: a NaN (tickdb's missing value) is written as null
//	i64   required INT64 (annotated INT(64, signed))
//	bool  required BOOLEAN
//
// ts values are UTC nanoseconds since the Unix epoch, as in the table. The
// annotation says isAdjustedToUTC=false (a timestamp without time zone)
// because that is the form every reader takes at full precision: DuckDB
// reads it as TIMESTAMP_NS, while a UTC-adjusted NANOS column becomes its
// microsecond TIMESTAMP WITH TIME ZONE and loses the last three digits;
// pyarrow and pandas read it as timestamp[ns] / datetime64[ns] without a
// zone (UTC by this package's contract). docs/DESIGN.md ("Export") has
// the table of readers, types and precision.
//
// A missing f64 is null, not NaN, because that is what the readers treat
// as missing: SQL aggregates (DuckDB, Trino, Spark) skip nulls but are
// poisoned by a NaN, and pandas reads a null double as NaN anyway. So an
// f64 column reads back bit for bit, except that every NaN comes back as
// the one null (tickdb has no NaN other than "missing").
//
// Files use version 1 data pages and zstd at its fastest level by default
// (snappy or none on request), row groups of 1 Mi rows, the key-value
// metadata tickdb.table and tickdb.schema, and column statistics (min,
// max, null count, page index) for every column but the sym ones, which
// in time order hold every symbol in every row group anyway.
//
// # Concurrency
//
// Run is for one goroutine at a time per Reader: a Parquet export hands
// the reader to one of its workers until it returns, and opens one more
// reader per extra worker (Options.Workers, default GOMAXPROCS up to 8).
// It never blocks the table's writer: it reads published rows only, up to
// the rows published when it starts (or up to To), so a table being
// written exports a consistent prefix.
//
// # Durability
//
// Every file is written under a hidden temporary name (.part-00000.parquet.tmp,
// which readers skip), fsynced, renamed to its final name and its
// directory fsynced, so a crash leaves complete files or none. A failed or
// cancelled Run removes every file and directory it created; the
// partitions it completed before a crash (not a failure) stay.
//
// # Caveats
//
//   - Partitions are UTC dates. A run refuses (ErrExists) before it
//     writes anything when any partition between its first and last date
//     holds files, even a date with no rows in the range: remove the
//     partitions to export them again.
//   - Readers add the partition as a column named date: a table column of
//     that name clashes with it.
//   - Spark 3.x and 4.0 read TIMESTAMP(NANOS) only with
//     spark.sql.legacy.parquet.nanosAsLong=true, as a long (ns since the
//     epoch); without it they fail with "Illegal Parquet type". Spark and
//     other readers older than 2022 may not read DELTA_BINARY_PACKED. Trino
//     reads nanoseconds with its timestamp precision set to NANOSECONDS.
//   - Readers show ts without a time zone: it is UTC.
//   - CSV files are what "tickdb query --format csv" prints: ts as RFC
//     3339 with nine fractional digits in UTC, a missing f64 as an empty
//     field; CSV export runs on one goroutine.
//   - Memory: up to Workers+1 row groups' column buffers and compressed
//     pages, tens of MB per worker for typical tables.
//   - In a table with late rows, files and row groups hold about
//     FileRows and RowGroupRows rows, give or take the late rows around
//     their cuts. Its rows are merged in time order (reader.Range)
//     rather than walked in seq order; with 5 % late rows that costs no
//     CPU per row measurable next to encoding and compression
//     (BenchmarkExportLate against BenchmarkExport).
package export
