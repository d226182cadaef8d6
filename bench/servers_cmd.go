package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tickdb/tickdb/bench/servers"
)

// runServers is `bench servers`: tickdb serve against ClickHouse over
// HTTP (package servers).
func runServers(args []string) error {
	fs := flag.NewFlagSet("bench servers", flag.ContinueOnError)
	var cfg servers.Config
	rows := fs.String("rows", "10M", "ticks in the data set (plain, or with a k or M suffix)")
	batch := fs.String("batch", "100k", "rows per write request")
	fs.IntVar(&cfg.Reps, "reps", 7, "queries of each kind on the running servers")
	fs.IntVar(&cfg.ColdReps, "cold-reps", 0, "queries of each kind after a restart, each on freshly restarted servers (0: as --reps; -1: none)")
	fs.StringVar(&cfg.Dir, "dir", os.TempDir(), "directory for the servers' data (on disk)")
	fs.StringVar(&cfg.TickDB, "tickdb", "", "tickdb binary (default: go build ./cmd/tickdb of this tree)")
	fs.StringVar(&cfg.ClickHouse, "clickhouse", "", "clickhouse-server binary (default: Debian's, if installed); off: tickdb alone")
	fs.DurationVar(&cfg.SettleTimeout, "settle-timeout", 0, "longest wait for ClickHouse's merges after the ingest (default 10m)")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	jsonFile := fs.String("o", "", "also write the report as JSON to this file")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench servers: unexpected arguments %q", fs.Args())
	}
	var err error
	if cfg.N, err = parseCount(*rows); err != nil {
		return fmt.Errorf("--rows %q: %w", *rows, err)
	}
	if cfg.Batch, err = parseCount(*batch); err != nil || cfg.Batch == 0 {
		return fmt.Errorf("--batch %q: want a count such as 100000 or 100k", *batch)
	}
	if !*quiet {
		cfg.Log = os.Stderr
	}
	// Ctrl-C stops the servers and removes their directories.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := servers.Run(ctx, cfg)
	if err != nil {
		return err
	}
	err = printReport(rep, *jsonOut)
	if err == nil && *jsonFile != "" {
		err = saveJSON(rep, *jsonFile)
	}
	return err
}
