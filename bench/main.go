// Command bench runs tickdb's benchmark suite side by side with the peers
// a Go user would otherwise pick: nakabonne/tstorage (on disk),
// cockroachdb/pebble and a plain bufio file, on identical generated data
// in one process run, every answer checked, every figure next to the
// peers' and the machine's limits with the ratios.
//
// It is its own module, so the peers never enter tickdb's dependencies:
//
//	cd bench && go run . --rows 20M --reps 3 --plot ../docs/bench.svg
//
// `tickdb bench` (in the main module) runs the same suite without peers.
//
// `go run . servers` runs another benchmark: `tickdb serve` with its
// default flags against ClickHouse (Debian's clickhouse-server, when
// installed), both over HTTP on 127.0.0.1 (package servers):
//
//	cd bench && go run . servers --rows 10M --reps 7
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tickdb/tickdb/bench/peers"
	"github.com/tickdb/tickdb/bench/plot"
	"github.com/tickdb/tickdb/internal/harness/suite"
)

func main() {
	suite.MaybeChild(peers.All()...) // the suite's child processes: this binary, re-executed
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "servers" {
		return runServers(args[1:])
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg suite.Config
	rows := fs.String("rows", "20M", "ticks in the data set (plain, or with a k or M suffix)")
	fs.IntVar(&cfg.Reps, "reps", 3, "repetitions of every measurement")
	fs.StringVar(&cfg.Dir, "dir", os.TempDir(), "directory for the stores (on disk)")
	fs.IntVar(&cfg.Windows, "windows", 200, "window queries per repetition")
	fs.IntVar(&cfg.Rate, "rate", 0, "offered rate in rows/s for tickdb's append latency (0: flat out)")
	only := fs.String("peers", "tstorage,pebble,bufio", "the peers to run, comma-separated (\"\" for none)")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	jsonFile := fs.String("o", "", "also write the report as JSON to this file")
	plotFile := fs.String("plot", "", "write the latency and throughput plots to this .png or .svg file")
	plotJSON := fs.String("plot-json", "", "draw --plot from this report (tickdb bench --json, or -o here) instead of running")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	fs.BoolVar(&cfg.UserOnly, "user-only", false, "run the user protocol only (cold reads in a fresh process)")
	closeMode := fs.String("tickdb-close", "plain", "how tickdb closes after ingest in the user protocol: plain or compacted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if ext := filepath.Ext(*plotFile); *plotFile != "" && ext != ".png" && ext != ".svg" {
		return fmt.Errorf("--plot %s: want a .png or .svg file", *plotFile)
	}
	if *plotJSON != "" {
		if *plotFile == "" {
			return errors.New("--plot-json needs --plot FILE")
		}
		b, err := os.ReadFile(*plotJSON)
		if err != nil {
			return err
		}
		var rep suite.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			return fmt.Errorf("--plot-json %s: %w", *plotJSON, err)
		}
		return plot.Write(&rep, *plotFile)
	}
	n, err := parseCount(*rows)
	if err != nil {
		return fmt.Errorf("--rows %q: %w", *rows, err)
	}
	if n < 10_000 {
		return fmt.Errorf("--rows %d: want at least 10000", n)
	}
	cfg.N = n
	cfg.TickDBClose = suite.CloseMode(*closeMode)
	for _, name := range strings.Split(*only, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		i := slices.IndexFunc(peers.All(), func(p suite.Peer) bool { return p.Name == name })
		if i < 0 {
			return fmt.Errorf("--peers: no peer %q (have tstorage, pebble, bufio)", name)
		}
		cfg.Peers = append(cfg.Peers, peers.All()[i])
	}
	if !*quiet {
		cfg.Log = os.Stderr
	}
	rep, err := suite.Run(cfg)
	if err != nil {
		return err
	}
	err = printReport(rep, *jsonOut)
	if err == nil && *plotFile != "" {
		err = plot.Write(rep, *plotFile)
	}
	if err == nil && *jsonFile != "" {
		err = saveJSON(rep, *jsonFile)
	}
	return err
}

// report is what suite.Run and servers.Run return.
type report interface {
	WriteJSON(io.Writer) error
	WriteTable(io.Writer) error
}

// printReport writes rep to stdout, as JSON or as a table.
func printReport(rep report, jsonOut bool) error {
	if jsonOut {
		return rep.WriteJSON(os.Stdout)
	}
	return rep.WriteTable(os.Stdout)
}

// saveJSON writes rep as JSON to the file path.
func saveJSON(rep report, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(rep.WriteJSON(f), f.Close())
}

// parseCount reads "20000000", "20M" or "500k".
func parseCount(s string) (int, error) {
	mul := 1
	switch {
	case strings.HasSuffix(s, "M"):
		mul, s = 1_000_000, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "k"):
		mul, s = 1_000, strings.TrimSuffix(s, "k")
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("want a count such as 20000000, 20M or 500k")
	}
	return v * mul, nil
}
