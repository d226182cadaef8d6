package main

import (
	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/query"
)

type queryOpts struct {
	table, sym string
	from, to   timeFlag
	limit      int64
	rows       rowFlags
}

func newQueryCmd(g *globals) *cobra.Command {
	o := &queryOpts{}
	cmd := &cobra.Command{
		Use:   "query --table T [--sym S] [--from T1] [--to T2] [--limit N]",
		Short: "Print a table's rows in time order, optionally one symbol's, over a time range",
		Long: `query prints the rows of a table in time order: --from is inclusive, --to
exclusive, each RFC 3339 (2024-01-02T15:04:05.5Z, a date 2024-01-02) or
integer ns since the epoch. --sym keeps one symbol's rows, read through its
index, so it costs in proportion to that symbol's rows. --limit N stops after
N rows (0: no limit).

stdout carries the rows only: csv has a header row, ts first, then the
schema's columns in order; json is one object per row; ilp is line protocol
that another tickdb, QuestDB or InfluxDB accepts. It reads without any lock,
so it is safe while a writer runs; it sees the rows published when it starts.

With --db s3://bucket/prefix it reads an archive (tickdb archive, serve
--archive); with --db s3://bucket/prefix/* it reads the table of that name
in every node's archive under the prefix (servers that archive into one
bucket, each under its own node prefix), merged by ts: rows of equal ts
come node after node, in the nodes' name order.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runQuery(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "table to read (required)")
	f.StringVar(&o.sym, "sym", "", "only this symbol's rows")
	f.Var(&o.from, "from", "first time, inclusive (RFC 3339 or integer ns)")
	f.Var(&o.to, "to", "end time, exclusive (RFC 3339 or integer ns)")
	f.Int64Var(&o.limit, "limit", 0, "at most this many rows (0: no limit)")
	addRowFlags(cmd, &o.rows)
	return cmd
}

func runQuery(cmd *cobra.Command, g *globals, o *queryOpts) error {
	if err := checkRange(o.from, o.to); err != nil {
		return err
	}
	if archive.IsFleet(g.db) {
		return runQueryFleet(cmd, g, o)
	}
	r, err := openTable(g.db, o.table)
	if err != nil {
		return err
	}
	defer r.Close()
	out := cmd.OutOrStdout()
	enc := query.NewEncoder(out, o.rows.resolve(out), o.rows.ts, r.Schema(), o.table, r.SymbolName)
	q := query.Query{
		Table: o.table, Sym: o.sym, Limit: o.limit,
		From: o.from.ns, HasFrom: o.from.set,
		To: o.to.ns, HasTo: o.to.set,
	}
	if _, err := query.Run(cmd.Context(), r, q, enc); err != nil {
		return err
	}
	noteUnknownSym(cmd, r, o.table, o.sym, "")
	return enc.Close()
}
