package engine

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The time-series idioms of docs/SQL.md, checked against tickdb's own
// answers (the query package: the CLI's bars, latest and asof) on random
// tables and windows, row for row.

// randomTables writes trades (ts, sym, price, size; some prices missing)
// and quotes (ts, sym, bid, ask) with strictly increasing ts (SQL has no
// sequence number to break ties by) into db, in segments small enough that
// the tables hold several, compressed by the writer.
func randomTables(t *testing.T, rng *rand.Rand, db string) (lo, hi int64) {
	// lo, hi: the first ts and the last ts of the shorter table.
	t.Helper()
	syms := []string{"AAPL", "MSFT", "IBM", "A_LONG_SYMBOL_NAME", "Z"}
	base := time.Date(2024, 1, 2, 14, 30, 0, 0, time.UTC).UnixNano()
	write := func(name string, schema *store.Schema, n int, fill func(row store.Row, i int)) {
		w, err := writer.Open(db, name, &writer.Options{Schema: schema, SegmentSize: 256 << 10})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]uint32, len(syms))
		for i, s := range syms {
			if ids[i], err = w.SymbolString(s); err != nil {
				t.Fatal(err)
			}
		}
		sym, _ := schema.Col("sym")
		row := w.NewRow()
		ts := base
		for i := 0; i < n; i++ {
			ts += 1 + rng.Int64N(2_000_000) // up to 2 ms apart, ns resolution
			row.SetTs(ts)
			row.SetSym(sym, ids[rng.IntN(len(ids))])
			fill(row, i)
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
		}
		w.Publish()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if hi == 0 || ts < hi {
			hi = ts // the end of the shorter table: windows hold rows of both
		}
	}
	trades := store.TickSchema()
	price, _ := trades.Col("price")
	size, _ := trades.Col("size")
	write("trades", trades, 20_000+rng.IntN(20_000), func(row store.Row, i int) {
		p := math.NaN()
		if rng.IntN(20) != 0 {
			p = float64(10000+rng.IntN(500)) / 100
		}
		row.SetF64(price, p)
		row.SetI64(size, int64(1+rng.IntN(10))*100)
	})
	quotes := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "bid", Type: store.TypeF64}, store.Column{Name: "ask", Type: store.TypeF64})
	bid, _ := quotes.Col("bid")
	ask, _ := quotes.Col("ask")
	write("quotes", quotes, 30_000+rng.IntN(10_000), func(row store.Row, i int) {
		b := float64(10000+rng.IntN(500)) / 100
		row.SetF64(bid, b)
		row.SetF64(ask, b+0.01*float64(1+rng.IntN(5)))
	})
	return base, hi
}

// window returns a random [from, to) inside [lo, hi], sometimes the whole.
func window(rng *rand.Rand, lo, hi int64) (int64, int64) {
	if rng.IntN(4) == 0 {
		return lo, hi + 1
	}
	a, b := lo+rng.Int64N(hi-lo), lo+rng.Int64N(hi-lo)
	return min(a, b), max(a, b) + 1
}

// f64 reads a nullable DOUBLE as tickdb prints it: NaN for NULL.
func f64(v sql.NullFloat64) float64 {
	if !v.Valid {
		return math.NaN()
	}
	return v.Float64
}

func sameF64(a, b float64) bool { return a == b || (a != a && b != b) }

