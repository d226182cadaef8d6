package ingest

import (
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/lineproto"
)

// The TCP listener: a fixed number of event loops, each one OS thread
// running epoll over its share of the connections. No goroutine per
// connection.
//
// Level-triggered epoll: a connection that still has unread bytes is
// reported again by the next epoll_wait. That is what backpressure and
// fairness need: a loop reads at most one buffer per connection per round,
// and when its ring to the writer is full it stops reading altogether and
// leaves the bytes in the kernel, where TCP flow control slows the client,
// with no list of half-served connections to keep. Edge-triggered would
// save a wakeup per busy connection per round, at the cost of that list.

// listener accepts connections on one socket and spreads them over loops.
type listener struct {
	fd    int
	addr  net.Addr
	loops []*loop
	next  int // the loop the next accepted connection goes to
	conns gauge
	ids   counter
}

// loop is one event loop: an epoll set, its connections, a read buffer,
// a parser and the ring it hands records to the writer through.
type loop struct {
	l            *listener
	srv          *Server
	epfd         int
	evfd         int // eventfd: wakes epoll_wait for new connections and stop
	conns        map[int32]*conn
	rbuf         []byte
	parser       lineproto.Parser
	line         lineproto.Line
	ring         *ring
	cur          *batch
	mu           sync.Mutex
	incoming     []*conn // accepted by the accepting loop, not yet registered
	stop         bool    // guarded by mu
	log          *slog.Logger
	m            *metrics
	events       []unix.EpollEvent
	lastIdleScan time.Time
	// The accepting loop's backoff (accept.go): while paused it does not
	// poll the listening socket, so a failing accept cannot spin the loop
	// that serves its share of the connections meanwhile.
	acceptBo     acceptBackoff
	acceptPaused bool
	acceptResume time.Time
}

// conn is one client connection. Between reads it holds only the partial
// line it has received (at most the line limit), so an idle connection
// costs a few hundred bytes.
type conn struct {
	fd       int32
	id       uint32
	remote   string
	pending  []byte // the unterminated tail of the last read
	lineNo   uint64 // lines seen so far (1-based numbering in logs)
	skipping bool   // discarding the rest of an over-long line
	lastRead time.Time
}

func newListener(srv *Server, addr string, rings []*ring) (*listener, error) {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ingest: ilp address %q: %w", addr, err)
	}
	domain, sa := unix.AF_INET, unix.Sockaddr(nil)
	if ip4 := tcp.IP.To4(); ip4 != nil || tcp.IP == nil {
		a := &unix.SockaddrInet4{Port: tcp.Port}
		if ip4 != nil {
			copy(a.Addr[:], ip4)
		}
		sa = a
	} else {
		domain = unix.AF_INET6
		a := &unix.SockaddrInet6{Port: tcp.Port}
		copy(a.Addr[:], tcp.IP.To16())
		sa = a
	}
	fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ingest: socket: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ingest: listen on %s: %w", addr, err)
	}
	if err := unix.Listen(fd, 4096); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ingest: listen on %s: %w", addr, err)
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ingest: getsockname: %w", err)
	}
	l := &listener{fd: fd, addr: sockaddrToTCP(bound)}
	for i, r := range rings {
		lp, err := newLoop(srv, l, r)
		if err != nil {
			l.closeFds()
			return nil, err
		}
		l.loops = append(l.loops, lp)
		if i == 0 {
			// The first loop accepts for all of them.
			if err := unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
				l.closeFds()
				return nil, fmt.Errorf("ingest: epoll add listener: %w", err)
			}
		}
	}
	return l, nil
}

func sockaddrToTCP(sa unix.Sockaddr) *net.TCPAddr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]).To16(), Port: a.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	}
	return &net.TCPAddr{}
}

func newLoop(srv *Server, l *listener, r *ring) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("ingest: epoll_create: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("ingest: eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)}); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, fmt.Errorf("ingest: epoll add eventfd: %w", err)
	}
	o := srv.opts
	return &loop{
		l: l, srv: srv, epfd: epfd, evfd: evfd, conns: map[int32]*conn{},
		rbuf:   make([]byte, o.LineLimit+o.ReadBuffer+1),
		parser: lineproto.Parser{Precision: int64(max(o.TsUnit, time.Nanosecond))}, ring: r, log: srv.log, m: srv.m,
		events: make([]unix.EpollEvent, 256), lastIdleScan: time.Now(),
		acceptBo: acceptBackoff{log: srv.log, what: "line protocol"},
	}, nil
}

