package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// Handler is the server's HTTP API:
//
//	POST /write, /api/v2/write   line protocol, all or nothing, 204 once durable
//	GET  /query                  rows as json or csv, or one Parquet file, streamed
//	GET  /latest                 each symbol's last row at or before a time
//	GET  /tail                   new rows as Server-Sent Events
//	GET  /bars                   one symbol's OHLCV bars
//	GET  /api/tables             each table's schema and state (the console)
//	GET  /                       the web console (no token needed: no data)
//	GET  /metrics                Prometheus text format
//	GET  /settings               what QuestDB's clients ask before writing
//	GET  /health                 liveness (no token needed)
//	GET  /ping                   204 (InfluxDB clients' liveness check)
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	h := &httpAPI{s: s, errPrefix: newErrorPrefix()}
	mux.HandleFunc("/write", h.auth("/write", h.write))
	mux.HandleFunc("/api/v2/write", h.auth("/api/v2/write", h.write))
	mux.HandleFunc("/query", h.auth("/query", h.query))
	mux.HandleFunc("/latest", h.auth("/latest", h.latest))
	mux.HandleFunc("/tail", h.authQuery("/tail", h.tail))
	mux.HandleFunc("/bars", h.auth("/bars", h.bars))
	mux.HandleFunc("GET /api/tables", h.auth("/api/tables", h.tables))
	page, assets := h.consoleHandler()
	mux.HandleFunc("GET /{$}", h.count("/", page))
	mux.HandleFunc("GET /console/", h.count("/console/", assets))
	mux.Handle("/metrics", h.auth("/metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}).ServeHTTP))
	mux.HandleFunc("/settings", h.count("/settings", h.settings))
	mux.HandleFunc("/health", h.count("/health", h.health))
	mux.HandleFunc("/ping", h.auth("/ping", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	return mux
}

type httpAPI struct {
	s         *Server
	errPrefix string
	errSeq    counter
	parsers   sync.Pool
}

// statusWriter remembers the status code for the request counter.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (write
// deadlines for /tail).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (h *httpAPI) count(path string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		next(sw, r)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		h.s.m.http(path, sw.code)
	}
}

// auth requires the token, when one is configured, in either scheme.
func (h *httpAPI) auth(path string, next http.HandlerFunc) http.HandlerFunc {
	return h.count(path, func(w http.ResponseWriter, r *http.Request) {
		if tok := h.s.opts.Token; tok != "" && !tokenOK(r.Header.Get("Authorization"), tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tickdb"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <token> or Token <token>", http.StatusUnauthorized)
			return
		}
		next(w, r)
	})
}

// authQuery is auth that also takes the token as the token query
// parameter: a browser's EventSource cannot send headers. Only /tail
// takes it there (a token in a URL can end up in logs and history).
func (h *httpAPI) authQuery(path string, next http.HandlerFunc) http.HandlerFunc {
	return h.count(path, func(w http.ResponseWriter, r *http.Request) {
		tok := h.s.opts.Token
		if tok != "" && !tokenOK(r.Header.Get("Authorization"), tok) &&
			subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(tok)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tickdb"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <token> or Token <token>, or the token query parameter", http.StatusUnauthorized)
			return
		}
		next(w, r)
	})
}

func tokenOK(header, token string) bool {
	scheme, got, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !(strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "Token")) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

func (h *httpAPI) nextErrID() uint64 {
	h.errSeq.add(1)
	return h.errSeq.load()
}

// newErrorPrefix is the per-process part of error ids, as QuestDB's are:
// "<hex>-<n>".
func newErrorPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeError answers with the line-protocol error body QuestDB's and
// InfluxDB's clients parse: code, message, line (1-based, when known) and
// errorId, and no other keys (QuestDB's Java client rejects others). The
// body is sent chunked, as QuestDB's server does.
func (h *httpAPI) writeError(w http.ResponseWriter, status int, code, msg string, line int) {
	body := struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Line    int    `json:"line,omitempty"`
		ErrorID string `json:"errorId"`
	}{code, msg, line, fmt.Sprintf("%s-%d", h.errPrefix, h.nextErrID())}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	_ = json.NewEncoder(w).Encode(body)
}

