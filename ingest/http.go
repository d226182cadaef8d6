package ingest

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

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
//	GET  /sql                    SQL passed to Options.SQLAddr's tickdb-sql, rows as json or csv
//	GET  /api/tables             each table's schema and state, and whether /sql has a server (the console)
//	GET  /                       the web console (no token needed: no data)
//	GET  /metrics                Prometheus text format
//	GET  /settings               what QuestDB's clients ask before writing
//	GET  /health                 liveness (no token needed)
//	GET  /ping                   204 (InfluxDB clients' liveness check)
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	h := &httpAPI{s: s, errPrefix: newErrorPrefix(), mem: s.wmem, stageSem: make(chan struct{}, chunkWorkers())}
	mux.HandleFunc("/write", h.auth("/write", h.write))
	mux.HandleFunc("/api/v2/write", h.auth("/api/v2/write", h.write))
	mux.HandleFunc("/query", h.auth("/query", h.query))
	mux.HandleFunc("/latest", h.auth("/latest", h.latest))
	mux.HandleFunc("/tail", h.authQuery("/tail", h.tail))
	mux.HandleFunc("/bars", h.auth("/bars", h.bars))
	mux.HandleFunc("GET /sql", h.auth("/sql", h.sql))
	mux.HandleFunc("GET /api/tables", h.auth("/api/tables", h.tables))
	page, assets := h.consoleHandler()
	mux.HandleFunc("GET /{$}", h.count("/", page))
	mux.HandleFunc("GET /console/", h.count("/console/", assets))
	mux.Handle("/metrics", h.auth("/metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}).ServeHTTP))
	mux.HandleFunc("/settings", h.count("/settings", h.settings))
	mux.HandleFunc("/health", h.count("/health", h.health))
	mux.HandleFunc("/ping", h.auth("/ping", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	return h.readDeadline(mux)
}

// readDeadline gives a request that has a body ReadTimeout to send it,
// whichever endpoint it names: one that reads no body still has what is
// left of it read (up to 256 KiB) after it answers, and that read must not
// wait forever. A write body then moves its deadline ahead as it arrives
// (progressReader). A request without a body, such as a GET /tail stream,
// gets no read deadline: a stream writes for as long as it lasts.
func (h *httpAPI) readDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.s.opts.ReadTimeout))
		}
		next.ServeHTTP(w, r)
	})
}

type httpAPI struct {
	s         *Server
	errPrefix string
	errSeq    counter
	parsers   sync.Pool // *writeParser
	gzips     sync.Pool // *gzipBody
	textBufs  sync.Pool // *[]byte: chunk buffers (http_chunks.go)
	stageSem  chan struct{}
	mem       *writeMemory
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
//
// msg names no path of the server's: the database directory is cut from
// it (a table's files are named from the table's own directory), since a
// client knows tables, not where the server keeps them.
func (h *httpAPI) writeError(w http.ResponseWriter, status int, code, msg string, line int) {
	msg = h.cutDB(msg)
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

// cutDB removes the database directory from msg: "tickdata/trades/x"
// becomes "trades/x".
func (h *httpAPI) cutDB(msg string) string {
	db := h.s.opts.DB
	if db == "" {
		return msg
	}
	if abs, err := filepath.Abs(db); err == nil && abs != db {
		msg = strings.ReplaceAll(msg, abs+string(filepath.Separator), "")
	}
	return strings.ReplaceAll(msg, filepath.Clean(db)+string(filepath.Separator), "")
}

// noTable answers 404 for a table that does not exist, naming it and the
// tables there are, as the CLI does ("no table "trade"; tables: quotes,
// trades").
func (h *httpAPI) noTable(w http.ResponseWriter, table string) {
	list := "none"
	if names, _ := reader.Tables(h.s.opts.DB); len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	h.writeError(w, http.StatusNotFound, "not found", fmt.Sprintf("no table %q; tables: %s", table, list), 0)
}

// WarningHeader is the response header that says why an answer of rows
// is empty when its cause is the request's, not the data's: a sym the
// table does not hold (query.UnknownSym: the symbol, the table and the
// nearest symbol names), one value per such symbol. The status stays 200
// and the body the rows' (none), so clients that read only the body see
// what they saw before.
const WarningHeader = "Tickdb-Warning"

// warnUnknownSym sets WarningHeader when sym is not a symbol of rd's
// table. Call it before the first byte of the body.
func warnUnknownSym(w http.ResponseWriter, rd *reader.Reader, table, sym string) {
	if m := query.UnknownSym(rd, table, sym); m != "" {
		w.Header().Add(WarningHeader, m)
	}
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
// CLI's query command; and order: asc (the default, time order) or desc,
// the newest limit rows newest first (query.Query.Desc).
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
	if err := parseRange(qs, &q.From, &q.HasFrom, &q.To, &q.HasTo); err != nil {
		bad(err.Error())
		return
	}
	if v := qs.Get("limit"); v != "" {
		if q.Limit, err = strconv.ParseInt(v, 10, 64); err != nil || q.Limit < 0 {
			bad(fmt.Sprintf("limit %q is not a count of rows", v))
			return
		}
	}
	switch v := qs.Get("order"); v {
	case "", "asc":
	case "desc":
		q.Desc = true // needs a limit: query.Run says so
	default:
		bad(fmt.Sprintf("order %q is not asc or desc", v))
		return
	}
	if qs.Get("format") == "parquet" {
		h.queryParquet(w, r, q)
		return
	}
	h.serveRows(w, r, "query", q.Table, func(ctx context.Context, rd *reader.Reader, enc *query.Encoder) error {
		warnUnknownSym(w, rd, q.Table, q.Sym)
		_, err := query.Run(ctx, rd, q, enc)
		return err
	})
}

// parseRange reads the from and to parameters (RFC 3339 or integer ns;
// each only when given) into the bounds and their flags; a bad time, or a
// from after to, is an error that names the parameter or both times.
func parseRange(qs url.Values, from *int64, hasFrom *bool, to *int64, hasTo *bool) error {
	for _, b := range []struct {
		name string
		at   *int64
		has  *bool
	}{{"from", from, hasFrom}, {"to", to, hasTo}} {
		if v := qs.Get(b.name); v != "" {
			var err error
			if *b.at, err = query.ParseTime(v); err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			*b.has = true
		}
	}
	return query.CheckRange(*from, *hasFrom, *to, *hasTo)
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
	pr, err := h.s.readers.get(table)
	if err != nil {
		if errors.Is(err, store.ErrNoTable) {
			h.noTable(w, table)
			return
		}
		h.writeError(w, http.StatusInternalServerError, "internal error", err.Error(), 0)
		return
	}
	rd, ok := pr.r, false
	defer func() { h.s.readers.put(table, pr, ok) }()
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
	ok = true
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
