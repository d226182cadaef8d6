package pgwire

import (
	"context"
	"database/sql"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

// testToken is the password the servers of these tests want.
const testToken = "s3cr3t"

// The rows of the trades table: sub-microsecond timestamps, a NULL in each
// column but ts, symbols with a comma and a quote.
const tradesDDL = `
CREATE TABLE trades(ts TIMESTAMP_NS, sym VARCHAR, price DOUBLE, size BIGINT, flag BOOLEAN);
INSERT INTO trades VALUES
	('2023-11-14 22:13:20.123456789', 'AAPL', 189.5, 100, true),
	('2023-11-14 22:13:20.123456790', 'MSFT', 370.25, 250, false),
	('2023-11-14 22:13:21', 'A,"B"', NULL, NULL, NULL),
	('1969-12-31 23:59:59.999999999', 'OLD', -1.5, -7, true);
CREATE VIEW big_trades AS SELECT * FROM trades WHERE size >= 200;
`

// tradeNanos are the trades' timestamps, as Unix nanoseconds, in order.
var tradeNanos = []int64{1700000000123456789, 1700000000123456790, 1700000001000000000, -1}

// testBackend serves sessions over one in-memory DuckDB, each on a
// connection of its own, and records what the server did with them.
type testBackend struct {
	db *sql.DB

	mu       sync.Mutex
	sessions []*testSession
}

func newTestBackend(t *testing.T) *testBackend {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(tradesDDL); err != nil {
		t.Fatal(err)
	}
	return &testBackend{db: db}
}

func (b *testBackend) Session(ctx context.Context) (Session, error) {
	c, err := b.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	s := &testSession{conn: c, closed: make(chan struct{})}
	b.mu.Lock()
	b.sessions = append(b.sessions, s)
	b.mu.Unlock()
	return s, nil
}

// lastSession is the session opened last.
func (b *testBackend) lastSession(t *testing.T) *testSession {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sessions) == 0 {
		t.Fatal("no session was opened")
	}
	return b.sessions[len(b.sessions)-1]
}

// testSession is a Session on one DuckDB connection. It keeps each
// query's context, so a test can see it cancelled.
type testSession struct {
	conn   *sql.Conn
	closed chan struct{} // closed by Close, which waits for open rows (sql.Conn.Close does)

	mu      sync.Mutex
	queries []string
	ctxs    []context.Context
}

func (s *testSession) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	s.mu.Lock()
	s.queries = append(s.queries, query)
	s.ctxs = append(s.ctxs, ctx)
	s.mu.Unlock()
	rows, err := s.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return SQLRows(rows), nil
}

func (s *testSession) Close() error {
	err := s.conn.Close()
	close(s.closed)
	return err
}

// queryCtx is the context of the last query whose text contains sub.
func (s *testSession) queryCtx(t *testing.T, sub string) context.Context {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.queries) - 1; i >= 0; i-- {
		if strings.Contains(s.queries[i], sub) {
			return s.ctxs[i]
		}
	}
	t.Fatalf("no query containing %q among %q", sub, s.queries)
	return nil
}

// startServer runs a server for b on 127.0.0.1 (a free port), closed
// when the test ends.
func startServer(t *testing.T, b Backend, opts Options, tweaks ...func(*Server)) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(b, opts)
	for _, f := range tweaks {
		f(srv)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve returned %v after Close, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return within 10s of Close")
		}
	})
	for srv.Addr() == nil {
		time.Sleep(time.Millisecond)
	}
	return srv
}
