package ingest

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A write body is staged in chunks on several goroutines. Parsing and
// staging a line costs about three times what the writer goroutine's
// check and store of its row do (BenchmarkStageHTTP: about 200 ns a tick
// line), so a large request staged on its own goroutine alone leaves a
// core idle while one client waits for its 204.
//
// The request's goroutine reads the body (and decompresses it) and cuts
// it at line ends into chunks of about chunkText bytes; each chunk is
// parsed and staged into a stage of its own by one of up to chunkWorkers
// goroutines, its line numbers counted from its first line. Once the body
// has ended and every chunk is staged, the stages are put in line order:
// each learns how many lines came before it (stage.setBase), and the
// request's answer is that of its first bad chunk, in line order, as if
// the body had been staged line by line: a bad line, a memory refusal, or
// the request's table that ran out of columns (truncLine) end it there,
// and the chunks after it are dropped (or never parsed: the workers skip
// the chunks they take once one has failed).
//
// Chunks are staged at most chunkWorkers at a time in the whole server
// (httpAPI.stageSem): several large requests at once take no more of the
// machine than one, and leave small requests, staged on their own
// goroutines, their share of it.
//
// A body that ends within its first chunk is staged on the request's
// goroutine, with no other goroutine. Text buffers are reused: a request
// holds at most chunkWorkers+1 of them, charged to the memory bound like
// the stages.

// chunkWorkers is how many goroutines stage one request's chunks.
func chunkWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

// chunkText is how much text a chunk holds (its last line may end it
// later, up to the line limit).
const chunkText = 1 << 20

// parallelMemory is the least memory bound (Options.MaxWriteMemory) under
// which bodies are staged in parallel: a large request then holds about
// (chunkWorkers+2) chunks of text besides its rows, a few MiB. Under a
// smaller bound, or on one core, a body is staged on the request's
// goroutine as it arrives, a stage for the whole body.
const parallelMemory = 64 << 20

// textChunk is a chunk of whole lines and what staging it gave.
type textChunk struct {
	buf   []byte // the buffer text is in (back to the free list once staged)
	text  []byte
	st    *stage
	lines uint64     // lines staged
	fail  *writeFail // the first failure; line numbers counted from the chunk's first
	stop  bool       // staging ended after the chunk (st.truncLine)
}

// bodyStager stages one request's chunks.
type bodyStager struct {
	h      *httpAPI
	prec   int64
	charge func(int64) error
	bufCap int
	chunks []*textChunk
	jobs   chan *textChunk
	free   chan []byte
	bufs   int       // buffers handed to the workers
	made   []*[]byte // buffers taken from h.textBufs, put back by finish
	wg     sync.WaitGroup
	failed atomic.Bool // a chunk has failed or stopped: stage no more
	// serial: every line staged on the request's goroutine, into one
	// stage, as soon as it has arrived (see parallelMemory).
	serial bool
}

func newBodyStager(h *httpAPI, prec int64, charge func(int64) error, bufCap int) *bodyStager {
	serial := chunkWorkers() < 2 || h.s.opts.MaxWriteMemory < parallelMemory
	return &bodyStager{h: h, prec: prec, charge: charge, bufCap: bufCap, serial: serial}
}

// chunkMin is the text the reader gathers before it cuts a chunk.
func (b *bodyStager) chunkMin() int {
	if b.serial {
		return 1
	}
	return chunkText
}

// newChunk is a chunk of text with its stage. A chunk handed to the
// workers (in buf) has its stage's first block sized by its text; one
// staged on the request's goroutine (buf nil: a small body, or a serial
// one) grows its blocks from the smallest.
func (b *bodyStager) newChunk(buf, text []byte) *textChunk {
	st := newStage(b.charge)
	if buf != nil {
		st.firstBlock = len(text)
	}
	c := &textChunk{buf: buf, text: text, st: st}
	b.chunks = append(b.chunks, c)
	return c
}

// inline stages text, the whole body, on the caller's goroutine.
func (b *bodyStager) inline(text []byte) {
	b.stageChunk(b.newChunk(nil, text))
}

