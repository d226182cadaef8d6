package query_test

// As-of join benchmarks: trades joined with quotes, both generated (100
// symbols, fixed seeds) over the same span, quotes four times as dense,
// the quotes' symbol ids in another order than the trades' (so the join
// maps them by name, as in real tables). Each run checks its answer: every
// trade passed, and the matches counted against a brute-force count
// computed once from what was written.
//
// Each pair of tables is written twice: closed plainly (layout=raw) and
// closed with CloseCompacted(0) (layout=compacted: every segment
// compressed, clustered by symbol).
//
// Sizes: 5M trades against 20M quotes (about 900 MB under the temp dir,
// built once per process in about 15 s and removed at the end);
// TICKDB_BENCH_ROWS=N for N quotes and N/4 trades:
//
//	go test -run '^$' -bench BenchmarkAsOf -count 5 ./query/ | tee asof.txt
//	benchstat asof.txt

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// benchQuotesSchema: 32-byte rows like the trades'.
func benchQuotesSchema() *store.Schema {
	return store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "bid", Type: store.TypeF64},
		store.Column{Name: "ask", Type: store.TypeF64},
	)
}

// genTable is a generated benchmark table and a compact copy of its ts
// and symbol (generator index) per row.
type genTable struct {
	name  string
	ts    []int64
	sym   []uint8
	build time.Duration
}

// buildGenTable writes n generated ticks, mean gap apart, into table name
// of db, closes it and returns what it wrote. quotes selects
// benchQuotesSchema (bid = price, ask = price + 0.01) and the symbols'
// ids in reverse generator order; otherwise store.TickSchema with ids in
// generator order.
func buildGenTable(b *testing.B, db, name string, n int, gap time.Duration, seed int64, quotes, compact bool) *genTable {
	s := store.TickSchema()
	if quotes {
		s = benchQuotesSchema()
	}
	o := &writer.Options{Schema: s, LiveDir: filepath.Join(testutil.LiveDir(b), name)}
	if !compact {
		o.CompactAge = -1 // raw: no background compaction either
	}
	w, err := writer.Open(db, name, o)
	if err != nil {
		b.Fatal(err)
	}
	names := gen.Symbols(benchutil.Symbols)
	ids := make([]uint32, len(names))
	order := slices.Clone(names)
	if quotes {
		slices.Reverse(order)
	}
	for _, nm := range order {
		if _, err := w.SymbolString(nm); err != nil {
			b.Fatal(err)
		}
	}
	for i, nm := range names {
		ids[i], _ = w.SymbolString(nm)
	}
	t := &genTable{name: name, ts: make([]int64, n), sym: make([]uint8, n)}
	g := gen.New(gen.Options{Symbols: benchutil.Symbols, Seed: seed, Gap: gap})
	c1, c2, c3 := s.ColAt(1), s.ColAt(2), s.ColAt(3)
	const batch = 1024
	buf := make([]byte, batch*s.RowSize)
	start := time.Now()
	for i := 0; i < n; {
		k := min(batch, n-i)
		for j := 0; j < k; j++ {
			tk := g.Next()
			row := store.Row(buf[j*s.RowSize : (j+1)*s.RowSize])
			row.SetTs(tk.Ts)
			row.SetSym(c1, ids[tk.Sym])
			row.SetF64(c2, tk.Price)
			if quotes {
				row.SetF64(c3, tk.Price+0.01)
			} else {
				row.SetI64(c3, tk.Size)
			}
			t.ts[i+j], t.sym[i+j] = tk.Ts, uint8(tk.Sym)
		}
		if _, _, err := w.AppendBatch(buf[:k*s.RowSize]); err != nil {
			w.Close()
			b.Fatal(err)
		}
		w.Publish()
		i += k
	}
	if compact {
		if _, err := w.CloseCompacted(0); err != nil {
			b.Fatal(err)
		}
	} else if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	t.build = time.Since(start)
	b.Logf("built %s: %d rows in %v", name, n, t.build)
	return t
}

// bruteMatches counts the trades with a quote of their symbol at or
// before them, with tolerance tol (-1: none), among those with ts >= from:
// a merge over the copies.
func bruteMatches(trades, quotes *genTable, tol, from int64) (rows, matched int64) {
	var last [256]int64
	var seen [256]bool
	k := 0
	for i, ts := range trades.ts {
		for ; k < len(quotes.ts) && quotes.ts[k] <= ts; k++ {
			last[quotes.sym[k]], seen[quotes.sym[k]] = quotes.ts[k], true
		}
		if ts < from {
			continue
		}
		rows++
		s := trades.sym[i]
		if seen[s] && (tol < 0 || ts-last[s] <= tol) {
			matched++
		}
	}
	return rows, matched
}

