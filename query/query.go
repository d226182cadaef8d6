package query

import (
	"context"
	"fmt"
	"math"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// Query is a time-ordered row selection with the CLI's meanings: From
// inclusive, To exclusive (each only when its Has flag is set: a missing
// From is the table's first row, a missing To everything published when
// Run starts), Limit the most rows to return (0: no limit), Sym "" every
// symbol, otherwise only the rows whose first sym column
// (store.Schema.SymCol) names Sym. Table names the table for the caller
// and for error messages; Run reads the reader it is given. Desc asks for
// the newest Limit rows newest first (see runDesc; Limit 1 to MaxDescLimit).
type Query struct {
	Table, Sym     string
	From, To       int64
	HasFrom, HasTo bool
	Limit          int64
	Desc           bool
}

// ctxEvery is how many rows Run reads between checks of its context: a
// row costs 100-300 ns to read and encode, so the check is lost in the
// noise while a cancelled query stops within about a millisecond.
const ctxEvery = 4096

// Run runs q over the open reader r, in time (= sequence) order, passing
// every selected row to enc.Row, and returns how many rows it passed. It
// neither opens nor closes anything: the caller opens r, makes enc for
// r.Schema() and closes enc after. A Sym the table's dictionary does not
// hold selects no rows (no error); a Sym on a table without a sym column,
// or a negative Limit, is an ErrBadQuery error. It checks ctx every few
// thousand rows and returns its error when it is done.
//
// With Sym set, Run walks that symbol's postings (reader.RangeSym), at a
// cost proportional to the symbol's rows in range, not the table's.
//
// Every row goes to enc as a copy checked against its check word: a row
// view of a live slot that the writer recycled while Run encoded it is
// read again through reader.ReadRow, so a slow consumer never gets a torn
// or wrong row.
//
// On a machine of more than one core, rows past the first pipeAfter are
// encoded by workers on the other cores while Run reads on (see pipe):
// the same text, in the same order, written to enc's writer from those
// goroutines (one at a time, all before Run returns). Their symbol names
// come from r's dictionary (reader.SymbolNamer), not from the lookup enc
// was made with: an encoder for Run must name r's symbols.
func Run(ctx context.Context, r *reader.Reader, q Query, enc *Encoder) (int64, error) {
	if enc.schema == nil {
		return 0, fmt.Errorf("query: the encoder is for computed rows, not table %s's", q.Table)
	}
	if enc.schema != r.Schema() && !enc.schema.Equal(r.Schema()) {
		return 0, fmt.Errorf("query: the encoder's schema %s is not the table's %s", enc.schema, r.Schema())
	}
	if q.Desc {
		return runDesc(ctx, r, q, enc.Row)
	}
	return run(ctx, r, q, enc.Row, enc)
}

// RunFunc is Run with each row passed to emit instead of an encoder (a
// Parquet stream, say): the same rows, in the same order, each a checked
// copy that emit must not keep.
func RunFunc(ctx context.Context, r *reader.Reader, q Query, emit func(store.Row) error) (int64, error) {
	if q.Desc {
		return runDesc(ctx, r, q, emit)
	}
	return run(ctx, r, q, emit, nil)
}

// run is Run (enc set: emit is enc.Row, and a long answer is encoded on
// several cores) and RunFunc.
func run(ctx context.Context, r *reader.Reader, q Query, emit func(store.Row) error, enc *Encoder) (int64, error) {
	if q.Limit < 0 {
		return 0, fmt.Errorf("%w: limit %d is negative (0 means no limit)", ErrBadQuery, q.Limit)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s := r.Schema()
	if _, err := r.Snapshot(); err != nil {
		return 0, q.wrap(err)
	}
	from, to := int64(math.MinInt64), int64(reader.ToEnd)
	if q.HasFrom {
		from = q.From
	}
	if q.HasTo {
		to = q.To
	}
	x := &runner{ctx: ctx, r: r, emit: emit, enc: enc, row: s.NewRow(), limit: q.Limit}
	var id uint32
	if q.Sym != "" {
		if s.SymCol < 0 {
			return 0, fmt.Errorf("%w: sym %q: table %s has no sym column", ErrBadQuery, q.Sym, q.Table)
		}
		var ok bool
		if id, ok = r.SymbolID([]byte(q.Sym)); !ok {
			return 0, nil
		}
	}
	if q.Sym != "" {
		// One symbol's rows of compacted history: the column scan of its
		// blocks (every column and the seqs, for the rows' check words),
		// on both cores, where the iterator decodes them on this one.
		all := make([]int, len(s.Cols))
		for i := range all {
			all[i] = i
		}
		var sc reader.Scan
		if err := r.Scan(reader.ScanSpec{Cols: all, From: from, To: to, Seqs: true, OneSym: true, Sym: id}, &sc); err != nil {
			return 0, q.wrap(err)
		}
		if !sc.Late() && sc.Compressed() {
			err := x.drainScan(&sc)
			err = x.finish(err)
			sc.Close()
			return x.n, q.wrap(err)
		}
		sc.Close()
	}
	var it reader.Iter
	var err error
	if q.Sym != "" {
		err = r.RangeSym(from, to, id, &it)
	} else {
		err = r.Range(from, to, &it)
	}
	if err != nil {
		return 0, q.wrap(err)
	}
	_, err = x.drain(&it)
	return x.n, q.wrap(x.finish(err))
}

// wrap names the query's table in an error from below.
func (q *Query) wrap(err error) error {
	if err == nil {
		return nil
	}
	if q.Table == "" {
		return fmt.Errorf("query: %w", err)
	}
	return fmt.Errorf("query %s: %w", q.Table, err)
}

// runner is one Run's state.
type runner struct {
	ctx     context.Context
	r       *reader.Reader
	emit    func(store.Row) error
	row     store.Row // the checked copy handed to emit
	enc     *Encoder  // Run's: past pipeAfter rows, encoding moves to a pipe
	pipe    *pipe
	limit   int64
	n       int64 // rows passed to enc
	scanned int64 // rows read
}

// put passes one row on: to emit, or once Run has encoded pipeAfter rows
// itself (on a machine of more than one core), to a pipe.
func (x *runner) put(row store.Row) error {
	if x.pipe != nil {
		return x.pipe.put(row)
	}
	if x.enc != nil && x.n == pipeAfter && pipeWorth() {
		// Every row in reach was published before the iterator was
		// positioned, its symbols before it: the names known now are
		// all the rows need.
		names, err := x.r.SymbolNamer()
		if err != nil {
			return err
		}
		x.pipe = startPipe(x.enc, len(row), names)
		return x.pipe.put(row)
	}
	return x.emit(row)
}

// finish waits for the pipe, if one started, to write every row handed to
// it, and returns err or else the pipe's error.
func (x *runner) finish(err error) error {
	if x.pipe == nil {
		return err
	}
	perr := x.pipe.finish()
	x.pipe = nil
	if err != nil {
		return err
	}
	return perr
}

// drainScan passes the scan's rows to the encoder, each rebuilt whole
// (Scan.RowInto).
func (x *runner) drainScan(sc *reader.Scan) error {
	for sc.Next() {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		for i := range sc.Block().Len() {
			if err := sc.RowInto(i, x.row); err != nil {
				return err
			}
			x.scanned++
			if err := x.put(x.row); err != nil {
				return err
			}
			x.n++
			if x.limit > 0 && x.n >= x.limit {
				return nil
			}
		}
	}
	return sc.Err()
}

// drain passes the iterator's rows to the encoder; done reports that the limit was
// reached.
func (x *runner) drain(it *reader.Iter) (done bool, err error) {
	for it.NextInto(x.row) { // a checked copy, in the iterator's one call a row
		x.scanned++
		if x.scanned%ctxEvery == 0 {
			if err := x.ctx.Err(); err != nil {
				return false, err
			}
		}
		if err := x.put(x.row); err != nil {
			return false, err
		}
		x.n++
		if x.limit > 0 && x.n >= x.limit {
			return true, nil
		}
	}
	return false, it.Err()
}
