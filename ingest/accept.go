package ingest

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Accepting under pressure, for both listeners. When accept fails for
// want of a file descriptor (EMFILE, ENFILE) or memory, the pending
// connection stays in the kernel's queue and the next accept fails the
// same way at once: a listener that retries at once spins, and one that
// logs every failure fills the disk. So a failed accept waits before the
// next, 5 ms at first, doubling up to a second, back to the start after
// an accept succeeds; and it is logged at most once a second, with the
// count of failures since the last line.

const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// acceptBackoff is the wait and the log of one listener's failed accepts.
// One goroutine at a time.
type acceptBackoff struct {
	log      *slog.Logger
	what     string // "line protocol" or "http"
	delay    time.Duration
	failures int // since the last log line
	lastLog  time.Time
}

// failed records a failed accept and returns how long to wait before the
// next.
func (b *acceptBackoff) failed(err error, now time.Time) time.Duration {
	b.delay = min(max(2*b.delay, acceptBackoffMin), acceptBackoffMax)
	b.failures++
	if now.Sub(b.lastLog) >= time.Second {
		b.log.Error("ingest: accept failed; backing off", "listener", b.what, "err", err, "failures", b.failures, "backoff", b.delay)
		b.failures = 0
		b.lastLog = now
	}
	return b.delay
}

// ok records an accept that succeeded.
func (b *acceptBackoff) ok() { b.delay = 0 }

// httpListener is the HTTP listener: it backs off failed accepts as
// above (net/http's own retry logs every failure) and holds the
// connection limit, Options.MaxHTTPConns. A connection over the limit is
// answered at once, before its request is read, with 503, Retry-After: 1
// and a JSON error body, and closed. (A client that had already sent its
// request when the close reached it may see the connection reset
// instead: the kernel resets a connection closed with unread bytes.)
type httpListener struct {
	net.Listener
	max     int64
	n       gauge
	onOpen  func(delta int) // the connections gauge
	refused func(remote string)
	bo      acceptBackoff
	done    chan struct{}
	close   sync.Once
}

func newHTTPListener(l net.Listener, maxConns int, log *slog.Logger, onOpen func(int), refused func(string)) *httpListener {
	return &httpListener{Listener: l, max: int64(maxConns), onOpen: onOpen, refused: refused,
		bo: acceptBackoff{log: log, what: "http"}, done: make(chan struct{})}
}

// connRefusal is what a connection over the limit reads.
func connRefusal(limit int64) []byte {
	body := fmt.Sprintf(`{"code":"unavailable","message":"the server has %d HTTP connections open, its limit (--max-http-conns); retry","errorId":"conn-limit"}`, limit)
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

func (l *httpListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			t := time.NewTimer(l.bo.failed(err, time.Now()))
			select {
			case <-t.C:
				continue
			case <-l.done:
				t.Stop()
				return nil, net.ErrClosed
			}
		}
		l.bo.ok()
		if l.n.load() >= l.max {
			l.refused(c.RemoteAddr().String())
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = c.Write(connRefusal(l.max))
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			_ = c.Close()
			continue
		}
		l.n.add(1)
		l.onOpen(1)
		return &limitedConn{Conn: c, l: l}, nil
	}
}

func (l *httpListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its place back to the limit once, when it closes.
type limitedConn struct {
	net.Conn
	l    *httpListener
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.n.add(-1)
		c.l.onOpen(-1)
	})
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close the connection before it closes it.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
