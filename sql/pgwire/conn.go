package pgwire

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// conn is one client connection. Every field but mu and running is owned
// by the connection's goroutine.
type conn struct {
	srv    *Server
	nc     net.Conn
	ctx    context.Context // cancelled when the connection ends or the server closes
	be     *pgproto3.Backend
	out    writer
	sess   Session
	pid    uint32
	secret [4]byte
	user   string
	params map[string]string // reported settings (application_name)

	tx       byte // transaction status for ReadyForQuery: 'I', 'T' or 'E'
	skipping bool // after an error in the extended protocol: discard until Sync
	stmts    map[string]*statement
	portals  map[string]*portal

	mu      sync.Mutex
	running context.CancelCauseFunc // the executing statement's, nil when idle
}

func newConn(s *Server, nc net.Conn, ctx context.Context) *conn {
	be := pgproto3.NewBackend(nc, nc)
	be.SetMaxBodyLen(maxMessage)
	return &conn{
		srv: s, nc: nc, ctx: ctx, be: be, out: writer{w: nc},
		tx: 'I', params: map[string]string{}, stmts: map[string]*statement{}, portals: map[string]*portal{},
	}
}

// serve runs the startup handshake, then answers messages until the
// client terminates or the connection fails.
func (c *conn) serve() error {
	_ = c.nc.SetDeadline(time.Now().Add(c.srv.startupTimeout))
	ok, err := c.startup()
	if err != nil || !ok {
		return err
	}
	_ = c.nc.SetDeadline(time.Time{})
	for {
		msg, err := c.be.Receive()
		if err != nil {
			return err
		}
		if done, err := c.dispatch(msg); done || err != nil {
			return err
		}
	}
}

// startup reads SSLRequest/GSSEncRequest (answered 'N': no encryption),
// then a StartupMessage or a CancelRequest; authenticates; opens the
// session. false: the connection is to be closed (a cancel request, a
// refusal already sent).
func (c *conn) startup() (bool, error) {
	for range 3 { // at most SSLRequest, GSSEncRequest, StartupMessage
		msg, err := c.be.ReceiveStartupMessage()
		if err != nil {
			return false, err
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return false, err
			}
		case *pgproto3.CancelRequest:
			c.srv.cancel(m.ProcessID, m.SecretKey)
			return false, nil
		case *pgproto3.StartupMessage:
			return c.begin(m)
		}
	}
	return false, c.fatal(newError(codeProtocolViolation, "expected a startup message"))
}

// begin answers a StartupMessage.
func (c *conn) begin(m *pgproto3.StartupMessage) (bool, error) {
	c.user = m.Parameters["user"]
	if c.user == "" {
		return false, c.fatal(&pgError{code: "28000", message: "no PostgreSQL user name specified in startup packet"})
	}
	var unknown []string
	for k := range m.Parameters {
		if strings.HasPrefix(k, "_pq_.") {
			unknown = append(unknown, k)
		}
	}
	if m.ProtocolVersion != pgproto3.ProtocolVersion30 || len(unknown) > 0 {
		// Protocol 3.2 (or options): answer in 3.0, as Postgres 15 would.
		c.out.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unknown})
	}
	if !c.srv.register(c) {
		return false, c.fatal(newError(codeTooManyConnections, "sorry, too many clients already"))
	}
	if tok := c.srv.opts.Token; tok != "" {
		c.out.send(&pgproto3.AuthenticationCleartextPassword{})
		if err := c.out.flush(); err != nil {
			return false, err
		}
		if err := c.be.SetAuthType(pgproto3.AuthTypeCleartextPassword); err != nil {
			return false, err
		}
		msg, err := c.be.Receive()
		if err != nil {
			return false, err
		}
		pw, ok := msg.(*pgproto3.PasswordMessage)
		// Compare digests: constant time, whatever the lengths.
		got, want := sha256.Sum256([]byte(pwOrEmpty(pw, ok))), sha256.Sum256([]byte(tok))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			c.srv.log.Info("pgwire: authentication failed", "user", c.user, "remote", c.nc.RemoteAddr().String())
			return false, c.fatal(newError(codeInvalidPassword, fmt.Sprintf("password authentication failed for user %q", c.user)))
		}
	}
	sess, err := c.srv.b.Session(c.ctx)
	if err != nil {
		return false, c.fatal(newError(codeInternal, "cannot open a session: "+err.Error()))
	}
	c.sess = sess
	c.params["application_name"] = m.Parameters["application_name"]

	c.out.send(&pgproto3.AuthenticationOk{})
	for _, p := range [][2]string{
		{"server_version", serverVersion},
		{"server_encoding", "UTF8"},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"IntervalStyle", "postgres"},
		{"integer_datetimes", "on"},
		{"standard_conforming_strings", "on"},
		{"TimeZone", "UTC"},
		{"is_superuser", "off"},
		{"session_authorization", c.user},
		{"application_name", c.params["application_name"]},
	} {
		c.out.send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	c.out.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret[:]})
	c.out.send(&pgproto3.ReadyForQuery{TxStatus: c.tx})
	return true, c.out.flush()
}

