package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/tickdb/tickdb/lineproto"
)

// POST /write and /api/v2/write. The body is read as it arrives
// (decompressed as it arrives, for gzip), and its lines are parsed and
// staged (http_stage.go) as it comes, a large body in chunks on several
// goroutines (http_chunks.go): a request holds at most a few chunks of its
// text, and its rows in their compact staged form, and all write requests
// together hold at most Options.MaxWriteMemory (http_memory.go). Once the
// body has ended, the writer goroutine checks every staged row and stores
// all of them or none (sink.apply); 204 comes once they are durable.
//
// Limits, each answered with nothing stored:
//
//	413  the body over MaxBody bytes on the wire, or over MaxDecompressed
//	     bytes decompressed; or a request that alone needs more memory
//	     than MaxWriteMemory
//	408  the body stalled (ReadTimeout, and the progress rule below)
//	503  other write requests hold MaxWriteMemory for longer than
//	     DefaultMemoryWait (Retry-After: 1)
//	400  a bad line, named by its 1-based number

const (
	// readBufStart is a request's first read buffer; it doubles, up to
	// the line limit plus Options.ReadBuffer, while the client sends
	// faster than it is read.
	readBufStart = 16 << 10
	// gzipCost is what a gzip decompressor holds (its 32 KiB window,
	// Huffman tables and a 4 KiB read buffer), charged to the memory
	// bound while a request uses one.
	gzipCost = 64 << 10
	// MinBodyProgress is the progress rule: the read deadline of a write
	// body moves ReadTimeout ahead only once the client has sent this
	// many more bytes, on the wire or decompressed, so a body must
	// arrive at no less than MinBodyProgress bytes per ReadTimeout (2.1
	// KiB/s at the default 30 s) or be cut off, whatever its
	// Content-Length; a body smaller than this must arrive whole within
	// ReadTimeout. (Decompressed bytes count too: a client that
	// compresses as it sends may send a highly compressible body's few
	// wire bytes slowly while it delivers text fast.)
	MinBodyProgress = 64 << 10
)

// writeParser is a pooled parser and line.
type writeParser struct {
	p lineproto.Parser
	l lineproto.Line
}

// gzipBody is a pooled decompressor with the buffered reader it reads
// through (flate reads byte by byte).
type gzipBody struct {
	br *bufio.Reader
	zr *gzip.Reader
}

// drainMax is the most of a failed write's body read and dropped before
// its answer is sent.
const drainMax = 8 << 20

// writeFail is how a write request ends when it is not stored.
type writeFail struct {
	status     int
	code, msg  string
	line       int
	retryAfter bool
	// A bad line, answered 400: its table and error, counted, logged and
	// told once its line number is known (the chunks', http_chunks.go).
	meas []byte
	le   *lineproto.LineError
}

// progressReader is a write body read under the read timeout and the
// progress rule (MinBodyProgress). It remembers the first read error.
type progressReader struct {
	r       io.Reader
	rc      *http.ResponseController
	timeout time.Duration
	got     int64 // bytes since the deadline last moved
	text    int64 // decompressed bytes since then
	err     error
	// The deadline is moved by the reading goroutine and, after a wait
	// for memory, by a goroutine staging a chunk (extend); not once the
	// body has ended.
	mu    sync.Mutex
	ended bool
}

// restart moves the read deadline ReadTimeout ahead.
func (p *progressReader) restart() {
	p.got, p.text = 0, 0
	p.extend()
}

// extend moves the read deadline ReadTimeout ahead unless the body has
// ended, from any goroutine (the progress counts are the reading
// goroutine's).
func (p *progressReader) extend() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended {
		_ = p.rc.SetReadDeadline(time.Now().Add(p.timeout))
	}
}

// decompressed counts n bytes of decompressed text as progress.
func (p *progressReader) decompressed(n int) {
	if p.text += int64(n); p.text >= MinBodyProgress && p.err == nil {
		p.restart()
	}
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if p.got += int64(n); p.got >= MinBodyProgress {
		p.restart()
	}
	if err != nil && p.err == nil {
		p.err = err
		if err == io.EOF {
			// Nothing more to read: what remains is the server's work, and
			// the connection's background read must not time out under it.
			p.mu.Lock()
			p.ended = true
			_ = p.rc.SetReadDeadline(time.Time{})
			p.mu.Unlock()
		}
	}
	return n, err
}

