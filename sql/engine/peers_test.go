package engine

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// BenchmarkPeers runs the same questions over the same ticks four ways,
// side by side: (a) tickdb through SQL, (b) tickdb native (the reader and
// the query package), (c) DuckDB's own table loaded with the same rows,
// (d) DuckDB over tickdb's Parquet export; each reported in ms and as a
// ratio to (c). -sqlrows sets the rows (20 M for docs/BENCHMARKS.md); the
// ticks are 100 µs apart on average (20 M span about 33 minutes, so that
// 1-minute bars are bars), quotes as many as trades.
//
//	go test -run '^$' -bench Peers -benchtime 5x ./engine -args -sqlrows 20000000
func BenchmarkPeers(b *testing.B) {
	p := peerSetup(b)
	for _, q := range p.questions() {
		b.Run(q.name, func(b *testing.B) {
			var ms [4]float64
			var answers [4]string
			for b.Loop() {
				for i, run := range []func() string{q.sql, q.native, q.duck, q.parquet} {
					if run == nil {
						continue
					}
					t0 := time.Now()
					answers[i] = run()
					ms[i] += float64(time.Since(t0).Nanoseconds()) / 1e6
				}
			}
			for i, a := range answers {
				if a != answers[2] && (i != 1 || q.native != nil) {
					b.Fatalf("answers differ: %s %q, duckdb %q", []string{"tickdb-sql", "tickdb", "duckdb", "parquet"}[i], a, answers[2])
				}
			}
			n := float64(b.N)
			for i, name := range []string{"tickdb-sql", "tickdb", "duckdb", "duckdb-parquet"} {
				if ms[i] > 0 {
					b.ReportMetric(ms[i]/n, name+"-ms")
				}
			}
			b.ReportMetric(ms[0]/ms[2], "sql/duckdb")
			b.ReportMetric(ms[1]/ms[2], "native/duckdb")
			b.ReportMetric(ms[3]/ms[2], "parquet/duckdb")
		})
	}
}

type peers struct {
	b          *testing.B
	e          *Engine // (a)
	trades     *reader.Reader
	quotes     *reader.Reader
	duck       *sql.DB // (c) tables trades and quotes, (d) views ptrades and pquotes
	sym        string
	id         uint32
	lo, hi     int64
	from, to   int64
	priceCol   store.Col
	sizeCol    store.Col
	symCol     int
	rows       int
	parquetDir string
}

var (
	peersOnce sync.Once
	peersP    *peers
)

func peerSetup(b *testing.B) *peers {
	peersOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tickdb-sql-peers-")
		if err != nil {
			b.Fatal(err)
		}
		benchCleanup = append(benchCleanup, func() { os.RemoveAll(dir) })
		db := filepath.Join(dir, "db")
		n := *benchRows
		genTicks(b, db, "trades", n, 1, false, 100*time.Microsecond)
		genTicks(b, db, "quotes", n, 2, true, 100*time.Microsecond)
		p := &peers{b: b, rows: n, parquetDir: filepath.Join(dir, "parquet")}
		if p.e, err = Open(db, nil); err != nil {
			b.Fatal(err)
		}
		if p.trades, err = reader.Open(db, "trades", nil); err != nil {
			b.Fatal(err)
		}
		if p.quotes, err = reader.Open(db, "quotes", nil); err != nil {
			b.Fatal(err)
		}
		benchCleanup = append(benchCleanup, func() { p.e.Close(); p.trades.Close(); p.quotes.Close() })
		ctx := context.Background()
		for _, t := range []struct {
			name string
			r    *reader.Reader
		}{{"trades", p.trades}, {"quotes", p.quotes}} {
			if _, err := export.Run(ctx, t.r, filepath.Join(p.parquetDir, t.name), nil); err != nil {
				b.Fatal(err)
			}
		}
		if p.duck, err = sql.Open("duckdb", ""); err != nil {
			b.Fatal(err)
		}
		benchCleanup = append(benchCleanup, func() { p.duck.Close() })
		for _, t := range []string{"trades", "quotes"} {
			glob := filepath.Join(p.parquetDir, t, "**", "*.parquet")
			for _, q := range []string{
				fmt.Sprintf("CREATE VIEW p%s AS SELECT * EXCLUDE (date) FROM read_parquet('%s', hive_partitioning = true)", t, glob),
				// DuckDB's own table, in time order as it arrived.
				fmt.Sprintf("CREATE TABLE %[1]s AS SELECT * FROM p%[1]s ORDER BY ts", t),
			} {
				if _, err := p.duck.Exec(q); err != nil {
					b.Fatalf("%s: %v", q, err)
				}
			}
		}
		p.lo, p.hi = span(b, p.trades)
		p.from = p.lo + (p.hi-p.lo)/2
		p.to = p.from + (p.hi-p.lo)/100
		p.sym = "AAPL"
		id, ok := p.trades.SymbolID([]byte(p.sym))
		if !ok {
			b.Fatalf("no %s", p.sym)
		}
		p.id = id
		s := p.trades.Schema()
		p.priceCol, _ = s.Col("price")
		p.sizeCol, _ = s.Col("size")
		p.symCol = s.SymCol
		peersP = p
	})
	if peersP == nil {
		b.Fatal("set-up failed")
	}
	return peersP
}

