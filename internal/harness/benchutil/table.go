package benchutil

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/writer"
)

// Table is a closed benchmark table of N generated ticks (100 symbols,
// fixed seed, ts about 1 µs apart) and, when built with Expect, a compact
// copy of what was written, from which the benchmarks compute their
// expected answers by brute force, independently of tickdb's read path.
type Table struct {
	DB, Name string
	N        uint64
	Build    time.Duration // wall time to append, publish and close

	// Filled with Expect only: per row, ts, sym id and size in round lots.
	Ts   []int64
	Sym  []uint8
	Lots []uint8
}

// BuildTable writes n ticks into a new table name under db with the
// writer's default geometry (16 MiB segments, 4 live slots under a fresh
// /dev/shm directory removed by tb's cleanup), appending in batches of
// 1024 rows, publishing after each, and closes it: every row durable, the
// live slots gone. With expect it also keeps Ts, Sym and Lots. Its
// segments stay raw (background compaction off), so that the benchmarks
// comparing raw and compacted rows read what they name; the default
// layout is measured by BenchmarkIngestDefaults and the bench module.
func BuildTable(tb testing.TB, db, name string, n uint64, expect bool) (*Table, error) {
	return build(tb, db, name, n, expect, false)
}

// BuildCompacted is BuildTable closing the writer with CloseCompacted(0):
// every segment compacted (clustered by symbol), the last one included,
// as a closing ingest process leaves a table. Build includes the
// compaction.
func BuildCompacted(tb testing.TB, db, name string, n uint64) (*Table, error) {
	return build(tb, db, name, n, false, true)
}

func build(tb testing.TB, db, name string, n uint64, expect, compact bool) (*Table, error) {
	tab := &Table{DB: db, Name: name, N: n}
	s, _, _, _ := TickSchema()
	w, err := writer.Open(db, name, &writer.Options{Schema: s, LiveDir: testutil.LiveDir(tb), CompactAge: -1})
	if err != nil {
		return nil, err
	}
	AddSymbols(tb, w.SymbolString)
	if expect {
		tab.Ts = make([]int64, n)
		tab.Sym = make([]uint8, n)
		tab.Lots = make([]uint8, n)
	}
	g := gen.New(gen.Options{Symbols: Symbols, Seed: Seed})
	const batch = 1024
	buf := make([]byte, batch*32)
	start := time.Now()
	for i := uint64(0); i < n; {
		k := min(batch, n-i)
		for j := uint64(0); j < k; j++ {
			t := g.Next()
			Encode(buf[j*32:], t)
			if expect {
				tab.Ts[i+j], tab.Sym[i+j], tab.Lots[i+j] = t.Ts, uint8(t.Sym), uint8(t.Size/100)
			}
		}
		if _, m, err := w.AppendBatch(buf[:k*32]); err != nil {
			w.Close()
			return nil, fmt.Errorf("append row %d: %w", i+uint64(m), err)
		}
		w.Publish()
		i += k
	}
	if compact {
		if _, err := w.CloseCompacted(0); err != nil {
			return nil, err
		}
	} else if err := w.Close(); err != nil {
		return nil, err
	}
	tab.Build = time.Since(start)
	return tab, nil
}

// SeekExpect is the first row with ts >= t (N if none), by binary search of
// Ts.
func (t *Table) SeekExpect(ts int64) uint64 {
	return uint64(sort.Search(len(t.Ts), func(i int) bool { return t.Ts[i] >= ts }))
}

// SymRows returns the sequence numbers of symbol id's rows, in order.
func (t *Table) SymRows(id uint8) []uint64 {
	var out []uint64
	for i, s := range t.Sym {
		if s == id {
			out = append(out, uint64(i))
		}
	}
	return out
}

// SymNear returns the symbol whose row count is closest to want.
func (t *Table) SymNear(want uint64) (id uint8, count uint64) {
	var counts [256]uint64
	for _, s := range t.Sym {
		counts[s]++
	}
	best := ^uint64(0)
	for i, c := range counts {
		d := max(c, want) - min(c, want)
		if c > 0 && d < best {
			best, id, count = d, uint8(i), c
		}
	}
	return id, count
}
