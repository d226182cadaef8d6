package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickdb/tickdb/writer"
)

// Options configure a Server. The zero value (with DB set) serves the
// line protocol on 127.0.0.1:9009 and HTTP on 127.0.0.1:9000, QuestDB's
// default ports.
type Options struct {
	// DB is the database directory.
	DB string
	// ILPAddr is the line-protocol TCP address; "off" disables it.
	ILPAddr string
	// HTTPAddr is the HTTP address; "off" disables it.
	HTTPAddr string
	// Loops is the number of epoll event loops (default 2).
	Loops int
	// PinCPU pins the writer goroutine's thread to CPU.
	PinCPU bool
	CPU    int
	// Token, when set, is required on every HTTP endpoint but /health and
	// /settings, as "Authorization: Bearer <t>" or "Token <t>".
	Token string
	// MaxConns is the line-protocol connection limit (default 4096).
	MaxConns int
	// IdleTimeout closes a connection that sent nothing for this long
	// (default 5 minutes).
	IdleTimeout time.Duration
	// LineLimit is the longest line accepted, in bytes (default 64 KiB).
	LineLimit int
	// ReadBuffer is the most read from one connection at a time (default
	// 64 KiB).
	ReadBuffer int
	// MaxBody is the largest HTTP write body (default 256 MiB).
	MaxBody int64
	// MaxStreams caps the GET /tail streams open at once (default
	// DefaultMaxStreams); a request over it gets 503.
	MaxStreams int
	// StreamWriteTimeout is how long a GET /tail client may take to accept
	// one batch of events before it is cut off (default
	// DefaultStreamWriteTimeout).
	StreamWriteTimeout time.Duration
	// RingSlots and BatchBytes size each loop's queue to the writer:
	// RingSlots batches (a power of two, default 16) of about BatchBytes
	// (default 256 KiB) of parsed lines.
	RingSlots  int
	BatchBytes int
	// LiveRoot, when set, holds each table's live segments in
	// LiveRoot/<table> (default: the writer's default, /dev/shm).
	LiveRoot string
	// Writer is the template for every table's writer options (flush
	// policy, out-of-order policy, segment size); Schema, LiveDir and
	// Logger are set per table.
	Writer writer.Options
	// Logger receives start/stop lines and rate-limited bad-input lines.
	Logger *slog.Logger

	slowApply     time.Duration // tests: the writer sleeps this long per batch
	tailHeartbeat time.Duration // tests: the /tail heartbeat (default tailHeartbeat)
}

