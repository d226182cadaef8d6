//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

type benchReadmeOpts struct {
	report, peers, readme string
	check                 bool
}

func newBenchReadmeCmd() *cobra.Command {
	o := &benchReadmeOpts{}
	cmd := &cobra.Command{
		Use:   "readme [--report " + suite.ReadmeReport + "] [--peers " + suite.ReadmePeersReport + "] [--readme README.md] [--check]",
		Short: "Rewrite the README's figure tables from committed bench reports",
		Long: `bench readme rewrites the regions of README.md between
"<!-- bench:NAME begin -->" and "<!-- bench:NAME end -->" (summary,
tickdb, peers) from --report (tickdb bench --json) and --peers (the bench
module's report, -o FILE), so that every figure in them names the run
that measured it. Run it from the repository's root after measuring:

  ` + suite.ReadmeMeasure + `
  ` + suite.ReadmeRegen + `

--check changes nothing and fails if the README differs from what the
reports generate (a test in internal/harness/suite does the same).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchReadme(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.report, "report", suite.ReadmeReport, "tickdb bench --json report of the headline figures")
	f.StringVar(&o.peers, "peers", suite.ReadmePeersReport, "the bench module's report of the peers")
	f.StringVar(&o.readme, "readme", "README.md", "the README to rewrite")
	f.BoolVar(&o.check, "check", false, "fail if the README differs, change nothing")
	return cmd
}

func runBenchReadme(cmd *cobra.Command, o *benchReadmeOpts) error {
	rep, err := suite.LoadReport(o.report)
	if err != nil {
		return fmt.Errorf("bench readme: --report: %w", err)
	}
	peers, err := suite.LoadReport(o.peers)
	if err != nil {
		return fmt.Errorf("bench readme: --peers: %w", err)
	}
	old, err := os.ReadFile(o.readme)
	if err != nil {
		return fmt.Errorf("bench readme: %w", err)
	}
	out, err := suite.Readme(old, rep, peers)
	if err != nil {
		return fmt.Errorf("bench readme: %s: %w", o.readme, err)
	}
	if bytes.Equal(out, old) {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: up to date\n", o.readme)
		return nil
	}
	if o.check {
		return fmt.Errorf("bench readme: %s differs from what %s and %s generate: run %q", o.readme, o.report, o.peers, suite.ReadmeRegen)
	}
	if err := os.WriteFile(o.readme, out, 0o644); err != nil {
		return fmt.Errorf("bench readme: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: tables rewritten from %s and %s\n", o.readme, o.report, o.peers)
	return nil
}
