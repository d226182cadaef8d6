package writer_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// TestAheadStoresTheSame: the same rows over more symbols than
// AheadMinSymbols appended to one table plainly and to another with each
// row's symbol pushed to an Ahead AheadRows rows before (as the server
// does, with some wrong, unknown and missing names among them, and a
// Reset every batch), through many segment rolls and so checkpoints
// (after which the look-ahead's table maps its post.idx pages again),
// read back identical: every row, and every sampled symbol's rows by
// RangeSym against the model; both verify.
func TestAheadStoresTheSame(t *testing.T) {
	const nsyms = writer.AheadMinSymbols + 5000
	const nrows = 120_000
	const batch = 1000
	names := make([][]byte, nsyms)
	for i := range names {
		names[i] = fmt.Appendf(nil, "QBCD%06dC%08d", i, i*7)
	}
	rng := rand.New(rand.NewPCG(11, 11))
	syms := make([]uint32, nrows)
	for i := range syms {
		if i%3 == 0 {
			syms[i] = uint32(rng.IntN(nsyms))
		} else {
			syms[i] = uint32(rng.IntN(100)) // a busy few, as in real data
		}
	}
	mod := func(o *writer.Options) { o.SegmentSize = 64 << 10 }
	tables := [2]*wtTable{newWtTable(t), newWtTable(t)}
	for k, tb := range tables {
		w := tb.open(t, mod)
		for i, n := range names {
			if id, err := w.Symbol(n); err != nil || id != uint32(i) {
				t.Fatalf("Symbol(%s) = %d, %v", n, id, err)
			}
		}
		var a *writer.Ahead
		if k == 1 {
			a = w.Ahead()
		}
		row := tb.s.NewRow()
		for from := 0; from < nrows; from += batch {
			end := min(from+batch, nrows)
			if a != nil && !a.Useful() {
				t.Fatalf("Ahead not useful at %d symbols", nsyms)
			}
			q := from
			for seq := from; seq < end; seq++ {
				for ; a != nil && q < end && q < seq+writer.AheadRows; q++ {
					switch q % 97 {
					case 5:
						a.Push(nil)
					case 6:
						a.Push([]byte("NOT-A-SYMBOL"))
					case 7:
						a.Push(names[(q*13)%nsyms]) // a wrong guess
					default:
						a.Push(names[syms[q]])
					}
				}
				tb.fill(row, uint64(seq), syms[seq])
				if got, err := w.Append(row); err != nil || got != uint64(seq) {
					t.Fatalf("table %d: Append(%d) = %d, %v", k, seq, got, err)
				}
			}
			if a != nil {
				a.Reset()
			}
			w.Publish()
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rs := [2]*reader.Reader{tables[0].reader(t), tables[1].reader(t)}
	if rs[0].Len() != nrows || rs[1].Len() != nrows {
		t.Fatalf("rows %d and %d, want %d", rs[0].Len(), rs[1].Len(), nrows)
	}
	for seq := range uint64(nrows) {
		a, err := rs[0].Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rs[1].Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("row %d differs: %x with Ahead, %x without", seq, b, a)
		}
		tables[0].checkRow(t, a, seq, syms[seq])
	}
	sample := []uint32{0, 1, 99, nsyms - 1}
	for range 40 {
		sample = append(sample, uint32(rng.IntN(nsyms)))
	}
	var it reader.Iter
	for _, id := range sample {
		var want []uint64
		for seq, s := range syms {
			if s == id {
				want = append(want, uint64(seq))
			}
		}
		for k, r := range rs {
			if err := r.RangeSym(wtTs(0), wtTs(nrows)+1, id, &it); err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for it.Next() {
				got = append(got, it.Seq())
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
			if !slices.Equal(got, want) {
				t.Fatalf("table %d: symbol %d has rows %v, want %v", k, id, head(got), head(want))
			}
		}
	}
	tables[0].verify(t)
	tables[1].verify(t)
}

// TestAheadAllocs: pushing a row's symbol and appending it allocate
// nothing, and neither does Reset.
func TestAheadAllocs(t *testing.T) {
	tb, w, ids := allocWriter(t)
	a := w.Ahead()
	names := [][]byte{[]byte("AAA"), []byte("BBB"), []byte("CCC"), []byte("DDD")}
	row := tb.s.NewRow()
	seq := w.Len()
	allocs := testing.AllocsPerRun(5000, func() {
		a.Push(names[(seq+writer.AheadRows)%4])
		tb.fill(row, seq, ids[seq%4])
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		if seq++; seq%64 == 0 {
			a.Reset()
		}
	})
	if allocs != 0 {
		t.Errorf("Push and Append allocate %v times per row", allocs)
	}
	if w.Len() >= allocSegRows {
		t.Fatalf("measurement crossed a segment roll (%d rows)", w.Len())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
