package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/export"
)

type exportOpts struct {
	table       string
	format      export.Format
	compression export.Compression
	out         string
	from, to    timeFlag
}

func newExportCmd(g *globals) *cobra.Command {
	o := &exportOpts{}
	cmd := &cobra.Command{
		Use:   "export --table T --format parquet|csv --out DIR [--from T1] [--to T2]",
		Short: "Export a table as a date-partitioned Parquet or CSV dataset",
		Long: `export writes a table's rows (--from inclusive, --to exclusive; times as
RFC 3339 or integer ns) under --out as a Hive-style dataset partitioned by
UTC date, which DuckDB, pandas/pyarrow, Polars, Trino and Spark read as it
is:

  DIR/date=2024-01-02/part-00000.parquet
  DIR/date=2024-01-03/part-00000.parquet   (part-00001... past 64 Mi rows)

Rows are written in ts order, as if they had arrived in order: a late row
(serve --late-window) goes where its ts puts it, in its own date's
partition.

Parquet: ts is INT64 TIMESTAMP(NANOS, isAdjustedToUTC=false) holding UTC
nanoseconds since the epoch (so DuckDB reads it as TIMESTAMP_NS and pandas
as datetime64[ns], every digit kept; both show it without a zone: it is
UTC), sym columns dictionary-encoded strings, f64 DOUBLE with a missing
value (NaN) written as null, i64 INT64, bool BOOLEAN; zstd (or
--compression snappy|none), row groups of 1 Mi rows, built on every CPU.
Spark reads nanosecond timestamps only with
spark.sql.legacy.parquet.nanosAsLong=true (as longs).

Read it with, for example:
  duckdb   SELECT * FROM read_parquet('DIR/**/*.parquet', hive_partitioning = true)
  pandas   pd.read_parquet("DIR")   (needs pyarrow or fastparquet, which many
           machines lack; pandas alone reads no Parquet)

Without either, pandas reads the table itself, no export needed, through
examples/python/tickdb_reader.py (numpy, pandas and, for compacted
segments, zstandard: Debian's python3-pandas and python3-zstandard):
  import tickdb_reader as tr
  df = tr.read_table("DB", "TABLE").to_pandas()   # ts datetime64[ns, UTC], sym Categorical
  df = tr.open_table("DB", "TABLE").read(from_ts, to_ts, syms=["AAPL"], columns=["price"]).to_pandas()

CSV: a header row, ts first as RFC 3339 in UTC with nine fractional
digits, the other columns in schema order, as "tickdb query --format csv"
prints them.

export never mixes two exports in one partition: it refuses, before
writing anything, when a date it would write already holds files. Files
appear complete or not at all (written under a hidden name, renamed when
synced), and an export that fails or is interrupted removes what it
wrote. It prints one summary line; a progress bar shows on a terminal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runExport(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "table to export")
	f.Var(&o.format, "format", "parquet or csv")
	f.StringVar(&o.out, "out", "", "dataset directory (created if needed)")
	f.Var(&o.from, "from", "first ts to export, inclusive (RFC 3339 or integer ns)")
	f.Var(&o.to, "to", "end of the range, exclusive (RFC 3339 or integer ns)")
	f.Var(&o.compression, "compression", "Parquet compression: zstd, snappy or none")
	return cmd
}

func runExport(cmd *cobra.Command, g *globals, o *exportOpts) error {
	if o.out == "" {
		return fmt.Errorf("export: no output directory (--out DIR)")
	}
	if err := checkRange(o.from, o.to); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	r, err := openTable(g.db, o.table)
	if err != nil {
		return err
	}
	defer r.Close()
	start := time.Now()
	var bar *progress
	res, err := export.Run(cmd.Context(), r, o.out, &export.Options{
		Format: o.format, Compression: o.compression, Table: o.table,
		From: o.from.ns, HasFrom: o.from.set, To: o.to.ns, HasTo: o.to.set,
		Progress: func(done, total int64) {
			if bar == nil {
				bar = newProgress(cmd.ErrOrStderr(), total, "export "+o.table, "rows")
			}
			bar.set(done)
		},
	})
	if bar != nil {
		bar.done()
	}
	if err != nil {
		return err
	}
	el := time.Since(start)
	perRow := ""
	if res.Rows > 0 {
		perRow = fmt.Sprintf(", %.1f bytes/row", float64(res.Bytes())/float64(res.Rows))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "exported %s rows of %s to %s in %s under %s (%s%s) in %s\n",
		commas(res.Rows), o.table, exportNoun(len(res.Files), o.format.String()+" file"), exportNoun(res.Partitions(), "date partition"),
		o.out, fmtBytes(res.Bytes()), perRow, el.Round(time.Millisecond))
	return nil
}

// exportNoun is "1 thing" or "n things".
func exportNoun(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
