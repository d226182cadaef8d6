package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

type verifyOpts struct {
	table string
}

func newVerifyCmd(g *globals) *cobra.Command {
	o := &verifyOpts{}
	cmd := &cobra.Command{
		Use:   "verify [--table T]",
		Short: "Check every row's check word and every index entry, read-only",
		Long: `verify checks each table (or only --table): the file headers, the symbol
dictionary, every published row's check word and time order (in its live
slot and in its durable file), every time-index entry and every postings
entry against its row.

It opens every file read-only and takes no lock, so it is safe while a
writer (tickdb serve) runs. It prints one OK line per table on stdout and
exits 0, or exits 1 with one line naming the damaged file and the byte
offset. Rows a crash left published but not durable are reported, and are
not damage: the next writer cuts them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runVerify(cmd, g, o) },
	}
	cmd.Flags().StringVar(&o.table, "table", "", "only this table (default: all)")
	return cmd
}

func runVerify(cmd *cobra.Command, g *globals, o *verifyOpts) error {
	names := []string{o.table}
	if o.table == "" {
		if st, err := os.Stat(g.db); err != nil || !st.IsDir() {
			return fmt.Errorf("no database directory %s (--db)", g.db)
		}
		names = names[:0]
		for _, n := range listTables(g.db) {
			if store.ValidTableName(n) == nil { // not a table being created
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			return fmt.Errorf("no tables in %s", g.db)
		}
	} else {
		// openTable's error names the tables there are.
		r, err := openTable(g.db, o.table)
		if err != nil {
			return err
		}
		r.Close()
	}
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var first error
	var bad []string
	for _, n := range names {
		if err := cmd.Context().Err(); err != nil {
			return err
		}
		rep, err := verifyTable(errw, g.db, n)
		if err != nil {
			fmt.Fprintf(out, "%s: DAMAGED\n", n)
			if first == nil {
				// The damage itself (file, offset, what) is the message;
				// the row being read when it was found adds nothing.
				var ce *store.CorruptError
				if errors.As(err, &ce) {
					err = ce
				}
				first = fmt.Errorf("verify %s: %w", n, err)
			}
			bad = append(bad, n)
			continue
		}
		fmt.Fprintf(out, "%s: OK, %s verified (%s, %s, %s, %s)%s%s\n", n,
			count(rep.Rows, "row", "rows"), count(rep.Segments, "segment", "segments"),
			count(uint64(rep.Symbols), "symbol", "symbols"), count(rep.TimeEntries, "time-index entry", "time-index entries"),
			count(rep.Postings, "postings entry", "postings entries"), symColumnsNote(rep), unpublishedNote(rep))
	}
	if len(bad) > 1 {
		return fmt.Errorf("%w (and %d more damaged tables: %s)", first, len(bad)-1, strings.Join(bad[1:], ", "))
	}
	return first
}

// symColumnsNote names, when a table has sym columns beside its key one
// (other tags, string fields), each column's distinct values and the size
// of the dictionary they share: the symbols verify counts are the key
// column's values only, as latest lists them.
func symColumnsNote(rep reader.VerifyReport) string {
	if len(rep.SymColumns) < 2 {
		return ""
	}
	cols := make([]string, len(rep.SymColumns))
	for i, c := range rep.SymColumns {
		cols[i] = fmt.Sprintf("%s %s", c.Name, count(uint64(c.Values), "value", "values"))
	}
	return fmt.Sprintf("; symbols are column %s's values; sym columns %s, sharing a dictionary of %s",
		rep.SymColumns[0].Name, strings.Join(cols, ", "), commas(int64(rep.Dictionary)))
}

// verifyTable verifies one table, with a progress bar on a terminal.
func verifyTable(stderr io.Writer, db, name string) (reader.VerifyReport, error) {
	var bar *progress
	rep, err := reader.Verify(db, name, func(done, total uint64) {
		if bar == nil {
			bar = newProgress(stderr, int64(total), "verify "+name, "rows")
		}
		bar.set(int64(done))
	})
	if bar != nil {
		bar.done()
	}
	return rep, err
}

// count is n with thousands separators and the noun in the right number.
func count(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return commas(int64(n)) + " " + many
}

func unpublishedNote(rep reader.VerifyReport) string {
	if rep.Unpublished == 0 {
		return ""
	}
	return fmt.Sprintf("; %s published before a crash but never made durable (not damage: the next writer cuts them)", count(rep.Unpublished, "row", "rows"))
}
