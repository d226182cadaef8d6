package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/query"
)

type barsOpts struct {
	table, sym    string
	from, to      timeFlag
	interval      durFlag
	field, volume string
	rows          rowFlags
}

func newBarsCmd(g *globals) *cobra.Command {
	o := &barsOpts{}
	cmd := &cobra.Command{
		Use:   "bars --table T --sym S --interval 1m [--from T1] [--to T2] [--field price] [--volume size]",
		Short: "Print OHLCV bars of one symbol by time bucket",
		Long: `bars prints open, high, low and close of --field (an f64 or i64 column,
default price), the sum of --volume (default size) and the row count of one
symbol's rows per --interval bucket. ts is the bucket's start, floored since
the Unix epoch like kdb's xbar (1m buckets start on the minute, 7s ones at
multiples of 7 s since 1970); buckets without rows are left out. The rows
are read once, through the symbol's index, so the cost is in proportion to
that symbol's rows in --from (inclusive) to --to (exclusive).

--interval is a Go duration (1m, 1h30m, 250ms, 1.5s, 100us, 10ns) or integer
ns. NaN (missing) field values are skipped; a bucket whose values are all
missing prints empty open to close. stdout carries the bars only: columns
ts,open,high,low,close,volume,count; in ilp the measurement is <table>_bars
with the symbol as a tag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBars(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "table to read (required)")
	f.StringVar(&o.sym, "sym", "", "symbol (required)")
	f.Var(&o.interval, "interval", "bucket width (required): a duration like 1m, 5s, 250ms, or integer ns")
	f.Var(&o.from, "from", "first time, inclusive (RFC 3339 or integer ns)")
	f.Var(&o.to, "to", "end time, exclusive (RFC 3339 or integer ns)")
	f.StringVar(&o.field, "field", "price", "f64 or i64 column for open, high, low and close")
	f.StringVar(&o.volume, "volume", "size", "f64 or i64 column summed into volume")
	addRowFlags(cmd, &o.rows)
	return cmd
}

func runBars(cmd *cobra.Command, g *globals, o *barsOpts) error {
	if o.sym == "" {
		return errors.New("no symbol given (--sym S): bars are one symbol's")
	}
	if !o.interval.set || o.interval.d == 0 {
		return errors.New("no interval given (--interval): a positive duration like 1m, 5s, 250ms, or integer ns")
	}
	if err := checkRange(o.from, o.to); err != nil {
		return err
	}
	r, err := openTable(g.db, o.table)
	if err != nil {
		return err
	}
	defer r.Close()
	q := query.BarsQuery{
		Table: o.table, Sym: o.sym, Interval: o.interval.d,
		From: o.from.ns, HasFrom: o.from.set,
		To: o.to.ns, HasTo: o.to.set,
		Field: o.field, Volume: o.volume,
	}
	out := cmd.OutOrStdout()
	enc, err := query.NewBarsEncoder(out, o.rows.resolve(out), o.rows.ts, r, q)
	if err != nil {
		return err
	}
	if _, err := query.RunBars(cmd.Context(), r, q, enc); err != nil {
		return err
	}
	noteUnknownSym(cmd, r, o.table, o.sym, "")
	return enc.Close()
}

// durFlag is a positive duration flag (--interval, --tolerance): a Go
// duration or integer ns.
type durFlag struct {
	d   time.Duration
	set bool
}

func (f *durFlag) String() string {
	if !f.set {
		return ""
	}
	return f.d.String()
}

func (f *durFlag) Type() string { return "duration" }

func (f *durFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		n, ierr := strconv.ParseInt(s, 10, 64)
		if ierr != nil {
			return fmt.Errorf("%q is not a duration (accepted: 1m, 1h30m, 250ms, 1.5s, 100us, 10ns, or integer ns)", s)
		}
		d = time.Duration(n)
	}
	if d < 0 {
		return fmt.Errorf("%q is negative (want a duration >= 0, like 1m or 250ms)", s)
	}
	f.d, f.set = d, true
	return nil
}
