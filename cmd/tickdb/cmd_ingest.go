//go:build linux

package main

// tickdb ingest: bulk loads of line-protocol and CSV files through
// package load (which stores through ingest.Loader, so that a file meets
// exactly the table rules of serve). This file is the command's front:
// flags and arguments, stdin, the progress bar, the bad lines printed and
// the summary.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/load"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

const ingestMaxReports = 10 // bad lines printed per file

type ingestOpts struct {
	table     string
	format    string
	skipBad   bool
	liveDir   string
	late      time.Duration
	maxFuture time.Duration
	tsUnit    string
	allow1970 bool
}

func newIngestCmd(g *globals) *cobra.Command {
	o := &ingestOpts{}
	cmd := &cobra.Command{
		Use:   "ingest [--table T] [--format ilp|csv] [--skip-bad] FILE...|-",
		Short: "Bulk load line-protocol or CSV files (or stdin) into the database",
		Long: `ingest stores the rows of line-protocol (ILP) and CSV files, or of stdin
("-"), by the table rules of serve: a table that does not exist is created
from its first row; an ILP line naming a tag or field the table lacks adds
the column (the rows before read it as missing; a CSV header names only
existing columns); a row may omit columns (stored as NaN, 0, false or "");
a row earlier than its table's newest row
is a bad line, unless it is within --late-window of it (then it is stored
as a late row, and queries return it in ts order; default 0: none). A row without a time gets the time its file's load began (one
time for the whole file), or its table's last row's time when that is
later.

Format: --format, else the file's extension (.ilp, .lp, .txt: ilp; .csv:
csv). Stdin is ilp unless --format says csv.

ILP: each line's measurement names its table; with --table T every line
goes to T whatever its measurement. Timestamps are in ns, or in the unit
--ts-unit gives (s, ms, us or ns; for CSV's integer ts cells too).

Timestamps are checked as serve checks them: a row more than --max-future
ahead of the clock (when the file's load began) is a bad line (future); a
timestamp that reads as the first weeks of 1970 in ns but as now in
seconds, ms or µs is a bad line (ts_unit) naming the --ts-unit to give,
unless --allow-1970.

CSV (needs --table): RFC 4180 (quoted fields may hold commas, quotes as ""
and line ends), with a header row naming the columns: "ts" and columns of
the table, in any order. ts is RFC 3339 (2024-01-02T15:04:05.5Z) or integer
ns since the epoch (or in the --ts-unit). An empty cell is an omitted value. For a table that
exists, every header column must be one of its columns, and cells are read
by the column's type. A new table gets ts and the header's other columns in
header order, each typed by its non-empty cells in the first 1,000 rows:
i64 if they are all integers, f64 if all numbers, bool if all true/false,
sym otherwise (f64 for a column with no value there).

Bad lines: each file is all or nothing. Every line is parsed and checked
against its table before any is stored; a file with a bad line (malformed,
an unknown column, a wrong type, a time before its table's last row) stores
nothing, its first 10 bad lines are printed with file, line and byte, the
other files are still loaded, and ingest exits 1. With --skip-bad a file is
read once, bad lines are skipped (the first 10 printed) and counted, and the
good ones stored.

Stdin is copied to a temporary file first ($TMPDIR), so that it can be
checked before it is stored. A summary goes to stderr (stdout stays empty);
every stored row is durable when ingest exits. A write failure or an
interrupt stops at once, keeping the rows stored so far.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runIngest(cmd, g, o, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "table to store into (required for CSV; for ILP it replaces each line's measurement)")
	f.StringVar(&o.format, "format", "", "ilp or csv (default: from the file extension; ilp for stdin)")
	f.BoolVar(&o.skipBad, "skip-bad", false, "skip and count bad lines and store the good ones, instead of storing nothing from a file with a bad line")
	f.StringVar(&o.liveDir, "live-dir", "", "directory for the live segments, one sub-directory per table (default /dev/shm/tickdb)")
	f.DurationVar(&o.maxFuture, "max-future", ingest.DefaultMaxFuture, "a row more than this far ahead of the clock is a bad line (future); 0: no limit")
	f.StringVar(&o.tsUnit, "ts-unit", "ns", "unit of ILP timestamps and integer CSV ts cells: s, ms, us or ns")
	f.BoolVar(&o.allow1970, "allow-1970", false, "store timestamps that read as the first weeks of 1970 in ns but as now in s, ms or µs (else a bad line, ts_unit)")
	f.DurationVar(&o.late, "late-window", 0, "store a row up to this far behind its table's newest row as a late row (queries return it in ts order); 0: a bad line")
	return cmd
}

// ingestSrc is one FILE argument.
type ingestSrc struct {
	path   string // the file to read (stdin's temporary copy for "-")
	name   string // as printed: the argument, or "stdin"
	format load.Format
}

func runIngest(cmd *cobra.Command, g *globals, o *ingestOpts, args []string) error {
	if o.table != "" {
		if err := store.ValidTableName(o.table); err != nil {
			return fmt.Errorf("--table: %w", err)
		}
	}
	if o.format != "" && o.format != "ilp" && o.format != "csv" {
		return fmt.Errorf("--format %q: want ilp or csv", o.format)
	}
	if o.maxFuture < 0 {
		return fmt.Errorf("--max-future %v: negative (0 turns the check off)", o.maxFuture)
	}
	tsUnit, err := ingest.ParseTsUnit(o.tsUnit)
	if err != nil {
		return fmt.Errorf("--ts-unit: %w", err)
	}
	given := load.ILP
	if o.format == "csv" {
		given = load.CSV
	}
	srcs := make([]ingestSrc, len(args))
	stdin := -1
	for i, a := range args {
		s := ingestSrc{path: a, name: a, format: given}
		switch {
		case a == "-":
			if stdin >= 0 {
				return errors.New(`stdin ("-") given twice`)
			}
			stdin, s.name = i, "stdin"
		case o.format == "":
			var ok bool
			if s.format, ok = load.FormatOf(a); !ok {
				return fmt.Errorf("%s: cannot tell the format from the extension (.ilp, .lp, .txt or .csv); give --format ilp or csv", a)
			}
		}
		if s.format == load.CSV && o.table == "" {
			return fmt.Errorf("%s: CSV needs --table (the table to store the rows in)", s.name)
		}
		if a != "-" {
			if st, err := os.Stat(a); err != nil {
				return err
			} else if st.IsDir() {
				return fmt.Errorf("%s is a directory", a)
			}
		}
		srcs[i] = s
	}
	if stdin >= 0 {
		path, err := spoolStdin(cmd.InOrStdin())
		if err != nil {
			return err
		}
		defer os.Remove(path)
		srcs[stdin].path = path
	}

	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	stderr := cmd.ErrOrStderr()
	reported := 0 // bad lines of the current file so far
	var bar *progress
	ld := load.New(&load.Options{
		DB: g.db, LiveRoot: o.liveDir, Writer: writer.Options{LateWindow: o.late},
		Table: o.table, SkipBad: o.skipBad,
		MaxFuture: maxFutureOption(o.maxFuture), TsUnit: tsUnit, Allow1970: o.allow1970,
		// Errors only: a table that holds a far-future row says so.
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Report: func(file string, err error) {
			if reported < ingestMaxReports {
				fmt.Fprintf(stderr, "%s: %v\n", file, err)
			}
			reported++
		},
		Progress: func(p load.Progress) {
			if p.Done {
				if bar != nil {
					bar.done()
				}
				bar = nil
				return
			}
			if bar == nil {
				desc := "check " + p.File
				if p.Store {
					desc = "store " + p.File
				}
				bar = newProgress(stderr, p.Size, desc, "bytes")
			}
			bar.set(p.Read)
		},
	})
	var failed []string // why each failed file stored nothing
	for _, s := range srcs {
		reported = 0
		err = ld.File(ctx, s.path, s.name, s.format)
		var fe *load.FileError
		if errors.As(err, &fe) {
			failed = append(failed, fileFailure(fe))
			err = nil
		}
		if err != nil {
			break
		}
	}
	if cerr := ld.Close(); err == nil && cerr != nil {
		err = cerr
	}
	st := ld.Stats()
	if st.Rows > 0 || (err == nil && len(failed) == 0) {
		ingestSummary(stderr, st, time.Since(start))
	}
	switch {
	case err != nil:
		return err
	case len(failed) == 1 && len(srcs) == 1:
		return errors.New(failed[0])
	case len(failed) > 0:
		return fmt.Errorf("%d of %d files stored nothing: %s", len(failed), len(srcs), strings.Join(failed, "; "))
	}
	return nil
}

// fileFailure says why a file stored nothing: its bad header, or how many
// bad lines it has, and how many of them were printed when not all.
func fileFailure(fe *load.FileError) string {
	if fe.Header != nil {
		return fe.Error()
	}
	s := commas(fe.Bad) + " bad lines"
	if fe.Bad == 1 {
		s = "1 bad line"
	}
	if fe.Bad > ingestMaxReports {
		s += fmt.Sprintf(" (the first %d printed)", ingestMaxReports)
	}
	return fmt.Sprintf("%s: %s; nothing stored from it (--skip-bad stores the good lines)", fe.File, s)
}

// spoolStdin copies stdin to a temporary file and returns its path.
func spoolStdin(r io.Reader) (string, error) {
	f, err := os.CreateTemp("", "tickdb-ingest-stdin-*")
	if err != nil {
		return "", fmt.Errorf("copy stdin: %w", err)
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("copy stdin to %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// ingestSummary prints the one-line summary on stderr.
func ingestSummary(w io.Writer, st load.Stats, d time.Duration) {
	var b strings.Builder
	rows, fs := "rows", "files"
	if st.Rows == 1 {
		rows = "row"
	}
	if st.Files == 1 {
		fs = "file"
	}
	fmt.Fprintf(&b, "tickdb ingest: %s %s stored from %d %s", commas(st.Rows), rows, st.Files, fs)
	fmt.Fprintf(&b, " in %s (%s rows/s)", fmtNs(d.Nanoseconds()), strings.TrimSpace(fmtRate(float64(st.Rows)/max(d.Seconds(), 1e-9))))
	if st.Skipped == 1 {
		b.WriteString(", 1 bad line skipped")
	} else if st.Skipped > 0 {
		fmt.Fprintf(&b, ", %s bad lines skipped", commas(st.Skipped))
	}
	names := make([]string, 0, len(st.Tables))
	for n := range st.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s %s", sep, n, commas(st.Tables[n]))
	}
	fmt.Fprintln(w, b.String())
}
