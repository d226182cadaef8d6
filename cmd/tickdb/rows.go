package main

// Flags and helpers shared by the commands that open tables and print rows
// (query, latest, bars, asof, tail): --format, --ts, time flags, and opening a table
// with an error that names the tables that exist.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// rowFlags are --format and --ts.
type rowFlags struct {
	format query.Format
	ts     query.TsFormat
	cmd    *cobra.Command
}

// addRowFlags registers --format table|csv|json|ilp and --ts rfc3339|ns.
// Without --format, rows are a table on a terminal and csv elsewhere.
func addRowFlags(cmd *cobra.Command, f *rowFlags) {
	f.cmd = cmd
	cmd.Flags().Var(&f.format, "format", "table, csv, json (one object per line) or ilp (default: table on a terminal, csv otherwise)")
	// The default depends on stdout (resolve), which the usage states;
	// no "(default table)" after it.
	cmd.Flags().Lookup("format").DefValue = ""
	cmd.Flags().Var(&f.ts, "ts", "timestamps as rfc3339 (UTC, ns precision) or ns (integer ns since the epoch)")
}

// resolve returns the format to use for out.
func (f *rowFlags) resolve(out io.Writer) query.Format {
	if f.cmd != nil && f.cmd.Flags().Changed("format") {
		return f.format
	}
	if isTerminal(out) {
		return query.FormatTable
	}
	return query.FormatCSV
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// timeFlag is a --from/--to value: RFC 3339 or integer ns.
type timeFlag struct {
	ns  int64
	set bool
}

func (t *timeFlag) String() string {
	if !t.set {
		return ""
	}
	return fmt.Sprint(t.ns)
}

func (t *timeFlag) Type() string { return "time" }

func (t *timeFlag) Set(s string) error {
	v, err := query.ParseTime(s)
	if err != nil {
		return err // it names the accepted forms
	}
	t.ns, t.set = v, true
	return nil
}

// checkRange is the error of a --from after --to, naming both times.
func checkRange(from, to timeFlag) error {
	return query.CheckRange(from.ns, from.set, to.ns, to.set)
}

// listTables returns the names of the tables in db, sorted (none when db
// cannot be read).
func listTables(db string) []string {
	if a := archiveOf(db); a != nil {
		names, _ := archivedTables(a)
		return names
	}
	names, _ := reader.Tables(db)
	return names
}

// openTable opens table name of db for reading; a missing table's error
// names the tables that exist.
func openTable(db, name string) (*reader.Reader, error) {
	if name == "" {
		return nil, fmt.Errorf("no table given (--table); tables in %s: %s", db, tablesText(db))
	}
	if a := archiveOf(db); a != nil {
		r, err := openArchived(a, name)
		if err != nil && store.ValidTableName(name) == nil && !slices.Contains(listTables(db), name) {
			return nil, fmt.Errorf("no table %q in %s; tables: %s", name, db, tablesText(db))
		}
		return r, err
	}
	r, err := reader.Open(db, name, nil)
	if errors.Is(err, store.ErrNoTable) {
		return nil, fmt.Errorf("no table %q in %s; tables: %s", name, db, tablesText(db))
	}
	return r, err
}

func tablesText(db string) string {
	names := listTables(db)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// noteUnknownSym says on stderr why an answer for sym is empty when the
// table does not hold that symbol, naming the nearest ones
// (query.UnknownSym), as openTable names the tables; stdout keeps rows
// only, and the exit status stays 0 (an empty answer is an answer). also
// follows the sentence.
func noteUnknownSym(cmd *cobra.Command, r *reader.Reader, table, sym, also string) {
	if m := query.UnknownSym(r, table, sym); m != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "tickdb: %s: %s%s\n", cmd.Name(), m, also)
	}
}
