package query_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// lines runs q in csv with ns timestamps and returns the rows' lines
// (no header).
func lines(t *testing.T, r *reader.Reader, q query.Query) []string {
	t.Helper()
	out, n := run(t, r, q, query.FormatCSV, query.TsNs)
	l := strings.Split(strings.TrimSuffix(out, "\n"), "\n")[1:]
	if int64(len(l)) != n {
		t.Fatalf("%d lines, Run returned %d", len(l), n)
	}
	return l
}

// tsList is the ts field of each line.
func tsList(l []string) string {
	var ts []string
	for _, s := range l {
		ts = append(ts, s[:strings.IndexByte(s, ',')])
	}
	return strings.Join(ts, " ")
}

// smallTable: ts 10, 20, 20, 30, 40, 50 with symbols A B A C B A.
func smallTable(t *testing.T) *reader.Reader {
	t.Helper()
	tb := newTable(t, store.TickSchema())
	for i, r := range []struct {
		ts  int64
		sym string
	}{{10, "A"}, {20, "B"}, {20, "A"}, {30, "C"}, {40, "B"}, {50, "A"}} {
		tb.add(t, r.ts, r.sym, float64(i), i)
	}
	tb.publish()
	return tb.reader(t)
}

func TestRunSelection(t *testing.T) {
	r := smallTable(t)
	for _, c := range []struct {
		name string
		q    query.Query
		want string
	}{
		{"all", query.Query{}, "10 20 20 30 40 50"},
		{"from_inclusive", query.Query{From: 20, HasFrom: true}, "20 20 30 40 50"},
		{"to_exclusive", query.Query{To: 40, HasTo: true}, "10 20 20 30"},
		{"from_to", query.Query{From: 20, HasFrom: true, To: 30, HasTo: true}, "20 20"},
		{"between_rows", query.Query{From: 11, HasFrom: true, To: 39, HasTo: true}, "20 20 30"},
		{"from_eq_to", query.Query{From: 30, HasFrom: true, To: 30, HasTo: true}, ""},
		{"from_after_to", query.Query{From: 40, HasFrom: true, To: 20, HasTo: true}, ""},
		{"before_all", query.Query{To: 10, HasTo: true}, ""},
		{"after_all", query.Query{From: 51, HasFrom: true}, ""},
		{"zero_from_is_a_time", query.Query{From: 0, HasFrom: true, To: 0, HasTo: false}, "10 20 20 30 40 50"},
		{"limit", query.Query{Limit: 2}, "10 20"},
		{"limit_over", query.Query{Limit: 100}, "10 20 20 30 40 50"},
		{"limit_from", query.Query{From: 20, HasFrom: true, Limit: 3}, "20 20 30"},
		{"sym", query.Query{Sym: "A"}, "10 20 50"},
		{"sym_from_to", query.Query{Sym: "A", From: 20, HasFrom: true, To: 50, HasTo: true}, "20"},
		{"sym_limit", query.Query{Sym: "B", Limit: 1}, "20"},
		{"sym_none_in_range", query.Query{Sym: "C", From: 31, HasFrom: true}, ""},
		{"unknown_sym", query.Query{Sym: "ZZZ"}, ""},
		{"unknown_sym_prefix", query.Query{Sym: "AA"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := lines(t, r, c.q)
			if got := tsList(l); got != c.want {
				t.Errorf("ts %q, want %q", got, c.want)
			}
			if c.q.Sym != "" {
				for _, s := range l {
					if strings.Split(s, ",")[1] != c.q.Sym {
						t.Errorf("row %q is not symbol %s", s, c.q.Sym)
					}
				}
			}
		})
	}
}

func TestRunBadQuery(t *testing.T) {
	r := smallTable(t)
	var buf bytes.Buffer
	enc := query.NewEncoder(&buf, query.FormatCSV, query.TsNs, r.Schema(), "ticks", r.SymbolName)
	if _, err := query.Run(context.Background(), r, query.Query{Limit: -1}, enc); !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), "limit -1") {
		t.Errorf("negative limit: %v", err)
	}

	// A symbol filter on a table without a sym column.
	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "v", Type: store.TypeF64})
	tb := newTable(t, s)
	tb.add(t, 1, 1.0)
	tb.publish()
	r2 := tb.reader(t)
	enc2 := query.NewEncoder(&buf, query.FormatCSV, query.TsNs, s, "ticks", nil)
	if _, err := query.Run(context.Background(), r2, query.Query{Table: "ticks", Sym: "A"}, enc2); !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), "no sym column") {
		t.Errorf("sym without sym column: %v", err)
	}
	// An encoder for another schema.
	if _, err := query.Run(context.Background(), r2, query.Query{}, enc); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("schema mismatch: %v", err)
	}
	// A closed reader.
	r3, err := reader.Open(tb.db, tb.name, nil)
	if err != nil {
		t.Fatal(err)
	}
	r3.Close()
	if _, err := query.Run(context.Background(), r3, query.Query{Table: "ticks", Sym: "A"}, enc2); !errors.Is(err, reader.ErrClosed) {
		t.Errorf("closed reader: %v", err)
	}
}

