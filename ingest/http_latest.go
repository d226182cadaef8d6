package ingest

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// latest is GET /latest: table, at (RFC 3339 or integer ns; default:
// each symbol's newest row), sym (repeated for several; default: every
// symbol), format (json or csv, default json) and ts (rfc3339 or ns), as
// the CLI's latest command: each symbol's last row at or before at, in
// symbol name order.
func (h *httpAPI) latest(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	bad := func(msg string) { h.writeError(w, http.StatusBadRequest, "invalid", msg, 0) }
	q := query.LatestQuery{Table: qs.Get("table"), Syms: qs["sym"]}
	if q.Table == "" {
		bad("table is required")
		return
	}
	if err := store.ValidTableName(q.Table); err != nil {
		bad(err.Error())
		return
	}
	if v := qs.Get("at"); v != "" {
		at, err := query.ParseTime(v)
		if err != nil {
			bad("at: " + err.Error())
			return
		}
		q.At, q.HasAt = at, true
	}
	fv := qs.Get("format")
	if fv == "" {
		fv = "json"
	}
	f, err := query.ParseFormat(fv)
	if err != nil || (fv != "json" && fv != "csv") {
		bad(fmt.Sprintf("format %q: /latest writes json or csv", fv))
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
	rd, err := reader.Open(h.s.opts.DB, q.Table, nil)
	if err != nil {
		if errors.Is(err, store.ErrNoTable) {
			h.writeError(w, http.StatusNotFound, "not found", err.Error(), 0)
			return
		}
		h.writeError(w, http.StatusInternalServerError, "internal error", err.Error(), 0)
		return
	}
	defer rd.Close()
	if fv == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson") // one JSON object per line
	}
	enc := query.NewEncoder(w, f, tf, rd.Schema(), q.Table, rd.Symbol)
	if _, err := query.RunLatest(r.Context(), rd, q, enc); err != nil {
		if enc.Written() == 0 { // nothing sent yet: the status can still say why
			w.Header().Del("Content-Type")
			status, code := http.StatusInternalServerError, "internal error"
			if errors.Is(err, query.ErrBadQuery) {
				status, code = http.StatusBadRequest, "invalid"
			}
			h.writeError(w, status, code, err.Error(), 0)
			return
		}
		// The status line is gone (more than 32 KiB of rows sent): end
		// the stream short so the client sees a broken body.
		h.s.log.Warn("ingest: latest failed mid-stream", "table", q.Table, "err", err)
		panic(http.ErrAbortHandler)
	}
	if err := enc.Close(); err != nil {
		h.s.log.Debug("ingest: latest write", "err", err)
	}
}
