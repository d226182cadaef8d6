//go:build !linux

package main

import "github.com/spf13/cobra"

// linuxCmds is empty off Linux: demo, serve, ingest and bench need the
// writer (commands_linux.go). retain and compact stay and fail with
// writer.ErrUnsupported.
func linuxCmds(*globals) []*cobra.Command { return nil }

func maybeChild() {}
