package query_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// barsSchema has a second sym column (the bars key is the first), f64 and
// i64 columns for the field, and f64 and i64 ones for the volume.
func barsSchema() *store.Schema {
	return store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "qty", Type: store.TypeF64},
		store.Column{Name: "lvl", Type: store.TypeI64},
		store.Column{Name: "venue", Type: store.TypeSym},
		store.Column{Name: "hot", Type: store.TypeBool},
	)
}

// randRow is one generated row of barsSchema.
type randRow struct {
	ts         int64
	sym, venue string
	price, qty float64
	size, lvl  int64
	hot        bool
	seq        uint64
}

// randTicks generates n rows: ts from below zero upwards with equal ts,
// small steps and rare long gaps; skewed symbols; some NaN prices and
// quantities.
func randTicks(rng *rand.Rand, n int, syms []string) []randRow {
	rows := make([]randRow, n)
	ts := -int64(rng.IntN(3e9)) - 1
	for i := range rows {
		switch p := rng.IntN(100); {
		case p < 20: // equal ts
		case p < 90:
			ts += int64(rng.IntN(1000)) + 1
		case p < 98:
			ts += int64(rng.IntN(int(50 * time.Millisecond)))
		default:
			ts += int64(rng.IntN(int(3 * time.Minute)))
		}
		s := syms[min(rng.IntN(len(syms)), rng.IntN(len(syms)))] // skewed to the first
		price := math.Round(rng.Float64()*10000) / 100
		if rng.IntN(15) == 0 {
			price = math.NaN()
		}
		qty := float64(rng.IntN(50)) / 4
		if rng.IntN(10) == 0 {
			qty = math.NaN()
		}
		rows[i] = randRow{ts: ts, sym: s, venue: syms[rng.IntN(len(syms))], price: price, qty: qty,
			size: int64(rng.IntN(1000)) - 100, lvl: int64(rng.IntN(2000)) - 1000, hot: rng.IntN(2) == 0}
	}
	return rows
}

// addRows appends rows to tb and publishes them.
func addRows(t testing.TB, tb *qtTable, rows []randRow) {
	t.Helper()
	for i := range rows {
		r := &rows[i]
		if len(tb.s.Cols) == 8 {
			tb.add(t, r.ts, r.sym, r.price, r.size, r.qty, r.lvl, r.venue, r.hot)
		} else {
			tb.add(t, r.ts, r.sym, r.price, r.size)
		}
		r.seq = uint64(i)
	}
	tb.publish()
}

// floorDiv is floor(a / b) for b > 0, written independently of Bars.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// bruteBar is a bar as the brute force computes it.
type bruteBar struct {
	ts                     int64
	sym                    string
	count                  int64
	open, high, low, close string // the values as %v prints them
	volume                 string
}

func (b bruteBar) String() string {
	return fmt.Sprintf("%d %s n=%d o=%s h=%s l=%s c=%s v=%s", b.ts, b.sym, b.count, b.open, b.high, b.low, b.close, b.volume)
}

