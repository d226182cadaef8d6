package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// Backend runs the SQL. The engine implements it over DuckDB; tests may
// implement it over a plain in-memory DuckDB (sql.Open("duckdb", "")).
type Backend interface {
	// Session opens one client connection's session.
	Session(ctx context.Context) (Session, error)
}

// Session is one client connection's view of DuckDB. The server calls it
// from that connection's goroutine only, one call at a time, but it may
// keep several Rows open at once (suspended portals).
//
// A Session should run every Query on one DuckDB connection: the server
// describes some statements by running them between BEGIN TRANSACTION and
// ROLLBACK, and a client's SET must reach the connection its next
// statement runs on.
type Session interface {
	// Query runs one statement and returns its rows, streaming as far as the backend does (duckdb-go
	// v2.10506.0 through database/sql materializes each result before its first row; tickdb's
	// engine streams: see Caveats in the package doc).
	// ctx is cancelled when the client sends a CancelRequest for this session or disconnects.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	Close() error
}

// Rows is a statement's result as the server reads it: *sql.Rows' methods
// it uses, and the columns' DuckDB type names (what
// sql.ColumnType.DatabaseTypeName gives). SQLRows adapts a *sql.Rows.
// Scan is given *any destinations only.
type Rows interface {
	Columns() ([]string, error)
	ColumnTypeNames() ([]string, error)
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// SQLRows is rows as Rows.
func SQLRows(rows *sql.Rows) Rows { return sqlRows{rows} }

type sqlRows struct{ *sql.Rows }

func (r sqlRows) ColumnTypeNames() ([]string, error) {
	cts, err := r.ColumnTypes()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(cts))
	for i, ct := range cts {
		names[i] = ct.DatabaseTypeName()
	}
	return names, nil
}

// Options configures a Server. The zero value listens on 127.0.0.1:8812
// without authentication.
type Options struct {
	Addr     string       // default "127.0.0.1:8812"
	Token    string       // when set: password authentication; the password must equal Token (any user name); wrong → SQLSTATE 28P01
	Logger   *slog.Logger // nil: discard
	MaxConns int          // default 256; beyond it new connections get an error 53300 and are closed
}

const (
	defaultAddr           = "127.0.0.1:8812"
	defaultMaxConns       = 256
	startupTimeoutDefault = 10 * time.Second
	// maxMessage bounds one client message (a query text, a Bind's
	// parameters).
	maxMessage = 64 << 20
)

// Server answers the Postgres wire protocol on a listener. Its methods may
// be called from any goroutine. Each client connection has a goroutine of
// its own, which blocks in DuckDB while a query runs; Close cancels every
// query, closes every connection and waits for those goroutines.
type Server struct {
	b    Backend
	opts Options
	log  *slog.Logger
	// startupTimeout bounds the time from accept to ReadyForQuery
	// (startupTimeoutDefault; tests shorten it).
	startupTimeout time.Duration

	mu     sync.Mutex
	ln     net.Listener
	closed bool
	conns  map[uint32]*conn      // by process ID, for CancelRequest; sessions only
	raw    map[net.Conn]struct{} // every open client socket
	wg     sync.WaitGroup        // the connection goroutines
	ctx    context.Context       // cancelled by Close
	stop   context.CancelFunc
}

// NewServer returns a server that answers queries through b.
func NewServer(b Backend, opts Options) *Server {
	if opts.Addr == "" {
		opts.Addr = defaultAddr
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = defaultMaxConns
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Server{b: b, opts: opts, log: log, startupTimeout: startupTimeoutDefault, conns: map[uint32]*conn{}, raw: map[net.Conn]struct{}{}, ctx: ctx, stop: stop}
}

// ListenAndServe listens on Options.Addr and serves until Close.
func (s *Server) ListenAndServe() error {
	l, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Serve accepts connections on l until Close, then returns nil. It closes
// l.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.ln = l
	s.mu.Unlock()
	s.log.Info("pgwire: listening", "addr", l.Addr().String())

	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) ||
				errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) {
				// Out of file descriptors and the like: wait, up to a
				// second, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("pgwire: accept", "err", err, "retry_in", backoff)
				select {
				case <-time.After(backoff):
				case <-s.ctx.Done():
					return nil
				}
				continue
			}
			return err
		}
		backoff = 0
		if !s.track(nc) {
			nc.Close()
			continue
		}
		s.wg.Go(func() { s.handle(nc) })
	}
}

// Addr is the address the server listens on, nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops listening, cancels every running query, closes every client
// connection and waits for their goroutines (and so their sessions'
// Close) to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	s.stop()
	if s.ln != nil {
		s.ln.Close()
	}
	for nc := range s.raw {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// track registers an accepted socket; false when the server is closed or
// so many sockets are open (sessions and handshakes) that even the answer
// "too many clients" would cost too much.
func (s *Server) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.raw) >= 2*s.opts.MaxConns+16 {
		return false
	}
	s.raw[nc] = struct{}{}
	return true
}

func (s *Server) untrack(nc net.Conn) {
	s.mu.Lock()
	delete(s.raw, nc)
	s.mu.Unlock()
	nc.Close()
}

// register gives c a process ID and secret key, unique among the open
// sessions, or says the server is full.
func (s *Server) register(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.conns) >= s.opts.MaxConns {
		return false
	}
	for {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		c.pid = binary.BigEndian.Uint32(b[:4]) & 0x7fffffff
		copy(c.secret[:], b[4:])
		if _, taken := s.conns[c.pid]; !taken && c.pid != 0 {
			break
		}
	}
	s.conns[c.pid] = c
	return true
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	if s.conns[c.pid] == c {
		delete(s.conns, c.pid)
	}
	s.mu.Unlock()
}

// cancel handles a CancelRequest: the session with process ID pid, if its
// secret matches, has its running statement cancelled.
func (s *Server) cancel(pid uint32, secret []byte) {
	s.mu.Lock()
	c := s.conns[pid]
	s.mu.Unlock()
	if c == nil || len(secret) != len(c.secret) || subtle.ConstantTimeCompare(secret, c.secret[:]) != 1 {
		s.log.Debug("pgwire: cancel request for no session", "pid", pid)
		return
	}
	c.cancelRunning()
}

// handle runs one client connection from its first byte to its close.
func (s *Server) handle(nc net.Conn) {
	defer s.untrack(nc)
	ctx, cancel := context.WithCancelCause(s.ctx)
	defer cancel(errClientGone)
	c := newConn(s, nc, ctx)
	defer c.close()
	if err := c.serve(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("pgwire: connection ended", "remote", nc.RemoteAddr().String(), "err", err)
	}
}