// BenchmarkAsOf joins every trade with its quote: out=none hands the
// joined rows to a function that counts the matches (the join itself),
// out=csv encodes them as csv to a discarding writer (the asof command's
// work without the pipe), tol=1ms with a tolerance, sym=one one symbol's
// trades. left-rows/s is trades per second.
func BenchmarkAsOf(b *testing.B) {
	nt, nq := 5_000_000, 20_000_000
	if n := benchutil.Rows(0); n > 0 { // TICKDB_BENCH_ROWS sets the quotes
		nq, nt = int(n), int(n/4)
	}
	db := b.TempDir()
	trades := buildGenTable(b, db, "trades", nt, 4*time.Microsecond, 2, false, false)
	quotes := buildGenTable(b, db, "quotes", nq, time.Microsecond, 3, true, false)
	buildGenTable(b, db, "ztrades", nt, 4*time.Microsecond, 2, false, true)
	buildGenTable(b, db, "zquotes", nq, time.Microsecond, 3, true, true)
	for _, layout := range []string{"raw", "compacted"} {
		pre := map[string]string{"raw": "", "compacted": "z"}[layout]
		l, err := reader.Open(db, pre+"trades", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		r, err := reader.Open(db, pre+"quotes", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		warm(b, l, uint64(nt))
		warm(b, r, uint64(nq))
		benchAsOf(b, l, r, trades, quotes, "layout="+layout)
	}
}

// benchAsOf runs the join benchmarks on l and r, the tables trades and
// quotes were written into.
func benchAsOf(b *testing.B, l, r *reader.Reader, trades, quotes *genTable, layout string) {
	nt, nq := len(trades.ts), len(quotes.ts)
	q := query.AsOfQuery{Left: "trades", Right: "quotes"}
	_, want := bruteMatches(trades, quotes, -1, math.MinInt64)
	_, wantTol := bruteMatches(trades, quotes, int64(time.Millisecond), math.MinInt64)
	// The last 1% of the trades' span: a late From, no tolerance.
	late := trades.ts[0] + (trades.ts[nt-1]-trades.ts[0])/100*99
	lateRows, lateWant := bruteMatches(trades, quotes, -1, late)
	bidCol, _ := r.Schema().Col("bid")
	b.Run("trades="+benchutil.CountName(uint64(nt))+"/quotes="+benchutil.CountName(uint64(nq))+"/"+layout, func(b *testing.B) {
		join := func(b *testing.B, q query.AsOfQuery, wantRows, wantMatched int64) {
			b.ReportAllocs()
			var rows int64
			var bids float64
			c0 := benchutil.ProcCPU()
			for b.Loop() {
				var matched int64
				n, err := query.AsOf(context.Background(), l, r, q, func(_, m store.Row) error {
					if m != nil {
						matched++
						bids += m.F64(bidCol)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if n != wantRows || (wantMatched >= 0 && matched != wantMatched) {
					b.Fatalf("%d rows, %d matched; want %d rows, %d matched", n, matched, wantRows, wantMatched)
				}
				rows += n
			}
			if math.IsNaN(bids) {
				b.Fatal("NaN bid")
			}
			reportJoin(b, rows, benchutil.ProcCPU()-c0)
		}
		// The floor: the reader's iterators over both tables, summing a
		// column of each, per trade.
		b.Run("op=scan", func(b *testing.B) {
			var it reader.Iter
			b.ReportAllocs()
			var rows int64
			c0 := benchutil.ProcCPU()
			for b.Loop() {
				var sum float64
				for _, t := range []*reader.Reader{l, r} {
					if err := t.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
						b.Fatal(err)
					}
					for it.Next() {
						sum += it.Row().F64(bidCol) // price in trades, bid in quotes
					}
					if it.Err() != nil {
						b.Fatal(it.Err())
					}
				}
				if sum <= 0 {
					b.Fatal("no rows")
				}
				rows += int64(nt)
			}
			reportJoin(b, rows, benchutil.ProcCPU()-c0)
		})
		b.Run("out=none", func(b *testing.B) { join(b, q, int64(nt), want) })
		tq := q
		tq.Tolerance, tq.HasTolerance = time.Millisecond, true
		b.Run("out=none/tol=1ms", func(b *testing.B) { join(b, tq, int64(nt), wantTol) })
		fq := q
		fq.From, fq.HasFrom = late, true
		b.Run("out=none/from=last1pct", func(b *testing.B) { join(b, fq, lateRows, lateWant) })
		sq := q
		sq.Sym = gen.Symbols(benchutil.Symbols)[0]
		var symRows int64
		for _, s := range trades.sym {
			if s == 0 {
				symRows++
			}
		}
		b.Run("out=none/sym=one", func(b *testing.B) { join(b, sq, symRows, -1) })
		b.Run("out=csv", func(b *testing.B) {
			b.ReportAllocs()
			var rows int64
			c0 := benchutil.ProcCPU()
			for b.Loop() {
				enc, err := query.NewAsOfEncoder(discard{}, query.FormatCSV, query.TsRFC3339, l, r, q)
				if err != nil {
					b.Fatal(err)
				}
				n, err := query.RunAsOf(context.Background(), l, r, q, enc)
				if err != nil || n != int64(nt) {
					b.Fatalf("%d rows: %v", n, err)
				}
				if err := enc.Close(); err != nil {
					b.Fatal(err)
				}
				rows += n
			}
			reportJoin(b, rows, benchutil.ProcCPU()-c0)
		})
	})
}

// warm reads every row of r once: this faults the files into the page
// cache (the writer's O_DIRECT writes bypassed it) and validates every
// block, so that the timed runs measure the query, not the first touch.
func warm(b *testing.B, r *reader.Reader, n uint64) {
	var it reader.Iter
	r.RangeSeq(0, n, &it)
	var rows uint64
	for it.Next() {
		rows++
	}
	if it.Err() != nil || rows != n {
		b.Fatalf("warm pass read %d of %d rows: %v", rows, n, it.Err())
	}
}

// reportJoin reports left rows per second of wall and of CPU time (cpu:
// the process's, every goroutine's: the column scans decode on their own;
// it leaves out the time the process waited for a core).
func reportJoin(b *testing.B, rows int64, cpu time.Duration) {
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "left-rows/s")
	b.ReportMetric(float64(rows)/cpu.Seconds(), "cpu-left-rows/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(rows), "cpu-ns/left-row")
}
