package query

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// BarsQuery asks for OHLCV bars: the rows with From <= ts < To (each only
// when its Has flag is set, as in Query), of symbol Sym or, with Sym "",
// of every symbol (one series of bars per symbol), bucketed by Interval.
// Field names the f64 or i64 column the open, high, low and close are
// taken from ("" = "price"); Volume the f64 or i64 column summed into the
// volume ("" = "size"). Table names the table for the caller and for
// error messages.
type BarsQuery struct {
	Table, Sym     string
	From, To       int64
	HasFrom, HasTo bool
	Interval       time.Duration
	Field, Volume  string
	// SeqEnd, with HasSeqEnd, leaves out the rows with seq >= SeqEnd:
	// bars over exactly the rows published before it (a reader's Len
	// taken before Bars), so that a follower of the table from seq
	// SeqEnd (GET /tail?from=) counts no row twice.
	SeqEnd    uint64
	HasSeqEnd bool
}

// Bar is one symbol's OHLCV bar over one bucket.
//
// Open, High, Low and Close are the first, highest, lowest and last value
// of the field in the bucket, and Volume the sum of the volume column;
// each is a 64-bit word in its column's type, as Encoder.Values takes it:
// an int64 for an i64 column, math.Float64bits of a float64 for an f64
// one. f64 NaN values (missing) are skipped: a bar whose field values are
// all NaN has NaN open, high, low and close, and NaN volumes add nothing.
// An i64 volume sum wraps around past MaxInt64.
type Bar struct {
	Ts    int64  // bucket start: floor(ts / Interval) * Interval, ns since the epoch
	Sym   uint32 // the symbol's id in the table's dictionary (0 in a table without a sym column)
	Count int64  // rows in the bucket, NaN field or not

	Open, High, Low, Close, Volume uint64
}

// barAcc is one symbol's bar being built. The field's and volume's
// values live in the member of their type; the branch on the type is the
// same for every row, so it costs nothing once predicted.
type barAcc struct {
	fo, fh, fl, fc float64 // f64 field
	io, ih, il, ic int64   // i64 field
	vf             float64 // f64 volume
	vi             int64   // i64 volume
	count          int64
	has            bool // a field value seen (f64: not NaN)
}

// barsRun is one Bars call's state.
type barsRun struct {
	fn               func(*Bar) error
	field, vol       store.Col
	fieldF64, volF64 bool
	symCol           store.Col
	hasSym           bool   // one series per symbol: acc by id
	symID            uint32 // the symbol of the one series otherwise
	iv               int64
	// The current bucket: [start, last], last inclusive (so that it
	// cannot overflow); start > last before the first row.
	start, last int64
	acc         []barAcc // by symbol id
	active      []uint32 // ids with a bar in the current bucket, in order of their first row
	bar         Bar
	bars        int64
	seqEnd      uint64 // BarsQuery.SeqEnd, MaxUint64 for none

	cl clusterState // runCluster's
}

// barCols resolves q's field and volume columns in s.
func barCols(s *store.Schema, q *BarsQuery) (field, vol store.Column, fc, vc store.Col, err error) {
	names := [2]string{q.Field, q.Volume}
	if names[0] == "" {
		names[0] = "price"
	}
	if names[1] == "" {
		names[1] = "size"
	}
	var out [2]store.Column
	var cols [2]store.Col
	for i, n := range names {
		j := s.Index(n)
		if j < 0 {
			return field, vol, fc, vc, fmt.Errorf("%w: table %s has no column %q (columns: %s)", ErrBadQuery, q.Table, n, s)
		}
		if t := s.Cols[j].Type; t != store.TypeF64 && t != store.TypeI64 {
			what := "field"
			if i == 1 {
				what = "volume"
			}
			return field, vol, fc, vc, fmt.Errorf("%w: %s column %q is %v, not f64 or i64", ErrBadQuery, what, n, t)
		}
		out[i], cols[i] = s.Cols[j], s.ColAt(j)
	}
	return out[0], out[1], cols[0], cols[1], nil
}

