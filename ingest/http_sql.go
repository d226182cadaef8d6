package ingest

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// GET /sql bounds: rows sent when the request names no limit, and the
// most it may name.
const (
	sqlDefaultLimit = 10_000
	sqlMaxLimit     = 1_000_000
)

// Postgres type OIDs whose text form /sql's json writes as a JSON number.
const (
	oidInt8   = 20
	oidInt2   = 21
	oidInt4   = 23
	oidFloat4 = 700
	oidFloat8 = 701
)

// sqlError is the body of a /sql error: the SQL server's message, and
// for an error it raised, its SQLSTATE and the 1-based character
// position in q it points at (when it gives one).
type sqlError struct {
	Error    string `json:"error"`
	SQLState string `json:"sqlstate,omitempty"`
	Position int32  `json:"position,omitempty"`
}

func writeSQLError(w http.ResponseWriter, status int, e sqlError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}

// sql is GET /sql: q (one SQL statement), format (json or csv, default
// json), limit (rows, default sqlDefaultLimit, at most sqlMaxLimit). It
// passes q to the tickdb-sql server at Options.SQLAddr over one Postgres
// wire connection of its own (password: Options.Token) with the simple
// protocol, so every value arrives in Postgres text form, and streams the
// rows: json is one object per line, each value the text the server sent
// but int and float columns as JSON numbers (NaN and the infinities, which
// JSON cannot spell, as null) and NULL as null; csv is a header line, then
// the rows (NULL an empty field). The request's context bounds the query:
// a client that goes away closes the connection, and so does reaching
// limit. An error before any row is sent is the status: 404 with no
// SQLAddr, 400 for a bad request or one the SQL server refused (with its
// sqlstate and position), 502 when the SQL server cannot be reached; after
// one, the stream ends short.
func (h *httpAPI) sql(w http.ResponseWriter, r *http.Request) {
	addr := h.s.opts.SQLAddr
	if addr == "" {
		writeSQLError(w, http.StatusNotFound, sqlError{Error: "no SQL server configured (serve --sql ADDR)"})
		return
	}
	qs := r.URL.Query()
	bad := func(msg string) { writeSQLError(w, http.StatusBadRequest, sqlError{Error: msg}) }
	q := qs.Get("q")
	if q == "" {
		bad("q (the SQL) is required")
		return
	}
	format := qs.Get("format")
	if format == "" {
		format = "json"
	}
	if format != "json" && format != "csv" {
		bad(fmt.Sprintf("format %q: /sql writes json or csv", format))
		return
	}
	limit := int64(sqlDefaultLimit)
	if v := qs.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > sqlMaxLimit {
			bad(fmt.Sprintf("limit %q: want 1 to %d rows", v, sqlMaxLimit))
			return
		}
		limit = n
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	conn, err := connectSQL(ctx, addr, h.s.opts.Token)
	if err != nil {
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) { // refused: the password, say
			writeSQLError(w, http.StatusBadGateway, sqlError{Error: "sql server " + addr + ": " + pe.Message, SQLState: pe.Code})
			return
		}
		writeSQLError(w, http.StatusBadGateway, sqlError{Error: "sql server " + addr + ": " + err.Error()})
		return
	}
	defer conn.Close(context.Background())

	rows, err := conn.Query(ctx, q)
	if err != nil {
		h.sqlFailed(w, addr, err)
		return
	}
	// Cancelling ctx first makes Close drop the connection rather than
	// read the rows past limit.
	defer rows.Close()
	defer cancel()
	more := rows.Next()
	if !more {
		if err := rows.Err(); err != nil {
			h.sqlFailed(w, addr, err)
			return
		}
	}
	fields := rows.FieldDescriptions()
	bw := bufio.NewWriterSize(w, 32<<10)
	var sent int64
	var werr error
	if format == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		cw := csv.NewWriter(bw)
		rec := make([]string, len(fields))
		for i, f := range fields {
			rec[i] = f.Name
		}
		werr = cw.Write(rec)
		for ; more && werr == nil && sent < limit; more = rows.Next() {
			for i, v := range rows.RawValues() {
				rec[i] = string(v) // NULL (nil) is an empty field
			}
			werr = cw.Write(rec)
			sent++
		}
		cw.Flush()
		if werr == nil {
			werr = cw.Error()
		}
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson") // one JSON object per line
		keys := make([][]byte, len(fields))
		for i, f := range fields {
			k, _ := json.Marshal(f.Name) // a string: cannot fail
			sep := ","
			if i == 0 {
				sep = "{"
			}
			keys[i] = append([]byte(sep), append(k, ':')...)
		}
		var line []byte
		for ; more && werr == nil && sent < limit; more = rows.Next() {
			line = line[:0]
			for i, v := range rows.RawValues() {
				line = append(line, keys[i]...)
				line = appendSQLValue(line, fields[i].DataTypeOID, v)
			}
			if len(fields) == 0 {
				line = append(line, '{')
			}
			line = append(line, "}\n"...)
			_, werr = bw.Write(line)
			sent++
		}
	}
	if werr == nil {
		werr = bw.Flush()
	}
	if werr != nil { // the client went away
		h.s.log.Debug("ingest: sql write", "err", werr)
		return
	}
	if sent == limit && more {
		return // bounded: the deferred cancel drops the rest
	}
	if err := rows.Err(); err != nil {
		h.s.log.Warn("ingest: sql failed mid-stream", "addr", addr, "err", err)
		panic(http.ErrAbortHandler) // the status line is gone: end the stream short
	}
}

// sqlFailed answers an error from the SQL server before any row: 400 with
// its message, sqlstate and position when it refused q, else 502.
func (h *httpAPI) sqlFailed(w http.ResponseWriter, addr string, err error) {
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) {
		writeSQLError(w, http.StatusBadRequest, sqlError{Error: pe.Message, SQLState: pe.Code, Position: pe.Position})
		return
	}
	writeSQLError(w, http.StatusBadGateway, sqlError{Error: "sql server " + addr + ": " + err.Error()})
}

// connectSQL opens one Postgres wire connection to addr (host:port) with
// token as the password; the user name is "tickdb" (tickdb-sql takes any).
// Nothing comes from the environment's PG* variables or a password file
// that the connection string and token do not override.
func connectSQL(ctx context.Context, addr, token string) (*pgx.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "postgres", User: url.User("tickdb"), Host: net.JoinHostPort(host, port), Path: "/tickdb",
		RawQuery: "sslmode=disable&connect_timeout=10"}
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, err
	}
	cfg.Password = token
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol // every value as text: timestamps keep their 9 digits
	return pgx.ConnectConfig(ctx, cfg)
}

// appendSQLValue appends one value of a /sql json row: v, the Postgres
// text form, as a JSON number for int and float columns (null for NaN
// and the infinities), null for NULL, else as a JSON string.
func appendSQLValue(b []byte, oid uint32, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	switch oid {
	case oidInt2, oidInt4, oidInt8, oidFloat4, oidFloat8:
		if len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) && json.Valid(v) {
			return append(b, v...)
		}
		if oid == oidFloat4 || oid == oidFloat8 {
			return append(b, "null"...) // NaN, Infinity, -Infinity
		}
	}
	s, _ := json.Marshal(string(v)) // a string: cannot fail
	return append(b, s...)
}
