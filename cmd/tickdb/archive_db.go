package main

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/reader"
)

// --db s3://bucket/prefix: the read-only commands open the archive's
// tables (archive.OpenReader) where they would open a directory's; the
// others refuse it. openTable is the one place that branches.

// archiveCmds are the commands that read an archive.
var archiveCmds = []string{"query", "bars", "asof", "latest", "export", "stat"}

// archiveRun is the archive state of the command being run: one client
// for its readers (so its traffic is counted once) and the options they
// open with.
type archiveRun struct {
	mu     sync.Mutex
	ctx    context.Context
	loc    string
	client *archive.Client
	opts   *archive.ReaderOptions
	opened archive.Stats // the traffic when the last reader was open
	open   map[*reader.Reader]*archive.Reader
}

// archived returns the archive Reader of r, opened by openArchived, or nil.
func (a *archiveRun) archived(r *reader.Reader) *archive.Reader {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.open[r]
}

// arch holds the archive state of the commands running with --db
// s3://..., by location (commands run in-process, in tests, may run at
// once).
var arch struct {
	sync.Mutex
	runs map[string]*archiveRun
}

// archiveBegin sets up the archive state of a command run with --db
// s3://..., or refuses the command.
func archiveBegin(cmd *cobra.Command, g *globals) error {
	if !archive.IsURL(g.db) {
		return nil
	}
	if !slices.Contains(archiveCmds, cmd.Name()) {
		return fmt.Errorf("%s needs a database directory: --db %s opens an archive's tables read-only, for %v", cmd.Name(), g.db, archiveCmds)
	}
	if archive.IsFleet(g.db) {
		if cmd.Name() != "query" {
			return errFleetQueryOnly(cmd, g.db)
		}
		if g.cacheBytes <= 0 {
			return fmt.Errorf("--cache-bytes %d: want a positive size", g.cacheBytes)
		}
		return nil // query opens the fleet itself
	}
	c, err := archive.Dial(g.db, archive.Config{})
	if err != nil {
		return err
	}
	if g.cacheBytes <= 0 {
		return fmt.Errorf("--cache-bytes %d: want a positive size", g.cacheBytes)
	}
	arch.Lock()
	if arch.runs == nil {
		arch.runs = map[string]*archiveRun{}
	}
	arch.runs[g.db] = &archiveRun{ctx: cmd.Context(), loc: g.db, client: c,
		opts: &archive.ReaderOptions{Client: c, CacheDir: g.cacheDir, CacheBytes: g.cacheBytes}}
	arch.Unlock()
	return nil
}

// archiveEnd prints the command's traffic (--fetch-stats).
func archiveEnd(cmd *cobra.Command, g *globals) {
	a := archiveOf(g.db)
	if a == nil {
		return
	}
	arch.Lock()
	delete(arch.runs, g.db)
	arch.Unlock()
	if !g.fetchStats {
		return
	}
	a.mu.Lock()
	opened := a.opened
	a.mu.Unlock()
	all := a.client.Stats()
	q := all.Sub(opened)
	fmt.Fprintf(cmd.ErrOrStderr(), "tickdb: %s: fetched from %s: %d requests, %d bytes (opening: %d requests, %d bytes; the query: %d requests, %d bytes)\n",
		cmd.Name(), a.loc, all.Gets, all.GetBytes, opened.Gets, opened.GetBytes, q.Gets, q.GetBytes)
}

// archiveOf is the archive state of the command reading db, or nil (a
// directory).
func archiveOf(db string) *archiveRun {
	if !archive.IsURL(db) {
		return nil
	}
	arch.Lock()
	defer arch.Unlock()
	return arch.runs[db]
}

// openArchived opens table name of the archive the command reads.
func openArchived(a *archiveRun, name string) (*reader.Reader, error) {
	ctx := a.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	r, err := archive.OpenReader(ctx, a.loc, name, a.opts)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.opened = a.client.Stats()
	if a.open == nil {
		a.open = map[*reader.Reader]*archive.Reader{}
	}
	a.open[r.Reader] = r
	a.mu.Unlock()
	return r.Reader, nil // its Close closes the archive Reader too
}

// archivedTables lists the archive's tables.
func archivedTables(a *archiveRun) ([]string, error) {
	ctx := a.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	names, err := archive.Tables(ctx, a.client)
	slices.Sort(names)
	return names, err
}
