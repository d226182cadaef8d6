//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/gen"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

type demoReaderOpts struct {
	g       *globals
	table   string
	rows    int
	symbols int
	seed    int64
	spin    bool
}

// newDemoReaderCmd is the hidden half of demo that runs in the second
// process: it tails the table from row 0 and checks every row against the
// generator with the demo's seed. Its stdout is a protocol for the demo
// (JSON lines, see demoMsg); it stops when its stdin reaches EOF, so it
// never outlives the demo that holds the other end.
func newDemoReaderCmd(g *globals) *cobra.Command {
	o := &demoReaderOpts{g: g}
	c := &cobra.Command{
		Use:    "demo-reader",
		Short:  "The demo's verifying reader process (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return runDemoReader(cmd, o) },
	}
	f := c.Flags()
	f.StringVar(&o.table, "table", demoTable, "table to tail")
	f.IntVar(&o.rows, "rows", 0, "rows to expect")
	f.IntVar(&o.symbols, "symbols", 100, "the generator's symbols")
	f.Int64Var(&o.seed, "seed", 1, "the generator's seed")
	f.BoolVar(&o.spin, "spin", false, "busy-spin while waiting for rows")
	return c
}

func runDemoReader(cmd *cobra.Command, o *demoReaderOpts) error {
	if o.rows <= 0 {
		return fmt.Errorf("demo reader: --rows %d: want at least 1", o.rows)
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	// The demo holds our stdin open; EOF means it is gone.
	go func() {
		_, _ = io.Copy(io.Discard, cmd.InOrStdin())
		cancel()
	}()
	r, err := reader.Open(o.g.db, o.table, nil)
	if err != nil {
		return fmt.Errorf("demo reader: %w", err)
	}
	defer r.Close()
	s := r.Schema()
	if !s.Equal(store.TickSchema()) {
		return fmt.Errorf("demo reader: table %s has columns %s, want %s", o.table, s, store.TickSchema())
	}
	symC, _ := s.Col("sym")
	priceC, _ := s.Col("price")
	sizeC, _ := s.Col("size")
	g := gen.New(gen.Options{Symbols: o.symbols, Seed: o.seed})
	ids := make([]uint32, len(g.Symbols()))
	for i, name := range g.Symbols() {
		id, ok := r.SymbolID([]byte(name))
		if !ok {
			return fmt.Errorf("demo reader: symbol %s is not in the table's dictionary", name)
		}
		ids[i] = id
	}
	idle, _ := demoIdle(o.spin)
	// The expected rows are generated before the reader says it is ready
	// (up to demoMaxPregen rows at a time), so that checking a row costs a
	// compare, and the reader keeps up with the writer: a reader that falls
	// behind would add its backlog to the latency samples.
	rs := s.RowSize
	chunk := min(o.rows, demoMaxPregen)
	want := make([]byte, chunk*rs)
	demoEncode(want, s, g, ids)
	tail := r.Tail(0, idle)
	out := bufio.NewWriter(cmd.OutOrStdout())
	enc := json.NewEncoder(out)
	if err := enc.Encode(demoMsg{Ready: true}); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}

	// Two sightings per sampled row (see demoLatency): visible[k] when a
	// published count covering it was first loaded, seen[k] when the tail
	// returned it. The published count is loaded every demoPublishEvery
	// rows, so visibility is noticed within that many rows of work even
	// while the reader works through a backlog.
	visible := make([]int64, o.rows/demoSampleEvery)
	seen := make([]int64, len(visible))
	nextVis := 0 // first sample whose visibility is not known yet
	check := make([]byte, rs)
	var start time.Time
	rereads := 0
	for i := 0; i < o.rows; i++ {
		row, seq, err := tail.Wait(ctx)
		if err != nil {
			return fmt.Errorf("demo reader: waiting for row %d: %w", i, err)
		}
		if i == 0 {
			start = time.Now()
		}
		if (i+1)%demoSampleEvery == 0 {
			k := (i+1)/demoSampleEvery - 1
			seen[k] = time.Now().UnixNano()
			if k >= nextVis {
				visible[k], nextVis = seen[k], k+1
			}
		}
		if i%demoPublishEvery == 0 && nextVis < len(visible) {
			if n := r.Len(); uint64((nextVis+1)*demoSampleEvery) <= n {
				now := time.Now().UnixNano()
				for ; nextVis < len(visible) && uint64((nextVis+1)*demoSampleEvery) <= n; nextVis++ {
					visible[nextVis] = now
				}
			}
		}
		if seq != uint64(i) {
			return fmt.Errorf("demo reader: got row %d where row %d was due (a gap or reorder)", seq, i)
		}
		j := i % chunk
		if j == 0 && i > 0 {
			demoEncode(want[:min(chunk, o.rows-i)*rs], s, g, ids)
		}
		exp := want[j*rs : j*rs+rs-store.CheckSize]
		if !bytes.Equal(row[:rs-store.CheckSize], exp) || !format.Valid(seq, row) {
			// The view may have been recycled under a reader that fell
			// LiveSlots-1 segments behind: confirm with a checked copy.
			got := store.Row(check)
			if err := r.ReadRow(seq, check); err != nil {
				got = row
			} else if bytes.Equal(check[:rs-store.CheckSize], exp) && format.Valid(seq, check) {
				rereads++
				continue
			}
			w := store.Row(append([]byte(nil), want[j*rs:j*rs+rs]...))
			return fmt.Errorf("demo reader: row %d: got ts=%d sym=%d price=%v size=%d check-ok=%v, want ts=%d sym=%d price=%v size=%d",
				seq, got.Ts(), got.Sym(symC), got.F64(priceC), got.I64(sizeC), format.Valid(seq, got),
				w.Ts(), w.Sym(symC), w.F64(priceC), w.I64(sizeC))
		}
	}
	elapsed := time.Since(start)
	for k, ns := range seen {
		if err := enc.Encode(demoMsg{Seq: uint64((k+1)*demoSampleEvery - 1), Visible: visible[k], Seen: ns}); err != nil {
			return err
		}
	}
	if err := enc.Encode(demoMsg{Done: true, Rows: uint64(o.rows), Elapsed: int64(elapsed), Rereads: rereads}); err != nil {
		return err
	}
	return out.Flush()
}
