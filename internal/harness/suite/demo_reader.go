package suite

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/child"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// demoReaderOpts is the demo reader's job: the table, and the rows and
// generator it must find there.
type demoReaderOpts struct {
	db, table     string
	rows, symbols int
	seed          int64
	spin          bool
}

// demoReaderChild is the demo's reader process (role roleDemoReader): its
// arguments name the table and the generator (-db, -table, -rows,
// -symbols, -seed, -spin; the last of a repeated flag wins). It stops when
// its stdin reaches EOF, so it never outlives the demo that holds the
// other end.
func demoReaderChild() error {
	var o demoReaderOpts
	fs := flag.NewFlagSet(roleDemoReader, flag.ContinueOnError)
	fs.StringVar(&o.db, "db", "", "database directory")
	fs.StringVar(&o.table, "table", "", "table to tail")
	fs.IntVar(&o.rows, "rows", 0, "rows to expect")
	fs.IntVar(&o.symbols, "symbols", 100, "the generator's symbols")
	fs.Int64Var(&o.seed, "seed", 1, "the generator's seed")
	fs.BoolVar(&o.spin, "spin", false, "busy-spin while waiting for rows")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmds := child.Commands()
	go func() {
		for range cmds {
		}
		cancel() // the demo closed our stdin, or is gone
	}()
	return demoRead(ctx, o, child.Report)
}

// demoRead tails the table from row 0 and checks every row against the
// generator, then reports its sightings of the sampled rows (see
// demoLatency) and what it read: "ready" once it tails the table, then
// "sample <seq> <visible ns> <seen ns>" per sampled row and "done <rows>
// <elapsed ns> <rereads>" (wall-clock times). A row that differs is an
// error naming it.
func demoRead(ctx context.Context, o demoReaderOpts, report func(string, ...any)) error {
	if o.rows <= 0 {
		return fmt.Errorf("demo reader: -rows %d: want at least 1", o.rows)
	}
	r, err := reader.Open(o.db, o.table, nil)
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
	idle, _ := DemoIdle(o.spin)
	// The expected rows are generated before the reader says it is ready
	// (up to demoMaxPregen rows at a time), so that checking a row costs a
	// compare, and the reader keeps up with the writer: a reader that falls
	// behind would add its backlog to the latency samples.
	rs := s.RowSize
	chunk := min(o.rows, demoMaxPregen)
	want := make([]byte, chunk*rs)
	DemoEncode(want, s, g, ids)
	tail := r.Tail(0, idle)
	report("ready")

	// Two sightings per sampled row (see demoLatency): visible[k] when a
	// published count covering it was first loaded, seen[k] when the tail
	// returned it. The published count is loaded every DemoPublishEvery
	// rows, so visibility is noticed within that many rows of work even
	// while the reader works through a backlog.
	visible := make([]int64, o.rows/DemoSampleEvery)
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
		if (i+1)%DemoSampleEvery == 0 {
			k := (i+1)/DemoSampleEvery - 1
			seen[k] = time.Now().UnixNano()
			if k >= nextVis {
				visible[k], nextVis = seen[k], k+1
			}
		}
		if i%DemoPublishEvery == 0 && nextVis < len(visible) {
			if n := r.Len(); uint64((nextVis+1)*DemoSampleEvery) <= n {
				now := time.Now().UnixNano()
				for ; nextVis < len(visible) && uint64((nextVis+1)*DemoSampleEvery) <= n; nextVis++ {
					visible[nextVis] = now
				}
			}
		}
		if seq != uint64(i) {
			return fmt.Errorf("demo reader: got row %d where row %d was due (a gap or reorder)", seq, i)
		}
		j := i % chunk
		if j == 0 && i > 0 {
			DemoEncode(want[:min(chunk, o.rows-i)*rs], s, g, ids)
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
		report("sample %d %d %d", (k+1)*DemoSampleEvery-1, visible[k], ns)
	}
	report("done %d %d %d", o.rows, elapsed.Nanoseconds(), rereads)
	return nil
}
