//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

type benchOpts struct {
	cfg   suite.Config
	json  bool
	guard string
	quiet bool
}

func newBenchCmd(*globals) *cobra.Command {
	o := &benchOpts{}
	cmd := &cobra.Command{
		Use:   "bench [--rows N] [--reps K] [--rate R] [--json] [--guard FILE]",
		Short: "Measure tickdb against this machine's limits: throughput and latency percentiles",
		Long: `bench generates N ticks of 100 symbols (fixed seed, random-walk prices,
about 1 µs apart) and measures, K times each, in this one process:

  the machine's limits: 32-byte stores into a resident shared mapping,
    1 MiB O_DIRECT writes, a sequential read of a resident mapping, random
    32-byte reads and binary searches;
  tickdb: ingest in batches of 1,000 (with the O_DIRECT flusher) and until
    sealed; append without and with the flusher; publish → a reader in
    another process; Get; SeekTime; a one-symbol window over 1 % of the
    span; a one-symbol full scan; a full scan; 1-second bars of every
    symbol; an as-of join; line protocol over TCP on 127.0.0.1;
  the user protocol: ingest, 50 one-symbol windows right after (the writer
    still open), close (--tickdb-close plain, the default: writer.Close,
    the default options, so the background compaction has compressed
    what it reached; or compacted: CloseCompacted(0), every segment
    compressed at close), disk bytes per tick, the files evicted; then in a fresh
    process (this binary, re-executed): open, a first window, a first
    symbol scan, 50 windows and 5 symbol scans at places not read before,
    each timed, with the bytes read from the disk (/proc/self/io).
    --user-only runs only this.

Every query's answer is checked (row count and checksum) against the data.
It prints a table: each figure's median over the repetitions with its
spread, the limit, and tickdb ÷ limit (1 = at the limit), then the latency
percentiles (p50 … p99.99, max) from HDR histograms, the machine (CPU
model, cores, kernel) and the commit.

Without --rate, append runs flat out (the latency is each 64-row batch's
time over 64); with --rate R it appends one row at a time at R rows/s for
at most 5 seconds and times each row from its intended start, and the
cross-process reader is fed at R rows/s too (50,000 without --rate).

--json prints the report for machines (plots of it: "cd bench && go run .
--plot-json report.json --plot out.svg", gonum being a dependency of the
bench module only); --guard FILE checks
the same-run ratios and allocation counts against the thresholds in FILE
(see docs/BENCHMARKS.md) and fails on a regression. Peers (tstorage,
pebble, a bufio file) run in the separate module under bench/:
"cd bench && go run . --rows 20M".

Tables go under --dir (default the temp directory, which should be on
disk) and /dev/shm; everything is removed at the end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.cfg.N, "rows", 2_000_000, "ticks in the data set")
	f.IntVar(&o.cfg.Reps, "reps", 3, "repetitions of every measurement")
	f.IntVar(&o.cfg.Rate, "rate", 0, "offered rate in rows/s for append and publish → reader (0: flat out)")
	f.StringVar(&o.cfg.Dir, "dir", os.TempDir(), "directory for the benchmark's tables")
	f.IntVar(&o.cfg.Windows, "windows", 200, "window queries per repetition")
	f.IntVar(&o.cfg.ILPLines, "ilp-lines", 0, "lines sent over TCP per repetition (default min(rows, 2M))")
	f.IntVar(&o.cfg.Observe, "observe", 100_000, "rows published to the cross-process reader per repetition")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	f.StringVar(&o.guard, "guard", "", "check the report against this thresholds file; fail on a regression")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines on stderr")
	f.BoolVar(&o.cfg.UserOnly, "user-only", false, "run the user protocol only (cold reads in a fresh process)")
	f.StringVar((*string)(&o.cfg.TickDBClose), "tickdb-close", "plain", "how tickdb closes after ingest in the user protocol: plain or compacted")
	cmd.AddCommand(newBenchScaleCmd())
	cmd.AddCommand(newBenchTablesCmd())
	cmd.AddCommand(newBenchReadmeCmd())
	return cmd
}

func runBench(cmd *cobra.Command, o *benchOpts) error {
	out := cmd.OutOrStdout()
	if o.cfg.N < 10_000 {
		return fmt.Errorf("bench: --rows %d: want at least 10000 (the windows cover 1 %% of the span)", o.cfg.N)
	}
	if o.cfg.Reps < 1 || o.cfg.Rate < 0 || o.cfg.Windows < 1 || o.cfg.ILPLines < 0 || o.cfg.Observe < 1 {
		return errors.New("bench: --reps, --windows and --observe must be positive, --rate and --ilp-lines not negative")
	}
	var g *suite.Guard
	if o.guard != "" {
		var err error
		if g, err = suite.LoadGuard(o.guard); err != nil {
			return fmt.Errorf("bench: guard: %w", err)
		}
	}
	cfg := o.cfg
	if g != nil {
		cfg.TickDBSegment = 64 << 20 // the guard's calibration (suite.Config)
	}
	if !o.quiet {
		cfg.Log = cmd.ErrOrStderr()
	}
	rep, err := suite.Run(cfg)
	if err != nil {
		return err
	}
	if o.json {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteTable(out)
	}
	if err != nil {
		return err
	}
	if g != nil {
		return checkGuard(cmd.ErrOrStderr(), g, rep, o.guard)
	}
	return nil
}

// checkGuard prints every verdict and fails if any check failed.
func checkGuard(w io.Writer, g *suite.Guard, rep *suite.Report, path string) error {
	vs, ok := g.Check(rep)
	failed := 0
	for _, v := range vs {
		mark := "ok  "
		if !v.OK {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "guard %s %s\n", mark, v.Msg)
	}
	if !ok {
		return fmt.Errorf("bench: regression guard: %d of %d checks failed (thresholds in %s)", failed, len(vs), path)
	}
	return nil
}
