package writer_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// TestPostingsEarlyClose: symbol queries (RangeSym, Latest) and verify
// over a table whose symbols skip many rows between theirs, so that their
// version 2 postings chunks close early (docs/FORMAT.md §7), against a
// brute-force model. A real table would need 2^24 rows between two of a
// symbol's; the writer here closes a chunk at 256 (SetPostMaxDelta), which
// readers need not know. Checked while the writer runs, after Close, and
// after a writer reopened the table (Reset over chunks closed early) and
// appended more.
func TestPostingsEarlyClose(t *testing.T) {
	tb := newWtTable(t)
	mod := func(o *writer.Options) {
		o.SegmentSize = 64 << 10
		writer.SetPostMaxDelta(o, 256)
	}
	w := tb.open(t, mod)
	names := []string{"DENSE", "EVERY300", "BURSTS", "TENTHENFAR", "RARE", "FIRSTONLY"}
	ids := tb.symbols(t, w, names...)
	rng := rand.New(rand.NewPCG(7, 7))
	// pick is row seq's symbol.
	pick := func(seq uint64) uint32 {
		switch {
		case seq == 3:
			return ids[5] // one row only, its chunk closed by no row
		case seq%300 == 7:
			return ids[1] // every row past the bound: a chunk each
		case seq%1000 < 20:
			return ids[2] // 20 rows, then 980 without
		case seq < 10 || seq == 25_000 || seq == 38_000:
			return ids[3] // ten rows, then far ones
		case rng.IntN(500) == 0:
			return ids[4]
		}
		return ids[0]
	}
	var syms []uint32
	appendRows := func(w *writer.Writer, n uint64) {
		r := tb.s.NewRow()
		for range n {
			seq := uint64(len(syms))
			id := pick(seq)
			tb.fill(r, seq, id)
			if got, err := w.Append(r); err != nil || got != seq {
				t.Fatalf("Append(%d) = %d, %v", seq, got, err)
			}
			syms = append(syms, id)
		}
		w.Publish()
	}
	check := func(when string) {
		t.Helper()
		r := tb.reader(t)
		defer r.Close()
		if r.Len() != uint64(len(syms)) {
			t.Fatalf("%s: %d rows, want %d", when, r.Len(), len(syms))
		}
		lastTs := wtTs(uint64(len(syms) - 1))
		windows := [][2]int64{{math.MinInt64, math.MaxInt64}, {wtTs(0), wtTs(1)}, {lastTs, lastTs + 1}}
		for range 40 {
			a := wtTs(uint64(rng.IntN(len(syms))))
			windows = append(windows, [2]int64{a, a + 1 + int64(rng.IntN(20_000))})
		}
		var it reader.Iter
		for _, id := range ids {
			for _, win := range windows {
				if err := r.RangeSym(win[0], win[1], id, &it); err != nil {
					t.Fatal(err)
				}
				var got []uint64
				for it.Next() {
					got = append(got, it.Seq())
					if it.Row().Sym(tb.sym) != id {
						t.Fatalf("%s: RangeSym(%v, %d) row %d has symbol %d", when, win, id, it.Seq(), it.Row().Sym(tb.sym))
					}
				}
				if it.Err() != nil {
					t.Fatalf("%s: RangeSym(%v, %d): %v", when, win, id, it.Err())
				}
				var want []uint64
				for seq, s := range syms {
					if ts := wtTs(uint64(seq)); s == id && ts >= win[0] && ts < win[1] {
						want = append(want, uint64(seq))
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: RangeSym(%v, %s): %d rows %v, want %d %v", when, win, names[id], len(got), head(got), len(want), head(want))
				}
			}
		}
		var l reader.Latest
		row := tb.s.NewRow()
		ats := []int64{math.MinInt64, wtTs(0), wtTs(3), wtTs(9), lastTs, math.MaxInt64}
		for range 60 {
			ats = append(ats, wtTs(uint64(rng.IntN(len(syms)))))
		}
		for _, at := range ats {
			if err := r.Latest(at, &l); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				seq, ok, err := l.Sym(id, row)
				if err != nil {
					t.Fatalf("%s: Latest(%d).Sym(%s): %v", when, at, names[id], err)
				}
				want, wok := uint64(0), false
				for s := len(syms) - 1; s >= 0; s-- {
					if syms[s] == id && wtTs(uint64(s)) <= at {
						want, wok = uint64(s), true
						break
					}
				}
				if ok != wok || seq != want {
					t.Fatalf("%s: Latest(%d).Sym(%s) = %d %v, want %d %v", when, at, names[id], seq, ok, want, wok)
				}
			}
		}
	}

	appendRows(w, 30_000)
	settle(t, w)
	check("writer running")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed")
	tablecheck.Verify(t, tb.db, tb.name, uint64(len(syms)))

	w = tb.open(t, mod)
	appendRows(w, 10_000)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check("reopened and closed")
	tablecheck.Verify(t, tb.db, tb.name, uint64(len(syms)))
}

func head(s []uint64) []uint64 {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}