// bruteBars computes the bars of rows by brute force: group by (bucket,
// symbol) in order of first appearance.
func bruteBars(rows []randRow, q query.BarsQuery) []bruteBar {
	type acc struct {
		ts  int64
		sym string
		n   int64
		fs  []float64 // f64 field values, NaN dropped
		is  []int64
		vf  float64
		vi  int64
	}
	var out []*acc
	idx := map[[2]any]*acc{}
	iv := int64(q.Interval)
	for _, r := range rows {
		if (q.HasFrom && r.ts < q.From) || (q.HasTo && r.ts >= q.To) || (q.Sym != "" && r.sym != q.Sym) {
			continue
		}
		b := floorDiv(r.ts, iv) * iv
		k := [2]any{b, r.sym}
		a := idx[k]
		if a == nil {
			a = &acc{ts: b, sym: r.sym}
			idx[k] = a
			out = append(out, a)
		}
		a.n++
		switch q.Field {
		case "", "price":
			if !math.IsNaN(r.price) {
				a.fs = append(a.fs, r.price)
			}
		case "qty":
			if !math.IsNaN(r.qty) {
				a.fs = append(a.fs, r.qty)
			}
		case "size":
			a.is = append(a.is, r.size)
		case "lvl":
			a.is = append(a.is, r.lvl)
		}
		switch q.Volume {
		case "", "size":
			a.vi += r.size
		case "lvl":
			a.vi += r.lvl
		case "qty":
			if !math.IsNaN(r.qty) {
				a.vf += r.qty
			}
		case "price":
			if !math.IsNaN(r.price) {
				a.vf += r.price
			}
		}
	}
	// Bars come bucket by bucket: stable-sort by bucket (they appear in
	// bucket order already, as ts only goes up).
	var bars []bruteBar
	for _, a := range out {
		b := bruteBar{ts: a.ts, sym: a.sym, count: a.n}
		isF := q.Field == "" || q.Field == "price" || q.Field == "qty"
		switch {
		case isF && len(a.fs) == 0:
			b.open, b.high, b.low, b.close = "NaN", "NaN", "NaN", "NaN"
		case isF:
			lo, hi := a.fs[0], a.fs[0]
			for _, v := range a.fs {
				lo, hi = min(lo, v), max(hi, v)
			}
			b.open, b.high, b.low, b.close = fmt.Sprint(a.fs[0]), fmt.Sprint(hi), fmt.Sprint(lo), fmt.Sprint(a.fs[len(a.fs)-1])
		default:
			lo, hi := a.is[0], a.is[0]
			for _, v := range a.is {
				lo, hi = min(lo, v), max(hi, v)
			}
			b.open, b.high, b.low, b.close = fmt.Sprint(a.is[0]), fmt.Sprint(hi), fmt.Sprint(lo), fmt.Sprint(a.is[len(a.is)-1])
		}
		if q.Volume == "qty" || q.Volume == "price" {
			b.volume = fmt.Sprint(a.vf)
		} else {
			b.volume = fmt.Sprint(a.vi)
		}
		bars = append(bars, b)
	}
	return bars
}

// gotBars runs Bars and renders its bars like bruteBars.
func gotBars(t *testing.T, r *reader.Reader, q query.BarsQuery) []bruteBar {
	t.Helper()
	s := r.Schema()
	ft := s.Cols[s.Index(cmp(q.Field, "price"))].Type
	vt := s.Cols[s.Index(cmp(q.Volume, "size"))].Type
	val := func(t store.ColType, w uint64) string {
		if t == store.TypeF64 {
			return fmt.Sprint(math.Float64frombits(w))
		}
		return fmt.Sprint(int64(w))
	}
	var bars []bruteBar
	n, err := query.Bars(context.Background(), r, q, func(b *query.Bar) error {
		name, err := r.SymbolName(b.Sym)
		if err != nil {
			return err
		}
		bars = append(bars, bruteBar{ts: b.Ts, sym: name, count: b.Count, open: val(ft, b.Open), high: val(ft, b.High),
			low: val(ft, b.Low), close: val(ft, b.Close), volume: val(vt, b.Volume)})
		return nil
	})
	if err != nil {
		t.Fatalf("Bars(%+v): %v", q, err)
	}
	if n != int64(len(bars)) {
		t.Fatalf("Bars returned %d, passed %d", n, len(bars))
	}
	return bars
}

func cmp(a, def string) string {
	if a == "" {
		return def
	}
	return a
}

