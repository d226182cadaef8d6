package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// Tail pacing. While rows keep coming the tail polls without pause; when
// they stop it backs off to tailMaxSleep, which bounds both the delay of
// the first row after a lull and the idle cost (about 200 wake-ups a
// second). A missing table is looked for every tailOpenMaxSleep at most.
const (
	tailMaxSleep     = 5 * time.Millisecond
	tailOpenMinSleep = 10 * time.Millisecond
	tailOpenMaxSleep = 250 * time.Millisecond
	// tailBatch is the most rows encoded between two flushes of the output
	// (and two checks of the context) while rows are arriving faster than
	// they are printed.
	tailBatch = 4096
)

type tailOpts struct {
	table, sym string
	fromStart  bool
	rows       rowFlags
}

func newTailCmd(g *globals) *cobra.Command {
	o := &tailOpts{}
	cmd := &cobra.Command{
		Use:   "tail --table T [--sym S] [--from-start]",
		Short: "Follow a table's new rows as a writer in another process publishes them",
		Long: `tail prints a table's rows as they are published, like tail -f: only the
rows published after it starts, or every row with --from-start. A table that
does not exist yet is waited for (all of its rows are then new). Each batch
of rows is written out as soon as it is read, so a pipe sees them at once.
It follows the table across segment rolls and writer restarts, reads
without any lock, and stops cleanly on SIGINT or SIGTERM.

With --format ilp it streams line protocol into any line-protocol server
(QuestDB, InfluxDB, another tickdb): a live replica, for example
  tickdb tail --table trades --format ilp | nc questdb 9009`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTail(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "table to follow (required)")
	f.StringVar(&o.sym, "sym", "", "only this symbol's rows")
	f.BoolVar(&o.fromStart, "from-start", false, "print the rows already published first")
	addRowFlags(cmd, &o.rows)
	return cmd
}

func runTail(cmd *cobra.Command, g *globals, o *tailOpts) error {
	if o.table == "" {
		return fmt.Errorf("no table given (--table); tables in %s: %s", g.db, tablesText(g.db))
	}
	if err := store.ValidTableName(o.table); err != nil {
		return err
	}
	ctx := cmd.Context()
	r, waited, err := tailOpen(ctx, cmd, g.db, o.table)
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while waiting: a clean stop
		}
		return err
	}
	defer r.Close()
	s := r.Schema()
	if o.sym != "" && s.SymCol < 0 {
		return fmt.Errorf("%w: sym %q: table %s has no sym column", query.ErrBadQuery, o.sym, o.table)
	}
	// Every row of a table created after the tail started is new.
	from := r.Len()
	if o.fromStart || waited {
		from = r.FirstSeq()
	}
	out := cmd.OutOrStdout()
	newEnc := func(s *store.Schema) *query.Encoder {
		return query.NewEncoder(out, o.rows.resolve(out), o.rows.ts, s, o.table, r.SymbolName)
	}
	enc := newEnc(s)
	t := r.Tail(from, nil)
	f := &tailFilter{sym: o.sym}
	if o.sym != "" {
		f.col = s.ColAt(s.SymCol)
		if id, ok := r.SymbolID([]byte(o.sym)); ok {
			f.known = true
			t.FilterSym(id)
		} else {
			noteUnknownSym(cmd, r, o.table, o.sym, "; following: its rows print once it is written")
		}
	}
	// The header (csv, table) goes out now, so that a reader of the pipe
	// knows the columns, and that the tail is following, before any row.
	if err := enc.Flush(); err != nil {
		return err
	}
	err = tailLoop(ctx, r, t, f, &enc, newEnc)
	if ctx.Err() != nil {
		// SIGINT/SIGTERM: finish the output (the json trailer, if any).
		return enc.Close()
	}
	return err
}

// tailOpen opens the table, waiting with backoff (and one note on stderr)
// while it does not exist. waited reports that it did not at first.
func tailOpen(ctx context.Context, cmd *cobra.Command, db, table string) (r *reader.Reader, waited bool, err error) {
	sleep := tailOpenMinSleep
	for {
		r, err = reader.Open(db, table, nil)
		if !errors.Is(err, store.ErrNoTable) {
			return r, waited, err
		}
		if !waited {
			waited = true
			fmt.Fprintf(cmd.ErrOrStderr(), "tickdb: tail: waiting for table %s to be created in %s (tables now: %s)\n", table, db, tablesText(db))
		}
		select {
		case <-ctx.Done():
			return nil, waited, ctx.Err()
		case <-time.After(sleep):
		}
		sleep = min(2*sleep, tailOpenMaxSleep)
	}
}

// tailFilter keeps one symbol's rows. The symbol may not be in the
// dictionary yet when the tail starts; until it is, each row's symbol is
// compared by name, and the first match hands the id to the Tail's own
// filter.
type tailFilter struct {
	sym   string
	col   store.Col
	known bool
}

// keep reports whether row passes, learning the symbol's id on its first
// appearance.
func (f *tailFilter) keep(r *reader.Reader, t *reader.Tail, row store.Row) (bool, error) {
	if f.sym == "" || f.known {
		return true, nil
	}
	id := row.Sym(f.col)
	name, err := r.SymbolName(id)
	if err != nil || name != f.sym {
		return false, err
	}
	f.known = true
	t.FilterSym(id)
	return true, nil
}

// tailLoop prints rows as the tail returns them until ctx is done. It
// flushes the encoder whenever no row is waiting, and at least every
// tailBatch rows, so a pipe sees each row within one poll of its publish.
// When the table gains a column (the reader meets a row of the new
// layout), it goes on with a new encoder, newEnc's, of the grown schema
// (csv and table print its header before the next row), in *enc.
func tailLoop(ctx context.Context, r *reader.Reader, t *reader.Tail, f *tailFilter, enc **query.Encoder, newEnc func(*store.Schema) *query.Encoder) error {
	idle := &reader.Backoff{MaxSleep: tailMaxSleep}
	s := r.Schema()
	row := s.NewRow() // a checked copy, as query.Run hands rows on
	pending, empty := 0, 0
	for {
		_, _, ok, err := t.Poll()
		switch {
		case err != nil && !tailTransient(err):
			return err
		case ok:
			if empty > 0 {
				empty = 0
				idle.Reset()
			}
			if g := r.Schema(); g != s {
				// A column added (docs/FORMAT.md §15).
				if err := (*enc).Flush(); err != nil {
					return err
				}
				s, row, *enc = g, g.NewRow(), newEnc(g)
			}
			// A checked copy: the live slot may be recycled under the
			// view.
			if err := t.ReadRow(row); err != nil {
				return err
			}
			keep, err := f.keep(r, t, row)
			if err != nil {
				return err
			}
			if keep {
				if err := (*enc).Row(row); err != nil {
					return err
				}
			}
			if pending++; pending < tailBatch {
				continue
			}
		}
		// No row waiting (or a full batch, or a passing error): hand out
		// what was read, then idle.
		if pending > 0 {
			if err := (*enc).Flush(); err != nil {
				return err
			}
			pending = 0
		}
		if ctx.Err() != nil {
			return nil
		}
		if !ok {
			idle.Idle(empty)
			empty++
		}
	}
}

// tailTransient reports a read error that a writer's recovery clears: the
// published count went down under the tail (a writer recovering from the
// durable files), or a published row is neither live nor durable yet (a
// crash tail, until the next writer cuts it).
func tailTransient(err error) bool {
	return errors.Is(err, reader.ErrNotVisible) || errors.Is(err, reader.ErrUnavailable)
}
