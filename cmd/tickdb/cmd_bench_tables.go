//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/internal/harness/scaletables"
)

type benchTablesOpts struct {
	tables string
	cfg    scaletables.Config
	json   bool
	quiet  bool
}

func newBenchTablesCmd() *cobra.Command {
	o := &benchTablesOpts{}
	cmd := &cobra.Command{
		Use:   "tables [--tables 1,1000] [--rate 1000] [--duration 20s]",
		Short: "Many tables in one serve: threads, open files, memory, write latency",
		Long: `bench tables runs tickdb serve (this binary, default flags) over a fresh
database for each count of --tables: it creates the tables over HTTP
(--rows rows each), then writes them in turn, POST /write of
--rows-per-write rows (answered 204 once durable) at --rate writes a
second for --duration, write k to table k mod N, from --clients
concurrent clients, and after serve's clean stop reads every table back.

It prints, per count: serve's OS threads and open files with the tables
idle and while written (peak), its resident memory idle, written (peak)
and idle again, the write latency from each write's intended start
(p50, p99, p99.9, max: a server that falls behind shows as latency) and
the rows stored a second. The one-table run is the same writes into a
single table.

The databases go under --dir, the live segments under /dev/shm, both
removed after each run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchTables(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.tables, "tables", "1,1000", "table counts, one serve each (comma-separated)")
	f.IntVar(&o.cfg.Rows, "rows", 5, "rows each table is created with")
	f.IntVar(&o.cfg.Rate, "rate", 1000, "writes a second offered while the tables are written in turn")
	f.DurationVar(&o.cfg.Duration, "duration", 20*time.Second, "how long the tables are written in turn")
	f.IntVar(&o.cfg.RowsPerWrite, "rows-per-write", 10, "rows in each write")
	f.IntVar(&o.cfg.Clients, "clients", 16, "concurrent HTTP clients")
	f.StringVar(&o.cfg.Dir, "dir", os.TempDir(), "directory for the databases (on disk)")
	f.StringArrayVar(&o.cfg.ServeArgs, "serve-arg", nil, "an argument added to serve's command line (repeatable)")
	f.StringVar(&o.cfg.Binary, "serve-binary", "", "the tickdb executable run as serve (default: this one), to compare builds")
	f.BoolVar(&o.cfg.Keep, "keep", false, "keep the databases")
	f.BoolVar(&o.json, "json", false, "print the results as JSON")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

// benchTablesRole is the child role serve runs in under bench tables
// (tests set cliRole, so that their own binary runs as tickdb).
var benchTablesRole = ""

func runBenchTables(cmd *cobra.Command, o *benchTablesOpts) error {
	cfg := o.cfg
	cfg.Role = benchTablesRole
	for _, s := range strings.Split(o.tables, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bench tables: --tables %q: want positive counts", o.tables)
		}
		cfg.Tables = append(cfg.Tables, n)
	}
	if cfg.Rate < 1 || cfg.Duration <= 0 || cfg.RowsPerWrite < 1 || cfg.Clients < 1 || cfg.Rows < 1 {
		return fmt.Errorf("bench tables: --rate, --duration, --rows, --rows-per-write and --clients must be positive")
	}
	if !o.quiet {
		cfg.Log = cmd.ErrOrStderr()
	}
	rs, err := scaletables.Run(context.Background(), cfg)
	if err != nil {
		return err
	}
	if o.json {
		e := json.NewEncoder(cmd.OutOrStdout())
		e.SetIndent("", "  ")
		return e.Encode(rs)
	}
	scaletables.Print(cmd.OutOrStdout(), cfg, rs)
	return nil
}