// Bars against a brute-force grouping of random rows: every interval
// (ones that do not divide a second, 1 ns, one wider than the data),
// field and volume type, symbol filter and range.
func TestBarsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	syms := []string{"AAPL", "MSFT", "GOOG", "BRK A", "X"}
	rows := randTicks(rng, 6000, syms)
	tb := newTable(t, barsSchema())
	addRows(t, tb, rows)
	r := tb.reader(t)
	intervals := []time.Duration{1, 7, time.Microsecond, 333_333, time.Millisecond, 700 * time.Millisecond,
		time.Second, 1300 * time.Millisecond, time.Minute, time.Hour, 24 * time.Hour, math.MaxInt64}
	fields := [][2]string{{"", ""}, {"qty", "qty"}, {"lvl", "lvl"}, {"size", "price"}}
	cases := 0
	for _, iv := range intervals {
		for _, fv := range fields {
			for _, sym := range []string{"", "AAPL", "X", "NOPE"} {
				q := query.BarsQuery{Table: "ticks", Sym: sym, Interval: iv, Field: fv[0], Volume: fv[1]}
				switch rng.IntN(4) {
				case 1:
					q.From, q.HasFrom = rows[rng.IntN(len(rows))].ts, true
				case 2:
					q.To, q.HasTo = rows[rng.IntN(len(rows))].ts, true
				case 3:
					q.From, q.HasFrom = rows[rng.IntN(len(rows)/2)].ts, true
					q.To, q.HasTo = rows[len(rows)/2+rng.IntN(len(rows)/2)].ts+int64(rng.IntN(3)), true
				}
				want := bruteBars(rows, q)
				got := gotBars(t, r, q)
				if len(got) != len(want) {
					t.Fatalf("%+v: %d bars, want %d", q, len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%+v: bar %d:\n got %v\nwant %v", q, i, got[i], want[i])
					}
				}
				cases++
			}
		}
	}
	t.Logf("%d queries over %d rows", cases, len(rows))
}

