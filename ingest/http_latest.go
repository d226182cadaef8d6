package ingest

import (
	"context"
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
	h.serveRows(w, r, "latest", q.Table, func(ctx context.Context, rd *reader.Reader, enc *query.Encoder) error {
		for _, sym := range q.Syms {
			warnUnknownSym(w, rd, q.Table, sym)
		}
		_, err := query.RunLatest(ctx, rd, q, enc)
		return err
	})
}