// Rows stamped exactly MaxInt64 (the largest ts) come with no To, and
// with To = MaxInt64 (reader.ToEnd: the end of the table), but not with
// To = MaxInt64-1; with a symbol filter too.
func TestRunMaxTs(t *testing.T) {
	tb := newTable(t, store.TickSchema())
	tb.add(t, 5, "A", 1.0, 1)
	tb.add(t, math.MaxInt64-1, "B", 2.0, 2)
	tb.add(t, math.MaxInt64, "A", 3.0, 3)
	tb.add(t, math.MaxInt64, "B", 4.0, 4)
	tb.add(t, math.MaxInt64, "A", 5.0, 5)
	tb.publish()
	r := tb.reader(t)
	top := strconv.FormatInt(math.MaxInt64, 10)
	for _, c := range []struct {
		q    query.Query
		want []string
	}{
		{query.Query{}, []string{"5", "9223372036854775806", top, top, top}},
		{query.Query{Limit: 3}, []string{"5", "9223372036854775806", top}},
		{query.Query{To: math.MaxInt64, HasTo: true}, []string{"5", "9223372036854775806", top, top, top}},
		{query.Query{To: math.MaxInt64 - 1, HasTo: true}, []string{"5"}},
		{query.Query{From: math.MaxInt64, HasFrom: true}, []string{top, top, top}},
		{query.Query{Sym: "A"}, []string{"5", top, top}},
		{query.Query{Sym: "A", Limit: 2}, []string{"5", top}},
		{query.Query{Sym: "B", From: 6, HasFrom: true}, []string{"9223372036854775806", top}},
		{query.Query{Sym: "A", To: math.MaxInt64, HasTo: true}, []string{"5", top, top}},
		{query.Query{Sym: "A", To: math.MaxInt64 - 1, HasTo: true}, []string{"5"}},
	} {
		if got, want := tsList(lines(t, r, c.q)), strings.Join(c.want, " "); got != want {
			t.Errorf("%s: ts %q, want %q", fmtQuery(c.q), got, want)
		}
	}
}

// qtRow is the model of one row of the random table.
type qtRow struct {
	ts    int64
	sym   string
	price float64
	size  int64
}

func (m qtRow) line() string {
	return strconv.FormatInt(m.ts, 10) + "," + m.sym + "," + strconv.FormatFloat(m.price, 'f', -1, 64) + "," + strconv.FormatInt(m.size, 10)
}

// Random queries over a table of 30 tiny segments (128 rows each, four
// live slots: sealed durable segments and live ones), with the writer
// open and closed, against a model: every selection in time order.
func TestRunModel(t *testing.T) {
	tb := newTable(t, store.TickSchema())
	rng := rand.New(rand.NewPCG(7, 11))
	syms := []string{"AAPL", "MSFT", "X,Y", "Q\"R", "rare"}
	var model []qtRow
	ts := int64(1000)
	for i := 0; i < 30*128+77; i++ {
		ts += int64(rng.IntN(3)) // many ties
		k := rng.IntN(len(syms) - 1)
		if rng.IntN(500) == 0 {
			k = len(syms) - 1
		}
		m := qtRow{ts, syms[k], float64(i)*0.25 + 1, int64(i * 3)}
		tb.add(t, m.ts, m.sym, m.price, m.size)
		model = append(model, m)
	}
	tb.publish()
	lastTs := ts
	check := func(t *testing.T, r *reader.Reader) {
		for i := 0; i < 300; i++ {
			var q query.Query
			if rng.IntN(3) > 0 {
				q.From, q.HasFrom = 900+rng.Int64N(lastTs-800), true
			}
			if rng.IntN(3) > 0 {
				q.To, q.HasTo = 900+rng.Int64N(lastTs-800), true
			}
			if rng.IntN(2) == 0 {
				q.Sym = syms[rng.IntN(len(syms))]
				if rng.IntN(10) == 0 {
					q.Sym = "nope"
				}
			}
			if rng.IntN(3) == 0 {
				q.Limit = 1 + rng.Int64N(200)
			}
			var want []string
			for _, m := range model {
				if (!q.HasFrom || m.ts >= q.From) && (!q.HasTo || m.ts < q.To) && (q.Sym == "" || m.sym == q.Sym) {
					want = append(want, m.line())
				}
				if q.Limit > 0 && int64(len(want)) == q.Limit {
					break
				}
			}
			var got []string
			for _, l := range lines(t, r, q) {
				// Back to the model's spelling: csv quotes X,Y and Q"R.
				l = strings.Replace(l, `"X,Y"`, "X,Y", 1)
				l = strings.Replace(l, `"Q""R"`, `Q"R`, 1)
				got = append(got, l)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s: %d rows, want %d\ngot  %.300q\nwant %.300q", fmtQuery(q), len(got), len(want), got, want)
			}
		}
	}
	t.Run("writer_open", func(t *testing.T) { check(t, tb.reader(t)) })
	tb.close(t)
	t.Run("writer_closed", func(t *testing.T) { check(t, tb.reader(t)) })
}

