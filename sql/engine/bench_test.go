package engine

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tickdb/tickdb/reader"
)

var benchRows = flag.Int("sqlrows", 2_000_000, "rows of the benchmarks' table (the issue's figures: -sqlrows 20000000)")

var (
	benchOnce sync.Once
	benchDir  string
)

// benchTable is the benchmarks' table, made once per process.
func benchTable(b *testing.B) string {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tickdb-sql-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		genTicks(b, dir, "trades", *benchRows, 1, false, time.Microsecond)
	})
	return benchDir
}

// benchCleanup is what the benchmarks made once per process, to remove at
// its end.
var benchCleanup []func()

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	for i := len(benchCleanup) - 1; i >= 0; i-- {
		benchCleanup[i]()
	}
	os.Exit(code)
}

// span returns the table's first and last ts.
func span(b *testing.B, r *reader.Reader) (int64, int64) {
	first, err := r.Get(r.FirstSeq())
	if err != nil {
		b.Fatal(err)
	}
	last, err := r.Get(r.Len() - 1)
	if err != nil {
		b.Fatal(err)
	}
	return first.Ts(), last.Ts()
}

// BenchmarkAggregate: a whole-table aggregate through SQL.
func BenchmarkAggregate(b *testing.B) {
	db := benchTable(b)
	e, err := Open(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for _, q := range []string{
		"SELECT sum(price * size) FROM trades",
		"SELECT sym, sum(price * size) / sum(size) FROM trades GROUP BY sym",
	} {
		b.Run(q, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rows, err := e.DB().Query(q)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				rows.Close()
			}
			b.ReportMetric(float64(*benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkWindow: one symbol, a window of 1 % of the span, through SQL
// (the index form, and a WHERE on the view) and through reader.RangeSym,
// in the same process.
func BenchmarkWindow(b *testing.B) {
	db := benchTable(b)
	e, err := Open(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	r, err := reader.Open(db, "trades", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	lo, hi := span(b, r)
	from := lo + (hi-lo)/2
	to := from + (hi-lo)/100
	sym := "AAPL"
	id, ok := r.SymbolID([]byte(sym))
	if !ok {
		names, _ := r.SymbolNamer()
		sym, _ = names(0)
		id = 0
	}
	price, _ := r.Schema().Col("price")
	var want int
	var wantSum float64
	b.Run("reader.RangeSym", func(b *testing.B) {
		b.ReportAllocs()
		var it reader.Iter
		for b.Loop() {
			if err := r.RangeSym(from, to, id, &it); err != nil {
				b.Fatal(err)
			}
			n, s := 0, 0.0
			for it.Next() {
				s += it.Row().F64(price)
				n++
			}
			if err := it.Err(); err != nil {
				b.Fatal(err)
			}
			want, wantSum = n, s
		}
		b.ReportMetric(float64(want), "rows")
	})
	for name, q := range map[string]string{
		"sql-index": fmt.Sprintf("SELECT count(*), sum(price) FROM tickdb_sym('trades', '%s', %d, %d)", sym, from, to),
		"sql-where": fmt.Sprintf("SELECT count(*), sum(price) FROM trades WHERE sym = '%s' AND ts >= make_timestamp_ns(%d) AND ts < make_timestamp_ns(%d)", sym, from, to),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			var s float64
			for b.Loop() {
				if err := e.DB().QueryRowContext(context.Background(), q).Scan(&n, &s); err != nil {
					b.Fatal(err)
				}
			}
			if n != want || s != wantSum {
				b.Fatalf("%d rows sum %v, reader.RangeSym %d rows sum %v", n, s, want, wantSum)
			}
			b.ReportMetric(float64(n), "rows")
		})
	}
}