func (o *Options) withDefaults() *Options {
	r := *o
	if r.ILPAddr == "" {
		r.ILPAddr = "127.0.0.1:9009"
	}
	if r.HTTPAddr == "" {
		r.HTTPAddr = "127.0.0.1:9000"
	}
	if r.Loops <= 0 {
		r.Loops = 2
	}
	if r.MaxConns <= 0 {
		r.MaxConns = 4096
	}
	if r.IdleTimeout <= 0 {
		r.IdleTimeout = 5 * time.Minute
	}
	if r.LineLimit <= 0 {
		r.LineLimit = 64 << 10
	}
	if r.ReadBuffer <= 0 {
		r.ReadBuffer = 64 << 10
	}
	if r.MaxBody <= 0 {
		r.MaxBody = 256 << 20
	}
	if r.RingSlots <= 0 || r.RingSlots&(r.RingSlots-1) != 0 {
		r.RingSlots = 16
	}
	if r.BatchBytes <= 0 {
		r.BatchBytes = 256 << 10
	}
	if r.MaxStreams <= 0 {
		r.MaxStreams = DefaultMaxStreams
	}
	if r.StreamWriteTimeout <= 0 {
		r.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if r.tailHeartbeat <= 0 {
		r.tailHeartbeat = tailHeartbeat
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return &r
}

// Server is a running ingestion server: the epoll line-protocol listener,
// the HTTP API and the one writer goroutine that owns every table it
// writes. Close stops it gracefully.
type Server struct {
	opts     *Options
	log      *slog.Logger
	m        *metrics
	sink     *sink
	lis      *listener
	loopsWG  sync.WaitGroup
	http     *http.Server
	httpLis  net.Listener
	httpDone chan error
	streams  chan struct{} // a token per open /tail stream
	closing  chan struct{} // closed when HTTP shuts down: streams end
	closeMu  sync.Mutex
	closed   bool
	closeErr error
}

// Start opens the listeners and starts serving.
func Start(opts *Options) (*Server, error) {
	o := opts.withDefaults()
	if o.DB == "" {
		return nil, errors.New("ingest: no database directory")
	}
	s := &Server{opts: o, log: o.Logger, m: newMetrics(), streams: make(chan struct{}, o.MaxStreams), closing: make(chan struct{})}
	o.Writer.OnFlush = s.m.flushed
	var rings []*ring
	if o.ILPAddr != "off" {
		for range o.Loops {
			rings = append(rings, newRing(o.RingSlots, o.BatchBytes))
		}
	}
	s.sink = newSink(o, s.m, rings, &s.loopsWG)
	s.m.reg.MustRegister(newTableCollector(s.sink, rings), newConditionCollector(s.sink))
	if o.ILPAddr != "off" {
		lis, err := newListener(s, o.ILPAddr, rings)
		if err != nil {
			return nil, err
		}
		s.lis = lis
	}
	if o.HTTPAddr != "off" {
		hl, err := net.Listen("tcp", o.HTTPAddr)
		if err != nil {
			if s.lis != nil {
				s.lis.closeFds()
			}
			return nil, fmt.Errorf("ingest: http listen on %s: %w", o.HTTPAddr, err)
		}
		s.httpLis = hl
		s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
		// Shutdown waits for the requests in flight; a /tail stream would
		// never end by itself.
		s.http.RegisterOnShutdown(func() { close(s.closing) })
	}
	s.sink.openExisting()
	if s.lis != nil {
		s.loopsWG.Add(len(s.lis.loops)) // before the writer starts waiting on it
	}
	go s.sink.run()
	if s.lis != nil {
		for _, lp := range s.lis.loops {
			go lp.run(&s.loopsWG)
		}
		s.log.Info("ingest: line protocol listening", "addr", s.lis.addr.String(), "loops", len(s.lis.loops))
	}
	if s.http != nil {
		s.httpDone = make(chan error, 1)
		go func() { s.httpDone <- s.http.Serve(s.httpLis) }()
		s.log.Info("ingest: http listening", "addr", s.httpLis.Addr().String())
	}
	return s, nil
}

// ILPAddr is the line-protocol listener's address (nil when off).
func (s *Server) ILPAddr() net.Addr {
	if s.lis == nil {
		return nil
	}
	return s.lis.addr
}

// HTTPAddr is the HTTP listener's address (nil when off).
func (s *Server) HTTPAddr() net.Addr {
	if s.httpLis == nil {
		return nil
	}
	return s.httpLis.Addr()
}

// sinkGone reports whether the writer goroutine has exited.
func (s *Server) sinkGone() bool {
	select {
	case <-s.sink.donec:
		return true
	default:
		return false
	}
}

// Close stops the server gracefully: HTTP stops taking requests and
// finishes those in flight, the event loops stop reading and hand over
// every line they have parsed, and the writer stores those, makes every
// table durable and closes it. Lines still unread in the kernel's socket
// buffers are not accepted. Close returns the first error making the tables
// durable.
func (s *Server) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := s.http.Shutdown(ctx); err != nil {
			s.log.Warn("ingest: http shutdown", "err", err)
		}
		cancel()
		<-s.httpDone
	}
	if s.lis != nil {
		s.lis.stop()
	}
	close(s.sink.stopc)
	<-s.sink.donec
	s.closeErr = s.sink.err
	return s.closeErr
}

// Stats returns each table's writer counters as last copied by the writer
// goroutine (at most 100 ms old; final after Close).
func (s *Server) Stats() map[string]writer.Stats { return s.sink.snapshot() }

// ReadToVisible returns a copy of the histogram of socket read → visible
// times, in ns, one value per batch of lines.
func (s *Server) ReadToVisible() *hdrhistogram.Histogram {
	s.m.visibleMu.Lock()
	defer s.m.visibleMu.Unlock()
	return hdrhistogram.Import(s.m.visibleHist.Export())
}

// DefaultLateWindow is the late window `tickdb serve` gives its tables
// (--late-window; writer.Options.LateWindow): feed handlers whose clocks
// differ by a few milliseconds, several connections writing one table,
// and a network that reorders, all stay well inside ten seconds. A query
// reads the late entries of about one window past its range, so the
// window is not unbounded.
const DefaultLateWindow = 10 * time.Second
