//go:build linux

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/internal/harness/scale"
)

type benchScaleOpts struct {
	symbols, rows, baseline string
	mixes                   string
	cfg                     scale.Config
	json, quiet             bool
}

func newBenchScaleCmd() *cobra.Command {
	o := &benchScaleOpts{}
	cmd := &cobra.Command{
		Use:   "scale [--symbols 1M] [--rows 10M] [--mix uniform,zipf] [--baseline 100]",
		Short: "Many symbols in one table through a real serve: disk, ingest, memory, restart, latest",
		Long: `bench scale runs tickdb serve (this binary) over a fresh database for
each workload and writes one table through its line-protocol TCP
listener: --rows rows over --symbols symbols (names shaped like option
contracts), every symbol named once, then the rest spread by each --mix
(uniform, or zipf: a few symbols take most rows), and the same rows over
--baseline symbols (0: none) side by side. For each it prints bytes on
disk per row (by file), the ingest rate until the rows are visible (the
rows naming new symbols and the rest apart), serve's resident memory,
its stop and restart (to the first write after it visible), and the
latest row of one symbol and of all, over HTTP and in process.

It takes minutes and tens of GB of disk at a million symbols; the
databases go under --dir and are removed after each workload.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchScale(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.symbols, "symbols", "1M", "symbols of the many-symbol workloads")
	f.StringVar(&o.rows, "rows", "10M", "rows of every workload")
	f.StringVar(&o.mixes, "mix", "uniform,zipf", "mixes of the many-symbol workloads (comma-separated)")
	f.StringVar(&o.baseline, "baseline", "100", "symbols of the baseline workload (0: none)")
	f.IntVar(&o.cfg.Conns, "conns", 4, "line-protocol connections")
	f.StringVar(&o.cfg.Dir, "dir", os.TempDir(), "directory for the databases (on disk)")
	f.StringArrayVar(&o.cfg.ServeArgs, "serve-arg", nil, "an argument added to serve's command line (repeatable)")
	f.BoolVar(&o.cfg.Keep, "keep", false, "keep the databases")
	f.BoolVar(&o.json, "json", false, "print the results as JSON")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

func runBenchScale(cmd *cobra.Command, o *benchScaleOpts) error {
	syms, err := scale.ParseCount(o.symbols)
	if err != nil {
		return err
	}
	rows, err := scale.ParseCount(o.rows)
	if err != nil {
		return err
	}
	base, err := scale.ParseCount(o.baseline)
	if err != nil {
		return err
	}
	if syms < 1 || rows < 1 {
		return fmt.Errorf("bench scale: --symbols and --rows must be positive")
	}
	cfg := o.cfg
	if base > 0 {
		cfg.Workloads = append(cfg.Workloads, scale.Workload{Symbols: base, Rows: max(rows, base), Mix: scale.Uniform, Seed: 1})
	}
	for _, m := range strings.Split(o.mixes, ",") {
		if m == "" {
			continue
		}
		mix, err := scale.ParseMix(m)
		if err != nil {
			return err
		}
		cfg.Workloads = append(cfg.Workloads, scale.Workload{Symbols: syms, Rows: max(rows, syms), Mix: mix, Seed: 1})
	}
	if !o.quiet {
		cfg.Log = cmd.ErrOrStderr()
	}
	res, err := scale.Run(cfg)
	out := cmd.OutOrStdout()
	if len(res) > 0 {
		if o.json {
			_ = scale.WriteJSON(out, res)
		} else {
			_ = scale.WriteTable(out, res)
		}
	}
	return err
}