// write is POST /write and /api/v2/write: every line is parsed and checked
// before any is stored; one bad line rejects the request with 400 naming
// it. The answer, 204, comes once every row of the request is durable.
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
	var body io.Reader = http.MaxBytesReader(w, r.Body, h.s.opts.MaxBody)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			h.writeError(w, http.StatusBadRequest, "invalid", "gzip body: "+err.Error(), 0)
			return
		}
		body = io.LimitReader(zr, h.s.opts.MaxBody+1)
	default:
		h.writeError(w, http.StatusUnsupportedMediaType, "not supported", fmt.Sprintf("content encoding %q (send identity or gzip)", enc), 0)
		return
	}
	data, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.writeError(w, http.StatusRequestEntityTooLarge, "request too large", fmt.Sprintf("body is over the %d-byte limit", h.s.opts.MaxBody), 0)
			return
		}
		h.writeError(w, http.StatusBadRequest, "invalid", "reading body: "+err.Error(), 0)
		return
	}
	if int64(len(data)) > h.s.opts.MaxBody {
		h.writeError(w, http.StatusRequestEntityTooLarge, "request too large", fmt.Sprintf("body is over the %d-byte limit", h.s.opts.MaxBody), 0)
		return
	}
	t, meas, lerr := h.encode(data, prec)
	if lerr != nil {
		h.s.m.rejected(h.s.sink.knownLabel(meas), lerr.Reason.String())
		h.s.m.logBad(h.s.log, "ingest: request rejected", "remote", r.RemoteAddr, "table", string(meas), "err", lerr)
		h.writeError(w, http.StatusBadRequest, "invalid", "failed to parse line protocol: "+lerr.Error(), lerr.Line)
		return
	}
	if t.lines == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	res := h.s.sink.submit(t)
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

// encode parses every line of a request body into records. On a bad line
// it returns the line's measurement too, when it parsed (nil otherwise).
func (h *httpAPI) encode(data []byte, prec int64) (*txn, []byte, *lineproto.LineError) {
	p, _ := h.parsers.Get().(*lineproto.Parser)
	if p == nil {
		p = &lineproto.Parser{}
	}
	defer h.parsers.Put(p)
	p.Precision = prec
	t := &txn{res: make(chan txnResult, 1), buf: make([]byte, 0, len(data)+len(data)/2)}
	var l lineproto.Line
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line := data
		if i := lineEnd(data); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > h.s.opts.LineLimit {
			return nil, nil, &lineproto.LineError{Line: lineNo, Col: h.s.opts.LineLimit + 1, Reason: lineproto.ReasonTooLong,
				Msg: fmt.Sprintf("line is longer than the %d-byte limit", h.s.opts.LineLimit)}
		}
		ok, err := p.Parse(line, &l)
		if err != nil {
			le, _ := asLineErr(err)
			if le == nil {
				le = &lineproto.LineError{Reason: lineproto.ReasonSyntax, Msg: err.Error()}
			}
			le.Line = lineNo
			return nil, bytes.Clone(l.Measurement), le // the parser (and its scratch) goes back to the pool
		}
		if ok {
			t.buf = appendRecord(t.buf, &l, 0, uint64(lineNo))
			t.lines++
		}
	}
	return t, nil, nil
}