// closeFds closes the listening socket and every loop's epoll and eventfd
// (used when construction fails before the loops run).
func (l *listener) closeFds() {
	unix.Close(l.fd)
	for _, lp := range l.loops {
		unix.Close(lp.epfd)
		unix.Close(lp.evfd)
	}
}

// stop asks every loop to finish: stop reading, hand over what it has
// parsed, close its connections and return.
func (l *listener) stop() {
	for _, lp := range l.loops {
		lp.mu.Lock()
		lp.stop = true
		lp.mu.Unlock()
		lp.kick()
	}
}

// kick wakes the loop's epoll_wait.
func (lp *loop) kick() {
	var one = [8]byte{1}
	_, _ = unix.Write(lp.evfd, one[:])
}

// run is the loop's goroutine. It is not locked to its thread: epoll_wait
// blocks whichever thread runs it, and a locked goroutine is slower to wake
// (its own thread must be handed a P), which measured as a doubled
// socket-to-visible latency on a 2-core machine.
func (lp *loop) run(wg *sync.WaitGroup) {
	defer wg.Done()
	defer lp.shutdown()
	for {
		timeout := lp.srv.opts.IdleTimeout / 4
		timeout = min(max(timeout, 10*time.Millisecond), time.Second)
		wait := timeout
		if lp.acceptPaused {
			wait = min(wait, max(time.Until(lp.acceptResume), time.Millisecond))
		}
		n, err := unix.EpollWait(lp.epfd, lp.events, int((wait+time.Millisecond-1)/time.Millisecond))
		if err != nil && err != unix.EINTR {
			lp.log.Error("ingest: epoll_wait", "err", err)
			return
		}
		for i := 0; i < n; i++ {
			ev := &lp.events[i]
			switch int(ev.Fd) {
			case lp.evfd:
				var b [8]byte
				_, _ = unix.Read(lp.evfd, b[:])
				if lp.takeIncoming() {
					return
				}
			case lp.l.fd:
				lp.accept()
			default:
				c := lp.conns[ev.Fd]
				if c == nil {
					continue
				}
				if !lp.serve(c, ev.Events) {
					lp.closeConn(c, "")
				}
				if lp.stopping() {
					return
				}
			}
		}
		lp.flush()
		if lp.acceptPaused && !time.Now().Before(lp.acceptResume) {
			lp.resumeAccept()
		}
		if now := time.Now(); now.Sub(lp.lastIdleScan) >= timeout {
			lp.lastIdleScan = now
			lp.closeIdle(now)
		}
	}
}

func (lp *loop) stopping() bool {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.stop
}

// takeIncoming registers connections handed over by the accepting loop and
// reports whether the loop was asked to stop.
func (lp *loop) takeIncoming() bool {
	lp.mu.Lock()
	in := lp.incoming
	lp.incoming = nil
	stop := lp.stop
	lp.mu.Unlock()
	for _, c := range in {
		lp.register(c)
	}
	return stop
}

func (lp *loop) register(c *conn) {
	if err := unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_ADD, int(c.fd), &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: c.fd}); err != nil {
		lp.log.Error("ingest: epoll add connection", "conn", c.id, "err", err)
		unix.Close(int(c.fd))
		lp.l.conns.add(-1)
		lp.m.connGauge(-1)
		return
	}
	c.lastRead = time.Now()
	lp.conns[c.fd] = c
}

