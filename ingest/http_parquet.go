package ingest

import (
	"errors"
	"net/http"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// queryParquet is GET /query with format=parquet: the query's rows as
// one Parquet file, streamed to the response as an attachment
// (TABLE.parquet), written by export.ParquetStream: the schema, column
// mapping (ts a TIMESTAMP(NANOS, isAdjustedToUTC=false)) and zstd of
// tickdb export's files, a row group at a time (memory: one row group,
// whatever the range). The ts parameter does not apply. An error before
// the first row group is sent is the response's status; after, the
// stream ends short and the file has no footer.
func (h *httpAPI) queryParquet(w http.ResponseWriter, r *http.Request, q query.Query) {
	rd, err := reader.Open(h.s.opts.DB, q.Table, nil)
	if err != nil {
		if errors.Is(err, store.ErrNoTable) {
			h.noTable(w, q.Table)
			return
		}
		h.writeError(w, http.StatusInternalServerError, "internal error", err.Error(), 0)
		return
	}
	defer rd.Close()
	cw := &countWriter{w: w}
	ps, err := export.NewParquetStream(cw, rd, &export.Options{Table: q.Table})
	if err != nil {
		h.writeError(w, http.StatusInternalServerError, "internal error", err.Error(), 0)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/vnd.apache.parquet")
	hdr.Set("Content-Disposition", `attachment; filename="`+q.Table+`.parquet"`) // a valid table name needs no quoting
	warnUnknownSym(w, rd, q.Table, q.Sym)
	_, err = query.RunFunc(r.Context(), rd, q, ps.Row)
	if err == nil {
		err = ps.Close()
	}
	if err != nil {
		if cw.n == 0 {
			hdr.Del("Content-Type")
			hdr.Del("Content-Disposition")
			status, code := http.StatusInternalServerError, "internal error"
			if errors.Is(err, query.ErrBadQuery) {
				status, code = http.StatusBadRequest, "invalid"
			}
			h.writeError(w, status, code, err.Error(), 0)
			return
		}
		h.s.log.Warn("ingest: query parquet failed mid-stream", "table", q.Table, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
