// Package engine makes the tables of a tickdb database SQL tables of an
// embedded DuckDB, live: each table is a view over the table function
// tickdb_scan, which reads the table through tickdb's reader (any process,
// no lock, rows published a moment ago included) and hands DuckDB the
// columns a query reads, a chunk at a time. tickdb_scan's named arguments
// (from_ts, to_ts, sym, syms) take the time window and the symbols to tickdb's
// indexes; DuckDB does not push a WHERE into a table function of its C API.
//
// SQL over tickdb is read-only and has no access to files or the network:
// only SELECT, EXPLAIN, PRAGMA and SET run (SET only what DuckDB leaves
// unlocked); DuckDB runs with enable_external_access off, extension
// loading off and its configuration locked, under a memory limit, and each
// statement under a timeout.
//
// An Engine is safe for concurrent use; a Session is one client's
// connection, for one goroutine at a time.
package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/sql/pgwire"
)

// Options configures an Engine; the zero value is usable.
type Options struct {
	// MemoryLimit is DuckDB's memory_limit ("4GB", "512MB"); "" leaves
	// DuckDB's default (80% of the machine's memory).
	MemoryLimit string
	// Threads is DuckDB's thread count; 0 leaves DuckDB's default (the
	// machine's cores).
	Threads int
	// Timeout bounds each statement, from its start to its last row
	// (the client's reading included); 0 means none.
	Timeout time.Duration
	// ScanWorkers is how many goroutines decode a scan's compressed
	// blocks ahead of DuckDB (reader.ScanSpec.Workers); 0 is the reader's
	// default (GOMAXPROCS, at most 4).
	ScanWorkers int
}

// Engine is SQL over one tickdb database directory.
type Engine struct {
	dir       string
	opts      Options
	connector *duckdb.Connector
	db        *sql.DB

	viewMu sync.Mutex        // Refresh; held across DDL, whose binding takes mu
	views  map[string]string // table → schema its view was made for

	mu     sync.Mutex
	pool   map[string][]*reader.Reader // readers lent to scans, by table
	closed bool
}

// Open opens SQL over the tables of database directory dir.
func Open(dir string, opts *Options) (*Engine, error) {
	e := &Engine{dir: dir, pool: map[string][]*reader.Reader{}, views: map[string]string{}}
	if opts != nil {
		e.opts = *opts
	}
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("sql: open duckdb: %w", err)
	}
	e.connector, e.db = connector, sql.OpenDB(connector)
	if err := e.setup(); err != nil {
		e.db.Close()
		connector.Close()
		return nil, err
	}
	if err := e.Refresh(context.Background()); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// setup registers tickdb_scan and locks DuckDB down.
func (e *Engine) setup() error {
	ctx := context.Background()
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sql: %w", err)
	}
	defer conn.Close()
	fns, err := e.scanFunctions()
	if err != nil {
		return fmt.Errorf("sql: %s: %w", ScanFunction, err)
	}
	for name, fn := range fns {
		if err := duckdb.RegisterTableUDF(conn, name, fn); err != nil {
			return fmt.Errorf("sql: register %s: %w", name, err)
		}
	}
	settings := []string{
		"SET enable_external_access = false",
		"SET autoinstall_known_extensions = false",
		"SET autoload_known_extensions = false",
	}
	if e.opts.MemoryLimit != "" {
		settings = append(settings, "SET memory_limit = "+quoteLiteral(e.opts.MemoryLimit))
	}
	if e.opts.Threads > 0 {
		settings = append(settings, fmt.Sprintf("SET threads = %d", e.opts.Threads))
	}
	settings = append(settings, "SET lock_configuration = true")
	for _, s := range settings {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("sql: %s: %w", s, err)
		}
	}
	return nil
}

// DB is the engine's DuckDB. Queries through it see the views as of the
// last Refresh and are not checked to be read-only: use a Session to run
// clients' SQL.
func (e *Engine) DB() *sql.DB { return e.db }

// Dir is the database directory.
func (e *Engine) Dir() string { return e.dir }

// Refresh makes the views match the database: a view for each table that
// appeared, a new view for each table whose columns grew, none for a table
// that went. Session.Query calls it before each statement.
func (e *Engine) Refresh(ctx context.Context) error {
	names, err := reader.Tables(e.dir)
	if err != nil {
		return fmt.Errorf("sql: tables of %s: %w", e.dir, err)
	}
	e.viewMu.Lock()
	defer e.viewMu.Unlock()
	present := map[string]bool{}
	for _, name := range names {
		present[name] = true
		sig, err := e.schemaOf(name)
		if err != nil {
			continue // a table being created or removed: next time
		}
		if e.views[name] == sig {
			continue
		}
		q := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM %s(%s)", quoteIdent(name), ScanFunction, quoteLiteral(name))
		if _, err := e.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sql: view of table %q: %w", name, err)
		}
		e.views[name] = sig
	}
	for name := range e.views {
		if !present[name] {
			if _, err := e.db.ExecContext(ctx, "DROP VIEW IF EXISTS "+quoteIdent(name)); err != nil {
				return fmt.Errorf("sql: drop view of table %q: %w", name, err)
			}
			delete(e.views, name)
			e.mu.Lock()
			for _, r := range e.pool[name] {
				r.Close()
			}
			delete(e.pool, name)
			e.mu.Unlock()
		}
	}
	return nil
}