func openTest(t *testing.T, db string) (*Engine, *reader.Reader, *reader.Reader) {
	t.Helper()
	e, err := Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	open := func(name string) *reader.Reader {
		r, err := reader.Open(db, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	return e, open("trades"), open("quotes")
}

// testSeed makes a differential test's random choices; -seed repeats a run.
func testSeed() uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	return uint64(time.Now().UnixNano())
}

var seedFlag = flag.Uint64("seed", 0, "the differential tests' seed (0: from the clock)")

func TestDifferentialBars(t *testing.T) {
	seed := testSeed()
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	db := t.TempDir()
	lo, hi := randomTables(t, rng, db)
	e, trades, _ := openTest(t, db)
	names, err := trades.SymbolNamer()
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 6; round++ {
		from, to := window(rng, lo, hi)
		interval := []time.Duration{time.Millisecond, 10 * time.Millisecond, time.Second, 7 * time.Microsecond}[rng.IntN(4)]
		sym := ""
		if rng.IntN(3) == 0 {
			sym = "MSFT"
		}
		type bar struct {
			n                              int64
			open, high, low, close, volume float64
		}
		want := map[string]bar{}
		_, err := query.Bars(context.Background(), trades, query.BarsQuery{Table: "trades", Sym: sym, From: from, To: to, HasFrom: true, HasTo: true, Interval: interval}, func(b *query.Bar) error {
			name, err := names(b.Sym)
			if err != nil {
				return err
			}
			want[fmt.Sprint(b.Ts, name)] = bar{b.Count, math.Float64frombits(b.Open), math.Float64frombits(b.High),
				math.Float64frombits(b.Low), math.Float64frombits(b.Close), float64(int64(b.Volume))}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// The docs' bars idiom (docs/SQL.md), over the index form.
		src := fmt.Sprintf("tickdb_range('trades', %d, %d)", from, to)
		if sym != "" {
			src = fmt.Sprintf("tickdb_sym('trades', '%s', %d, %d)", sym, from, to)
		}
		q := fmt.Sprintf(`SELECT epoch_ns(ts) // %[1]d * %[1]d AS bucket, sym, count(*),
			first(price ORDER BY ts) FILTER (WHERE price IS NOT NULL), max(price), min(price),
			last(price ORDER BY ts) FILTER (WHERE price IS NOT NULL), sum(size)
			FROM %[2]s GROUP BY ALL`, interval.Nanoseconds(), src)
		rows, err := e.DB().Query(q)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for rows.Next() {
			var bucket int64
			var name string
			var b bar
			var o, h, l, c sql.NullFloat64
			var v int64
			if err := rows.Scan(&bucket, &name, &b.n, &o, &h, &l, &c, &v); err != nil {
				t.Fatal(err)
			}
			b.open, b.high, b.low, b.close, b.volume = f64(o), f64(h), f64(l), f64(c), float64(v)
			key := fmt.Sprint(bucket, name)
			w, ok := want[key]
			if !ok {
				t.Fatalf("round %d (%s): SQL bar %s %+v that tickdb bars has not", round, src, key, b)
			}
			if w.n != b.n || !sameF64(w.open, b.open) || !sameF64(w.high, b.high) || !sameF64(w.low, b.low) ||
				!sameF64(w.close, b.close) || w.volume != b.volume {
				t.Fatalf("round %d: bar %s: SQL %+v, tickdb %+v", round, key, b, w)
			}
			got++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if got != len(want) || got == 0 {
			t.Fatalf("round %d: SQL %d bars, tickdb %d", round, got, len(want))
		}
	}
}

func TestDifferentialLatest(t *testing.T) {
	seed := testSeed()
	rng := rand.New(rand.NewPCG(seed, 2))
	t.Logf("seed %d", seed)
	db := t.TempDir()
	lo, hi := randomTables(t, rng, db)
	e, trades, _ := openTest(t, db)
	price, _ := trades.Schema().Col("price")
	size, _ := trades.Schema().Col("size")
	names, err := trades.SymbolNamer()
	if err != nil {
		t.Fatal(err)
	}
	sym, _ := trades.Schema().Col("sym")
	for round := 0; round < 6; round++ {
		at := lo + rng.Int64N(hi-lo+1)
		var want []string
		_, err := query.Latest(context.Background(), trades, query.LatestQuery{Table: "trades", At: at, HasAt: true}, func(row store.Row) error {
			name, err := names(row.Sym(sym))
			want = append(want, fmt.Sprint(row.Ts(), name, row.F64(price), row.I64(size)))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(want) // compared as sets: one row per symbol
		// LATEST ON ts PARTITION BY sym: in plain SQL (a scan), and through
		// the index (tickdb_latest).
		for _, q := range []string{
			fmt.Sprintf(`SELECT epoch_ns(ts), sym, price, size FROM trades
				WHERE ts <= make_timestamp_ns(%d) QUALIFY row_number() OVER (PARTITION BY sym ORDER BY ts DESC) = 1 ORDER BY sym`, at),
			fmt.Sprintf(`SELECT epoch_ns(ts), sym, price, size FROM tickdb_latest('trades', %d)`, at),
		} {
			rows, err := e.DB().Query(q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rows.Next() {
				var ts, sz int64
				var name string
				var p sql.NullFloat64
				if err := rows.Scan(&ts, &name, &p, &sz); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprint(ts, name, f64(p), sz))
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(want) || len(got) == 0 {
				t.Fatalf("round %d at %d: %s\nSQL    %v\ntickdb %v", round, at, q, got, want)
			}
		}
	}
}

func TestDifferentialAsOf(t *testing.T) {
	seed := testSeed()
	rng := rand.New(rand.NewPCG(seed, 3))
	t.Logf("seed %d", seed)
	db := t.TempDir()
	lo, hi := randomTables(t, rng, db)
	e, trades, quotes := openTest(t, db)
	ls, rs := trades.Schema(), quotes.Schema()
	lsym, _ := ls.Col("sym")
	price, _ := ls.Col("price")
	bid, _ := rs.Col("bid")
	ask, _ := rs.Col("ask")
	names, err := trades.SymbolNamer()
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 4; round++ {
		from, to := window(rng, lo, hi)
		var want []string
		_, err := query.AsOf(context.Background(), trades, quotes, query.AsOfQuery{Left: "trades", Right: "quotes", From: from, To: to, HasFrom: true, HasTo: true},
			func(l, r store.Row) error {
				name, err := names(l.Sym(lsym))
				if r == nil {
					want = append(want, fmt.Sprint(l.Ts(), name, l.F64(price), " - NaN NaN"))
				} else {
					want = append(want, fmt.Sprint(l.Ts(), name, l.F64(price), " ", r.Ts(), " ", r.F64(bid), " ", r.F64(ask)))
				}
				return err
			})
		if err != nil {
			t.Fatal(err)
		}
		// trades ← quotes: DuckDB's ASOF JOIN; the right side reads all of
		// quotes before to_ts (a match may be older than the window).
		rows, err := e.DB().Query(fmt.Sprintf(`SELECT epoch_ns(t.ts), t.sym, t.price, epoch_ns(q.ts), q.bid, q.ask
			FROM tickdb_range('trades', %[1]d, %[2]d) t
			ASOF LEFT JOIN tickdb_range('quotes', '-infinity', %[2]d) q ON t.sym = q.sym AND t.ts >= q.ts
			ORDER BY t.ts`, from, to))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var lts int64
			var rts sql.NullInt64
			var name string
			var p, b, a sql.NullFloat64
			if err := rows.Scan(&lts, &name, &p, &rts, &b, &a); err != nil {
				t.Fatal(err)
			}
			if !rts.Valid {
				got = append(got, fmt.Sprint(lts, name, f64(p), " - NaN NaN"))
			} else {
				got = append(got, fmt.Sprint(lts, name, f64(p), " ", rts.Int64, " ", f64(b), " ", f64(a)))
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("round %d [%d, %d): SQL %d rows, tickdb %d", round, from, to, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d row %d:\nSQL    %s\ntickdb %s", round, i, got[i], want[i])
			}
		}
	}
}
