package pgwire

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// genDriver is a database/sql driver whose query "gen N" yields N rows
// (i BIGINT, pad VARCHAR) one at a time, made as they are asked for: a
// source that truly streams, unlike duckdb-go, which materializes a
// result before its first row. It counts the rows made and sees Close.
type genDriver struct {
	made   atomic.Int64
	closed chan struct{} // closed when a "gen" result is closed
}

func (d *genDriver) Open(string) (driver.Conn, error) { return genConn{d}, nil }

type genConn struct{ d *genDriver }

func (genConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (genConn) Close() error                        { return nil }
func (genConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }

func (c genConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	n := int64(0)
	if f := strings.Fields(q); len(f) == 2 && f[0] == "gen" {
		n, _ = strconv.ParseInt(f[1], 10, 64)
	}
	return &genRows{d: c.d, n: n}, nil
}

type genRows struct {
	d    *genDriver
	i, n int64
}

const genPad = "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"

func (*genRows) Columns() []string { return []string{"i", "pad"} }

func (r *genRows) ColumnTypeDatabaseTypeName(i int) string {
	return [...]string{"BIGINT", "VARCHAR"}[i]
}

func (r *genRows) Close() error {
	if r.n > 0 {
		close(r.d.closed)
	}
	return nil
}

func (r *genRows) Next(dest []driver.Value) error {
	if r.i >= r.n {
		return io.EOF
	}
	dest[0], dest[1] = r.i, genPad
	r.i++
	r.d.made.Add(1)
	return nil
}

// genBackend serves sessions over the generator.
type genBackend struct{ db *sql.DB }

func (b genBackend) Session(context.Context) (Session, error) { return genSession(b), nil }

type genSession struct{ db *sql.DB }

func (s genSession) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return SQLRows(rows), nil
}
func (genSession) Close() error { return nil }

// TestStreamingGenerator shows the server streams: the first row of a
// 100-million-row result (about 11 GB on the wire) reaches the client
// while only a small part of it has been made, and a client that hangs up
// gets its result closed.
func TestStreamingGenerator(t *testing.T) {
	d := &genDriver{closed: make(chan struct{})}
	db := sql.OpenDB(genConnector{d})
	t.Cleanup(func() { db.Close() })
	srv := startServer(t, genBackend{db}, Options{})
	conn := pgxConnect(t, srv, "", pgx.QueryExecModeSimpleProtocol)

	start := time.Now()
	rows, err := conn.Query(testCtx(t), "gen 100000000")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatalf("no first row: %v", rows.Err())
	}
	first := time.Since(start)
	time.Sleep(300 * time.Millisecond) // the server runs ahead until the socket is full
	made := d.made.Load()
	t.Logf("first row after %s; rows made: %d", first, made)
	if first > 5*time.Second {
		t.Errorf("the first row took %s", first)
	}
	if made > 1_000_000 {
		t.Errorf("%d rows made while the client had read one: the server is not streaming", made)
	}
	conn.PgConn().Conn().Close()
	rows.Close()
	select {
	case <-d.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the result was not closed after the client hung up")
	}
	if made := d.made.Load(); made >= 100_000_000 {
		t.Errorf("all %d rows were made for a client that left", made)
	}
}

type genConnector struct{ d *genDriver }

func (c genConnector) Connect(context.Context) (driver.Conn, error) { return genConn{c.d}, nil }
func (c genConnector) Driver() driver.Driver                        { return c.d }
