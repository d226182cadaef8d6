package main

import (
	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/query"
)

type latestOpts struct {
	table string
	syms  []string
	at    timeFlag
	rows  rowFlags
}

func newLatestCmd(g *globals) *cobra.Command {
	o := &latestOpts{}
	cmd := &cobra.Command{
		Use:   "latest --table T [--at TIME] [--sym S]...",
		Short: "Print the last row of every symbol (or of the listed ones) at or before a time",
		Long: `latest prints, for every symbol of the table (or each --sym, repeatable),
its last row with ts at or before --at (RFC 3339, a date, or integer ns
since the epoch; without --at, its newest row), like kdb+'s
"select last by sym from t where ts<=at" and QuestDB's LATEST ON. Among rows
with equal ts the later one wins. One row per symbol that has such a row,
in order of symbol name (byte order); a symbol the table does not hold
prints nothing.

Each symbol's row is found through its own index (its postings, or a
compressed segment's directory), not by a scan of the table: µs a symbol
(on compressed history, the decoding of one block of it). The columns and formats are query's. It reads without any lock, so
it is safe while a writer runs; every answer is as of the rows published
when it starts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLatest(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "table to read (required)")
	f.StringArrayVar(&o.syms, "sym", nil, "only this symbol (repeat for more)")
	f.Var(&o.at, "at", "the time, inclusive (RFC 3339 or integer ns; default: each symbol's newest row)")
	addRowFlags(cmd, &o.rows)
	return cmd
}

func runLatest(cmd *cobra.Command, g *globals, o *latestOpts) error {
	r, err := openTable(g.db, o.table)
	if err != nil {
		return err
	}
	defer r.Close()
	out := cmd.OutOrStdout()
	enc := query.NewEncoder(out, o.rows.resolve(out), o.rows.ts, r.Schema(), o.table, r.SymbolName)
	q := query.LatestQuery{Table: o.table, Syms: o.syms, At: o.at.ns, HasAt: o.at.set}
	if _, err := query.RunLatest(cmd.Context(), r, q, enc); err != nil {
		return err
	}
	for _, sym := range o.syms {
		noteUnknownSym(cmd, r, o.table, sym, "")
	}
	return enc.Close()
}
