package ingest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// bars is GET /bars: one symbol's OHLCV bars, as the CLI's bars command
// computes them (query.Bars): table, sym and interval (a Go duration like
// 1m or 250ms, or integer ns) are required; from (inclusive) and to
// (exclusive) take RFC 3339 or integer ns; field (default price) and
// volume (default size) name the f64 or i64 columns. The answer is
// streamed like GET /query's: in json (the default) one object per line,
// {"ts","open","high","low","close","volume","count"} (NDJSON, so that a
// long range is never held whole), or csv; ts as the ts parameter says
// (rfc3339 or ns). Empty buckets have no bar.
func (h *httpAPI) bars(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	bad := func(msg string) { h.writeError(w, http.StatusBadRequest, "invalid", msg, 0) }
	q := query.BarsQuery{Table: qs.Get("table"), Sym: qs.Get("sym"), Field: qs.Get("field"), Volume: qs.Get("volume")}
	switch {
	case q.Table == "":
		bad("table is required")
		return
	case q.Sym == "":
		bad("sym is required: bars are one symbol's")
		return
	}
	if err := store.ValidTableName(q.Table); err != nil {
		bad(err.Error())
		return
	}
	iv, err := parseInterval(qs.Get("interval"))
	if err != nil {
		bad(err.Error())
		return
	}
	q.Interval = iv
	if err := parseRange(qs, &q.From, &q.HasFrom, &q.To, &q.HasTo); err != nil {
		bad(err.Error())
		return
	}
	newEnc := func(w io.Writer, f query.Format, tf query.TsFormat, rd *reader.Reader) (*query.Encoder, error) {
		return query.NewBarsEncoder(w, f, tf, rd, q)
	}
	h.serveEncoded(w, r, "bars", q.Table, newEnc, func(ctx context.Context, rd *reader.Reader, enc *query.Encoder) error {
		// The bars are over the rows published before seq SeqEnd, which
		// the response names, so that GET /tail?from= it continues them
		// with no row counted twice (the console's live chart).
		q.SeqEnd, q.HasSeqEnd = rd.Len(), true
		w.Header().Set("Tickdb-Next-Seq", strconv.FormatUint(q.SeqEnd, 10))
		warnUnknownSym(w, rd, q.Table, q.Sym)
		_, err := query.RunBars(ctx, rd, q, enc)
		return err
	})
}

// parseInterval reads a bucket width: a Go duration or integer ns, > 0.
func parseInterval(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("interval is required: a duration like 1m, 5s, 250ms, or integer ns")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		n, ierr := strconv.ParseInt(s, 10, 64)
		if ierr != nil {
			return 0, fmt.Errorf("interval %q is not a duration (like 1m, 5s, 250ms, or integer ns)", s)
		}
		d = time.Duration(n)
	}
	if d <= 0 {
		return 0, fmt.Errorf("interval %q is not positive", s)
	}
	return d, nil
}
