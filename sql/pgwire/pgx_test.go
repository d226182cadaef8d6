package pgwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgxConnect connects pgx to srv with the test token. Cancelling a
// query's context makes pgx send a CancelRequest on a new connection, as
// libpq does, rather than only dropping the connection.
func pgxConnect(t *testing.T, srv *Server, password string, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	conn, err := pgxTryConnect(t, srv, password, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func pgxTryConnect(t *testing.T, srv *Server, password string, mode pgx.QueryExecMode) (*pgx.Conn, error) {
	t.Helper()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://u:%s@%s/db?sslmode=disable&connect_timeout=10", password, srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, CancelRequestDelay: 0, DeadlineDelay: 5 * time.Second}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return pgx.ConnectConfig(ctx, cfg)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type tradeRow struct {
	ts    time.Time
	sym   string
	price *float64
	size  *int64
	flag  *bool
}

// TestPgxTrades reads the trades table with parameters, in both of pgx's
// protocols: the extended one (binary results for every known type, so
// timestamps lose their nanoseconds, cut toward minus infinity) and the
// simple one (text: every nanosecond arrives).
func TestPgxTrades(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{Token: testToken})
	for _, tc := range []struct {
		name   string
		mode   pgx.QueryExecMode
		format int16
		// What a timestamp keeps: binary has microseconds, cut toward
		// minus infinity; text has every nanosecond, which pgx rounds
		// to microseconds when it parses them (TestTimestampText reads
		// the text itself).
		floor bool
	}{
		{"extended", pgx.QueryExecModeCacheStatement, 1, true},
		{"describe-exec", pgx.QueryExecModeDescribeExec, 1, true},
		{"simple", pgx.QueryExecModeSimpleProtocol, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := pgxConnect(t, srv, testToken, tc.mode)
			ctx := testCtx(t)
			rows, err := conn.Query(ctx, `SELECT ts, sym, price, size, flag FROM trades WHERE sym <> $1 AND (size > $2 OR size IS NULL) ORDER BY ts`, "MSFT", -10)
			if err != nil {
				t.Fatal(err)
			}
			var got []tradeRow
			for rows.Next() {
				var r tradeRow
				if err := rows.Scan(&r.ts, &r.sym, &r.price, &r.size, &r.flag); err != nil {
					t.Fatal(err)
				}
				got = append(got, r)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			for _, f := range rows.FieldDescriptions() {
				if want := tc.format; f.Format != want && !(f.DataTypeOID == 25 && f.Format == 0) {
					t.Errorf("column %s came in format %d, want %d", f.Name, f.Format, tc.format)
				}
			}
			want := []int64{tradeNanos[3], tradeNanos[0], tradeNanos[2]} // OLD, AAPL, A,"B"
			if len(got) != len(want) {
				t.Fatalf("got %d rows, want %d: %+v", len(got), len(want), got)
			}
			for i, r := range got {
				// Floor to the format's precision: -1ns becomes -1µs in binary.
				w := time.Unix(0, want[i]).UTC().Round(time.Microsecond)
				if tc.floor {
					w = time.Unix(0, floorDiv(want[i], 1000)*1000).UTC()
				}
				if !r.ts.Equal(w) {
					t.Errorf("row %d ts = %s, want %s", i, r.ts.Format(time.RFC3339Nano), w.Format(time.RFC3339Nano))
				}
			}
			if got[1].sym != "AAPL" || *got[1].price != 189.5 || *got[1].size != 100 || !*got[1].flag {
				t.Errorf("AAPL row = %+v", got[1])
			}
			if got[2].sym != `A,"B"` || got[2].price != nil || got[2].size != nil || got[2].flag != nil {
				t.Errorf(`A,"B" row: %+v, want NULL price, size and flag`, got[2])
			}

			// An int parameter compared with a BIGINT column, a text one
			// with VARCHAR, a timestamp one with TIMESTAMP_NS.
			var n int64
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM trades WHERE size >= $1 AND sym LIKE $2`, 100, "%").Scan(&n); err != nil || n != 2 {
				t.Errorf("count with parameters = %d, %v; want 2", n, err)
			}
		})
	}
}

// TestPgxTypes reads one value of every DuckDB type the server maps,
// in binary (pgx asks for it for every type it knows) and text.
func TestPgxTypes(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	const q = `SELECT true AS b, -7::TINYINT AS i1, 300::SMALLINT AS i2, 70000::INTEGER AS i4, 9000000000::BIGINT AS i8,
		170141183460469231731687303715884105727::HUGEINT AS hi, 18446744073709551615::UBIGINT AS ub,
		-12345.678::DECIMAL(18,3) AS dec, 1.5::FLOAT AS f4, -2.25::DOUBLE AS f8, 'héllo' AS txt,
		DATE '2020-02-29' AS d, TIME '01:02:03.5' AS tm, TIMESTAMP_NS '2023-11-14 22:13:20.123456789' AS tsn,
		TIMESTAMP_MS '2023-11-14 22:13:20.123' AS tsm, TIMESTAMP_S '2023-11-14 22:13:20' AS tss,
		TIMESTAMP '2023-11-14 22:13:20.654321' AS ts, TIMESTAMPTZ '2023-11-14 22:13:20.5+00' AS tstz,
		INTERVAL '1 year 2 months 3 days 04:05:06.789' AS iv, '\xAB\x00'::BLOB AS bl,
		'3d8ccd0c-ef4a-4c39-b5e8-1c43f7a7c4f5'::UUID AS u, [1, 2] AS l, {'a': 1, 'b': 'x y'} AS st, MAP {'k': 1} AS m,
		1::UTINYINT AS u1, 2::USMALLINT AS u2, 3::UINTEGER AS u4`
	wantOID := map[string]uint32{
		"b": 16, "i1": 21, "i2": 21, "i4": 23, "i8": 20, "hi": 1700, "ub": 1700, "dec": 1700, "f4": 700, "f8": 701,
		"txt": 25, "d": 1082, "tm": 1083, "tsn": 1114, "tsm": 1114, "tss": 1114, "ts": 1114, "tstz": 1184,
		"iv": 1186, "bl": 17, "u": 2950, "l": 25, "st": 25, "m": 25, "u1": 21, "u2": 23, "u4": 20,
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			conn := pgxConnect(t, srv, "", mode)
			rows, err := conn.Query(testCtx(t), q)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			if !rows.Next() {
				t.Fatalf("no row: %v", rows.Err())
			}
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]any{}
			for i, f := range rows.FieldDescriptions() {
				if wantOID[f.Name] != f.DataTypeOID {
					t.Errorf("%s: OID %d, want %d", f.Name, f.DataTypeOID, wantOID[f.Name])
				}
				wantFormat := int16(1)
				if mode == pgx.QueryExecModeSimpleProtocol || f.DataTypeOID == 25 {
					wantFormat = 0 // pgx reads text as text
				}
				if f.Format != wantFormat {
					t.Errorf("%s: format %d, want %d", f.Name, f.Format, wantFormat)
				}
				byName[f.Name] = vals[i]
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			numeric := func(name string) string {
				n, ok := byName[name].(pgtype.Numeric)
				if !ok {
					return fmt.Sprintf("%T", byName[name])
				}
				v, _ := n.Value()
				return fmt.Sprint(v)
			}
			// Binary cuts to microseconds; pgx rounds the text's nanoseconds.
			tsn := time.Date(2023, 11, 14, 22, 13, 20, 123456000, time.UTC)
			if mode == pgx.QueryExecModeSimpleProtocol {
				tsn = tsn.Add(time.Microsecond)
			}
			for name, want := range map[string]any{
				"b": true, "i1": int16(-7), "i2": int16(300), "i4": int32(70000), "i8": int64(9000000000),
				"f4": float32(1.5), "f8": -2.25, "txt": "héllo",
				"d":    time.Date(2020, 2, 29, 0, 0, 0, 0, time.UTC),
				"tsn":  tsn,
				"tsm":  time.Date(2023, 11, 14, 22, 13, 20, 123000000, time.UTC),
				"tss":  time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC),
				"ts":   time.Date(2023, 11, 14, 22, 13, 20, 654321000, time.UTC),
				"tstz": time.Date(2023, 11, 14, 22, 13, 20, 500000000, time.UTC),
				"l":    "[1, 2]", "st": "{'a': 1, 'b': x y}", "m": "{k=1}",
				"u1": int16(1), "u2": int32(2), "u4": int64(3),
			} {
				got := byName[name]
				if tm, ok := got.(time.Time); ok {
					if !tm.Equal(want.(time.Time)) {
						t.Errorf("%s = %s, want %s", name, tm.Format(time.RFC3339Nano), want.(time.Time).Format(time.RFC3339Nano))
					}
					continue
				}
				if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprintf("%T", got) != fmt.Sprintf("%T", want) {
					t.Errorf("%s = %T %v, want %T %v", name, got, got, want, want)
				}
			}
			for name, want := range map[string]string{
				"hi": "170141183460469231731687303715884105727", "ub": "18446744073709551615", "dec": "-12345.678",
			} {
				if got := numeric(name); got != want {
					t.Errorf("%s = %s, want %s", name, got, want)
				}
			}
			if tm, ok := byName["tm"].(pgtype.Time); !ok || tm.Microseconds != 3723500000 {
				t.Errorf("tm = %#v, want 01:02:03.5", byName["tm"])
			}
			if iv, ok := byName["iv"].(pgtype.Interval); !ok || iv.Months != 14 || iv.Days != 3 || iv.Microseconds != 14706789000 {
				t.Errorf("iv = %#v", byName["iv"])
			}
			if bl, ok := byName["bl"].([]byte); !ok || string(bl) != "\xab\x00" {
				t.Errorf("bl = %#v", byName["bl"])
			}
			if u, ok := byName["u"].([16]byte); !ok || fmt.Sprintf("%x", u) != "3d8ccd0cef4a4c39b5e81c43f7a7c4f5" {
				t.Errorf("u = %#v", byName["u"])
			}
		})
	}
}

// TestTimestampText reads timestamps' text format as it is on the wire:
// every nanosecond digit, trailing zeros dropped.
func TestTimestampText(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	conn := pgxConnect(t, srv, "", pgx.QueryExecModeCacheStatement)
	res, err := conn.PgConn().Exec(testCtx(t), "SELECT ts, epoch_ns(ts) FROM trades ORDER BY ts").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"1969-12-31 23:59:59.999999999", "-1"},
		{"2023-11-14 22:13:20.123456789", "1700000000123456789"},
		{"2023-11-14 22:13:20.12345679", "1700000000123456790"},
		{"2023-11-14 22:13:21", "1700000001000000000"},
	}
	if len(res) != 1 || len(res[0].Rows) != len(want) {
		t.Fatalf("got %+v", res)
	}
	for i, row := range res[0].Rows {
		for j, v := range row {
			if string(v) != want[i][j] {
				t.Errorf("row %d column %d = %q, want %q", i, j, v, want[i][j])
			}
		}
	}
}

// TestPgxErrors checks SQLSTATE codes and positions, including a position
// inside the second statement of a simple query and inside a statement
// described through the LIMIT 0 wrapper.
func TestPgxErrors(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	for _, tc := range []struct {
		name, sql string
		args      []any
		mode      pgx.QueryExecMode
		code      string
		pos       int32
		msg       string
	}{
		{"syntax", "SELECT * FORM trades", nil, pgx.QueryExecModeSimpleProtocol, "42601", 15, `syntax error at or near "trades"`},
		{"syntax-misspelt-keyword", "SELEC * FROM trades", nil, pgx.QueryExecModeSimpleProtocol, "42601", 1, `syntax error at or near "SELEC"`},
		{"second-statement", "SELECT 1; SELECT * FROM nosuch", nil, pgx.QueryExecModeSimpleProtocol, "42P01", 25, "Table with name nosuch does not exist!"},
		{"extended-wrapped", "SELECT $1::INTEGER,\n  nosuchcol FROM trades", []any{1}, pgx.QueryExecModeCacheStatement, "42703", 23, `Referenced column "nosuchcol" not found in FROM clause!`},
		{"function", "SELECT nosuchfn(1)", nil, pgx.QueryExecModeCacheStatement, "42883", 8, "Scalar Function with name nosuchfn does not exist!"},
		{"conversion", "SELECT 'abc'::INTEGER", nil, pgx.QueryExecModeSimpleProtocol, "22P02", 0, "Could not convert string 'abc' to INT32"},
		{"bad-parameter", "SELECT * FROM trades WHERE size = $1", []any{"x"}, pgx.QueryExecModeCacheStatement, "22P02", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := pgxConnect(t, srv, "", tc.mode)
			_, err := conn.Exec(testCtx(t), tc.sql, tc.args...)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *pgconn.PgError", err, err)
			}
			if pe.Code != tc.code || (tc.pos != 0 && pe.Position != tc.pos) || !strings.Contains(pe.Message, tc.msg) {
				t.Errorf("got %s at %d: %q; want %s at %d: %q", pe.Code, pe.Position, pe.Message, tc.code, tc.pos, tc.msg)
			}
			if strings.Contains(pe.Message, "LINE ") {
				t.Errorf("message keeps DuckDB's excerpt: %q", pe.Message)
			}
			// The connection is fine afterwards.
			var one int32
			if err := conn.QueryRow(testCtx(t), "SELECT 1::INTEGER").Scan(&one); err != nil || one != 1 {
				t.Errorf("after the error: %d, %v", one, err)
			}
		})
	}
}

// TestPgxCancel cancels a query that would run for minutes: pgx sends a
// CancelRequest, DuckDB is interrupted, the client gets 57014, and the
// connection stays usable.
func TestPgxCancel(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{Token: testToken})
	conn := pgxConnect(t, srv, testToken, pgx.QueryExecModeCacheStatement)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	var n int64
	err := conn.QueryRow(ctx, "SELECT count(*) FROM range(10000000000)").Scan(&n)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "canceling statement due to user request" {
		t.Fatalf("got %d, %v; want SQLSTATE 57014", n, err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the cancel took %s", d)
	}
	var one int32
	if err := conn.QueryRow(testCtx(t), "SELECT 1::INTEGER").Scan(&one); err != nil || one != 1 {
		t.Errorf("after the cancel: %d, %v", one, err)
	}
}

// TestPgxAuth: the wrong token, and none, fail with 28P01.
func TestPgxAuth(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{Token: testToken})
	for _, pw := range []string{"wrong", testToken + "x", ""} {
		conn, err := pgxTryConnect(t, srv, pw, pgx.QueryExecModeCacheStatement)
		var pe *pgconn.PgError
		if err == nil {
			conn.Close(context.Background())
		}
		if !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Errorf("password %q: %v; want SQLSTATE 28P01", pw, err)
		}
	}
	pgxConnect(t, srv, testToken, pgx.QueryExecModeCacheStatement)
}

// TestPgxStreaming reads the first rows of a 100-million-row result: they
// arrive, the Go heap stays small (rows go to the socket as they come),
// and a client that disconnects mid-result frees the query: its context
// is cancelled and the session's connection is released.
//
// duckdb-go materializes a result before database/sql sees its first row
// (it does not use DuckDB's streaming results), so DuckDB's own memory
// for this result (about 800 MB, outside the Go heap) and a second or so
// pass before the first row; TestStreamingGenerator shows the server's
// own part streams.
func TestPgxStreaming(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	conn := pgxConnect(t, srv, "", pgx.QueryExecModeCacheStatement)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	start := time.Now()
	rows, err := conn.Query(testCtx(t), "SELECT * FROM range(100000000)")
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 100000; i++ {
		if !rows.Next() {
			t.Fatalf("row %d: %v", i, rows.Err())
		}
		var v int64
		if err := rows.Scan(&v); err != nil || v != i {
			t.Fatalf("row %d = %d, %v", i, v, err)
		}
	}
	firstRows := time.Since(start)
	time.Sleep(500 * time.Millisecond) // let the server fill the socket
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("first 100000 rows after %s; heap in use grew by %d KiB", firstRows, grew/1024)
	if firstRows > 20*time.Second {
		t.Errorf("the first rows took %s", firstRows)
	}
	if grew > 64<<20 {
		t.Errorf("heap in use grew by %d MiB while a 100M-row result was pending: is the result being collected?", grew>>20)
	}

	// Hang up in the middle of the result.
	sess := b.lastSession(t)
	qctx := sess.queryCtx(t, "range(100000000)")
	conn.PgConn().Conn().Close()
	rows.Close()
	select {
	case <-qctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the query's context was not cancelled after the client hung up")
	}
	select {
	case <-sess.closed: // sql.Conn.Close waited for the rows to close
	case <-time.After(10 * time.Second):
		t.Fatal("the session was not closed after the client hung up")
	}
	if st := b.db.Stats(); st.InUse != 0 {
		t.Errorf("%d DuckDB connections still in use", st.InUse)
	}
}

// TestPgxConnectQueries runs what DBeaver, Grafana and JDBC send on
// connect, which DuckDB alone would reject.
func TestPgxConnectQueries(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			conn := pgxConnect(t, srv, "", mode)
			ctx := testCtx(t)
			for _, tc := range []struct{ sql, tag string }{
				{"SET extra_float_digits = 3", "SET"},
				{"SET application_name = 'DBeaver 24.1'", "SET"},
				{"SET datestyle TO 'ISO'", "SET"},
				{"SET search_path = main", "SET"},
				{"SET statement_timeout = 0", "SET"},
				{"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET"},
				{"BEGIN", "BEGIN"},
				{"COMMIT", "COMMIT"},
				{"BEGIN READ ONLY", "BEGIN"},
				{"ROLLBACK", "ROLLBACK"},
				{"DISCARD ALL", "DISCARD ALL"},
			} {
				ct, err := conn.Exec(ctx, tc.sql)
				if err != nil || ct.String() != tc.tag {
					t.Errorf("%s: tag %q, %v; want %q", tc.sql, ct.String(), err, tc.tag)
				}
			}
			if got := conn.PgConn().ParameterStatus("application_name"); got != "DBeaver 24.1" {
				t.Errorf("application_name reported as %q after SET", got)
			}
			for _, tc := range []struct{ sql, want string }{
				{"SHOW transaction isolation level", "serializable"},
				{"SHOW server_version", "15.0 (tickdb)"},
				{"SHOW search_path", "main"},
				{"SELECT version()", "PostgreSQL 15.0 (tickdb, DuckDB)"},
				{"SELECT current_schema()", "main"},
				{"SELECT current_database()", "memory"},
				{"SHOW application_name", "DBeaver 24.1"},
			} {
				var s string
				if err := conn.QueryRow(ctx, tc.sql).Scan(&s); err != nil || !strings.HasPrefix(s, tc.want) {
					t.Errorf("%s = %q, %v; want %q", tc.sql, s, err, tc.want)
				}
			}
			rows, err := conn.Query(ctx, "select * from pg_catalog.pg_settings where name='max_index_keys'")
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
			if rows.Err() != nil {
				t.Errorf("pg_settings: %v", rows.Err())
			}
			// Grafana's table list.
			var tables []string
			rows, err = conn.Query(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				tables = append(tables, s)
			}
			if rows.Err() != nil || strings.Join(tables, ",") != "big_trades,trades" {
				t.Errorf("table list: %q, %v", tables, rows.Err())
			}
			tables = tables[:0]
			rows, err = conn.Query(ctx, grafanaTables+" ORDER BY 1")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				tables = append(tables, s)
			}
			if rows.Err() != nil || strings.Join(tables, ",") != "big_trades,trades" {
				t.Errorf("Grafana's table list: %q, %v", tables, rows.Err())
			}
		})
	}
}

// grafanaTables is the table list of Grafana's PostgreSQL data source
// (postgresMetaQuery.ts: getTablesQuery with buildSchemaConstraint).
const grafanaTables = `select quote_ident(table_name) as "table" from information_schema.tables
    where quote_ident(table_schema) not in ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
      and 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )`

// TestMaxConns: beyond Options.MaxConns a client gets 53300.
func TestMaxConns(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{MaxConns: 1})
	pgxConnect(t, srv, "", pgx.QueryExecModeCacheStatement)
	conn, err := pgxTryConnect(t, srv, "", pgx.QueryExecModeCacheStatement)
	if err == nil {
		conn.Close(context.Background())
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("second connection: %v; want SQLSTATE 53300", err)
	}
}

// TestStartupTimeout: a client that connects and says nothing is
// disconnected after the startup timeout.
func TestStartupTimeout(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{}, func(s *Server) { s.startupTimeout = 300 * time.Millisecond })
	nc, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	n, err := nc.Read(make([]byte, 1))
	if n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("read %d bytes, %v; want the server to close the connection", n, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closed after %s", d)
	}
}

// isTimeout tells the test's own read deadline from the server's close.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestServerClose closes the server while a query runs: the query is
// cancelled, Close returns, the client's connection is gone.
func TestServerClose(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	conn := pgxConnect(t, srv, "", pgx.QueryExecModeCacheStatement)
	done := make(chan error, 1)
	go func() {
		var n int64
		done <- conn.QueryRow(context.Background(), "SELECT count(*) FROM range(10000000000)").Scan(&n)
	}()
	for {
		b.mu.Lock()
		started := len(b.sessions) > 0
		b.mu.Unlock()
		if started {
			s := b.lastSession(t)
			s.mu.Lock()
			n := len(s.queries)
			s.mu.Unlock()
			if n > 1 { // the describe, then the query itself
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %s", d)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("the query succeeded after the server closed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not see the connection end")
	}
}