// write is POST /write and /api/v2/write.
func (h *httpAPI) write(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.writeError(w, http.StatusMethodNotAllowed, "invalid", "line protocol is written with POST", 0)
		return
	}
	prec, err := ParsePrecision(r.URL.Query().Get("precision"))
	if err != nil {
		h.writeError(w, http.StatusBadRequest, "invalid", err.Error(), 0)
		return
	}
	gz := false
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		gz = true
	default:
		h.writeError(w, http.StatusUnsupportedMediaType, "not supported", fmt.Sprintf("content encoding %q (send identity or gzip)", enc), 0)
		return
	}
	o := h.s.opts
	pr := &progressReader{r: http.MaxBytesReader(w, r.Body, o.MaxBody), rc: http.NewResponseController(w), timeout: o.ReadTimeout}
	pr.restart()
	mem := &reqMemory{m: h.mem, afterWait: pr.extend}
	defer mem.release()
	stages, fail := h.readBody(r, pr, gz, prec, mem)
	defer func() { // after the writer is done with them: submit waits for that
		for _, st := range stages {
			st.free()
		}
	}()
	if fail != nil {
		mem.release()
		if fail.status != http.StatusRequestTimeout {
			// The rest of the body, up to drainMax, read and dropped
			// before answering: a client still sending it would
			// otherwise meet a reset (the server closing on unread
			// bytes) instead of the answer. Past that the connection
			// is closed after the answer, as before.
			_, _ = io.CopyN(io.Discard, pr, drainMax)
		}
		h.fail(w, r, fail)
		return
	}
	t := newTxn(stages, prec)
	if t.total == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	res := h.s.sink.submit(t)
	for _, st := range stages {
		st.free() // the writer is done with the rows
	}
	mem.release()
	if res.err != nil {
		res.release()
		if le, ok := asLineErr(res.err); ok {
			h.writeError(w, http.StatusBadRequest, "invalid", "failed to write line protocol: "+le.Error(), le.Line)
			return
		}
		if h.refuse(w, res.err) {
			return // no room: 503 (health.go)
		}
		h.writeError(w, http.StatusInternalServerError, "internal error", res.err.Error(), 0)
		return
	}
	if err := res.wait(); err != nil {
		h.writeError(w, http.StatusInternalServerError, "internal error", "rows stored but not made durable: "+err.Error(), 0)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *httpAPI) fail(w http.ResponseWriter, r *http.Request, f *writeFail) {
	if f.le != nil {
		h.s.m.rejected(h.s.sink.knownLabel(f.meas), f.le.Reason.String())
		h.s.m.logBad(h.s.log, "ingest: request rejected", "remote", r.RemoteAddr, "table", string(f.meas), "err", f.le)
		f.status, f.code, f.msg, f.line = http.StatusBadRequest, "invalid", "failed to parse line protocol: "+f.le.Error(), f.le.Line
	}
	if f.retryAfter {
		w.Header().Set("Retry-After", "1")
	}
	h.writeError(w, f.status, f.code, f.msg, f.line)
}

// readBody reads, decompresses and splits the body, and stages its lines
// (http_chunks.go): the stages, in line order.
func (h *httpAPI) readBody(r *http.Request, pr *progressReader, gz bool, prec int64, mem *reqMemory) ([]*stage, *writeFail) {
	o := h.s.opts
	if err := mem.charge(readBufStart); err != nil {
		return nil, h.memoryFail(err)
	}
	var src io.Reader = pr
	if gz {
		if err := mem.charge(gzipCost); err != nil {
			return nil, h.memoryFail(err)
		}
		g, _ := h.gzips.Get().(*gzipBody)
		if g == nil {
			g = &gzipBody{br: bufio.NewReaderSize(nil, 4<<10), zr: new(gzip.Reader)}
		}
		defer h.gzips.Put(g)
		g.br.Reset(pr)
		if err := g.zr.Reset(g.br); err != nil {
			return nil, h.readFail(r, pr, err, true)
		}
		defer g.br.Reset(nil) // the pool keeps no request's body
		src = g.zr
	}
	// A buffer holds a chunk and the read that completed it, or the
	// longest line and a read.
	limit := o.LineLimit
	bufCap := max(chunkText, limit) + o.ReadBuffer
	bs := newBodyStager(h, prec, mem.charge, bufCap)
	if bs.serial {
		bufCap = limit + o.ReadBuffer
	}
	chunk := bs.chunkMin()
	defer bs.stopWorkers() // on a panic; finish has stopped them
	buf := make([]byte, 0, readBufStart)
	var total int64
	full := false
	for {
		if cap(buf) < bufCap && (full || cap(buf)-len(buf) < cap(buf)/2) {
			n := min(2*cap(buf), bufCap)
			if err := mem.charge(int64(n)); err != nil {
				return bs.finish(h.memoryFail(err))
			}
			buf = append(make([]byte, 0, n), buf...)
		}
		n, rerr := src.Read(buf[len(buf):cap(buf)])
		full = len(buf)+n == cap(buf)
		buf = buf[:len(buf)+n]
		if gz {
			pr.decompressed(n)
		}
		if total += int64(n); total > o.MaxDecompressed {
			return bs.finish(&writeFail{status: http.StatusRequestEntityTooLarge, code: "request too large",
				msg: fmt.Sprintf("body is over the %d-byte limit decompressed (--max-body-decompressed)", o.MaxDecompressed)})
		}
		if rerr == io.EOF {
			if len(bs.chunks) == 0 {
				bs.inline(buf) // the whole body in one chunk
			} else if len(buf) > 0 {
				if _, err := bs.dispatch(buf, buf, true); err != nil {
					return bs.finish(h.memoryFail(err))
				}
			}
			return bs.finish(nil)
		}
		if rerr != nil {
			return bs.finish(h.readFail(r, pr, rerr, gz))
		}
		if len(buf) < chunk {
			continue
		}
		// Cut at the last line end: the lines before it are a chunk, the
		// line after it goes on in the next buffer.
		if cut := lastLineEnd(buf) + 1; cut > 0 {
			next, err := bs.dispatch(buf, buf[:cut], false)
			if err != nil {
				return bs.finish(h.memoryFail(err))
			}
			buf = append(next, buf[cut:]...)
			if bs.failed.Load() {
				return bs.finish(nil) // a chunk failed: the rest is not read
			}
		}
		if len(buf) > limit { // and holds no line end
			return bs.finish(h.lineFail(nil, tooLong(0, limit)))
		}
	}
}