func pwOrEmpty(pw *pgproto3.PasswordMessage, ok bool) string {
	if !ok || pw == nil {
		return ""
	}
	return pw.Password
}

// fatal sends a FATAL error; the caller closes the connection.
func (c *conn) fatal(e *pgError) error {
	e.severity = "FATAL"
	c.out.send(e.response())
	if err := c.out.flush(); err != nil {
		return err
	}
	return e
}

// dispatch answers one message; done when the client said Terminate.
func (c *conn) dispatch(msg pgproto3.FrontendMessage) (done bool, err error) {
	if c.skipping {
		switch msg.(type) {
		case *pgproto3.Sync:
			c.skipping = false
		case *pgproto3.Terminate:
			return true, nil
		default:
			return false, nil
		}
	}
	var perr *pgError
	switch m := msg.(type) {
	case *pgproto3.Query:
		return false, c.simpleQuery(m.String)
	case *pgproto3.Parse:
		perr = c.parse(m)
	case *pgproto3.Bind:
		perr = c.bind(m)
	case *pgproto3.Describe:
		perr = c.describe(m)
	case *pgproto3.Execute:
		perr = c.execute(m.Portal, int64(m.MaxRows))
	case *pgproto3.Close:
		c.closeObject(m)
	case *pgproto3.Sync:
		c.sync()
		return false, c.out.flush()
	case *pgproto3.Flush:
		return false, c.out.flush()
	case *pgproto3.Terminate:
		return true, nil
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Stray COPY messages (after a refused COPY FROM STDIN): ignored,
		// as Postgres does.
	case *pgproto3.FunctionCall:
		perr = newError(codeFeatureUnsupported, "the fast-path function call protocol is not supported")
	default:
		return true, c.fatal(newError(codeProtocolViolation, fmt.Sprintf("unexpected message %T", msg)))
	}
	if c.out.err != nil {
		return true, c.out.err
	}
	if perr != nil {
		// Flushed at once, as Postgres does: a client waiting on a Flush
		// it sent after the failed message must see the error.
		c.fail(perr)
		c.skipping = true
		return false, c.out.flush()
	}
	return false, c.out.err
}

// fail sends an ErrorResponse and marks an open transaction failed.
func (c *conn) fail(e *pgError) {
	c.out.send(e.response())
	if c.tx == 'T' {
		c.tx = 'E'
	}
}

// sync ends an extended-protocol batch: outside a transaction block the
// implicit transaction ends, and with it every portal.
func (c *conn) sync() {
	if c.tx == 'I' {
		c.closePortals()
	}
	c.out.send(&pgproto3.ReadyForQuery{TxStatus: c.tx})
}

// run marks ctx's cancel as the running statement's, for CancelRequest,
// and watches the socket for a client that hangs up meanwhile. The
// returned func ends both.
func (c *conn) run(cancel context.CancelCauseFunc) func() {
	c.mu.Lock()
	c.running = cancel
	c.mu.Unlock()
	stop := watchHangup(c.nc, cancel)
	return func() {
		stop()
		c.mu.Lock()
		c.running = nil
		c.mu.Unlock()
	}
}

// cancelRunning cancels the executing statement, if any (CancelRequest).
func (c *conn) cancelRunning() {
	c.mu.Lock()
	cancel := c.running
	c.mu.Unlock()
	if cancel != nil {
		cancel(errUserCancel)
	}
}

// close frees everything the connection holds: open rows, the session.
func (c *conn) close() {
	c.closePortals()
	if c.sess != nil {
		if err := c.sess.Close(); err != nil {
			c.srv.log.Warn("pgwire: session close", "err", err)
		}
	}
	if c.pid != 0 {
		c.srv.unregister(c)
	}
}

func (c *conn) closePortals() {
	for name, p := range c.portals {
		p.close()
		delete(c.portals, name)
	}
}

// flushAt is how much output is buffered before it is written: rows reach
// the client in pieces of this size while a result streams.
const flushAt = 256 << 10

// writer buffers encoded messages for one socket. After a write error
// every later call is a no-op and err says why.
type writer struct {
	w   net.Conn
	buf []byte
	err error
}

func (w *writer) send(msg pgproto3.BackendMessage) {
	if w.err != nil {
		return
	}
	b, err := msg.Encode(w.buf)
	if err != nil {
		w.err = fmt.Errorf("pgwire: encode %T: %w", msg, err)
		return
	}
	w.buf = b
	if len(w.buf) >= flushAt {
		_ = w.flush()
	}
}

func (w *writer) flush() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	_, err := w.w.Write(w.buf)
	if err != nil {
		w.err = errors.Join(errClientGone, err)
	}
	if cap(w.buf) > 4*flushAt {
		w.buf = nil // one huge row: do not keep its buffer
	} else {
		w.buf = w.buf[:0]
	}
	return w.err
}