// Buckets at the ends of int64: the floor of MinInt64 is out of range
// (its bucket starts at MinInt64), rows stamped MaxInt64 are read with no
// To, and negative ts floor rather than truncate.
func TestBarsExtremes(t *testing.T) {
	tb := newTable(t, store.TickSchema())
	for _, ts := range []int64{math.MinInt64, math.MinInt64 + 5, -7, -1, 0, 1, 6, math.MaxInt64 - 1, math.MaxInt64} {
		tb.add(t, ts, "A", float64(ts%100), 1)
	}
	tb.publish()
	r := tb.reader(t)
	type b struct{ ts, n int64 }
	var got []b
	_, err := query.Bars(context.Background(), r, query.BarsQuery{Interval: 3}, func(x *query.Bar) error {
		got = append(got, b{x.Ts, x.Count})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// MinInt64 = -3074457345618258603*3 + 1, MaxInt64 = 3074457345618258602*3 + 1.
	want := []b{{math.MinInt64, 1}, {math.MinInt64 + 5, 1}, {-9, 1}, {-3, 1}, {0, 2}, {6, 1},
		{math.MaxInt64 - 1, 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bars %v\nwant %v", got, want)
	}
}

func TestBarsErrors(t *testing.T) {
	tb := newTable(t, barsSchema())
	tb.add(t, 1, "A", 1.0, 1, 1.0, 1, "V", true)
	tb.publish()
	r := tb.reader(t)
	for _, c := range []struct {
		name string
		q    query.BarsQuery
		want string
	}{
		{"zero interval", query.BarsQuery{}, "interval 0s is not positive"},
		{"negative interval", query.BarsQuery{Interval: -time.Second}, "not positive"},
		{"no such field", query.BarsQuery{Interval: 1, Field: "px"}, `no column "px"`},
		{"bool field", query.BarsQuery{Interval: 1, Field: "hot"}, `field column "hot" is bool, not f64 or i64`},
		{"sym volume", query.BarsQuery{Interval: 1, Volume: "venue"}, `volume column "venue" is sym`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := query.Bars(context.Background(), r, c.q, func(*query.Bar) error { return nil })
			if !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want ErrBadQuery with %q", err, c.want)
			}
		})
	}
	// An error from fn ends the run with it.
	boom := errors.New("boom")
	if _, err := query.Bars(context.Background(), r, query.BarsQuery{Interval: 1}, func(*query.Bar) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("fn error: %v", err)
	}
	// A cancelled context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := query.Bars(ctx, r, query.BarsQuery{Interval: 1}, func(*query.Bar) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Without a sym column, all rows are one series; a sym filter on such a
// table is an error.
func TestBarsNoSymColumn(t *testing.T) {
	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "price", Type: store.TypeF64}, store.Column{Name: "size", Type: store.TypeI64})
	tb := newTable(t, s)
	tb.add(t, 10, 1.0, 5)
	tb.add(t, 15, 3.0, 5)
	tb.add(t, 25, 2.0, 1)
	tb.publish()
	r := tb.reader(t)
	var buf bytes.Buffer
	q := query.BarsQuery{Table: "ticks", Interval: 10}
	enc, err := query.NewBarsEncoder(&buf, query.FormatCSV, query.TsNs, r, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := query.RunBars(context.Background(), r, q, enc); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "ts,open,high,low,close,volume,count\n10,1,3,1,3,10,2\n20,2,2,2,2,1,1\n"; buf.String() != want {
		t.Errorf("csv %q, want %q", buf.String(), want)
	}
	q.Sym = "A"
	if _, err := query.Bars(context.Background(), r, q, func(*query.Bar) error { return nil }); !errors.Is(err, query.ErrBadQuery) {
		t.Errorf("sym on a table without sym column: %v", err)
	}
}

// SeqEnd leaves out the rows published from it on.
func TestBarsSeqEnd(t *testing.T) {
	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "price", Type: store.TypeF64}, store.Column{Name: "size", Type: store.TypeI64})
	tb := newTable(t, s)
	tb.add(t, 10, 1.0, 5) // seq 0
	tb.add(t, 15, 3.0, 5) // seq 1
	tb.add(t, 25, 2.0, 1) // seq 2
	tb.add(t, 27, 9.0, 7) // seq 3
	tb.publish()
	r := tb.reader(t)
	for _, tc := range []struct {
		end  uint64
		has  bool
		want string
	}{
		{0, false, "10 1 3 1 3 10 2|20 2 9 2 9 8 2"},
		{4, true, "10 1 3 1 3 10 2|20 2 9 2 9 8 2"},
		{3, true, "10 1 3 1 3 10 2|20 2 2 2 2 1 1"},
		{2, true, "10 1 3 1 3 10 2"},
		{0, true, ""},
	} {
		var got []string
		q := query.BarsQuery{Table: "ticks", Interval: 10, SeqEnd: tc.end, HasSeqEnd: tc.has}
		if _, err := query.Bars(context.Background(), r, q, func(b *query.Bar) error {
			got = append(got, fmt.Sprintf("%d %g %g %g %g %d %d", b.Ts, math.Float64frombits(b.Open), math.Float64frombits(b.High),
				math.Float64frombits(b.Low), math.Float64frombits(b.Close), int64(b.Volume), b.Count))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if g := strings.Join(got, "|"); g != tc.want {
			t.Errorf("SeqEnd %d (%v): %q, want %q", tc.end, tc.has, g, tc.want)
		}
	}
}

// The encoders of bars in every format, for one symbol and for all.
func TestBarsEncode(t *testing.T) {
	tb := newTable(t, store.TickSchema())
	tb.add(t, T0, "AAPL", 10.0, 100)
	tb.add(t, T0+10e9, "MSFT", 50.0, 7)
	tb.add(t, T0+20e9, "AAPL", 12.5, 200)
	tb.add(t, T0+30e9, "AAPL", math.NaN(), 5)
	tb.add(t, T0+45e9, "AAPL", 9.0, 1)
	tb.publish()
	r := tb.reader(t)
	// T0 is 22:13:20: the minute buckets start at 22:13:00 and 22:14:00.
	for _, c := range []struct {
		sym  string
		f    query.Format
		tsf  query.TsFormat
		want string
	}{
		{"AAPL", query.FormatCSV, query.TsRFC3339, `ts,open,high,low,close,volume,count
2023-11-14T22:13:00.000000000Z,10,12.5,10,12.5,305,3
2023-11-14T22:14:00.000000000Z,9,9,9,9,1,1
`},
		{"AAPL", query.FormatJSON, query.TsNs, `{"ts":1699999980000000000,"open":10,"high":12.5,"low":10,"close":12.5,"volume":305,"count":3}
{"ts":1700000040000000000,"open":9,"high":9,"low":9,"close":9,"volume":1,"count":1}
`},
		{"AAPL", query.FormatILP, query.TsNs, `ticks_bars,sym=AAPL open=10,high=12.5,low=10,close=12.5,volume=305i,count=3i 1699999980000000000
ticks_bars,sym=AAPL open=9,high=9,low=9,close=9,volume=1i,count=1i 1700000040000000000
`},
		{"AAPL", query.FormatTable, query.TsRFC3339, `ts                                        open            high             low           close        volume         count
2023-11-14T22:13:00.000000000Z              10            12.5              10            12.5           305             3
2023-11-14T22:14:00.000000000Z               9               9               9               9             1             1
`},
		{"", query.FormatCSV, query.TsNs, `ts,sym,open,high,low,close,volume,count
1699999980000000000,AAPL,10,12.5,10,12.5,305,3
1699999980000000000,MSFT,50,50,50,50,7,1
1700000040000000000,AAPL,9,9,9,9,1,1
`},
	} {
		t.Run(c.sym+"/"+c.f.String(), func(t *testing.T) {
			var buf bytes.Buffer
			q := query.BarsQuery{Table: "ticks", Sym: c.sym, Interval: time.Minute}
			enc, err := query.NewBarsEncoder(&buf, c.f, c.tsf, r, q)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := query.RunBars(context.Background(), r, q, enc); err != nil {
				t.Fatal(err)
			}
			if err := enc.Close(); err != nil {
				t.Fatal(err)
			}
			if buf.String() != c.want {
				t.Errorf("output:\n%s\nwant:\n%s", buf.String(), c.want)
			}
		})
	}
}

// Bars allocates nothing per row: a second run over a table several
// times the size allocates as much as a run over a small one, over raw
// segments and over compressed ones.
func TestBarsAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	// One kind of segment at a time: a run's fixed allocations depend on
	// the kinds it reads (a symbol's postings for raw segments, decode
	// buffers for compressed ones), and background compaction would
	// leave a mix that differs from run to run. Raw first, then the
	// table compacted whole.
	tb := newTableWith(t, store.TickSchema(), func(o *writer.Options) { o.CompactAge = -1 })
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		tb.add(t, int64(i)*1000, []string{"A", "B", "C"}[rng.IntN(3)], float64(rng.IntN(100)), 1)
	}
	tb.publish()
	tb.close(t) // an idle writer's flusher still allocates, and AllocsPerRun counts the process
	check := func(layout string, r *reader.Reader) {
		t.Helper()
		nop := func(*query.Bar) error { return nil }
		measure := func(q query.BarsQuery) float64 {
			return leastAllocs(20, func() {
				if _, err := query.Bars(context.Background(), r, q, nop); err != nil {
					t.Fatal(err)
				}
			})
		}
		small := measure(query.BarsQuery{Interval: time.Second, HasTo: true, To: 1000 * 1000})
		big := measure(query.BarsQuery{Interval: time.Second})
		if big > small {
			t.Errorf("%s: 20000 rows: %v allocations per run, 1000 rows: %v", layout, big, small)
		}
		oneSmall := measure(query.BarsQuery{Interval: time.Second, Sym: "B", HasTo: true, To: 1000 * 1000})
		one := measure(query.BarsQuery{Interval: time.Second, Sym: "B"})
		if one > oneSmall {
			t.Errorf("%s: one symbol: %v allocations per run, over 1000 rows: %v", layout, one, oneSmall)
		}
	}
	check("raw", tb.reader(t))
	w, err := writer.Open(tb.db, tb.name, &writer.Options{LiveDir: tb.live})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	check("compressed", tb.reader(t))
}
