package main

import (
	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

// linuxCmds are the commands that write through the pinned writer or
// serve ingestion (epoll), which run on Linux only (docs/DESIGN.md,
// Platforms); commands_other.go leaves them out.
func linuxCmds(g *globals) []*cobra.Command {
	return []*cobra.Command{newDemoCmd(g), newServeCmd(g), newIngestCmd(g), newBenchCmd(g), newArchiveCmd(g)}
}

// maybeChild runs this binary's child process role (the benchmark suite's,
// which the demo's reader process is too) when it was re-executed as one
// (internal/harness/child), and returns otherwise.
func maybeChild() { suite.MaybeChild() }
