package main

import (
	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/query"
)

type asofOpts struct {
	left, right, sym string
	from, to         timeFlag
	tolerance        durFlag
	rows             rowFlags
}

func newAsOfCmd(g *globals) *cobra.Command {
	o := &asofOpts{}
	cmd := &cobra.Command{
		Use:   "asof --left T --right Q [--sym S] [--from T1] [--to T2] [--tolerance DUR]",
		Short: "As-of join: every left row with the last right row of its symbol at or before it",
		Long: `asof joins two tables like kdb's aj: it prints every row of --left (for
example trades) in time order, optionally one symbol's, over --from
(inclusive) to --to (exclusive), each with the last row of --right (for
example quotes) of the same symbol whose ts is at or before the left row's.
Among right rows with equal ts the later one wins. With --tolerance DUR the
right row must also be no more than DUR older (inclusive). Symbols match by
name (each table's first sym column).

Columns: the left's, then <right>_ts, then the right's other columns except
its symbol, a name that collides with a left column's prefixed <right>_.
A left row without a match has the right columns empty (csv: empty fields,
json: null, ilp: left out). One pass over both tables, merged by time;
with --from and no --tolerance, each symbol's last right row before
--from is found first through the symbol's index.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAsOf(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.left, "left", "", "left table, every row of which is printed (required)")
	f.StringVar(&o.right, "right", "", "right table, searched as of each left row (required)")
	f.StringVar(&o.sym, "sym", "", "only this symbol's rows")
	f.Var(&o.from, "from", "first left time, inclusive (RFC 3339 or integer ns)")
	f.Var(&o.to, "to", "end left time, exclusive (RFC 3339 or integer ns)")
	f.Var(&o.tolerance, "tolerance", "match only right rows at most this much older (inclusive): a duration like 1s, 250ms, or integer ns")
	addRowFlags(cmd, &o.rows)
	return cmd
}

func runAsOf(cmd *cobra.Command, g *globals, o *asofOpts) error {
	if err := checkRange(o.from, o.to); err != nil {
		return err
	}
	l, err := openTable(g.db, o.left)
	if err != nil {
		return err
	}
	defer l.Close()
	r, err := openTable(g.db, o.right)
	if err != nil {
		return err
	}
	defer r.Close()
	q := query.AsOfQuery{
		Left: o.left, Right: o.right, Sym: o.sym,
		From: o.from.ns, HasFrom: o.from.set,
		To: o.to.ns, HasTo: o.to.set,
		Tolerance: o.tolerance.d, HasTolerance: o.tolerance.set,
	}
	out := cmd.OutOrStdout()
	enc, err := query.NewAsOfEncoder(out, o.rows.resolve(out), o.rows.ts, l, r, q)
	if err != nil {
		return err
	}
	if _, err := query.RunAsOf(cmd.Context(), l, r, q, enc); err != nil {
		return err
	}
	return enc.Close()
}
