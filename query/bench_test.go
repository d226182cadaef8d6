package query_test

import (
	"context"
	"testing"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/store"
)

// BenchmarkRun: a whole-table query (and one symbol's rows) of 100k ticks
// encoded to a discarding writer, per format; ns/row is the cost of read,
// check, encode and buffer per row. Compare commits with
//
//	go test -run '^$' -bench BenchmarkRun -count 10 ./query/ > new.txt; benchstat old.txt new.txt
func BenchmarkRun(b *testing.B) {
	const n = 100_000
	tb := newTable(b, store.TickSchema())
	syms := []string{"AAPL", "MSFT", "GOOG", "AMZN"}
	for i := 0; i < n; i++ {
		tb.add(b, 1_700_000_000_000_000_000+int64(i)*1000, syms[i%len(syms)], 100+float64(i%1000)*0.01, i%500)
	}
	tb.publish()
	tb.w.Close()
	r := tb.reader(b)
	for _, f := range []query.Format{query.FormatCSV, query.FormatJSON, query.FormatILP, query.FormatTable} {
		for _, sym := range []string{"", "AAPL"} {
			name := "format=" + f.String() + "/sym=all"
			if sym != "" {
				name = "format=" + f.String() + "/sym=one"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				var rows int64
				for b.Loop() {
					enc := query.NewEncoder(discard{}, f, query.TsRFC3339, r.Schema(), "ticks", r.SymbolName)
					got, err := query.Run(context.Background(), r, query.Query{Sym: sym}, enc)
					if err != nil {
						b.Fatal(err)
					}
					if err := enc.Close(); err != nil {
						b.Fatal(err)
					}
					rows += got
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
			})
		}
	}
}