// genTicks writes n generated ticks (100 symbols, gap apart on average)
// as trades (price, size) or quotes (bid, ask), with the writer's default
// options and a plain Close.
func genTicks(tb testing.TB, db, name string, n int, seed int64, quotes bool, gap time.Duration) {
	schema := store.TickSchema()
	if quotes {
		schema = store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
			store.Column{Name: "bid", Type: store.TypeF64}, store.Column{Name: "ask", Type: store.TypeF64})
	}
	w, err := writer.Open(db, name, &writer.Options{Schema: schema})
	if err != nil {
		tb.Fatal(err)
	}
	g := gen.New(gen.Options{Symbols: 100, Seed: seed, Gap: gap})
	sym := schema.ColAt(1)
	a, c := schema.ColAt(2), schema.ColAt(3)
	ids := make([]uint32, len(g.Symbols()))
	for i, s := range g.Symbols() {
		if ids[i], err = w.SymbolString(s); err != nil {
			tb.Fatal(err)
		}
	}
	row := w.NewRow()
	for i := 0; i < n; i++ {
		k := g.Next()
		row.SetTs(k.Ts)
		row.SetSym(sym, ids[k.Sym])
		row.SetF64(a, k.Price)
		if quotes {
			row.SetF64(c, k.Price+0.01)
		} else {
			row.SetI64(c, k.Size)
		}
		if _, err := w.Append(row); err != nil {
			tb.Fatal(err)
		}
		if i%65536 == 0 {
			w.Publish()
		}
	}
	w.Publish()
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// question is one query, four ways; each returns a short digest of its
// answer (a count and a sum, rounded), the same for all four.
type question struct {
	name                       string
	sql, native, duck, parquet func() string
}

func (p *peers) one(db *sql.DB, q string) string {
	var n int64
	var s sql.NullFloat64
	if err := db.QueryRow(q).Scan(&n, &s); err != nil {
		p.b.Fatalf("%s: %v", q, err)
	}
	return digest(n, s.Float64)
}

func digest(n int64, s float64) string { return fmt.Sprintf("%d %.6g", n, s) }