// cancelWriter cancels a context at its first write.
type cancelWriter struct{ cancel context.CancelFunc }

func (w cancelWriter) Write(p []byte) (int, error) {
	w.cancel()
	return len(p), nil
}

// A cancelled context stops Run within a few thousand rows.
func TestRunCancel(t *testing.T) {
	tb := newTable(t, store.TickSchema())
	for i := 0; i < 40000; i++ {
		tb.add(t, int64(i), "A", 1.0, i)
	}
	tb.publish()
	r := tb.reader(t)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	enc := query.NewEncoder(discard{}, query.FormatCSV, query.TsNs, r.Schema(), "ticks", r.SymbolName)
	if n, err := query.Run(ctx, r, query.Query{}, enc); n != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: %d rows, %v", n, err)
	}

	for _, sym := range []string{"", "A"} {
		ctx, cancel = context.WithCancel(context.Background())
		enc = query.NewEncoder(cancelWriter{cancel}, query.FormatCSV, query.TsNs, r.Schema(), "ticks", r.SymbolName)
		n, err := query.Run(ctx, r, query.Query{Sym: sym}, enc)
		if !errors.Is(err, context.Canceled) || n >= 10000 {
			t.Errorf("sym %q: cancelled at the first flush: %d rows, %v", sym, n, err)
		}
		cancel()
	}
}

// Queries while the writer appends (up to 40,000 rows, so that the
// reader's mappings stay bounded) and recycles its two live slots every
// 256 rows: every row out is whole and right (ts = size = price), in
// order, and nothing published before the query started is missing.
func TestRunWhileWriting(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.TickSchema()
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: s, LiveDir: live, SegmentSize: 4096, LiveSlots: 2, HotBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	sym, _ := s.Col("sym")
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	ids := make([]uint32, 3)
	for i, n := range []string{"A", "B", "C"} {
		if ids[i], err = w.SymbolString(n); err != nil {
			t.Fatal(err)
		}
	}
	row := s.NewRow()
	appendRows := func(from, to int) error {
		for i := from; i < to; i++ {
			row.SetTs(int64(i))
			row.SetSym(sym, ids[i%3])
			row.SetF64(price, float64(i))
			row.SetI64(size, int64(i))
			if _, err := w.Append(row); err != nil {
				return err
			}
			if i%16 == 0 {
				w.Publish()
			}
		}
		w.Publish()
		return nil
	}
	if err := appendRows(0, 1000); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	// On a failure below, the appending goroutine and the writer stop
	// before the temporary directory is removed.
	t.Cleanup(func() {
		select {
		case <-stop: // stopped by the test's end
		default:
			close(stop)
			<-done
		}
		w.Close() // a second Close is a no-op error
	})
	go func() {
		i := 1000
		for i < 40_000 {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := appendRows(i, i+64); err != nil {
				done <- err
				return
			}
			i += 64
		}
		done <- nil
	}()
	r, err := reader.Open(db, "ticks", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	queries := 200
	if testutil.Race {
		queries = 40 // each is ~20x slower
	}
	for k := 0; k < queries; k++ {
		q := query.Query{}
		if k%2 == 1 {
			q.Sym = "B"
		}
		if k%3 == 0 {
			q.From, q.HasFrom = int64(k*50), true
		}
		before := int64(r.Len())
		var buf bytes.Buffer
		enc := query.NewEncoder(&buf, query.FormatCSV, query.TsNs, s, "ticks", r.SymbolName)
		n, err := query.Run(context.Background(), r, q, enc)
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		prev := int64(-1)
		for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")[1:] {
			f := strings.Split(l, ",")
			ts, _ := strconv.ParseInt(f[0], 10, 64)
			if f[2] != f[0] || f[3] != f[0] || f[1] != []string{"A", "B", "C"}[ts%3] || ts <= prev {
				t.Fatalf("query %d: bad row %q after ts %d", k, l, prev)
			}
			if q.Sym != "" && f[1] != q.Sym {
				t.Fatalf("query %d: row %q is not %s", k, l, q.Sym)
			}
			prev = ts
		}
		first := int64(0)
		if q.HasFrom {
			first = q.From
		}
		want := before - first
		if q.Sym != "" {
			want = (before+1)/3 - (first+1)/3 // ts ≡ 1 (mod 3) in [first, before)
		}
		if n < want {
			t.Fatalf("query %d (%s): %d rows, want at least the %d published before it", k, fmtQuery(q), n, want)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
