package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

type retainOpts struct {
	table        string
	maxAge       time.Duration
	maxBytes     byteSize
	afterArchive string
}

func newRetainCmd(g *globals) *cobra.Command {
	o := &retainOpts{}
	cmd := &cobra.Command{
		Use:   "retain [--table T] [--max-age DUR] [--max-bytes N]",
		Short: "Delete the oldest whole segments beyond an age or a size",
		Long: `retain deletes each table's oldest rows, a whole segment file at a time:
the segments that hold only rows older than --max-age before the table's
last timestamp (not the wall clock: a back-filled table keeps its rows),
then the oldest until the segment files holding rows fit in --max-bytes.
The segment being written is never deleted.

Readers in other processes keep working: a segment they have mapped still
reads (its disk space comes back when they close), a row below the new
first row is an ErrTruncated error naming it, queries start at it, and a
tailing reader does not notice.

retain takes the table's writer lock, so it fails on a table a running
writer holds (such as "tickdb serve"): give that process the limits
instead (serve --retain-age and --retain-bytes apply them at every
segment roll).

--after-archive s3://bucket/prefix deletes only segments that archive
holds (its manifest lists them whole; tickdb archive, serve --archive),
whatever the limits say: history is never only on this disk by accident.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRetain(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "only this table (default: all)")
	f.DurationVar(&o.maxAge, "max-age", 0, "delete segments whose rows are all older than this before the table's last ts (e.g. 720h)")
	f.Var(&o.maxBytes, "max-bytes", "keep at most this many bytes of segment files (bytes, or with K, M or G)")
	f.StringVar(&o.afterArchive, "after-archive", "", "delete only segments the archive at s3://bucket/prefix holds (AWS_* env as for tickdb archive)")
	return cmd
}

func runRetain(cmd *cobra.Command, g *globals, o *retainOpts) error {
	if o.maxAge < 0 {
		return fmt.Errorf("--max-age %v is negative", o.maxAge)
	}
	if o.maxAge == 0 && o.maxBytes == 0 {
		return errors.New("retain: give --max-age, --max-bytes or both")
	}
	var opts func(name string) (*writer.Options, error)
	note := ""
	if o.afterArchive != "" {
		c, err := archive.Dial(o.afterArchive, archive.Config{})
		if err != nil {
			return fmt.Errorf("--after-archive: %w", err)
		}
		opts = func(name string) (*writer.Options, error) {
			below, err := archive.RetainBelow(cmd.Context(), c, g.db, name)
			if err != nil {
				return nil, err
			}
			note = fmt.Sprintf("; %s holds its segments below %d", o.afterArchive, below)
			return &writer.Options{RetainBelow: func(string) uint64 { return below }}, nil
		}
	}
	return eachWriter(cmd, g.db, o.table, "retain", "serve --retain-age, --retain-bytes", opts, func(w *writer.Writer, name string) (string, error) {
		res, err := w.Retain(o.maxAge, int64(o.maxBytes))
		return fmt.Sprintf("%s: deleted %d segments (%s rows, %s); first row now %s%s",
			name, res.Segments, commas(int64(res.Rows)), fmtBytes(res.Bytes), commas(int64(res.FirstSeq)), note), err
	})
}

// eachWriter opens the writer of table (or of every table, with "") in
// turn, runs fn, closes it and prints fn's line. A table a running writer
// holds stops it with an error saying how that process does the work
// (hint). opts, when not nil, gives each table's writer options.
func eachWriter(cmd *cobra.Command, db, table, verb, hint string, opts func(name string) (*writer.Options, error), fn func(w *writer.Writer, name string) (string, error)) error {
	names := listTables(db)
	if table != "" {
		if store.ValidTableName(table) != nil || !contains(names, table) {
			return fmt.Errorf("%s: no table %q in %s; tables: %s", verb, table, db, tablesText(db))
		}
		names = []string{table}
	}
	if len(names) == 0 {
		return fmt.Errorf("%s: no tables in %s", verb, db)
	}
	for _, name := range names {
		var wo *writer.Options
		if opts != nil {
			var err error
			if wo, err = opts(name); err != nil {
				return fmt.Errorf("%s: %s: %w", verb, name, err)
			}
		}
		w, err := writer.Open(db, name, wo)
		if errors.Is(err, writer.ErrLocked) {
			return fmt.Errorf("%s: %w: its writer does this (%s)", verb, err, hint)
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", verb, name, err)
		}
		line, err := fn(w, name)
		if cerr := w.Close(); err == nil && !errors.Is(cerr, writer.ErrClosed) { // fn may have closed it
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", verb, name, err)
		}
		fmt.Fprintln(cmd.OutOrStdout(), line)
	}
	return nil
}

func contains(names []string, s string) bool {
	for _, n := range names {
		if n == s {
			return true
		}
	}
	return false
}