// dispatch hands text (whole lines at the start of buf) to the workers,
// starting them the first time, and returns a buffer to read on into:
// a new one while fewer than workers+1 exist, else one a worker is done
// with (none when last: the body has ended). A new buffer is charged
// first; nil when the charge is refused (its error).
func (b *bodyStager) dispatch(buf, text []byte, last bool) ([]byte, error) {
	if b.serial {
		// Staged here, into the one stage, its lines numbered on.
		if len(b.chunks) == 0 {
			b.newChunk(nil, nil)
		}
		c := b.chunks[0]
		c.text = text
		b.stageChunk(c)
		return buf[:0], nil
	}
	if b.jobs == nil {
		n := chunkWorkers()
		// Buffers: the first and n+1 more (dispatch), all of which may
		// come back once the last chunk is handed over: free never
		// blocks a worker.
		b.jobs = make(chan *textChunk, n+2)
		b.free = make(chan []byte, n+2)
		for range n {
			b.wg.Add(1)
			go b.work()
		}
	}
	b.jobs <- b.newChunk(buf, text)
	b.bufs++ // buf is the workers' now
	if last {
		return nil, nil
	}
	if b.bufs <= cap(b.free)-1 {
		if err := b.charge(int64(b.bufCap)); err != nil {
			return nil, err
		}
		p, _ := b.h.textBufs.Get().(*[]byte)
		if p == nil || cap(*p) != b.bufCap {
			p = new([]byte)
			*p = make([]byte, 0, b.bufCap)
		}
		b.made = append(b.made, p)
		return (*p)[:0], nil
	}
	return <-b.free, nil
}

func (b *bodyStager) work() {
	defer b.wg.Done()
	for c := range b.jobs {
		if !b.failed.Load() {
			b.h.stageSem <- struct{}{}
			b.stageChunk(c)
			<-b.h.stageSem
			c.st.trim()
		}
		b.free <- c.buf[:0]
	}
}

// stageChunk parses and stages c's lines.
func (b *bodyStager) stageChunk(c *textChunk) {
	h := b.h
	wp, _ := h.parsers.Get().(*writeParser)
	if wp == nil {
		wp = &writeParser{}
	}
	defer h.parsers.Put(wp)
	wp.p.Precision = b.prec
	text := c.text
	for len(text) > 0 {
		i := lineEndAt(text, 0)
		line := text
		if i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		c.lines++
		stop, fail := h.stageLine(&wp.p, &wp.l, line, c.lines, c.st)
		if fail != nil || stop {
			c.fail, c.stop = fail, stop
			b.failed.Store(true)
			return
		}
	}
}

// finish waits for the workers and puts the chunks in line order: the
// stages to store, or the first failure (the chunks' in line order, else
// tail: a failure after the last chunk). Only the returned stages are
// kept; the others are freed.
func (b *bodyStager) finish(tail *writeFail) ([]*stage, *writeFail) {
	b.stopWorkers()
	var base uint64 // the lines before chunk i
	fail, keep := tail, len(b.chunks)
	for i, c := range b.chunks {
		if c.fail != nil {
			fail, keep = c.fail, 0
			if fail.le != nil {
				fail.le.Line += int(base)
			}
			break
		}
		c.st.setBase(base)
		base += c.lines
		if c.stop {
			fail, keep = nil, i+1
			break
		}
	}
	if fail == tail && tail != nil {
		keep = 0
		if tail.le != nil && tail.le.Line == 0 {
			tail.le.Line = int(base) + 1 // the line after every line staged
		}
	}
	stages := make([]*stage, 0, keep)
	for i, c := range b.chunks {
		if i < keep {
			stages = append(stages, c.st)
		} else {
			c.st.free()
		}
	}
	b.chunks = nil
	for _, p := range b.made {
		b.h.textBufs.Put(p) // no stage points into them
	}
	b.made = nil
	return stages, fail
}

// stopWorkers ends the workers, once they have staged what they took.
func (b *bodyStager) stopWorkers() {
	if b.jobs != nil {
		close(b.jobs)
		b.wg.Wait()
		b.jobs = nil
	}
}