// lastLineEnd is the index of the last line end in b, or -1.
func lastLineEnd(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if i = bytes.LastIndexByte(b[:i+1], '\n'); i < 0 {
			return -1
		}
		k := i
		for k > 0 && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i
		}
	}
	return -1
}

func tooLong(lineNo uint64, limit int) *lineproto.LineError {
	return &lineproto.LineError{Line: int(lineNo), Col: limit + 1, Reason: lineproto.ReasonTooLong,
		Msg: fmt.Sprintf("line is longer than the %d-byte limit", limit)}
}

// stageLine parses and stages one line.
func (h *httpAPI) stageLine(p *lineproto.Parser, l *lineproto.Line, line []byte, lineNo uint64, st *stage) (stop bool, fail *writeFail) {
	if len(line) > h.s.opts.LineLimit {
		return false, h.lineFail(nil, tooLong(lineNo, h.s.opts.LineLimit))
	}
	ok, err := p.Parse(line, l)
	if err != nil {
		le, _ := asLineErr(err)
		if le == nil {
			le = &lineproto.LineError{Reason: lineproto.ReasonSyntax, Msg: err.Error()}
		}
		le.Line = int(lineNo)
		return false, h.lineFail(l.Measurement, le)
	}
	if !ok {
		return false, nil
	}
	stop, err = st.add(l, lineNo)
	if err != nil {
		if le, ok := asLineErr(err); ok {
			le.Line = int(lineNo)
			return false, h.lineFail(l.Measurement, le)
		}
		return false, h.memoryFail(err)
	}
	return stop, nil
}

// lineFail is the 400 for a bad line of table meas (counted and logged
// by fail, once the request is answered with it).
func (h *httpAPI) lineFail(meas []byte, le *lineproto.LineError) *writeFail {
	return &writeFail{meas: bytes.Clone(meas), le: le}
}

// memoryFail is the answer when the memory bound refuses a request.
func (h *httpAPI) memoryFail(err error) *writeFail {
	msg := memoryMessage(err, h.s.opts.MaxWriteMemory)
	if errors.Is(err, errMemoryLimit) {
		return &writeFail{status: http.StatusRequestEntityTooLarge, code: "request too large", msg: msg}
	}
	h.s.m.logBad(h.s.log, "ingest: request refused: write memory bound", "limit", h.s.opts.MaxWriteMemory)
	return &writeFail{status: http.StatusServiceUnavailable, code: "unavailable", msg: msg, retryAfter: true}
}

// readFail is the answer when reading the body fails: err, or the error
// the connection gave (pr.err) under it.
func (h *httpAPI) readFail(r *http.Request, pr *progressReader, err error, gz bool) *writeFail {
	if pr.err != nil && pr.err != io.EOF {
		err = pr.err
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &writeFail{status: http.StatusRequestEntityTooLarge, code: "request too large",
			msg: fmt.Sprintf("body is over the %d-byte limit (--max-body)", h.s.opts.MaxBody)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.s.m.logBad(h.s.log, "ingest: request body cut off: read timeout", "remote", r.RemoteAddr, "timeout", h.s.opts.ReadTimeout)
		return &writeFail{status: http.StatusRequestTimeout, code: "timeout",
			msg: fmt.Sprintf("the body stalled: less than %d bytes in %v (--read-timeout); nothing was stored", MinBodyProgress, h.s.opts.ReadTimeout)}
	case gz && err == pr.err:
		return &writeFail{status: http.StatusBadRequest, code: "invalid", msg: "reading body: " + err.Error()}
	case gz:
		return &writeFail{status: http.StatusBadRequest, code: "invalid", msg: "gzip body: " + err.Error()}
	}
	return &writeFail{status: http.StatusBadRequest, code: "invalid", msg: "reading body: " + err.Error()}
}