// accept takes every pending connection and deals them out round-robin.
func (lp *loop) accept() {
	for {
		fd, sa, err := unix.Accept4(lp.l.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			if err != unix.EAGAIN && err != unix.EINTR && err != unix.ECONNABORTED {
				// EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays
				// queued, and polling the socket would report it again at
				// once. Stop polling it for the backoff.
				lp.pauseAccept(lp.acceptBo.failed(err, time.Now()))
			}
			return
		}
		lp.acceptBo.ok()
		remote := sockaddrToTCP(sa).String()
		if lp.l.conns.load() >= int64(lp.srv.opts.MaxConns) {
			lp.m.connRefused() // counted before the peer can see the close
			unix.Close(fd)
			lp.m.logBad(lp.log, "ingest: connection refused: limit reached", "remote", remote, "limit", lp.srv.opts.MaxConns)
			continue
		}
		lp.l.conns.add(1)
		lp.m.connGauge(1)
		lp.l.ids.add(1)
		c := &conn{fd: int32(fd), id: uint32(lp.l.ids.load()), remote: remote}
		lp.log.Debug("ingest: connection open", "conn", c.id, "remote", remote)
		target := lp.l.loops[lp.l.next%len(lp.l.loops)]
		lp.l.next++
		if target == lp {
			lp.register(c)
			continue
		}
		target.mu.Lock()
		target.incoming = append(target.incoming, c)
		target.mu.Unlock()
		target.kick()
	}
}

// pauseAccept stops polling the listening socket for d.
func (lp *loop) pauseAccept(d time.Duration) {
	if err := unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_DEL, lp.l.fd, nil); err != nil {
		lp.log.Error("ingest: epoll remove listener", "err", err)
	}
	lp.acceptPaused = true
	lp.acceptResume = time.Now().Add(d)
}

// resumeAccept polls the listening socket again.
func (lp *loop) resumeAccept() {
	if err := unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_ADD, lp.l.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lp.l.fd)}); err != nil {
		lp.pauseAccept(lp.acceptBo.failed(err, time.Now()))
		return
	}
	lp.acceptPaused = false
}

// serve reads once from c and hands every complete line on. It reports
// false when the connection is finished (closed by the peer, or failed).
func (lp *loop) serve(c *conn, events uint32) bool {
	if !lp.room() {
		return true // stopping while the writer was full; the bytes stay unread
	}
	p := copy(lp.rbuf, c.pending)
	c.pending = c.pending[:0]
	n, err := unix.Read(int(c.fd), lp.rbuf[p:p+lp.srv.opts.ReadBuffer])
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		c.pending = append(c.pending, lp.rbuf[:p]...)
		return true
	case err != nil:
		lp.lines(c, lp.rbuf[:p], true)
		lp.log.Debug("ingest: connection read", "conn", c.id, "err", err)
		return false
	case n == 0:
		lp.lines(c, lp.rbuf[:p], true) // a last line without '\n' still counts
		return false
	}
	c.lastRead = time.Now()
	if lp.cur.readNs == 0 {
		lp.cur.readNs = c.lastRead.UnixNano()
	}
	lp.m.readBytes(uint64(n))
	lp.lines(c, lp.rbuf[:p+n], false)
	return true
}

// lines parses every complete line in b and keeps the unterminated rest in
// c.pending (or, at EOF, parses it too).
func (lp *loop) lines(c *conn, b []byte, eof bool) {
	limit := lp.srv.opts.LineLimit
	for len(b) > 0 {
		i := lineEnd(b)
		if i < 0 {
			switch {
			case c.skipping: // still inside a line rejected as too long
			case eof:
				lp.one(c, b)
			case len(b) > limit:
				c.lineNo++
				lp.tooLong(c, len(b))
				c.skipping = true
			default:
				c.pending = append(c.pending, b...)
			}
			return
		}
		if false {
			c.pending = append(c.pending, b...)
			lp.trim(c)
			return
		}
		line := b[:i]
		b = b[i+1:]
		if c.skipping { // the end of a line already rejected as too long
			c.skipping = false
			continue
		}
		if len(line) > limit {
			c.lineNo++
			lp.tooLong(c, len(line))
			continue
		}
		lp.one(c, line)
	}
	lp.trim(c)
}

// trim lets an idle connection give back a large partial-line buffer.
func (lp *loop) trim(c *conn) {
	if len(c.pending) == 0 && cap(c.pending) > 4096 {
		c.pending = nil
	}
}

func (lp *loop) tooLong(c *conn, n int) {
	err := &lineproto.LineError{Line: int(c.lineNo), Col: lp.srv.opts.LineLimit + 1, Reason: lineproto.ReasonTooLong,
		Msg: fmt.Sprintf("line is longer than the %d-byte limit (at least %d bytes); skipped", lp.srv.opts.LineLimit, n)}
	lp.m.rejected("", lineproto.ReasonTooLong.String())
	lp.m.logBad(lp.log, "ingest: line rejected", "conn", c.id, "remote", c.remote, "err", err)
}

