package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
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
	return eachWriter(cmd, g.db, o.table, "compact", "serve --compact-after", nil, func(w *writer.Writer, name string) (string, error) {
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
		line := fmt.Sprintf("%s: compressed %d segments, %s → %s on disk (%.1f×)", name, res.Segments, fmtBytes(res.RawBytes), fmtBytes(res.Bytes), ratio)
		if err == nil && res.Segments == 0 {
			line = fmt.Sprintf("%s: compressed 0 segments: %s", name, whyNoCompaction(g.db, name, o.olderThan))
		}
		return line, err
	})
}

// whyNoCompaction says why compact compressed nothing of table name (its
// writer closed) with --older-than age, and what would compress its
// oldest raw segment. A segment qualifies when every row of it, and the
// first row after it, is older than age before the table's last ts (the
// writer's rule, writer.Compact): so with --older-than the table's last
// segment, which no row follows, is never compressed.
func whyNoCompaction(db, name string, age time.Duration) string {
	r, err := reader.Open(db, name, nil)
	if err != nil {
		return "nothing qualified"
	}
	defer r.Close()
	st, err := r.Stat()
	switch {
	case err != nil:
		return "nothing qualified"
	case st.Rows == st.First:
		return "the table has no rows"
	}
	raw := st.Segments - uint64(st.Compressed.Segments)
	if raw == 0 {
		return fmt.Sprintf("all %d of its segments are compressed already", st.Segments)
	}
	if age <= 0 {
		return fmt.Sprintf("nothing qualified (%d raw segments)", raw)
	}
	last := query.FormatNs(st.LastTs)
	if raw == 1 {
		return fmt.Sprintf("its one raw segment is its last (rows up to %s), which --older-than never compresses: "+
			"a segment qualifies when the rows after it are older than --older-than before the last ts; "+
			"compact without --older-than compresses it", last)
	}
	// The oldest raw segment n: its newest row, and the first row after
	// it, whose age before the last ts is the largest --older-than that
	// would compress it.
	sr := st.SegmentRows
	n := st.First/sr + uint64(st.Compressed.Segments)
	buf := r.Schema().NewRow()
	tsAt := func(seq uint64) (int64, bool) {
		if r.ReadRow(seq, buf) != nil {
			return 0, false
		}
		return store.Row(buf).Ts(), true
	}
	newest, ok1 := tsAt((n+1)*sr - 1)
	next, ok2 := tsAt((n + 1) * sr)
	if !ok1 || !ok2 {
		return "nothing qualified"
	}
	what := fmt.Sprintf("nothing is older than %v before the table's last ts %s: its oldest raw segment "+
		"(of %d; the last is never compressed with --older-than) holds rows up to %s, %v before it",
		age, last, raw, query.FormatNs(newest), time.Duration(st.LastTs-newest))
	if d := time.Duration(st.LastTs - next); d > 0 {
		return what + fmt.Sprintf("; --older-than under %v, or none, would compress it", d)
	}
	return what + "; the rows after it share the last ts, so only compact without --older-than would compress it"
}
