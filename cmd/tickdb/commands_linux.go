package main

import (
	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/internal/suite"
)

// linuxCmds are the commands that write through the pinned writer or
// serve ingestion (epoll), which run on Linux only (docs/DESIGN.md,
// Platforms); commands_other.go leaves them out.
func linuxCmds(g *globals) []*cobra.Command {
	return []*cobra.Command{newDemoCmd(g), newDemoReaderCmd(g), newServeCmd(g), newIngestCmd(g), newBenchCmd(g)}
}

// maybeBenchChild runs bench's child process when this binary was
// re-executed as one, and returns otherwise.
func maybeBenchChild() { suite.MaybeChild() }
