package query_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// pipeTable writes n rows of every column type over 300 symbols (names
// that csv and json must quote or escape among them), a NaN every 7th
// price, into segments of 128 KiB, and returns the table.
func pipeTable(t *testing.T, n int) *qtTable {
	t.Helper()
	tb := newTableWith(t, allTypes(), func(o *writer.Options) { o.SegmentSize = 1 << 17 })
	for i := range n {
		price := float64(i) / 8
		if i%7 == 0 {
			price = math.NaN()
		}
		sym := fmt.Sprintf("S%03d", i%300)
		if i%300 == 17 {
			sym = `A,B "C"`
		}
		tb.add(t, T0+int64(i)*1_000_003, sym, price, int64(i)*-3, i%3 == 0, fmt.Sprintf("V%d", i%5))
	}
	tb.publish()
	return tb
}

// serial is q's output as one encoder on one goroutine writes it
// (RunFunc never starts a pipe).
func serial(t *testing.T, r *reader.Reader, q query.Query, f query.Format, tsf query.TsFormat) (string, int64) {
	t.Helper()
	var buf bytes.Buffer
	enc := query.NewEncoder(&buf, f, tsf, r.Schema(), "ticks", r.SymbolName)
	n, err := query.RunFunc(context.Background(), r, q, enc.Row)
	if err != nil {
		t.Fatalf("RunFunc(%+v): %v", q, err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String(), n
}

// Past PipeAfter rows Run encodes on the other cores: its output is byte
// for byte one encoder's, in every format, for whole-table and one-symbol
// queries, limits on either side of the switch and of a batch's end,
// over live, sealed and compacted segments.
func TestRunPipe(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	const n = 3*query.PipeAfter + 1234
	tb := pipeTable(t, n)
	queries := []query.Query{
		{},
		{Limit: query.PipeAfter - 1},
		{Limit: query.PipeAfter},
		{Limit: query.PipeAfter + 1},
		{Limit: query.PipeAfter + 2731},
		{From: T0 + 5_000*1_000_003, HasFrom: true, To: T0 + 40_000*1_000_003, HasTo: true},
		{Sym: "S005"},
	}
	check := func(t *testing.T, r *reader.Reader, queries []query.Query) {
		for _, f := range []query.Format{query.FormatCSV, query.FormatJSON, query.FormatILP, query.FormatTable} {
			for _, tsf := range []query.TsFormat{query.TsRFC3339, query.TsNs} {
				for _, q := range queries {
					want, wn := serial(t, r, q, f, tsf)
					got, gn := run(t, r, q, f, tsf)
					if gn != wn || got != want {
						i := 0
						for i < min(len(got), len(want)) && got[i] == want[i] {
							i++
						}
						t.Fatalf("format %v ts %v %s: %d rows, %d bytes; one encoder: %d rows, %d bytes; first difference at byte %d: %.80q, want %.80q",
							f, tsf, fmtQuery(q), gn, len(got), wn, len(want), i, got[i:], want[i:])
					}
				}
			}
		}
	}
	t.Run("raw", func(t *testing.T) { check(t, tb.reader(t), queries) })
	if _, err := tb.w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	// A whole symbol of compacted history is read by the column scan;
	// a symbol of 300 has too few rows for a pipe, so every symbol too.
	t.Run("compacted", func(t *testing.T) { check(t, tb.reader(t), queries[:2]) })
}

// failAfter takes n bytes, then fails every write.
type failAfter struct {
	buf bytes.Buffer
	n   int
}

var errFull = errors.New("disk full")

func (w *failAfter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.n {
		k := w.n - w.buf.Len()
		w.buf.Write(p[:k])
		return k, errFull
	}
	return w.buf.Write(p)
}

// A write that fails while workers encode stops Run with its error; what
// went out before it is a prefix of the whole answer, and no worker is
// left behind (TestMain checks for goroutines).
func TestRunPipeWriteError(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	tb := pipeTable(t, 3*query.PipeAfter)
	r := tb.reader(t)
	want, _ := serial(t, r, query.Query{}, query.FormatCSV, query.TsNs)
	for _, at := range []int{len(want) / 2, len(want) - 10} {
		w := &failAfter{n: at}
		enc := query.NewEncoder(w, query.FormatCSV, query.TsNs, r.Schema(), "ticks", r.SymbolName)
		_, err := query.Run(context.Background(), r, query.Query{}, enc)
		if !errors.Is(err, errFull) {
			t.Fatalf("write failing after %d bytes: Run returned %v", at, err)
		}
		if got := w.buf.String(); got != want[:len(got)] || len(got) != at {
			t.Fatalf("write failing after %d bytes: %d bytes out, not the answer's first %d", at, len(got), at)
		}
		if err := enc.Close(); !errors.Is(err, errFull) {
			t.Fatalf("Close after the failed write: %v", err)
		}
	}
}

// A pipe costs a fixed number of allocations (its batches and workers),
// none per row: twice the rows, about the same count. (Counted by hand:
// testing.AllocsPerRun runs on one core, where Run starts no pipe.)
func TestRunPipeAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	tb := pipeTable(t, 8*query.PipeAfter)
	tb.close(t) // no background compaction allocating meanwhile
	r := tb.reader(t)
	allocs := func(limit int64) float64 {
		enc := query.NewEncoder(discard{}, query.FormatCSV, query.TsNs, r.Schema(), "ticks", r.SymbolName)
		q := query.Query{Limit: limit}
		run := func() {
			if _, err := query.Run(context.Background(), r, q, enc); err != nil {
				t.Fatal(err)
			}
		}
		run() // warm: the reader's mappings and decode buffers
		least := math.Inf(1)
		for range 3 {
			var a, b runtime.MemStats
			runtime.ReadMemStats(&a)
			for range 4 {
				run()
			}
			runtime.ReadMemStats(&b)
			least = min(least, float64(b.Mallocs-a.Mallocs)/4)
		}
		return least
	}
	small, large := allocs(2*query.PipeAfter), allocs(8*query.PipeAfter)
	t.Logf("%.0f allocations for %d rows, %.0f for %d", small, 2*query.PipeAfter, large, 8*query.PipeAfter)
	if small < 5 {
		t.Errorf("%.0f allocations for %d rows: no pipe started", small, 2*query.PipeAfter)
	}
	if large > small+8 {
		t.Errorf("%.0f allocations for %d rows, %.0f for %d: the pipe allocates per row", large, 8*query.PipeAfter, small, 2*query.PipeAfter)
	}
}
