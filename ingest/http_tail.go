package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// Streaming bounds for GET /tail.
const (
	// DefaultMaxStreams is Options.MaxStreams's default.
	DefaultMaxStreams = 64
	// DefaultStreamWriteTimeout is Options.StreamWriteTimeout's default.
	DefaultStreamWriteTimeout = 10 * time.Second
	// tailHeartbeat is how often an idle stream sends an SSE comment, so
	// that proxies and browsers keep the connection open.
	tailHeartbeat = 15 * time.Second
	// tailBatchBytes bounds the events gathered before they are written
	// and flushed: with the socket's buffers, all a stream ever holds for
	// its client.
	tailBatchBytes = 64 << 10
	// tailMaxSleep caps the idle stream's poll interval: the most a new
	// row waits before its event is written.
	tailMaxSleep = 5 * time.Millisecond
)

// tail is GET /tail: Server-Sent Events, one per row published to table
// (of symbol sym when given), each with the row's seq as its id and, as
// its data, the same JSON object per row as GET /query writes (ts=rfc3339
// or ns as there). It starts after the seq in the Last-Event-ID header (a
// browser's EventSource sends it when it reconnects), else at seq from,
// else with the rows published after the request; so a client that
// reconnects with the last id it saw gets every row exactly once, across
// segment rolls and writer restarts. A table that does not exist is a
// 404 (tickdb tail waits for it; a browser would rather be told).
//
// The writer is never slowed by a stream: the stream reads the table
// through its own read-only mapping (reader.Tail), so nothing is queued
// for it in the writer. What a stream holds for its client is bounded
// (one batch of at most tailBatchBytes, and the socket's buffers); a
// client that cannot take a batch within Options.StreamWriteTimeout is
// cut off (tickdb_http_tail_cutoffs_total) and may reconnect with its
// Last-Event-ID. At most Options.MaxStreams streams run at once (503
// over that). Because a browser's EventSource cannot send headers, the
// token may come as the token query parameter here.
func (h *httpAPI) tail(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	bad := func(msg string) { h.writeError(w, http.StatusBadRequest, "invalid", msg, 0) }
	table, sym := qs.Get("table"), qs.Get("sym")
	if table == "" {
		bad("table is required")
		return
	}
	if err := store.ValidTableName(table); err != nil {
		bad(err.Error())
		return
	}
	var from uint64
	hasFrom := false
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == ^uint64(0) {
			bad(fmt.Sprintf("Last-Event-ID %q is not a row's seq", v))
			return
		}
		from, hasFrom = n+1, true
	} else if v := qs.Get("from"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			bad(fmt.Sprintf("from %q is not a seq", v))
			return
		}
		from, hasFrom = n, true
	}
	tsv := qs.Get("ts")
	if tsv == "" {
		tsv = "rfc3339"
	}
	tsf, err := query.ParseTsFormat(tsv)
	if err != nil {
		bad(err.Error())
		return
	}
	select {
	case h.s.streams <- struct{}{}:
		defer func() { <-h.s.streams }()
	default:
		h.writeError(w, http.StatusServiceUnavailable, "unavailable", fmt.Sprintf("%d streams are open, the limit (--max-streams)", cap(h.s.streams)), 0)
		return
	}
	rd, err := reader.Open(h.s.opts.DB, table, nil)
	if err != nil {
		if errors.Is(err, store.ErrNoTable) {
			h.noTable(w, table)
			return
		}
		h.writeError(w, http.StatusInternalServerError, "internal error", err.Error(), 0)
		return
	}
	defer rd.Close()
	s := rd.Schema()
	if sym != "" && s.SymCol < 0 {
		bad(fmt.Sprintf("sym %q: table %s has no sym column", sym, table))
		return
	}
	if !hasFrom {
		from = rd.Len()
	}
	tl := rd.Tail(from, nil)
	st := &tailStream{sym: sym, rd: rd, tl: tl}
	if sym != "" {
		st.symCol = s.ColAt(s.SymCol)
		st.lookup()
		warnUnknownSym(w, rd, table, sym) // not yet: its rows follow once written
	}
	var rowBuf bytes.Buffer
	enc := query.NewEncoder(&rowBuf, query.FormatJSON, tsf, s, table, rd.SymbolName)
	h.s.m.tailStreams.Inc()
	defer h.s.m.tailStreams.Dec()

	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	out := make([]byte, 0, tailBatchBytes+4096)
	// The first bytes: how long a browser waits before it reconnects, and
	// where the stream starts, so that a client knows it is following.
	out = fmt.Appendf(out, "retry: 1000\n: tail %s from seq %d\n\n", table, tl.Next())
	send := func() bool {
		if len(out) == 0 {
			return true
		}
		_ = rc.SetWriteDeadline(time.Now().Add(h.s.opts.StreamWriteTimeout))
		_, err := w.Write(out)
		if err == nil {
			err = rc.Flush()
		}
		out = out[:0]
		if err != nil {
			// A failed write cancels the request's context, so the
			// timeout tells a slow client from one that went away.
			if errors.Is(err, os.ErrDeadlineExceeded) {
				h.s.m.tailCutoffs.Inc()
				h.s.log.Debug("ingest: tail client cut off", "remote", r.RemoteAddr, "table", table, "err", err)
			}
			return false
		}
		return true
	}
	if !send() {
		return
	}
	idle := &reader.Backoff{MaxSleep: tailMaxSleep}
	empty := 0
	lastSend := time.Now()
	ctx := r.Context()
	for {
		row, seq, ok, err := st.poll()
		if err != nil {
			h.s.log.Warn("ingest: tail", "table", table, "err", err)
			return
		}
		if ok {
			if g := rd.Schema(); g != s {
				// A column added (docs/FORMAT.md §15): the rows from
				// here on carry it.
				s, enc = g, query.NewEncoder(&rowBuf, query.FormatJSON, tsf, g, table, rd.SymbolName)
			}
			if err := enc.Row(row); err != nil { // a symbol's name unreadable
				h.s.log.Warn("ingest: tail", "table", table, "seq", seq, "err", err)
				return
			}
			_ = enc.Flush() // one JSON object and "\n", into rowBuf: cannot fail
			line := bytes.TrimSuffix(rowBuf.Bytes(), []byte("\n"))
			out = append(out, "id: "...)
			out = strconv.AppendUint(out, seq, 10)
			out = append(out, "\ndata: "...)
			out = append(out, line...)
			out = append(out, "\n\n"...)
			rowBuf.Reset()
			if len(out) < tailBatchBytes {
				continue
			}
		}
		if len(out) > 0 {
			if !send() {
				return
			}
			lastSend = time.Now()
			empty = 0
			idle.Reset()
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-h.s.closing:
			return
		default:
		}
		if time.Since(lastSend) >= h.s.opts.tailHeartbeat {
			out = append(out, ": ping\n\n"...)
			continue
		}
		idle.Idle(empty)
		empty++
	}
}

// tailStream is one /tail request's position: the tail and, with a sym
// filter, the symbol's id once the dictionary has it.
type tailStream struct {
	rd     *reader.Reader
	tl     *reader.Tail
	sym    string
	symCol store.Col
	id     uint32
	known  bool // sym's id is known and the tail filters by it
}

// lookup filters the tail by sym once the table's dictionary has it.
func (st *tailStream) lookup() {
	if id, ok := st.rd.SymbolID([]byte(st.sym)); ok {
		st.tl.FilterSym(id)
		st.id, st.known = id, true
	}
}

// poll returns the next row for the client, if one is published. While a
// filtered symbol is not in the dictionary, a row is checked against it
// again (a symbol is in the dictionary before its first row is
// published), and the rows of other symbols are skipped.
func (st *tailStream) poll() (store.Row, uint64, bool, error) {
	for {
		row, seq, ok, err := st.tl.Poll()
		if err != nil || !ok || st.sym == "" || st.known {
			return row, seq, ok, err
		}
		st.lookup()
		if st.known && row.Sym(st.symCol) == st.id {
			return row, seq, true, nil
		}
	}
}
