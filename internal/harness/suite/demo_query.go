package suite

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tickdb/tickdb/reader"
)

// DemoRuns is the runs of each of the demo's range queries; the report
// has the median.
const DemoRuns = 5

// demoQueries times reads from this process while the writer is still open
// (recent segments are read from the live slots, older ones from disk), and
// checks every answer against one plain scan of the table: ranges of all
// symbols and of one (the median of demoRuns runs each), then Get and
// SeekTime at random places (per call, the median over batches).
func demoQueries(r *reader.Reader, firstTs, lastTs int64, names []string, ids []uint32, seed int64) ([]DemoQuery, error) {
	s := r.Schema()
	symC, _ := s.Col("sym")
	priceC, _ := s.Col("price")
	sizeC, _ := s.Col("size")
	n := r.Len()
	span := lastTs - firstTs + 1
	from := firstTs + span/2 - span/200
	to := from + max(span/100, 1)
	busy, quiet := 0, len(names)-1
	var it reader.Iter

	// The expected answers, from a scan by sequence number.
	var all, window, busyWindow, busyAll, quietAll int
	if err := r.RangeSeq(0, n, &it); err != nil {
		return nil, err
	}
	for it.Next() {
		row := it.Row()
		ts, sym := row.Ts(), row.Sym(symC)
		in := ts >= from && ts < to
		all++
		window += b2i(in)
		busyWindow += b2i(in && sym == ids[busy])
		busyAll += b2i(sym == ids[busy])
		quietAll += b2i(sym == ids[quiet])
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}

	// scan iterates it, returning rows and the volume-weighted price.
	scan := func() (rows int, vwap float64, err error) {
		var pv, v float64
		for it.Next() {
			row := it.Row()
			sz := float64(row.I64(sizeC))
			pv += row.F64(priceC) * sz
			v += sz
			rows++
		}
		if v > 0 {
			vwap = pv / v
		}
		return rows, vwap, it.Err()
	}
	const runs = DemoRuns
	var qs []DemoQuery
	for _, q := range []struct {
		label string
		sym   int // -1: all symbols
		from  int64
		to    int64
		want  int
		vwap  bool
	}{
		{"all rows, all symbols", -1, firstTs, lastTs + 1, all, false},
		{"1% of the time span, all symbols", -1, from, to, window, false},
		// The busiest and the quietest symbol: the cost follows the
		// symbol's rows, not the table's.
		{fmt.Sprintf("symbol %s, 1%% of the span", names[busy]), busy, from, to, busyWindow, true},
		{fmt.Sprintf("symbol %s, whole span", names[busy]), busy, firstTs, lastTs + 1, busyAll, true},
		{fmt.Sprintf("symbol %s, whole span", names[quiet]), quiet, firstTs, lastTs + 1, quietAll, true},
	} {
		ds := make([]time.Duration, runs)
		var rows int
		var vwap float64
		for i := range ds {
			t := time.Now()
			var err error
			if q.sym < 0 {
				err = r.Range(q.from, q.to, &it)
			} else {
				err = r.RangeSym(q.from, q.to, ids[q.sym], &it)
			}
			if err == nil {
				rows, vwap, err = scan()
			}
			ds[i] = time.Since(t)
			if err != nil {
				return nil, fmt.Errorf("query %s: %w", q.label, err)
			}
		}
		if rows != q.want {
			return nil, fmt.Errorf("query %s returned %d rows, a scan finds %d", q.label, rows, q.want)
		}
		slices.Sort(ds)
		d := ds[runs/2]
		extra := ""
		if q.vwap {
			extra = fmt.Sprintf("vwap %.2f", vwap)
		}
		qs = append(qs, DemoQuery{Label: q.label, Rows: int64(rows), Time: d, Note: extra})
	}

	// Point reads at random positions: the median over batches, per call
	// (the loop and the random-position load included).
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	const batches, perBatch = 101, 1000
	seqs := make([]uint64, perBatch)
	tss := make([]int64, perBatch)
	for i := range seqs {
		seqs[i] = rng.Uint64N(n)
		tss[i] = firstTs + rng.Int64N(span)
	}
	perCall := func(batch func() error) (time.Duration, error) {
		ds := make([]time.Duration, batches)
		for b := range ds {
			t := time.Now()
			if err := batch(); err != nil {
				return 0, err
			}
			ds[b] = time.Since(t)
		}
		slices.Sort(ds)
		return ds[batches/2] / perBatch, nil
	}
	var sink int64
	getNs, err := perCall(func() error {
		for _, seq := range seqs {
			row, err := r.Get(seq)
			if err != nil {
				return err
			}
			sink += row.Ts()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	found := make([]uint64, perBatch)
	seekNs, err := perCall(func() error {
		for i, ts := range tss {
			seq, err := r.SeekTime(ts)
			if err != nil {
				return err
			}
			found[i] = seq
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("seek: %w", err)
	}
	// SeekTime's answer is the first row at or after ts.
	for i, seq := range found {
		if err := demoCheckSeek(r, tss[i], seq, n); err != nil {
			return nil, err
		}
	}
	_ = sink
	note := fmt.Sprintf("per call, median of %d batches of %d", batches, perBatch)
	return append(qs,
		DemoQuery{Label: "Get(seq), random seq", Rows: 1, Time: getNs, Point: true, Note: note},
		DemoQuery{Label: "SeekTime(ts), random ts", Rows: 1, Time: seekNs, Point: true, Note: note}), nil
}

// demoCheckSeek checks that seq is the first of n rows with ts >= t.
func demoCheckSeek(r *reader.Reader, t int64, seq, n uint64) error {
	if seq < n {
		row, err := r.Get(seq)
		if err != nil {
			return fmt.Errorf("seek check: %w", err)
		}
		if row.Ts() < t {
			return fmt.Errorf("SeekTime(%d) = row %d, whose ts %d is earlier", t, seq, row.Ts())
		}
	}
	if seq > 0 {
		row, err := r.Get(seq - 1)
		if err != nil {
			return fmt.Errorf("seek check: %w", err)
		}
		if row.Ts() >= t {
			return fmt.Errorf("SeekTime(%d) = row %d, but row %d has ts %d", t, seq, seq-1, row.Ts())
		}
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
