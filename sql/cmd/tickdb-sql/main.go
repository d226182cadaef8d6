// Command tickdb-sql runs SQL over the tables of a tickdb database, live,
// through DuckDB: one-shot queries (query) and the Postgres wire protocol
// (serve, 127.0.0.1:8812 by default), for psql, Grafana, pandas, DBeaver and
// every Postgres driver. It is read-only over tickdb; tables are written
// through tickdb serve, the writer or tickdb load.
//
// It lives in a module of its own because DuckDB needs cgo (a C and C++
// toolchain); the tickdb command and the core packages build without.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tickdb/tickdb/sql/engine"
	"github.com/tickdb/tickdb/sql/pgwire"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		fmt.Fprintf(stderr, "tickdb-sql: %v\n", err)
		return 1
	}
	return 0
}

// engineFlags are the flags of every command that opens a database.
type engineFlags struct {
	db          string
	memoryLimit string
	threads     int
	timeout     time.Duration
}

func (f *engineFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.db, "db", "./tickdata", "database directory")
	fl.StringVar(&f.memoryLimit, "memory-limit", "4GB", "DuckDB's memory limit (a query that needs more fails)")
	fl.IntVar(&f.threads, "threads", 0, "DuckDB's threads (0: one per core)")
	fl.DurationVar(&f.timeout, "statement-timeout", 10*time.Minute, "longest a statement may run, its rows' sending included (0: no limit)")
}

func (f *engineFlags) open() (*engine.Engine, error) {
	if st, err := os.Stat(f.db); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--db %s: not a database directory (tickdb serve, load or the writer create one)", f.db)
	}
	return engine.Open(f.db, &engine.Options{MemoryLimit: f.memoryLimit, Threads: f.threads, Timeout: f.timeout})
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "tickdb-sql",
		Short:         "SQL over tickdb tables, live, through DuckDB (read-only)",
		SilenceUsage:  true,
		SilenceErrors: true,
		Long: `tickdb-sql runs SQL over the tables of a tickdb database through DuckDB.
Every table is a view: SELECT * FROM trades. The time window and the symbols
reach tickdb's indexes through the table functions (a WHERE on a view scans
the table):

  tickdb_range('trades', from_ts, to_ts)        from_ts <= ts < to_ts
  tickdb_sym('trades', 'AAPL', from_ts, to_ts)  one symbol
  tickdb_syms('trades', 'AAPL,MSFT', from_ts, to_ts)

from_ts and to_ts are timestamps, strings ('2024-01-02 14:30', RFC 3339) or
integer ns; '-infinity' and 'infinity' leave an end open. docs/SQL.md has the
time-series idioms (bars, latest, as-of joins, VWAP, spreads).`,
	}
	root.AddCommand(newQueryCmd(), newServeCmd())
	return root
}

func newQueryCmd() *cobra.Command {
	var ef engineFlags
	var format string
	cmd := &cobra.Command{
		Use:   "query [flags] SQL",
		Short: "run one statement and print its rows",
		Example: `  tickdb-sql query --db ./tickdata "SELECT sym, count(*) FROM trades GROUP BY sym"
  tickdb-sql query --format csv "SELECT * FROM tickdb_sym('trades', 'AAPL', '2024-01-02', 'infinity')"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := newWriter(format, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			e, err := ef.open()
			if err != nil {
				return err
			}
			defer e.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			s, err := e.Session(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			rows, err := s.Query(ctx, args[0])
			if err != nil {
				return err
			}
			defer rows.Close()
			return out.write(rows)
		},
	}
	ef.add(cmd)
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, csv or json (one object per line)")
	return cmd
}

// backend serves the engine's sessions to the wire protocol.
type backend struct{ e *engine.Engine }

func (b backend) Session(ctx context.Context) (pgwire.Session, error) {
	s, err := b.e.Session(ctx)
	if err != nil {
		return nil, err
	}
	return session{s}, nil
}

// session is an engine session as the wire protocol takes it (engine.Rows
// and pgwire.Rows have the same methods).
type session struct{ *engine.Session }

func (s session) Query(ctx context.Context, query string, args ...any) (pgwire.Rows, error) {
	rows, err := s.Session.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func newServeCmd() *cobra.Command {
	var ef engineFlags
	var addr, token string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "serve SQL on the Postgres wire protocol (psql, Grafana, pandas, any Postgres driver)",
		Example: `  tickdb-sql serve --db ./tickdata &
  psql -h 127.0.0.1 -p 8812 -c '\dt'
  psql -h 127.0.0.1 -p 8812 -c "SELECT sym, count(*) FROM trades GROUP BY sym"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := ef.open()
			if err != nil {
				return err
			}
			defer e.Close()
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			srv := pgwire.NewServer(backend{e}, pgwire.Options{Addr: addr, Token: token, Logger: logger})
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			errc := make(chan error, 1)
			go func() { errc <- srv.ListenAndServe() }()
			for srv.Addr() == nil {
				select {
				case err := <-errc:
					return fmt.Errorf("listen on %s: %w", addr, err)
				case <-time.After(5 * time.Millisecond):
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "tickdb-sql: serving SQL over %s on %s (Postgres wire protocol%s)\n", ef.db, srv.Addr(), map[bool]string{true: ", password = --token", false: ", no password"}[token != ""])
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			if err := srv.Close(); err != nil {
				return err
			}
			if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	ef.add(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8812", "listen address (QuestDB's Postgres port)")
	cmd.Flags().StringVar(&token, "token", "", "require this password (tickdb serve's --token) from every client")
	return cmd
}