// settings answers as QuestDB's server does, offering only text line
// protocol version 1, so its clients choose it.
func (h *httpAPI) settings(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"config":{"release.type":"OSS","release.version":"tickdb","accepting.writes":["http","tcp"],`+
		`"line.proto.support.versions":[1],"ilp.proto.transports":["tcp","http"],"cairo.max.file.name.length":127},`+
		`"preferences.version":0,"preferences":{}}`)
}

// query is GET /query: table, sym, from, to, limit, format (json or csv,
// default json; parquet: see queryParquet) and ts (rfc3339 or ns), as the
// CLI's query command.
func (h *httpAPI) query(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	bad := func(msg string) { h.writeError(w, http.StatusBadRequest, "invalid", msg, 0) }
	q := query.Query{Table: qs.Get("table"), Sym: qs.Get("sym")}
	if q.Table == "" {
		bad("table is required")
		return
	}
	if err := store.ValidTableName(q.Table); err != nil {
		bad(err.Error())
		return
	}
	var err error
	for _, b := range []struct {
		name string
		at   *int64
		has  *bool
	}{{"from", &q.From, &q.HasFrom}, {"to", &q.To, &q.HasTo}} {
		if v := qs.Get(b.name); v != "" {
			if *b.at, err = query.ParseTime(v); err != nil {
				bad(b.name + ": " + err.Error())
				return
			}
			*b.has = true
		}
	}
	if v := qs.Get("limit"); v != "" {
		if q.Limit, err = strconv.ParseInt(v, 10, 64); err != nil || q.Limit < 0 {
			bad(fmt.Sprintf("limit %q is not a count of rows", v))
			return
		}
	}
	if qs.Get("format") == "parquet" {
		h.queryParquet(w, r, q)
		return
	}
	h.serveRows(w, r, "query", q.Table, func(ctx context.Context, rd *reader.Reader, enc *query.Encoder) error {
		_, err := query.Run(ctx, rd, q, enc)
		return err
	})
}

// serveRows answers a GET that streams rows of table (endpoint: its name
// in messages): it reads the format (json or csv, default json) and ts
// (rfc3339 or ns) parameters, opens the table, and streams what run
// passes its encoder. An error before any row is sent is the response's
// status (400 for a bad query, 404 for no such table); after, the
// stream ends short so the client sees a broken body.
func (h *httpAPI) serveRows(w http.ResponseWriter, r *http.Request, endpoint, table string, run func(context.Context, *reader.Reader, *query.Encoder) error) {
	h.serveEncoded(w, r, endpoint, table, nil, run)
}

// newEncoderFunc makes the encoder for computed rows (bars) over an open
// reader; its error is the request's (400 for query.ErrBadQuery).
type newEncoderFunc func(io.Writer, query.Format, query.TsFormat, *reader.Reader) (*query.Encoder, error)

// serveEncoded is serveRows with the encoder made by newEnc, or for the
// table's rows when newEnc is nil.
func (h *httpAPI) serveEncoded(w http.ResponseWriter, r *http.Request, endpoint, table string, newEnc newEncoderFunc, run func(context.Context, *reader.Reader, *query.Encoder) error) {
	qs := r.URL.Query()
	bad := func(msg string) { h.writeError(w, http.StatusBadRequest, "invalid", msg, 0) }
	fv := qs.Get("format")
	if fv == "" {
		fv = "json"
	}
	f, err := query.ParseFormat(fv)
	if err != nil || (fv != "json" && fv != "csv") {
		also := ""
		if endpoint == "query" {
			also = " (or parquet)"
		}
		bad(fmt.Sprintf("format %q: /%s writes json or csv%s", fv, endpoint, also))
		return
	}
	tsv := qs.Get("ts")
	if tsv == "" {
		tsv = "rfc3339"
	}
	tf, err := query.ParseTsFormat(tsv)
	if err != nil {
		bad(err.Error())
		return
	}
	rd, err := reader.Open(h.s.opts.DB, table, nil)
	if err != nil {
		if errors.Is(err, store.ErrNoTable) {
			h.writeError(w, http.StatusNotFound, "not found", err.Error(), 0)
			return
		}
		h.writeError(w, http.StatusInternalServerError, "internal error", err.Error(), 0)
		return
	}
	defer rd.Close()
	var enc *query.Encoder
	if newEnc == nil {
		enc = query.NewEncoder(w, f, tf, rd.Schema(), table, rd.SymbolName)
	} else {
		if enc, err = newEnc(w, f, tf, rd); err != nil {
			status, code := http.StatusInternalServerError, "internal error"
			if errors.Is(err, query.ErrBadQuery) {
				status, code = http.StatusBadRequest, "invalid"
			}
			h.writeError(w, status, code, err.Error(), 0)
			return
		}
	}
	if fv == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson") // one JSON object per line
	}
	if err := run(r.Context(), rd, enc); err != nil {
		if enc.Written() == 0 { // nothing sent yet: the status can still say why
			w.Header().Del("Content-Type")
			status, code := http.StatusInternalServerError, "internal error"
			if errors.Is(err, query.ErrBadQuery) {
				status, code = http.StatusBadRequest, "invalid"
			}
			h.writeError(w, status, code, err.Error(), 0)
			return
		}
		// The status line is gone; end the stream short so the client
		// sees a broken body rather than a complete one.
		h.s.log.Warn("ingest: "+endpoint+" failed mid-stream", "table", table, "err", err)
		panic(http.ErrAbortHandler)
	}
	if err := enc.Close(); err != nil {
		h.s.log.Debug("ingest: "+endpoint+" write", "err", err)
	}
}

// ParsePrecision maps the HTTP precision parameter to a multiplier from the
// line's timestamp unit to nanoseconds. The empty string means nanoseconds,
// as in InfluxDB.
func ParsePrecision(s string) (int64, error) {
	switch s {
	case "", "n", "ns":
		return 1, nil
	case "u", "us":
		return 1_000, nil
	case "ms":
		return 1_000_000, nil
	case "s":
		return 1_000_000_000, nil
	}
	return 0, fmt.Errorf("ingest: precision %q: want one of n, ns, u, us, ms, s", s)
}