func (p *peers) questions() []question {
	ns := func(t int64) string { return fmt.Sprintf("make_timestamp_ns(%d)", t) }
	both := func(q string) (func() string, func() string) {
		return func() string { return p.one(p.duck, fmt.Sprintf(q, "trades", "quotes")) },
			func() string { return p.one(p.duck, fmt.Sprintf(q, "ptrades", "pquotes")) }
	}
	var qs []question

	// One symbol, a window of 1 % of the span.
	d, pq := both(fmt.Sprintf("SELECT count(*), sum(price) FROM %%[1]s WHERE sym = '%s' AND ts >= %s AND ts < %s", p.sym, ns(p.from), ns(p.to)))
	qs = append(qs, question{name: "window-1pct-one-sym", duck: d, parquet: pq,
		sql: func() string {
			return p.one(p.e.DB(), fmt.Sprintf("SELECT count(*), sum(price) FROM tickdb_sym('trades', '%s', %d, %d)", p.sym, p.from, p.to))
		},
		native: func() string { return p.rangeSym(p.from, p.to) }})

	// One symbol, the whole span.
	d, pq = both(fmt.Sprintf("SELECT count(*), sum(price) FROM %%[1]s WHERE sym = '%s'", p.sym))
	qs = append(qs, question{name: "scan-one-sym", duck: d, parquet: pq,
		sql: func() string {
			return p.one(p.e.DB(), fmt.Sprintf("SELECT count(*), sum(price) FROM tickdb_sym('trades', '%s', '-infinity', 'infinity')", p.sym))
		},
		native: func() string { return p.rangeSym(math.MinInt64, reader.ToEnd) }})

	// 1-minute OHLCV bars of one symbol (digest: bars, sum of closes).
	bars := `SELECT count(*), sum(c) FROM (SELECT epoch_ns(ts) // 60000000000 AS b, first(price ORDER BY ts) AS o, max(price) AS h,
		min(price) AS l, last(price ORDER BY ts) AS c, sum(size) AS v FROM %s GROUP BY b)`
	d, pq = both(fmt.Sprintf(bars, fmt.Sprintf("%%[1]s WHERE sym = '%s'", p.sym)))
	qs = append(qs, question{name: "bars-1min-one-sym", duck: d, parquet: pq,
		sql: func() string {
			return p.one(p.e.DB(), fmt.Sprintf(bars, fmt.Sprintf("tickdb_sym('trades', '%s', '-infinity', 'infinity')", p.sym)))
		},
		native: func() string {
			var n int64
			var s float64
			_, err := query.Bars(context.Background(), p.trades, query.BarsQuery{Sym: p.sym, Interval: time.Minute}, func(b *query.Bar) error {
				n++
				s += math.Float64frombits(b.Close)
				return nil
			})
			if err != nil {
				p.b.Fatal(err)
			}
			return digest(n, s)
		}})

	// The latest row of every symbol (digest: symbols, sum of prices).
	d, pq = both("SELECT count(*), sum(price) FROM (SELECT * FROM %[1]s QUALIFY row_number() OVER (PARTITION BY sym ORDER BY ts DESC) = 1)")
	qs = append(qs, question{name: "latest-all-syms", duck: d, parquet: pq,
		sql: func() string {
			return p.one(p.e.DB(), "SELECT count(*), sum(price) FROM tickdb_latest('trades', 'infinity')")
		},
		native: func() string {
			var n int64
			var s float64
			_, err := query.Latest(context.Background(), p.trades, query.LatestQuery{}, func(row store.Row) error {
				n++
				s += row.F64(p.priceCol)
				return nil
			})
			if err != nil {
				p.b.Fatal(err)
			}
			return digest(n, s)
		}})

	// trades ← quotes, as of each trade, over the 1 % window (digest:
	// trades, sum of the matched bids).
	asof := `SELECT count(*), sum(q.bid) FROM %s t ASOF LEFT JOIN %s q ON t.sym = q.sym AND t.ts >= q.ts`
	d, pq = both(fmt.Sprintf(asof, fmt.Sprintf("(SELECT * FROM %%[1]s WHERE ts >= %s AND ts < %s)", ns(p.from), ns(p.to)),
		fmt.Sprintf("(SELECT * FROM %%[2]s WHERE ts < %s)", ns(p.to))))
	qs = append(qs, question{name: "asof-1pct-window", duck: d, parquet: pq,
		sql: func() string {
			return p.one(p.e.DB(), fmt.Sprintf(asof, fmt.Sprintf("tickdb_range('trades', %d, %d)", p.from, p.to),
				fmt.Sprintf("tickdb_range('quotes', '-infinity', %d)", p.to)))
		},
		native: func() string {
			var n int64
			var s float64
			bid, _ := p.quotes.Schema().Col("bid")
			_, err := query.AsOf(context.Background(), p.trades, p.quotes, query.AsOfQuery{From: p.from, To: p.to, HasFrom: true, HasTo: true},
				func(l, r store.Row) error {
					n++
					if r != nil {
						s += r.F64(bid)
					}
					return nil
				})
			if err != nil {
				p.b.Fatal(err)
			}
			return digest(n, s)
		}})

	// VWAP per symbol over the whole table (digest: symbols, sum of VWAPs).
	vwap := "SELECT count(*), sum(v) FROM (SELECT sym, sum(price * size) / sum(size) AS v FROM %s GROUP BY sym)"
	d, pq = both(fmt.Sprintf(vwap, "%[1]s"))
	qs = append(qs, question{name: "vwap-by-sym-all", duck: d, parquet: pq,
		sql:    func() string { return p.one(p.e.DB(), fmt.Sprintf(vwap, "trades")) },
		native: func() string { return p.vwap() }})
	return qs
}

func (p *peers) rangeSym(from, to int64) string {
	var it reader.Iter
	if err := p.trades.RangeSym(from, to, p.id, &it); err != nil {
		p.b.Fatal(err)
	}
	var n int64
	var s float64
	for it.Next() {
		n++
		s += it.Row().F64(p.priceCol)
	}
	if err := it.Err(); err != nil {
		p.b.Fatal(err)
	}
	return digest(n, s)
}

// vwap is VWAP per symbol with a column scan of sym, price and size.
func (p *peers) vwap() string {
	var sc reader.Scan
	s := p.trades.Schema()
	err := p.trades.Scan(reader.ScanSpec{Cols: []int{s.SymCol, s.Index("price"), s.Index("size")}, From: math.MinInt64, To: reader.ToEnd, Order: reader.OrderAny}, &sc)
	if err != nil {
		p.b.Fatal(err)
	}
	pv := make([]float64, p.trades.Symbols())
	v := make([]float64, p.trades.Symbols())
	for sc.Next() {
		blk := sc.Block()
		syms, prices, sizes := blk.Sym(0), blk.F64(1), blk.I64(2)
		for i, id := range syms {
			pv[id] += prices[i] * float64(sizes[i])
			v[id] += float64(sizes[i])
		}
	}
	if err := sc.Err(); err != nil {
		p.b.Fatal(err)
	}
	var n int64
	var sum float64
	for id := range pv {
		if v[id] > 0 {
			n++
			sum += pv[id] / v[id]
		}
	}
	return digest(n, sum)
}
