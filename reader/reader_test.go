package reader_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// rtModel is a table as the tests wrote it: every row's bytes (check word
// included, as the writer seals it) and symbol, in sequence order.
type rtModel struct {
	s    *store.Schema
	rows []store.Row
	syms []uint32
	ts   []int64
}

func (m *rtModel) add(row store.Row, sym uint32) {
	r := append(store.Row(nil), row...)
	format.Seal(uint64(len(m.rows)), r)
	m.rows = append(m.rows, r)
	m.syms = append(m.syms, sym)
	m.ts = append(m.ts, row.Ts())
}

// seek is the brute-force SeekTime: the first seq with ts >= t.
func (m *rtModel) seek(t int64, n int) uint64 {
	return uint64(sort.Search(n, func(i int) bool { return m.ts[i] >= t }))
}

// rangeSeqs is the brute-force Range / RangeSym over the first n rows.
func (m *rtModel) rangeSeqs(from, to int64, sym int64, n int) []uint64 {
	var out []uint64
	for i := 0; i < n; i++ {
		if m.ts[i] >= from && m.ts[i] < to && (sym < 0 || m.syms[i] == uint32(sym)) {
			out = append(out, uint64(i))
		}
	}
	return out
}

// rtTable is a table under test with its writer options.
type rtTable struct {
	db, live, name string
	opts           writer.Options
}

func newRtTable(t *testing.T, s *store.Schema, mod func(*writer.Options)) *rtTable {
	t.Helper()
	db, live := testutil.DB(t)
	tb := &rtTable{db: db, live: live, name: "t", opts: writer.Options{Schema: s, LiveDir: live, SegmentSize: 4096}}
	if mod != nil {
		mod(&tb.opts)
	}
	return tb
}

