package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// --db s3://bucket/prefix/* : every node's archive under the prefix
// (servers that archive into one bucket, each under a node prefix of its
// own), one table of a name across them, merged by ts (archive.Fleet).
// query reads it; the other commands take one node's location.

// errFleetQueryOnly refuses a command other than query on a fleet.
func errFleetQueryOnly(cmd *cobra.Command, db string) error {
	return fmt.Errorf("%s reads one node's archive: --db %s (every node under the prefix, merged by ts) is for query; give one node's location, s3://bucket/prefix/NODE", cmd.Name(), db)
}

// runQueryFleet is query over every node's table of that name.
func runQueryFleet(cmd *cobra.Command, g *globals, o *queryOpts) error {
	f, err := archive.OpenFleet(cmd.Context(), g.db, o.table, &archive.ReaderOptions{CacheDir: g.cacheDir, CacheBytes: g.cacheBytes})
	if err != nil {
		return err
	}
	defer f.Close()
	opened := f.Stats()
	s := f.Readers[0].Schema()
	// One dictionary for the output: each node's ids mapped on first use.
	var names []string
	global := map[string]uint32{}
	local := make([]map[uint32]uint32, len(f.Readers))
	for i := range local {
		local[i] = map[uint32]uint32{}
	}
	out := cmd.OutOrStdout()
	enc := query.NewEncoder(out, o.rows.resolve(out), o.rows.ts, s, o.table, func(id uint32) (string, error) {
		if int(id) >= len(names) {
			return "", fmt.Errorf("no symbol %d", id)
		}
		return names[id], nil
	})
	var syms []store.Col
	for i, c := range s.Cols {
		if c.Type == store.TypeSym {
			syms = append(syms, s.ColAt(i))
		}
	}
	from, to := int64(math.MinInt64), int64(reader.ToEnd)
	if o.from.set {
		from = o.from.ns
	}
	if o.to.set {
		to = o.to.ns
	}
	buf := s.NewRow()
	var n int64
	errLimit := errors.New("limit")
	err = f.Range(cmd.Context(), from, to, o.sym, func(node int, row store.Row) error {
		copy(buf, row)
		for _, c := range syms {
			id := row.Sym(c)
			gid, ok := local[node][id]
			if !ok {
				name, err := f.Readers[node].SymbolName(id)
				if err != nil {
					return fmt.Errorf("node %s: %w", f.Nodes[node], err)
				}
				if gid, ok = global[name]; !ok {
					gid = uint32(len(names))
					names = append(names, name)
					global[name] = gid
				}
				local[node][id] = gid
			}
			buf.SetSym(c, gid)
		}
		if err := enc.Row(buf); err != nil {
			return err
		}
		if n++; o.limit > 0 && n >= o.limit {
			return errLimit
		}
		return nil
	})
	if err != nil && err != errLimit {
		return err
	}
	if g.fetchStats {
		all := f.Stats()
		q := all.Sub(opened)
		fmt.Fprintf(cmd.ErrOrStderr(), "tickdb: query: fetched from %s (%d nodes: %v): %d requests, %d bytes (opening: %d requests, %d bytes; the query: %d requests, %d bytes)\n",
			g.db, len(f.Nodes), f.Nodes, all.Gets, all.GetBytes, opened.Gets, opened.GetBytes, q.Gets, q.GetBytes)
	}
	return enc.Close()
}
