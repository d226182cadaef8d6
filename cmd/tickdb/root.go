package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/archive"
)

// defaultDB is the database directory commands use without --db.
const defaultDB = "./tickdata"

// globals holds the root command's persistent flags. Each sub-command's
// constructor gets a pointer to it; it is read after flag parsing, in RunE.
type globals struct {
	db string // --db
	// --cache-dir, --cache-bytes, --fetch-stats: a --db s3://... archive's
	// local cache and traffic report (archive.go).
	cacheDir   string
	cacheBytes int64
	fetchStats bool
}

// run executes the command line args (without the program name) with the
// given output streams and returns the process exit status: 0, or 1 after
// printing one "tickdb: <error>" line on stderr (an unknown command's
// error is followed by cobra's "Did you mean this?" lines). main only calls run, so
// tests can drive the whole CLI in-process. SIGINT and SIGTERM cancel the
// command's context, so commands clean up before exiting.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(os.Stdin)
	if err := root.ExecuteContext(ctx); err != nil {
		// One line, whatever the error text holds, but for cobra's
		// unknown command, printed as cobra formats it: "Did you mean
		// this?" and one suggestion a line under it.
		msg := strings.TrimSpace(err.Error())
		if !strings.HasPrefix(msg, "unknown command ") {
			msg = strings.ReplaceAll(msg, "\n", "; ")
		}
		fmt.Fprintf(stderr, "tickdb: %s\n", msg)
		return 1
	}
	return 0
}

// newRootCmd builds the command tree. Every sub-command lives in its own
// cmd_<name>.go and is added here.
func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "tickdb",
		Short: "An embedded, memory-mapped time-series store for market ticks",
		Long: `tickdb stores market ticks in memory-mapped, fixed-width segment files with
one pinned writer per table and lock-free readers in any process.

Start with "tickdb demo": it writes synthetic ticks for many symbols, reads
them back from a second process and prints throughput and latency.`,
		SilenceUsage:  true, // a failing command prints one error line, not its usage
		SilenceErrors: true, // run prints the error
	}
	root.PersistentFlags().StringVar(&g.db, "db", defaultDB, "database directory, or s3://bucket/prefix: an archive's tables, read-only (query, bars, asof, latest, export, stat)")
	root.PersistentFlags().StringVar(&g.cacheDir, "cache-dir", "", "with --db s3://...: the local cache of fetched bytes (default $"+archive.CacheDirEnv+", else the user cache directory's tickdb/archive)")
	root.PersistentFlags().Int64Var(&g.cacheBytes, "cache-bytes", archive.DefaultCacheBytes, "with --db s3://...: the most bytes the cache directory keeps (least recently used segments go)")
	root.PersistentFlags().BoolVar(&g.fetchStats, "fetch-stats", false, "with --db s3://...: print the requests and bytes fetched from the archive on stderr")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return archiveBegin(cmd, g) }
	root.PersistentPostRun = func(cmd *cobra.Command, _ []string) { archiveEnd(cmd, g) }
	root.AddCommand(
		newExportCmd(g),
		newBarsCmd(g),
		newAsOfCmd(g),
		newQueryCmd(g),
		newLatestCmd(g),
		newTailCmd(g),
		newStatCmd(g),
		newVerifyCmd(g),
		newRetainCmd(g),
		newCompactCmd(g),
	)
	root.AddCommand(linuxCmds(g)...)
	return root
}