func (tb *rtTable) writer(t *testing.T) *writer.Writer {
	t.Helper()
	o := tb.opts
	w, err := writer.Open(tb.db, tb.name, &o)
	if err != nil {
		t.Fatalf("writer.Open: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func (tb *rtTable) reader(t *testing.T) *reader.Reader {
	t.Helper()
	r, err := reader.Open(tb.db, tb.name, nil)
	if err != nil {
		t.Fatalf("reader.Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func (tb *rtTable) dir() string { return filepath.Join(tb.db, tb.name) }

// rtFill writes n random rows for nsym symbols: ts non-decreasing with
// many ties, symbols drawn unevenly, every other column random. Fixed seed.
func rtFill(t *testing.T, w *writer.Writer, m *rtModel, n, nsym int, seed uint64) {
	t.Helper()
	if err := rtGen(w, m, n, nsym, seed); err != nil {
		t.Fatal(err)
	}
}

// rtGen is rtFill for goroutines other than the test's: it returns errors.
func rtGen(w *writer.Writer, m *rtModel, n, nsym int, seed uint64) error {
	s := w.Schema()
	rng := rand.New(rand.NewPCG(seed, 7))
	var ids []uint32
	for i := range nsym {
		id, err := w.SymbolString(fmt.Sprintf("SYM%d", i))
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	ts := int64(1_700_000_000_000_000_000)
	if len(m.ts) > 0 {
		ts = m.ts[len(m.ts)-1]
	}
	row := s.NewRow()
	for range n {
		ts += []int64{0, 0, 0, 1, 1, 2, 7, 1000}[rng.IntN(8)]
		sym := ids[min(rng.IntN(nsym+2), nsym-1)] // the last symbol is the busiest
		row.SetTs(ts)
		for i := 1; i < len(s.Cols); i++ {
			c := s.ColAt(i)
			switch c.Type {
			case store.TypeSym:
				row.SetSym(c, sym)
			case store.TypeF64:
				row.SetF64(c, rng.NormFloat64()*100)
			case store.TypeI64:
				row.SetI64(c, rng.Int64()-math.MaxInt64/2)
			case store.TypeBool:
				row.SetBool(c, rng.IntN(2) == 1)
			}
		}
		if _, err := w.Append(row); err != nil {
			return err
		}
		m.add(row, sym)
	}
	return nil
}

func tickBoolSchema() *store.Schema {
	return store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64}, store.Column{Name: "size", Type: store.TypeI64}, store.Column{Name: "buy", Type: store.TypeBool})
}

// rtCheckQueries compares every query against the model: Get of every
// row, SeekTime at every distinct ts and around it, Range and RangeSym
// over random and edge ranges. One Iter is reused throughout.
func rtCheckQueries(t *testing.T, r *reader.Reader, m *rtModel, nsym int) {
	t.Helper()
	n := int(r.Len())
	if n != len(m.rows) {
		t.Fatalf("reader Count %d, model %d", n, len(m.rows))
	}
	for seq := range n {
		row, err := r.Get(uint64(seq))
		if err != nil {
			t.Fatalf("Get(%d): %v", seq, err)
		}
		if !bytes.Equal(row, m.rows[seq]) {
			t.Fatalf("Get(%d) = %x, want %x", seq, row, m.rows[seq])
		}
	}
	if _, err := r.Get(uint64(n)); !errors.Is(err, reader.ErrNotVisible) {
		t.Fatalf("Get(%d) past the end: %v", n, err)
	}
	// SeekTime at every distinct ts, one below and one above it, and far out.
	probes := []int64{math.MinInt64, math.MaxInt64, m.ts[0] - 1_000_000, m.ts[n-1] + 1_000_000}
	for i, ts := range m.ts[:n] {
		if i == 0 || ts != m.ts[i-1] {
			probes = append(probes, ts-1, ts, ts+1)
		}
	}
	for _, p := range probes {
		got, err := r.SeekTime(p)
		if err != nil {
			t.Fatalf("SeekTime(%d): %v", p, err)
		}
		if want := m.seek(p, n); got != want {
			t.Fatalf("SeekTime(%d) = %d, want %d", p, got, want)
		}
	}
	// Ranges: random, plus the edges.
	rng := rand.New(rand.NewPCG(uint64(n), 3))
	type span struct{ from, to int64 }
	spans := []span{
		{math.MinInt64, math.MaxInt64}, {m.ts[0], m.ts[n-1]}, {m.ts[0], m.ts[n-1] + 1},
		{m.ts[n/2], m.ts[n/2]}, {m.ts[n/2], m.ts[n/2] + 1}, {m.ts[n-1], m.ts[0]},
		{m.ts[n-1] + 1, math.MaxInt64}, {math.MinInt64, m.ts[0]},
	}
	for range 150 {
		a, b := m.ts[rng.IntN(n)]+int64(rng.IntN(3)-1), m.ts[rng.IntN(n)]+int64(rng.IntN(3)-1)
		spans = append(spans, span{min(a, b), max(a, b)})
	}
	var it reader.Iter
	collect := func(what string) []uint64 {
		var seqs []uint64
		for it.Next() {
			if !bytes.Equal(it.Row(), m.rows[it.Seq()]) {
				t.Fatalf("%s: row %d = %x, want %x", what, it.Seq(), it.Row(), m.rows[it.Seq()])
			}
			seqs = append(seqs, it.Seq())
		}
		if err := it.Err(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if it.Next() {
			t.Fatalf("%s: Next after the end", what)
		}
		return seqs
	}
	for _, sp := range spans {
		what := fmt.Sprintf("Range(%d, %d)", sp.from, sp.to)
		if err := r.Range(sp.from, sp.to, &it); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got, want := collect(what), m.rangeSeqs(sp.from, sp.to, -1, n); !slices.Equal(got, want) {
			t.Fatalf("%s = %d rows %v, want %d rows %v", what, len(got), short(got), len(want), short(want))
		}
		for id := range nsym {
			what := fmt.Sprintf("RangeSym(%d, %d, %d)", sp.from, sp.to, id)
			if err := r.RangeSym(sp.from, sp.to, uint32(id), &it); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got, want := collect(what), m.rangeSeqs(sp.from, sp.to, int64(id), n); !slices.Equal(got, want) {
				t.Fatalf("%s = %d rows %v, want %d rows %v", what, len(got), short(got), len(want), short(want))
			}
		}
	}
	// RangeSeq by sequence numbers.
	r.RangeSeq(uint64(n/3), uint64(n/2), &it)
	if got := collect("RangeSeq"); len(got) != n/2-n/3 || (len(got) > 0 && got[0] != uint64(n/3)) {
		t.Fatalf("RangeSeq = %v", short(got))
	}
	if err := r.RangeSym(0, 1, uint32(nsym+5), &it); !errors.Is(err, reader.ErrUnknownSymbol) {
		t.Fatalf("RangeSym of an unknown symbol: %v", err)
	}
}

func short(s []uint64) []uint64 {
	if len(s) > 8 {
		return append(append([]uint64(nil), s[:4]...), s[len(s)-4:]...)
	}
	return s
}

// TestQueriesMatchModel writes random rows with tiny segments (so ranges
// cross many segment boundaries and live slots are recycled) and checks
// every query against a brute-force model: while the writer is open (live
// and durable segments mixed), with a reader opened before the writer
// closed, and with a fresh reader after (durable files only).
func TestQueriesMatchModel(t *testing.T) {
	cases := []struct {
		name   string
		schema *store.Schema
		seg    int64 // SegmentSize
		stride int
		nsym   int
		rows   int
	}{
		// 32-byte rows, 128 per segment, a time-index entry every 8 rows.
		{"tick_stride8", store.TickSchema(), 4096, 8, 4, 1500},
		// 40-byte rows that straddle 4 KiB blocks, an entry for every row.
		{"row40_stride1", tickBoolSchema(), 8192, 1, 3, 1200},
		// 32 rows per segment, an entry every 256 rows (across segments).
		{"row40_stride256", tickBoolSchema(), 1600, 256, 5, 1800},
		{"one_symbol", store.TickSchema(), 4096, 64, 1, 700},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := newRtTable(t, tc.schema, func(o *writer.Options) { o.SegmentSize = tc.seg; o.TimeStride = tc.stride })
			w := tb.writer(t)
			m := &rtModel{s: tc.schema}
			rtFill(t, w, m, tc.rows, tc.nsym, 1)
			w.Publish()
			early := tb.reader(t)
			rtCheckQueries(t, early, m, tc.nsym)
			// More rows, some durable and some only published.
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			rtFill(t, w, m, tc.rows/3, tc.nsym, 2)
			w.Publish()
			rtCheckQueries(t, early, m, tc.nsym)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			rtCheckQueries(t, early, m, tc.nsym)
			rtCheckQueries(t, tb.reader(t), m, tc.nsym)
			if _, err := reader.Verify(tb.db, tb.name, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTail follows rows that a goroutine publishes later, with each idle
// strategy, across segment rolls, with and without a symbol filter.
func TestTail(t *testing.T) {
	type strat struct {
		name string
		idle func() reader.IdleStrategy
	}
	strats := []strat{
		{"busy_spin", func() reader.IdleStrategy { return reader.BusySpin{} }},
		{"yield", func() reader.IdleStrategy { return reader.Yield{} }},
		{"backoff", func() reader.IdleStrategy {
			return &reader.Backoff{Spins: 10, Yields: 10, MaxSleep: 200 * time.Microsecond}
		}},
		{"default", func() reader.IdleStrategy { return nil }},
	}
	const n = 3*128 + 77
	for _, st := range strats {
		for _, filter := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/filter=%v", st.name, filter), func(t *testing.T) {
				tb := newRtTable(t, store.TickSchema(), nil)
				w := tb.writer(t)
				m := &rtModel{s: store.TickSchema()}
				// Two rows before the tail starts: it must not return them.
				rtFill(t, w, m, 2, 3, 5)
				w.Publish()
				r := tb.reader(t)
				tail := r.Tail(r.Len(), st.idle())
				if tail.Next() != 2 {
					t.Fatalf("tail starts at %d", tail.Next())
				}
				if filter {
					tail.FilterSym(2)
				}
				if _, _, ok, err := tail.Poll(); ok || err != nil {
					t.Fatalf("Poll with nothing new = %v, %v", ok, err)
				}
				// The goroutine owns the writer and the model until it is
				// done; the reader checks each row's check word meanwhile
				// and compares with the model after.
				done := make(chan error, 1)
				go func() {
					rng := rand.New(rand.NewPCG(9, 9))
					for len(m.rows) < n {
						k := min(1+rng.IntN(20), n-len(m.rows))
						if err := rtGen(w, m, k, 3, uint64(len(m.rows))); err != nil {
							done <- err
							return
						}
						w.Publish()
						if rng.IntN(4) == 0 {
							time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
						}
					}
					done <- nil
				}()
				symCol, _ := r.Schema().Col("sym")
				wantSeqs := func(from, to uint64) []uint64 {
					var want []uint64
					for seq := from; seq < to; seq++ {
						if !filter || m.syms[seq] == 2 {
							want = append(want, seq)
						}
					}
					return want
				}
				var got, want []uint64
				writing := true
				deadline := time.Now().Add(20 * time.Second)
				for writing || len(got) < len(want) {
					if writing {
						select {
						case err := <-done:
							if err != nil {
								t.Fatal(err)
							}
							writing, want = false, wantSeqs(2, n)
						default:
						}
					}
					if time.Now().After(deadline) {
						if writing {
							<-done
						}
						t.Fatalf("tail returned %d rows in 20 s", len(got))
					}
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
					row, seq, err := tail.Wait(ctx)
					cancel()
					if errors.Is(err, context.DeadlineExceeded) {
						continue
					}
					if err == nil && (seq < 2 || seq >= n || len(got) > 0 && seq <= got[len(got)-1]) {
						err = fmt.Errorf("tail returned seq %d after %v", seq, short(got))
					}
					if err == nil && filter && row.Sym(symCol) != 2 {
						err = fmt.Errorf("filtered tail returned row %d of symbol %d", seq, row.Sym(symCol))
					}
					if err == nil && !format.Valid(seq, row) {
						err = fmt.Errorf("tail returned a row that fails its check at %d", seq)
					}
					if err != nil {
						if writing {
							<-done
						}
						t.Fatalf("after %d rows: %v", len(got), err)
					}
					got = append(got, seq)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("tail returned %d rows %v, want %d %v", len(got), short(got), len(want), short(want))
				}
				for _, seq := range got {
					row, err := r.Get(seq)
					if err != nil || !bytes.Equal(row, m.rows[seq]) {
						t.Fatalf("row %d: %v", seq, err)
					}
				}
				if _, _, ok, err := tail.Poll(); ok || err != nil {
					t.Fatalf("Poll at the end = %v, %v", ok, err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				// The tail goes on after the writer closed and a new one
				// appends.
				w2 := tb.writer(t)
				rtFill(t, w2, m, 40, 3, 77)
				w2.Publish()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				for _, wantSeq := range wantSeqs(n, n+40) {
					_, seq, err := tail.Wait(ctx)
					if err != nil || seq != wantSeq {
						t.Fatalf("tail after reopen: %d, %v; want %d", seq, err, wantSeq)
					}
				}
				w2.Close()
			})
		}
	}
}

func TestTailWaitCanceled(t *testing.T) {
	tb := newRtTable(t, store.TickSchema(), nil)
	w := tb.writer(t)
	r := tb.reader(t)
	for _, idle := range []reader.IdleStrategy{reader.BusySpin{}, reader.Yield{}, &reader.Backoff{}} {
		tail := r.Tail(0, idle)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		start := time.Now()
		_, _, err := tail.Wait(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%T: Wait on an empty table: %v", idle, err)
		}
		if d := time.Since(start); d > 10*time.Second { // a hang, not a timing
			t.Fatalf("%T: Wait took %v to notice the deadline", idle, d)
		}
	}
	w.Close()
}

// TestBackoff runs the strategy in a synctest bubble, where time moves only
// by sleeping, so the time each Idle took is exactly the sleep it chose:
// none while spinning or yielding, then MinSleep doubling to MaxSleep, and
// MinSleep again after Reset.
func TestBackoff(t *testing.T) {
	idle := func(b *reader.Backoff, empty int) time.Duration {
		start := time.Now()
		b.Idle(empty)
		return time.Since(start)
	}
	check := func(b *reader.Backoff, steps []int, want []time.Duration) {
		t.Helper()
		for i, empty := range steps {
			if got := idle(b, empty); got != want[i] {
				t.Errorf("%+v: Idle(%d) slept %v, want %v", *b, empty, got, want[i])
			}
		}
	}
	const us = time.Microsecond
	synctest.Test(t, func(t *testing.T) {
		b := &reader.Backoff{Spins: 2, Yields: 2, MinSleep: us, MaxSleep: 4 * us}
		check(b, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, []time.Duration{0, 0, 0, 0, us, 2 * us, 4 * us, 4 * us, 4 * us})
		b.Reset()
		check(b, []int{0, 100, 101}, []time.Duration{0, us, 2 * us})

		var zero reader.Backoff // defaults: 100 spins, 100 yields, 1 µs to 1 ms
		check(&zero, []int{0, 99, 150, 199}, []time.Duration{0, 0, 0, 0})
		want := []time.Duration{}
		for d := us; len(want) < 14; d = min(2*d, time.Millisecond) {
			want = append(want, d)
		}
		check(&zero, []int{200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213}, want)
		if want[len(want)-1] != time.Millisecond {
			t.Fatalf("the default cap was not reached: %v", want)
		}
	})
}

// TestReadAfterWriterClosed: rows a reader saw in the live slots stay
// readable, from the durable files, after the writer closes and its live
// directory is gone; a later writer's rows reach the same reader.
func TestReadAfterWriterClosed(t *testing.T) {
	tb := newRtTable(t, store.TickSchema(), nil)
	w := tb.writer(t)
	m := &rtModel{s: store.TickSchema()}
	rtFill(t, w, m, 5*128+30, 3, 11)
	w.Publish()
	r := tb.reader(t)
	rtCheckQueries(t, r, m, 3)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rtCheckQueries(t, r, m, 3)
	if r.Durable() != uint64(len(m.rows)) || r.WriterPid() != 0 {
		t.Fatalf("after Close: durable %d, writer pid %d", r.Durable(), r.WriterPid())
	}
	w2 := tb.writer(t)
	rtFill(t, w2, m, 200, 3, 12)
	w2.Publish()
	rtCheckQueries(t, r, m, 3)
	w2.Close()
	rtCheckQueries(t, r, m, 3)
}

func TestNotVisible(t *testing.T) {
	tb := newRtTable(t, store.TickSchema(), nil)
	w := tb.writer(t)
	r := tb.reader(t)
	cases := []struct {
		name string
		seq  uint64
	}{{"zero_on_empty", 0}, {"huge", math.MaxUint64}, {"next_segment", 128}}
	for _, tc := range cases {
		if _, err := r.Get(tc.seq); !errors.Is(err, reader.ErrNotVisible) {
			t.Fatalf("%s: Get(%d) = %v, want ErrNotVisible", tc.name, tc.seq, err)
		}
	}
	if s, err := r.SeekTime(0); err != nil || s != 0 {
		t.Fatalf("SeekTime on an empty table = %d, %v", s, err)
	}
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil || it.Next() || it.Err() != nil {
		t.Fatalf("Range on an empty table: %v, %v", err, it.Err())
	}
	m := &rtModel{}
	rtFill(t, w, m, 10, 2, 1)
	if _, err := r.Get(0); !errors.Is(err, reader.ErrNotVisible) {
		t.Fatalf("Get of an appended, unpublished row: %v", err)
	}
	w.Publish()
	if _, err := r.Get(9); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(10); !errors.Is(err, reader.ErrNotVisible) {
		t.Fatalf("Get(10): %v", err)
	}
	var row [32]byte
	if err := r.ReadRow(9, row[:]); err != nil || !bytes.Equal(row[:], m.rows[9]) {
		t.Fatalf("ReadRow: %v", err)
	}
	if err := r.ReadRow(10, row[:]); !errors.Is(err, reader.ErrNotVisible) {
		t.Fatalf("ReadRow(10): %v", err)
	}
	w.Close()
}

func TestSymbolsReader(t *testing.T) {
	tb := newRtTable(t, store.TickSchema(), nil)
	w := tb.writer(t)
	r := tb.reader(t)
	if r.Symbols() != 0 {
		t.Fatalf("Symbols = %d on a new table", r.Symbols())
	}
	names := []string{"AAPL", "MSFT", "with space", ""}
	for i, n := range names {
		if id, err := w.SymbolString(n); err != nil || id != uint32(i) {
			t.Fatal(err)
		}
	}
	// Symbols added after the reader opened are found.
	for i, n := range names {
		got, err := r.SymbolName(uint32(i))
		if err != nil || got != n {
			t.Fatalf("Symbol(%d) = %q, %v", i, got, err)
		}
		id, ok := r.SymbolID([]byte(n))
		if !ok || id != uint32(i) {
			t.Fatalf("SymbolID(%q) = %d, %v", n, id, ok)
		}
	}
	if _, err := r.SymbolName(99); !errors.Is(err, reader.ErrUnknownSymbol) {
		t.Fatalf("Symbol(99): %v", err)
	}
	if _, ok := r.SymbolID([]byte("NOPE")); ok {
		t.Fatal("SymbolID of an unknown name")
	}
	if r.Symbols() != len(names) {
		t.Fatalf("Symbols = %d", r.Symbols())
	}
	w.Close()
}

func TestOpenErrorsReader(t *testing.T) {
	db, _ := testutil.DB(t)
	cases := []struct {
		name string
		want error
	}{
		{"missing", store.ErrNoTable},
		{"..", store.ErrSchema},
		{"a/b", store.ErrSchema},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, "/", "_"), func(t *testing.T) {
			if _, err := reader.Open(db, tc.name, nil); !errors.Is(err, tc.want) {
				t.Fatalf("Open(%q): %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}

func TestReaderClose(t *testing.T) {
	tb := newRtTable(t, store.TickSchema(), nil)
	w := tb.writer(t)
	m := &rtModel{}
	rtFill(t, w, m, 300, 2, 1)
	w.Close()
	r, err := reader.Open(tb.db, tb.name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(299); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); !errors.Is(err, reader.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := r.Get(5); !errors.Is(err, reader.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

// TestSeekUnevenTimes checks SeekTime and the ranges on time indexes wide
// enough for tsEntry's interpolation (thousands of entries) over times it
// guesses badly: bursts of equal or adjacent timestamps between gaps of
// hours, a stretch whose gaps double, and timestamps near the ends of
// int64, where a difference of two of them overflows.
func TestSeekUnevenTimes(t *testing.T) {
	cases := []struct {
		name string
		gap  func(i int, rng *rand.Rand) int64
		base int64
	}{
		{"bursts", func(i int, rng *rand.Rand) int64 {
			if i%1000 == 999 {
				return 3600e9 + rng.Int64N(3600e9)
			}
			return int64(rng.IntN(2))
		}, 1_700_000_000_000_000_000},
		{"doubling", func(i int, _ *rand.Rand) int64 { return int64(1) << min(i/64, 50) }, 0},
		{"extremes", func(i int, _ *rand.Rand) int64 {
			if i == 3000 {
				return math.MaxInt64/2 + math.MaxInt64/4
			}
			return 1
		}, math.MinInt64 / 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := store.TickSchema()
			tb := newRtTable(t, s, func(o *writer.Options) { o.SegmentSize = 1 << 16; o.TimeStride = 1 })
			w := tb.writer(t)
			m := &rtModel{s: s}
			id, err := w.SymbolString("A")
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			row, ts := s.NewRow(), tc.base
			at := s.ColAt(s.SymCol)
			for i := range 6000 {
				ts += tc.gap(i, rng)
				row.SetTs(ts)
				row.SetSym(at, id)
				if _, err := w.Append(row); err != nil {
					t.Fatal(err)
				}
				m.add(row, id)
			}
			w.Publish()
			rtCheckQueries(t, tb.reader(t), m, 1)
		})
	}
}

// TestRangeSymWhileSlotsRecycle runs symbol windows over the newest rows
// while the writer fills two live slots of 128 rows over and over, so
// that rows are read from slots the writer is recycling. A row read from
// a slot recycled after Get checked it may hold another segment's bytes:
// the iterator must read it again, not report damage, and every row it
// yields (copied with ReadRow) must be the symbol's row it names.
func TestRangeSymWhileSlotsRecycle(t *testing.T) {
	s := store.TickSchema()
	tb := newRtTable(t, s, func(o *writer.Options) { o.LiveSlots, o.HotBytes = 2, -1 })
	w := tb.writer(t)
	var ids [3]uint32
	for i, n := range []string{"A", "B", "C"} {
		id, err := w.SymbolString(n)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	at := s.ColAt(s.SymCol)
	row := s.NewRow()
	appendRows := func(from, to int) error {
		for i := from; i < to; i++ {
			row.SetTs(int64(i))
			row.SetSym(at, ids[i%3])
			if _, err := w.Append(row); err != nil {
				return err
			}
		}
		w.Publish()
		return nil
	}
	if err := appendRows(0, 1024); err != nil {
		t.Fatal(err)
	}
	// The writer stops after 400,000 rows (3,125 segments) or a second.
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(time.Second)
		for i := 1024; i < 400_000 && time.Now().Before(deadline); i += 32 {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := appendRows(i, i+32); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var werr error
	writing := true
	t.Cleanup(func() { // before the writer's Close: stop its goroutine first
		close(stop)
		if writing {
			<-done
		}
	})
	r := tb.reader(t)
	var it reader.Iter
	got := s.NewRow()
	for q := 0; writing; q++ {
		select {
		case werr = <-done:
			writing = false
		default:
		}
		end := int64(r.Len())
		if err := r.RangeSym(end-384, end, ids[1], &it); err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			if err := it.ReadRow(got); err != nil {
				t.Fatalf("query %d: row %d: %v", q, it.Seq(), err)
			}
			if seq := it.Seq(); got.Ts() != int64(seq) || got.Sym(at) != ids[1] {
				t.Fatalf("query %d: row %d reads ts %d, symbol %d", q, seq, got.Ts(), got.Sym(at))
			}
		}
		if err := it.Err(); err != nil {
			t.Fatalf("query %d: %v", q, err)
		}
	}
	if werr != nil {
		t.Fatal(werr)
	}
}
