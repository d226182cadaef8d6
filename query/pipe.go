package query

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tickdb/tickdb/store"
)

// Encoding on more than one core.
//
// A long answer spends about two thirds of its time encoding (numbers and
// times to text) and a third reading rows; on one goroutine they take
// turns while the machine's other cores idle. Past its first pipeAfter
// rows, Run hands the encoding to a pipe: Run's goroutine goes on reading
// and copies rows into batches; workers, one per core, each encode a
// batch with an encoder of their own and then, in batch order and one at
// a time, hand its text to the caller's encoder's writer. The output is
// byte for byte what one encoder writes.

const (
	// pipeAfter is the rows Run encodes itself before it starts a pipe:
	// an answer of a few thousand rows costs no goroutines.
	pipeAfter = 16384
	// pipeBytes is a batch's rows (in bytes): about 100 KiB of text
	// for the writer in one write, for a table of tick-sized rows.
	pipeBytes = 128 << 10
	// pipeWorkers bounds the workers on a machine of many cores: one
	// reader keeps about three busy.
	pipeWorkers = 4
)

// pipe is one Run's encoding workers.
type pipe struct {
	enc  *Encoder // the caller's: the writer, the counts, the header
	rs   int      // row size: every row Run hands on is a full row of the schema
	per  int      // rows a batch
	work chan *batch
	free chan *batch
	cur  *batch // being filled by Run
	next uint64 // the next batch's number
	wg   sync.WaitGroup

	failed atomic.Bool // err is set: Run stops reading
	mu     sync.Mutex
	turn   sync.Cond // done moved on
	done   uint64    // batches written (or passed over after an error)
	err    error     // the first encoding or write error
}

// batch is rows for a worker and, once encoded, their text.
type batch struct {
	seq  uint64
	rows []byte
	n    int
	out  []byte
}

// pipeWorth reports whether a pipe pays on this machine: at least two
// cores.
func pipeWorth() bool { return runtime.GOMAXPROCS(0) > 1 }

// startPipe starts the workers that encode rows of rs bytes for enc, each
// naming symbols through names (safe to call from their goroutines).
func startPipe(enc *Encoder, rs int, names func(uint32) (string, error)) *pipe {
	workers := min(runtime.GOMAXPROCS(0), pipeWorkers)
	p := &pipe{enc: enc, rs: rs, per: max(pipeBytes/rs, 64)}
	p.turn.L = &p.mu
	nb := 2*workers + 1 // each worker's, queued behind them, and Run's
	p.work, p.free = make(chan *batch, nb), make(chan *batch, nb)
	for range nb {
		b, _ := batches.Get().(*batch)
		if b == nil {
			b = &batch{}
		}
		if cap(b.rows) < p.per*rs {
			b.rows = make([]byte, 0, p.per*rs)
		}
		p.free <- b
	}
	p.wg.Add(workers)
	for range workers {
		go p.worker(enc.clone(names))
	}
	return p
}

// put copies row into the batch being filled, and hands the batch to the
// workers when full. Its error is the pipe's: Run stops.
func (p *pipe) put(row store.Row) error {
	if p.failed.Load() {
		return p.failure()
	}
	if p.cur == nil {
		p.cur = <-p.free
		p.cur.rows, p.cur.n = p.cur.rows[:0], 0
	}
	b := p.cur
	b.rows = append(b.rows, row[:p.rs]...)
	if b.n++; b.n == p.per {
		p.send()
	}
	return nil
}

func (p *pipe) send() {
	p.cur.seq = p.next
	p.next++
	p.work <- p.cur
	p.cur = nil
}

func (p *pipe) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// finish hands on the last batch, waits until every batch is written,
// and returns the first error.
func (p *pipe) finish() error {
	if p.cur != nil && p.cur.n > 0 {
		p.send()
	}
	close(p.work)
	p.wg.Wait()
	for range cap(p.free) {
		batches.Put(<-p.free)
	}
	return p.err
}

// batches keeps batches, their buffers grown, from one pipe to the next.
var batches sync.Pool

// worker encodes batches with c and writes each in its turn.
func (p *pipe) worker(c *Encoder) {
	defer p.wg.Done()
	for b := range p.work {
		var n int
		var err error
		b.out, n, err = c.appendRows(b.out[:0], b.rows, p.rs, b.n)
		p.mu.Lock()
		for p.done != b.seq {
			p.turn.Wait()
		}
		if p.err == nil {
			// The rows before a failed one go out, as one encoder
			// would have written them.
			if werr := p.enc.writeEncoded(b.out, n); werr != nil {
				err = werr
			}
			if err != nil {
				p.err = err
				p.failed.Store(true)
			}
		}
		p.done++
		p.turn.Broadcast()
		p.mu.Unlock()
		p.free <- b
	}
}

// clone returns an encoder for a pipe's worker: e's format and columns
// (shared: read only), caches of its own, names looking up symbols, and
// no writer (its text is taken from appendRows).
func (e *Encoder) clone(names func(uint32) (string, error)) *Encoder {
	return &Encoder{
		f: e.f, tsf: e.tsf, schema: e.schema, tsName: e.tsName, tsKey: e.tsKey,
		cols: e.cols, meas: e.meas, ilpNaN: e.ilpNaN, ilpStr: e.ilpStr,
		dicts: []dict{{name: names}}, started: true,
	}
}

// appendRows appends the text of n rows of rs bytes each to dst; on an
// error it returns the text of the rows before the failed one and their
// count.
func (e *Encoder) appendRows(dst, rows []byte, rs, n int) ([]byte, int, error) {
	for i := range n {
		var err error
		if dst, err = e.appendRow(dst, store.Row(rows[i*rs:(i+1)*rs]), nil); err != nil {
			return dst, i, err
		}
	}
	return dst, n, nil
}

// writeEncoded writes text, the encoding of rows rows (by a clone), after
// what e holds (the header, rows it encoded itself), as if e had encoded
// them.
func (e *Encoder) writeEncoded(text []byte, rows int) error {
	if err := e.begin(); err != nil {
		return err
	}
	if err := e.flush(); err != nil {
		return err
	}
	e.rows += int64(rows)
	if len(text) == 0 {
		return nil
	}
	n, err := e.w.Write(text)
	e.written += int64(n)
	if err == nil && n < len(text) {
		err = io.ErrShortWrite
	}
	if err != nil {
		e.err = fmt.Errorf("query: write output: %w", err)
	}
	return e.err
}
