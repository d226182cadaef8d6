package query_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/store"
)

// benchTicks is n ticks of nsym symbols from internal/harness/gen (seed 1:
// skewed activity, cent prices, round-lot sizes, about 1 µs apart) as
// rows of store.TickSchema laid end to end, and the lookup of their
// symbols' names.
func benchTicks(n, nsym int) (*store.Schema, []byte, func(uint32) (string, error)) {
	s := store.TickSchema()
	g := gen.New(gen.Options{Symbols: nsym, Seed: 1})
	names := g.Symbols()
	sym, price, size := s.ColAt(1), s.ColAt(2), s.ColAt(3)
	flat := make([]byte, n*s.RowSize)
	for i := range n {
		t := g.Next()
		r := store.Row(flat[i*s.RowSize : (i+1)*s.RowSize])
		r.SetTs(t.Ts)
		r.SetSym(sym, uint32(t.Sym))
		r.SetF64(price, t.Price)
		r.SetI64(size, t.Size)
	}
	return s, flat, func(id uint32) (string, error) {
		if int(id) >= len(names) {
			return "", fmt.Errorf("no symbol %d", id)
		}
		return names[id], nil
	}
}

// BenchmarkEncode is the csv and json encoding alone of 1 M ticks of 100
// symbols, rows already read (no reader, no check words), to
// io.Discard: an op is the whole table through a new Encoder, so the
// first sight of each symbol is in it. rows/s and ns/row are the
// encoder's throughput, cpu-ns/row its thread's CPU time a row (steadier
// than the clock on a shared machine); B/row the output's size.
//
//	go test -run '^$' -bench 'BenchmarkEncode$' -count 10 ./query/ > new.txt; benchstat old.txt new.txt
func BenchmarkEncode(b *testing.B) {
	const n = 1_000_000
	s, flat, symName := benchTicks(n, 100)
	for _, f := range []query.Format{query.FormatCSV, query.FormatJSON} {
		for _, tsf := range []query.TsFormat{query.TsRFC3339, query.TsNs} {
			b.Run("format="+f.String()+"/ts="+tsf.String(), func(b *testing.B) {
				var out countWriter
				encode := func(w io.Writer) {
					enc := query.NewEncoder(w, f, tsf, s, "ticks", symName)
					for off := 0; off < len(flat); off += s.RowSize {
						if err := enc.Row(flat[off : off+s.RowSize]); err != nil {
							b.Fatal(err)
						}
					}
					if err := enc.Close(); err != nil {
						b.Fatal(err)
					}
				}
				encode(&out)
				b.ReportAllocs()
				rows := 0
				cpu := benchutil.StartCPU()
				for b.Loop() {
					encode(io.Discard)
					rows += n
				}
				c := cpu.Stop()
				b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
				b.ReportMetric(float64(c.Nanoseconds())/float64(rows), "cpu-ns/row")
				b.ReportMetric(float64(out.n)/n, "B/row")
			})
		}
	}
}

// countWriter counts the bytes written to it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}
