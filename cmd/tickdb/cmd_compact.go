package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/writer"
)

type compactOpts struct {
	table     string
	olderThan time.Duration
}

func newCompactCmd(g *globals) *cobra.Command {
	o := &compactOpts{}
	cmd := &cobra.Command{
		Use:   "compact [--table T] [--older-than DUR]",
		Short: "Compress old sealed segments (columnar, zstd); every query still reads them",
		Long: `compact rewrites each table's old sealed segments, oldest first, into
compressed columnar files (delta-of-delta timestamps, per-symbol price and
size deltas, packed symbol ids, zstd; docs/FORMAT.md), which every read path
serves as before. --older-than picks the segments whose rows are all older
than that before the table's last timestamp (default: every segment that
qualifies), the table's last segment included: closing the writer seals it.
A writer that opens the table later decompresses the last one or two
segments it recovers from back into raw files.

Each segment is swapped crash-safely: the compressed file is written and
synced beside the raw one, the switch is published in the control file,
and only then is the raw file removed. Readers that have the raw file
mapped keep reading it.

compact takes the table's writer lock, so it fails on a table a running
writer holds (such as "tickdb serve"): give that process --compact-after
instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCompact(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "only this table (default: all)")
	f.DurationVar(&o.olderThan, "older-than", 0, "compress only segments whose rows are all older than this before the table's last ts")
	return cmd
}

func runCompact(cmd *cobra.Command, g *globals, o *compactOpts) error {
	if o.olderThan < 0 {
		return fmt.Errorf("--older-than %v is negative", o.olderThan)
	}
	return eachWriter(cmd, g.db, o.table, "compact", "serve --compact-after", func(w *writer.Writer, name string) (string, error) {
		res, err := w.Compact(o.olderThan)
		if err == nil {
			// Closing seals the last segment: compress what a running
			// writer had to leave raw.
			var tail writer.CompactResult
			tail, err = w.CloseCompacted(o.olderThan)
			res.Segments, res.RawBytes, res.Bytes = res.Segments+tail.Segments, res.RawBytes+tail.RawBytes, res.Bytes+tail.Bytes
		}
		ratio := 0.0
		if res.Bytes > 0 {
			ratio = float64(res.RawBytes) / float64(res.Bytes)
		}
		// Sizes on disk (blocks allocated): a raw segment file is sparse,
		// so its size says nothing of a segment sealed with few rows.
		return fmt.Sprintf("%s: compressed %d segments, %s → %s on disk (%.1f×)", name, res.Segments, fmtBytes(res.RawBytes), fmtBytes(res.Bytes), ratio), err
	})
}