// Bars computes the OHLCV bars q asks for over the open reader r and
// passes each to fn, in bucket order and, within a bucket, in the order
// of each symbol's first row in it; it returns how many it passed.
// Buckets are aligned to the Unix epoch like kdb's xbar: a row with ts
// falls in the bucket starting at floor(ts / Interval) * Interval
// (floored for negative ts too; the bucket holding MinInt64 starts at
// MinInt64 when the floor is out of range). Empty buckets have no bar.
//
// It reads the rows once, in time order, and keeps one bar per symbol of
// the current bucket: memory is proportional to the symbols, not the
// rows. With Sym set it walks that symbol's postings (reader.RangeSym),
// at a cost proportional to its rows. A Sym the table does not hold gives
// no bars; a Sym on a table without a sym column, an Interval <= 0 or a
// field or volume column that is missing or not f64 or i64 is an
// ErrBadQuery error. Without a sym column and without Sym, all rows are
// one series (Bar.Sym 0). It checks ctx every few thousand rows.
//
// The *Bar passed to fn is valid only during the call.
func Bars(ctx context.Context, r *reader.Reader, q BarsQuery, fn func(*Bar) error) (int64, error) {
	if q.Interval <= 0 {
		return 0, fmt.Errorf("%w: interval %v is not positive", ErrBadQuery, q.Interval)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s := r.Schema()
	field, vol, fc, vc, err := barCols(s, &q)
	if err != nil {
		return 0, err
	}
	// One series (acc[0]) for one symbol or a table without symbols;
	// else one per symbol id, grown as ids turn up.
	x := &barsRun{fn: fn, field: fc, vol: vc, fieldF64: field.Type == store.TypeF64, volF64: vol.Type == store.TypeF64,
		iv: int64(q.Interval), hasSym: s.SymCol >= 0 && q.Sym == "", start: math.MaxInt64, last: math.MinInt64, seqEnd: math.MaxUint64}
	if q.HasSeqEnd {
		x.seqEnd = q.SeqEnd
	}
	x.acc = make([]barAcc, 1)
	if x.hasSym {
		x.symCol = s.ColAt(s.SymCol)
		x.acc = make([]barAcc, min(max(r.Symbols(), 1), 1024))
	}
	x.active = make([]uint32, 0, len(x.acc))
	var id uint32
	if q.Sym != "" {
		if s.SymCol < 0 {
			return 0, fmt.Errorf("%w: sym %q: table %s has no sym column", ErrBadQuery, q.Sym, q.Table)
		}
		var ok bool
		if id, ok = r.SymbolID([]byte(q.Sym)); !ok {
			return 0, nil
		}
		x.symID = id
	}
	from := int64(math.MinInt64)
	if q.HasFrom {
		from = q.From
	}
	to := int64(reader.ToEnd)
	if q.HasTo {
		to = q.To
	}
	// Rows of compacted history: the column scan, in seq order, which is
	// time order unless the range has late rows. For one symbol, of its
	// blocks alone, and only these columns (the iterator below decodes
	// every column into rows). Over raw rows alone the iterator below is
	// as fast on one core (it reads one symbol's postings).
	cols := []int{0, s.Index(field.Name), s.Index(vol.Name)}
	if x.hasSym {
		cols = append(cols, s.SymCol)
	}
	{
		var sc reader.Scan
		spec := reader.ScanSpec{Cols: cols, From: from, To: to, Seqs: q.HasSeqEnd, OneSym: q.Sym != "", Sym: id}
		if err := r.Scan(spec, &sc); err != nil {
			return 0, q.wrap(err)
		}
		if q.Sym == "" && !sc.Late() && sc.Compressed() {
			if shift, ok := x.clustered(r, from, q); ok {
				// Few bars a segment: in the files' order (bars_cluster.go).
				spec := reader.ScanSpec{Cols: cols, From: from, To: to, Order: reader.OrderAny, Seqs: true}
				if err := r.Scan(spec, &sc); err != nil {
					return 0, q.wrap(err)
				}
				if !sc.Late() {
					err = x.runCluster(ctx, &sc, shift)
					sc.Close()
					return x.bars, q.wrap(err)
				}
				// (Late rows published since: seq order, below.)
				if err := r.Scan(reader.ScanSpec{Cols: cols, From: from, To: to, Seqs: q.HasSeqEnd}, &sc); err != nil {
					return 0, q.wrap(err)
				}
			}
		}
		if !sc.Late() && sc.Compressed() {
			err = x.runScan(ctx, &sc)
			sc.Close()
			if err == nil {
				err = x.flush()
			}
			return x.bars, q.wrap(err)
		}
		sc.Close()
	}
	var sc scan
	if err := sc.start(r, from, q.To, q.HasTo, q.Sym != "", id); err != nil {
		return 0, q.wrap(err)
	}
	err = x.run(ctx, &sc)
	if err == nil {
		err = x.flush()
	}
	return x.bars, q.wrap(err)
}

// run folds every row of sc into the bars, passing each bucket's bars to
// fn when the next bucket begins. The loop keeps the run's state in
// locals (the call to sc.next would make it reload fields of x on every
// row) and writes it back where flush and bucket need it.
func (x *barsRun) run(ctx context.Context, sc *scan) error {
	start, last := x.start, x.last
	acc := x.acc
	field, vol, symCol, seqEnd := x.field, x.vol, x.symCol, x.seqEnd
	fieldF64, volF64, hasSym := x.fieldF64, x.volF64, x.hasSym
	row := sc.row[:len(sc.row):len(sc.row)]
	it := &sc.it
	n := 0
	for {
		// The iterator's checked copy (NextInto): one call a row.
		if !it.NextInto(row) {
			if !sc.more() {
				break
			}
			continue
		}
		if it.Seq() >= seqEnd {
			continue
		}
		if n++; n == ctxEvery {
			n = 0
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		ts := row.Ts()
		if ts > last || ts < start {
			if err := x.flush(); err != nil {
				return err
			}
			x.bucket(ts)
			start, last = x.start, x.last
		}
		var id uint32
		if hasSym {
			id = row.Sym(symCol)
			if int(id) >= len(acc) {
				x.acc = slices.Grow(x.acc, int(id)+1-len(x.acc))[:int(id)+1]
				acc = x.acc
			}
		}
		a := &acc[id]
		if a.count == 0 {
			x.active = append(x.active, id)
		}
		a.count++
		if fieldF64 {
			if v := row.F64(field); v == v { // not NaN
				if !a.has {
					a.fo, a.fh, a.fl, a.has = v, v, v, true
				} else if v > a.fh {
					a.fh = v
				} else if v < a.fl {
					a.fl = v
				}
				a.fc = v
			}
		} else {
			v := row.I64(field)
			if !a.has {
				a.io, a.ih, a.il, a.has = v, v, v, true
			} else if v > a.ih {
				a.ih = v
			} else if v < a.il {
				a.il = v
			}
			a.ic = v
		}
		if volF64 {
			if v := row.F64(vol); v == v {
				a.vf += v
			}
		} else {
			a.vi += row.I64(vol)
		}
	}
	return sc.err
}

// runScan is run over the blocks of a column scan of ts, the field, the
// volume and (one series per symbol) the sym column, in seq order: the
// same rows in the same order, so the same bars, bit for bit.
func (x *barsRun) runScan(ctx context.Context, sc *reader.Scan) error {
	start, last := x.start, x.last
	seqEnd, hasSym := x.seqEnd, x.hasSym
	for sc.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := sc.Block()
		ts := b.I64(0)
		if seqs := b.Seqs(); seqs != nil && seqs[len(seqs)-1] >= seqEnd {
			n, _ := slices.BinarySearch(seqs, seqEnd)
			ts = ts[:n]
		}
		var syms []uint32
		if hasSym {
			syms = b.Sym(3)[:len(ts)]
		}
		fi, ff := b.I64(1), b.F64(1)
		vi, vf := b.I64(2), b.F64(2)
		for i, t := range ts {
			if t > last || t < start {
				if err := x.flush(); err != nil {
					return err
				}
				x.bucket(t)
				start, last = x.start, x.last
			}
			var id uint32
			if hasSym {
				if id = syms[i]; int(id) >= len(x.acc) {
					x.acc = slices.Grow(x.acc, int(id)+1-len(x.acc))[:int(id)+1]
				}
			}
			a := &x.acc[id]
			if a.count == 0 {
				x.active = append(x.active, id)
			}
			a.count++
			if ff != nil {
				if v := ff[i]; v == v { // not NaN
					if !a.has {
						a.fo, a.fh, a.fl, a.has = v, v, v, true
					} else if v > a.fh {
						a.fh = v
					} else if v < a.fl {
						a.fl = v
					}
					a.fc = v
				}
			} else {
				v := fi[i]
				if !a.has {
					a.io, a.ih, a.il, a.has = v, v, v, true
				} else if v > a.ih {
					a.ih = v
				} else if v < a.il {
					a.il = v
				}
				a.ic = v
			}
			if vf != nil {
				if v := vf[i]; v == v {
					a.vf += v
				}
			} else {
				a.vi += vi[i]
			}
		}
		if len(ts) < b.Len() {
			break // past SeqEnd
		}
	}
	return sc.Err()
}

// bucket makes the bucket holding ts current.
func (x *barsRun) bucket(ts int64) { x.start, x.last = bucketOf(ts, x.iv) }

// bucketOf returns the first and last ts of the bucket of interval iv
// holding ts.
func bucketOf(ts, iv int64) (start, last int64) {
	m := ts % iv
	if m < 0 {
		m += iv
	}
	// ts - m is the floor; below MinInt64 when ts lies within m of it.
	if ts < math.MinInt64+m {
		start = math.MinInt64
	} else {
		start = ts - m
	}
	if start > math.MaxInt64-(iv-1) {
		last = math.MaxInt64
	} else {
		last = start + iv - 1
	}
	return start, last
}

// barOf fills x.bar with the bar of a, symbol id's over the bucket from
// start, and returns it.
func (x *barsRun) barOf(a *barAcc, start int64, id uint32) *Bar {
	b := &x.bar
	*b = Bar{Ts: start, Sym: id, Count: a.count}
	if !x.hasSym {
		b.Sym = x.symID
	}
	switch {
	case !x.fieldF64:
		b.Open, b.High, b.Low, b.Close = uint64(a.io), uint64(a.ih), uint64(a.il), uint64(a.ic)
	case a.has:
		b.Open, b.High, b.Low, b.Close = math.Float64bits(a.fo), math.Float64bits(a.fh), math.Float64bits(a.fl), math.Float64bits(a.fc)
	default:
		nan := math.Float64bits(math.NaN())
		b.Open, b.High, b.Low, b.Close = nan, nan, nan, nan
	}
	if x.volF64 {
		b.Volume = math.Float64bits(a.vf)
	} else {
		b.Volume = uint64(a.vi)
	}
	return b
}

// flush passes the current bucket's bars to fn and clears them.
func (x *barsRun) flush() error {
	for i, id := range x.active {
		a := &x.acc[id]
		b := x.barOf(a, x.start, id)
		*a = barAcc{}
		if err := x.fn(b); err != nil {
			// Clear the rest, so that a caller's retry is not fed stale bars.
			for _, id := range x.active[i+1:] {
				x.acc[id] = barAcc{}
			}
			x.active = x.active[:0]
			return err
		}
		x.bars++
	}
	x.active = x.active[:0]
	return nil
}

// wrap names the query's table in an error from below.
func (q *BarsQuery) wrap(err error) error {
	if err == nil {
		return nil
	}
	if q.Table == "" {
		return fmt.Errorf("bars: %w", err)
	}
	return fmt.Errorf("bars %s: %w", q.Table, err)
}

// NewBarsEncoder returns an Encoder for q's bars over r, for RunBars.
// Its columns are SPEC's ts, open, high, low, close, volume, count (open
// to close typed as the field, volume as the volume column, count i64);
// without Sym, the table's sym column follows ts (one series per
// symbol). In ilp the measurement is "<table>_bars" and the symbol is
// always a tag, so that the lines can be loaded back into a table of
// their own.
func NewBarsEncoder(w io.Writer, f Format, tsf TsFormat, r *reader.Reader, q BarsQuery) (*Encoder, error) {
	s := r.Schema()
	field, vol, _, _, err := barCols(s, &q)
	if err != nil {
		return nil, q.wrap(err)
	}
	cols := []Column{{Name: "ts", Type: store.TypeTs}}
	if s.SymCol >= 0 && (q.Sym == "" || f == FormatILP) {
		cols = append(cols, Column{Name: s.Cols[s.SymCol].Name, Type: store.TypeSym})
	}
	for _, n := range []string{"open", "high", "low", "close"} {
		cols = append(cols, Column{Name: n, Type: field.Type})
	}
	cols = append(cols, Column{Name: "volume", Type: vol.Type}, Column{Name: "count", Type: store.TypeI64})
	return NewValuesEncoder(w, f, tsf, cols, q.Table+"_bars", r.SymbolName)
}

// barCount is the number of columns of bars without a sym column.
const barCount = 7

// RunBars runs Bars and writes every bar to enc, which NewBarsEncoder
// made for the same r and q; it returns the bars written. The caller
// closes enc.
func RunBars(ctx context.Context, r *reader.Reader, q BarsQuery, enc *Encoder) (int64, error) {
	n := len(enc.cols) + 1
	if enc.vrow == nil || (n != barCount && n != barCount+1) {
		return 0, fmt.Errorf("query: the encoder was not made by NewBarsEncoder")
	}
	v := make([]uint64, n)
	return Bars(ctx, r, q, func(b *Bar) error {
		v[0] = uint64(b.Ts)
		i := 1
		if n > barCount {
			v[1], i = uint64(b.Sym), 2
		}
		v[i], v[i+1], v[i+2], v[i+3], v[i+4], v[i+5] = b.Open, b.High, b.Low, b.Close, b.Volume, uint64(b.Count)
		return enc.Values(v, nil)
	})
}