// one parses one line and queues its record.
func (lp *loop) one(c *conn, line []byte) {
	c.lineNo++
	ok, err := lp.parser.Parse(line, &lp.line)
	if err != nil {
		// The measurement, when it parsed, names the table: in the log
		// always, in the metric when the table exists, which the writer
		// knows once it has applied the lines before this one.
		meas := lp.line.Measurement
		if le, isLine := asLineErr(err); isLine {
			le.Line = int(c.lineNo)
			if lp.reserve(recHeader + 4 + len(meas)) {
				lp.cur.buf = appendRejectRecord(lp.cur.buf, meas, le.Reason, c.id, c.lineNo)
				lp.cur.recs++
			} else {
				lp.m.rejected(lp.srv.sink.knownLabel(meas), le.Reason.String())
			}
		}
		lp.m.logBad(lp.log, "ingest: line rejected", "conn", c.id, "remote", c.remote, "table", string(meas), "err", err)
		return
	}
	if !ok {
		return
	}
	if !lp.reserve(recordSize(&lp.line)) {
		return // stopping: not accepted, and not counted as accepted
	}
	lp.cur.buf = appendRecord(lp.cur.buf, &lp.line, c.id, c.lineNo)
	lp.cur.recs++
}

// reserve makes sure lp.cur is a claimed batch with room for need more
// bytes (or holding nothing yet), handing on the current one when it is
// full. It returns false only if the server stops while waiting.
func (lp *loop) reserve(need int) bool {
	if lp.cur != nil && len(lp.cur.buf)+need > cap(lp.cur.buf) && lp.cur.recs > 0 {
		lp.flush()
	}
	return lp.room()
}

// room makes sure lp.cur is a claimed batch, waiting for the writer while
// the ring is full: this is the backpressure, the loop reads nothing in
// the meantime. It returns false only if the server stops while waiting.
func (lp *loop) room() bool {
	if lp.cur != nil {
		return true
	}
	for spins := 0; ; spins++ {
		if lp.cur = lp.ring.claim(); lp.cur != nil {
			return true
		}
		if spins == 0 {
			lp.m.backpressure()
		}
		if spins%64 == 63 && lp.stopping() && lp.srv.sinkGone() {
			return false
		}
		if spins < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// flush publishes the current batch, if it holds anything, and wakes the
// writer.
func (lp *loop) flush() {
	if lp.cur == nil || lp.cur.recs == 0 {
		return
	}
	lp.ring.publish()
	lp.cur = nil
	lp.srv.sink.park.wake()
}

// closeIdle closes connections that sent nothing for the idle timeout.
func (lp *loop) closeIdle(now time.Time) {
	for _, c := range lp.conns {
		if now.Sub(c.lastRead) > lp.srv.opts.IdleTimeout {
			lp.closeConn(c, "idle timeout")
		}
	}
}

func (lp *loop) closeConn(c *conn, why string) {
	if why != "" {
		lp.m.connClosed(why) // counted before the peer can see the close
	}
	_ = unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_DEL, int(c.fd), nil)
	unix.Close(int(c.fd))
	delete(lp.conns, c.fd)
	lp.l.conns.add(-1)
	lp.m.connGauge(-1)
	if why != "" {
		lp.log.Info("ingest: connection closed", "conn", c.id, "remote", c.remote, "why", why)
	} else {
		lp.log.Debug("ingest: connection closed", "conn", c.id, "remote", c.remote, "lines", c.lineNo)
	}
}

// shutdown hands over the last batch and closes every connection, the
// epoll set and the eventfd. The accepting loop also closes the listening
// socket.
func (lp *loop) shutdown() {
	lp.flush()
	lp.takeIncoming()
	for _, c := range lp.conns {
		lp.closeConn(c, "")
	}
	if lp == lp.l.loops[0] {
		unix.Close(lp.l.fd)
	}
	unix.Close(lp.epfd)
	unix.Close(lp.evfd)
}