// schemaOf returns table name's current columns, as text.
func (e *Engine) schemaOf(name string) (string, error) {
	r, err := e.takeReader(name)
	if err != nil {
		return "", err
	}
	defer e.putReader(name, r)
	return r.Schema().String(), nil
}

var errClosed = errors.New("sql: engine closed")

// takeReader lends a reader of table name, with its schema reloaded.
func (e *Engine) takeReader(name string) (*reader.Reader, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.takeReaderLocked(name)
}

func (e *Engine) takeReaderLocked(name string) (*reader.Reader, error) {
	if e.closed {
		return nil, errClosed
	}
	if rs := e.pool[name]; len(rs) > 0 {
		r := rs[len(rs)-1]
		e.pool[name] = rs[:len(rs)-1]
		r.ReloadSchema()
		return r, nil
	}
	if !reader.Exists(e.dir, name) {
		return nil, fmt.Errorf("tickdb_scan: no table %q in %s", name, e.dir)
	}
	r, err := reader.Open(e.dir, name, nil)
	if err != nil {
		return nil, fmt.Errorf("tickdb_scan: open table %q: %w", name, err)
	}
	return r, nil
}

// maxPooled is how many idle readers a table keeps.
const maxPooled = 8

// putReader gives back a reader takeReader lent.
func (e *Engine) putReader(name string, r *reader.Reader) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.putReaderLocked(name, r)
}

func (e *Engine) putReaderLocked(name string, r *reader.Reader) {
	if e.closed || len(e.pool[name]) >= maxPooled {
		r.Close()
		return
	}
	e.pool[name] = append(e.pool[name], r)
}

// Close closes DuckDB and the pooled readers. Sessions must be closed first.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	for _, rs := range e.pool {
		for _, r := range rs {
			r.Close()
		}
	}
	e.pool = nil
	e.mu.Unlock()
	err := e.db.Close()
	if cerr := e.connector.Close(); err == nil {
		err = cerr
	}
	return err
}

// Session is one client's connection: its own DuckDB connection (prepared
// statements, variables), statements checked to be read-only.
type Session struct {
	e       *Engine
	conn    *sql.Conn
	cancels []context.CancelFunc
	streams []*streamRows // streaming results, closed before the connection
}

// Session opens a session.
func (e *Engine) Session(ctx context.Context) (*Session, error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sql: %w", err)
	}
	return &Session{e: e, conn: conn}, nil
}

// ErrReadOnly is the error of a statement that would change something.
var ErrReadOnly = errors.New("SQL over tickdb is read-only")

// Query runs one statement and returns its rows. A statement without
// parameters whose columns are all numbers, strings, blobs, booleans, dates
// or timestamps streams: its rows come as DuckDB makes them, and closing
// the rows early stops it (stream.go); any other is read through
// duckdb-go, which holds the whole result first. The statement runs within
// the engine's Timeout, and stops when ctx is cancelled or the rows are
// closed. A streamed result is read before the session's next statement
// (which would end it).
func (s *Session) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	if err := s.e.Refresh(ctx); err != nil {
		return nil, err
	}
	streams, err := s.check(ctx, query)
	if err != nil {
		return nil, err
	}
	s.prune()
	if s.e.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.e.opts.Timeout)
		s.cancels = append(s.cancels, cancel)
	}
	if streams && len(args) == 0 {
		var rows *streamRows
		err := s.conn.Raw(func(dc any) error {
			// The session's *sql.Conn holds this driver connection for
			// the session's life: the streaming result may go on using it.
			var err error
			rows, err = stream(ctx, rawConn(dc.(*duckdb.Conn)), query)
			return err
		})
		if err != nil {
			return nil, err
		}
		live := s.streams[:0]
		for _, r := range s.streams {
			if !r.closed {
				live = append(live, r)
			}
		}
		s.streams = append(live, rows)
		return rows, nil
	}
	rows, err := s.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgwire.SQLRows(rows), nil // a materialized result through duckdb-go
}

// prune drops the cancel functions of timed-out statements.
func (s *Session) prune() {
	if len(s.cancels) < 64 {
		return
	}
	// The oldest statements' timers: cancelling them ends statements that
	// are still streaming only if the client kept 64 result sets open.
	for _, c := range s.cancels[:len(s.cancels)-16] {
		c()
	}
	s.cancels = append(s.cancels[:0], s.cancels[len(s.cancels)-16:]...)
}

