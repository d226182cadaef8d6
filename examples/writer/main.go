// Command writer is a runnable example that embeds tickdb's writer: it opens
// (creating it if needed) a table with the tick schema, pins itself, appends
// synthetic ticks for a few symbols, publishes them in small batches, and
// makes them durable before it exits.
//
//	go run ./examples/writer -db /tmp/ticks -rows 100000
//	go run ./examples/writer -db /tmp/ticks -rows 100000 -rate 10000   # 10 s
//
// Run examples/tail (or the Python reader) on the same directory from another
// shell to watch the rows arrive. The last line printed is a summary whose
// checksum examples/tail prints too, for the same rows:
//
//	writer: 100000 rows seq [0, 100000) checksum 5230a8c57bf48daa in 16ms (6364756 rows/s)
package main

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"time"

	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

func main() {
	db := flag.String("db", "tickdata", "database directory")
	table := flag.String("table", "trades", "table name")
	rows := flag.Int("rows", 100_000, "rows to append")
	batch := flag.Int("batch", 64, "rows per Publish")
	live := flag.String("live", "", "live slot directory (default: under /dev/shm/tickdb)")
	segSize := flag.Int64("segment-size", 0, "bytes of rows per segment (default 16 MiB)")
	rate := flag.Float64("rate", 0, "rows per second (0: as fast as possible)")
	flag.Parse()
	if err := run(*db, *table, *rows, *batch, *live, *segSize, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		os.Exit(1)
	}
}

func run(db, table string, rows, batch int, live string, segSize int64, rate float64) (err error) {
	w, err := writer.Open(db, table, &writer.Options{
		Schema:      store.TickSchema(),
		LiveDir:     live,
		SegmentSize: segSize,
	})
	if err != nil {
		return err
	}
	// Close makes every row durable and removes the live slots; its error
	// matters as much as Append's.
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	// Appends must come from one goroutine; Pin locks it to its OS thread
	// (and to a CPU, with Options.CPU).
	if err := w.Pin(); err != nil {
		return err
	}
	defer w.Unpin()

	// Symbols are interned once; rows carry their uint32 ids.
	names := []string{"AAPL", "MSFT", "GOOG", "AMZN", "BRK.B"}
	ids := make([]uint32, len(names))
	for i, name := range names {
		if ids[i], err = w.SymbolString(name); err != nil {
			return err
		}
	}
	s := w.Schema()
	symCol, _ := s.Col("sym")
	priceCol, _ := s.Col("price")
	sizeCol, _ := s.Col("size")

	rng := rand.New(rand.NewPCG(1, 2))
	prices := []float64{190, 410, 170, 180, 460}
	ts := max(time.Now().UnixNano(), w.LastTs()) // ts never goes back, even across runs
	row := w.NewRow()                            // one buffer, reused: Append copies it
	sum := fnv.New64a()                          // over each row's bytes, check word excluded
	first, start := w.Len(), time.Now()
	for i := range rows {
		k := rng.IntN(len(names))
		prices[k] *= 1 + (rng.Float64()-0.5)*1e-3
		ts += 1 + rng.Int64N(1000)
		row.SetTs(ts)
		row.SetSym(symCol, ids[k])
		row.SetF64(priceCol, prices[k])
		row.SetI64(sizeCol, 1+rng.Int64N(500))
		if _, err := w.Append(row); err != nil {
			return err
		}
		sum.Write(row[:len(row)-store.CheckSize])
		if (i+1)%batch == 0 {
			w.Publish() // readers see the batch now
			// Pace the demo; a real feed just appends as ticks arrive.
			if rate > 0 {
				time.Sleep(time.Until(start.Add(time.Duration(float64(i+1) / rate * 1e9))))
			}
		}
	}
	if err := w.Sync(); err != nil { // publishes the rest, waits until durable
		return err
	}
	el := time.Since(start)
	fmt.Printf("writer: %d rows seq [%d, %d) checksum %016x in %v (%.0f rows/s)\n",
		rows, first, w.Len(), sum.Sum64(), el.Round(time.Millisecond), float64(rows)/el.Seconds())
	return nil
}