// writeVerbs are the first words of statements that are never read-only:
// refused before DuckDB binds them (binding INSERT INTO a view fails with
// DuckDB's own, less helpful, error).
var writeVerbs = map[string]string{
	"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "CREATE": "CREATE", "DROP": "DROP",
	"ALTER": "ALTER", "COPY": "COPY", "ATTACH": "ATTACH", "DETACH": "DETACH", "INSTALL": "LOAD/INSTALL",
	"LOAD": "LOAD/INSTALL", "FORCE": "LOAD/INSTALL", "EXPORT": "EXPORT", "IMPORT": "IMPORT", "CALL": "CALL",
	"VACUUM": "VACUUM", "CHECKPOINT": "CHECKPOINT", "TRUNCATE": "TRUNCATE", "MERGE": "MERGE", "ANALYZE": "ANALYZE",
	"PREPARE": "PREPARE/EXECUTE", "EXECUTE": "PREPARE/EXECUTE", "DEALLOCATE": "PREPARE/EXECUTE",
}

// firstWord is the statement's first keyword, upper case, past white space
// and comments.
func firstWord(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n(")
		switch {
		case strings.HasPrefix(q, "--"):
			if i := strings.IndexByte(q, '\n'); i >= 0 {
				q = q[i+1:]
				continue
			}
			return ""
		case strings.HasPrefix(q, "/*"):
			if i := strings.Index(q, "*/"); i >= 0 {
				q = q[i+2:]
				continue
			}
			return ""
		}
		end := strings.IndexFunc(q, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
		if end < 0 {
			end = len(q)
		}
		return strings.ToUpper(q[:end])
	}
}

func readOnlyError(kind string) error {
	return fmt.Errorf("%w: %s statements are not allowed (tables are written through the line protocol, the writer or load; SQL reads them)", ErrReadOnly, kind)
}

// check refuses a statement that is not read-only, naming its kind, and
// reports whether it can stream (a SELECT whose columns stream.go decodes).
func (s *Session) check(ctx context.Context, query string) (streams bool, err error) {
	if kind, ok := writeVerbs[firstWord(query)]; ok {
		return false, readOnlyError(kind)
	}
	err = s.conn.Raw(func(dc any) error {
		c, ok := dc.(*duckdb.Conn)
		if !ok {
			return fmt.Errorf("sql: unexpected driver connection %T", dc)
		}
		st, err := c.PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		defer st.Close()
		ds, ok := st.(*duckdb.Stmt)
		if !ok {
			return fmt.Errorf("sql: unexpected driver statement %T", st)
		}
		t, err := ds.StatementType()
		if err != nil {
			return err
		}
		switch t {
		case duckdb.STATEMENT_TYPE_SELECT:
			streams = true
			n, err := ds.ColumnCount()
			for i := 0; i < n && err == nil && streams; i++ {
				var ct duckdb.Type
				ct, err = ds.ColumnType(i)
				_, streams = streamTypes[ct]
			}
			streams = streams && err == nil
			return nil
		case duckdb.STATEMENT_TYPE_EXPLAIN, duckdb.STATEMENT_TYPE_PRAGMA,
			duckdb.STATEMENT_TYPE_SET, duckdb.STATEMENT_TYPE_VARIABLE_SET, duckdb.STATEMENT_TYPE_TRANSACTION:
			return nil
		}
		return readOnlyError(stmtName(t))
	})
	return streams, err
}

func stmtName(t duckdb.StmtType) string {
	switch t {
	case duckdb.STATEMENT_TYPE_INSERT:
		return "INSERT"
	case duckdb.STATEMENT_TYPE_UPDATE:
		return "UPDATE"
	case duckdb.STATEMENT_TYPE_DELETE:
		return "DELETE"
	case duckdb.STATEMENT_TYPE_CREATE:
		return "CREATE"
	case duckdb.STATEMENT_TYPE_ALTER:
		return "ALTER"
	case duckdb.STATEMENT_TYPE_DROP:
		return "DROP"
	case duckdb.STATEMENT_TYPE_COPY:
		return "COPY"
	case duckdb.STATEMENT_TYPE_EXPORT:
		return "EXPORT"
	case duckdb.STATEMENT_TYPE_ATTACH:
		return "ATTACH"
	case duckdb.STATEMENT_TYPE_DETACH:
		return "DETACH"
	case duckdb.STATEMENT_TYPE_LOAD:
		return "LOAD/INSTALL"
	case duckdb.STATEMENT_TYPE_CALL:
		return "CALL"
	case duckdb.STATEMENT_TYPE_CREATE_FUNC:
		return "CREATE FUNCTION"
	case duckdb.STATEMENT_TYPE_VACUUM:
		return "VACUUM"
	case duckdb.STATEMENT_TYPE_ANALYZE:
		return "ANALYZE"
	case duckdb.STATEMENT_TYPE_PREPARE, duckdb.STATEMENT_TYPE_EXECUTE:
		return "PREPARE/EXECUTE"
	}
	return fmt.Sprintf("type-%d", t)
}

// Close ends the session's statements and its connection.
func (s *Session) Close() error {
	for _, r := range s.streams {
		r.Close()
	}
	s.streams = nil
	for _, c := range s.cancels {
		c()
	}
	s.cancels = nil
	return s.conn.Close()
}

// quoteIdent quotes a SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// quoteLiteral quotes a SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

var _ driver.Conn = (*duckdb.Conn)(nil)
