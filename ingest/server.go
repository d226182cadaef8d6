package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/reader"
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
	// SQLAddr is the address (host:port) of a tickdb-sql server (Postgres
	// wire protocol) that GET /sql, and so the console's Query panel,
	// sends SQL to, with Token as its password. It is found only here:
	// nothing looks for a SQL server; "" (the default) means none, and
	// GET /sql answers 404.
	SQLAddr string
	// ILPInsecure lets the line-protocol TCP listener listen beyond
	// loopback while Token is set. The TCP port takes no token (Token
	// guards HTTP only), so by default Start refuses that combination
	// (ErrILPExposed): a token on HTTP would otherwise suggest a guard
	// the TCP port does not have.
	ILPInsecure bool
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
	// MaxBody is the largest HTTP write body on the wire (default 256
	// MiB); a larger one is answered 413.
	MaxBody int64
	// MaxDecompressed is the largest HTTP write body once decompressed
	// (default DefaultMaxDecompressed); a larger one is answered 413.
	MaxDecompressed int64
	// MaxWriteMemory bounds the memory all HTTP write requests together
	// hold (default DefaultMaxWriteMemory): read buffers, decompressors
	// and their staged rows, about each row's stored size. A request that
	// would pass it waits up to DefaultMemoryWait for others to finish,
	// then is answered 503 with Retry-After; one that alone would pass it
	// is answered 413.
	MaxWriteMemory int64
	// ReadTimeout cuts off an HTTP request whose headers or body stall
	// (default DefaultReadTimeout): the headers must arrive within it, and
	// a write body must bring MinBodyProgress more bytes within each
	// ReadTimeout (408). Responses are not affected: a GET /tail stream
	// lasts as long as its client reads.
	ReadTimeout time.Duration
	// MaxHTTPConns is the HTTP connection limit (default 4096); a
	// connection over it is answered 503 at once and closed.
	MaxHTTPConns int
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
	// MaxFuture is how far ahead of the server's clock a row's timestamp
	// may be (default DefaultMaxFuture, a minute; MaxFutureOff or any
	// negative value: no limit). A row further ahead is a bad line
	// (reason future), never stored: stored, it would make every
	// real-time row after it late. The clock is read once per batch of
	// lines (per request over HTTP, per file for Loader's CheckAt and
	// AppendLines).
	MaxFuture time.Duration
	// TsUnit is the unit of the line-protocol listener's timestamps, and
	// of the Loader's lines' in its messages: time.Nanosecond (default),
	// Microsecond, Millisecond or Second. HTTP requests give theirs with
	// the precision parameter.
	TsUnit time.Duration
	// Allow1970 stores timestamps that read as the first weeks of 1970 in
	// ns but as now in seconds, ms or µs (query.GuessUnit); without it
	// such a line is a bad line (reason ts_unit) whose message names the
	// unit to give.
	Allow1970 bool
	// Writer is the template for every table's writer options (flush
	// policy, out-of-order policy, segment size); Schema, LiveDir and
	// Logger are set per table. Its Group, when set, runs every table's
	// background work and must outlive the server; nil (the usual case):
	// the server runs its own writer.Group for all its tables (Group
	// sizes it) and closes it after them.
	Writer writer.Options
	// Group sizes the server's own writer.Group (when Writer.Group is
	// nil): its flush workers, preparer and checkpointer serve every
	// table, so a thousand tables cost a few threads, not a few thousand.
	Group writer.GroupOptions
	// Logger receives start/stop lines and rate-limited bad-input lines.
	Logger *slog.Logger
	// Archive, when set, is the archive the database's tables go up to
	// (package archive): GET /api/tables, /metrics and the console show
	// its lag. The caller starts it, gates retention on it
	// (Writer.RetainBelow) and closes it after the server.
	Archive *archive.Archiver

	memoryWait    time.Duration // tests: how long a write waits for memory (default DefaultMemoryWait)
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
	if r.MaxDecompressed <= 0 {
		r.MaxDecompressed = DefaultMaxDecompressed
	}
	if r.MaxWriteMemory <= 0 {
		r.MaxWriteMemory = DefaultMaxWriteMemory
	}
	if r.ReadTimeout <= 0 {
		r.ReadTimeout = DefaultReadTimeout
	}
	if r.MaxHTTPConns <= 0 {
		r.MaxHTTPConns = 4096
	}
	if r.memoryWait <= 0 {
		r.memoryWait = DefaultMemoryWait
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
	if r.MaxFuture == 0 {
		r.MaxFuture = DefaultMaxFuture
	}
	if r.TsUnit == 0 {
		r.TsUnit = time.Nanosecond
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
	httpLis  *httpListener
	wmem     *writeMemory
	httpDone chan error
	streams  chan struct{} // a token per open /tail stream
	closing  chan struct{} // closed when HTTP shuts down: streams end
	dbLock   *os.File      // the database's server lock (dblock.go), held until Close
	group    *writer.Group // the tables' background workers, when the server made them
	readers  *readerPool   // open readers for HTTP queries (readers.go)
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
	if err := validTsUnit(o.TsUnit); err != nil {
		return nil, err
	}
	if err := checkILPExposure(o.ILPAddr, o.Token, o.ILPInsecure); err != nil {
		return nil, err
	}
	lock, err := lockDB(o.DB)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, log: o.Logger, m: newMetrics(), streams: make(chan struct{}, o.MaxStreams), closing: make(chan struct{}), dbLock: lock, readers: newReaderPool(o.DB)}
	s.wmem = newWriteMemory(o.MaxWriteMemory, o.memoryWait, func(n int64) { s.m.writeMem.Set(float64(n)) })
	o.Writer.OnFlush = s.m.flushed
	if o.Writer.Group == nil {
		g, err := writer.NewGroup(&o.Group)
		if err != nil {
			lock.Close()
			return nil, fmt.Errorf("ingest: %w", err)
		}
		s.group, o.Writer.Group = g, g
	}
	var rings []*ring
	if o.ILPAddr != "off" {
		for range o.Loops {
			rings = append(rings, newRing(o.RingSlots, o.BatchBytes))
		}
	}
	s.sink = newSink(o, s.m, rings, &s.loopsWG)
	s.m.reg.MustRegister(newTableCollector(s.sink, rings), newConditionCollector(s.sink))
	if o.Archive != nil {
		s.m.reg.MustRegister(newArchiveCollector(o.Archive))
	}
	if o.ILPAddr != "off" {
		lis, err := newListener(s, o.ILPAddr, rings)
		if err != nil {
			s.closeGroup()
			lock.Close()
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
			s.closeGroup()
			lock.Close()
			return nil, fmt.Errorf("ingest: http listen on %s: %w", o.HTTPAddr, err)
		}
		s.httpLis = newHTTPListener(hl, o.MaxHTTPConns, s.log, func(d int) { s.m.httpConns.Add(float64(d)) }, func(remote string) {
			s.m.httpRefused.Inc()
			s.m.logBad(s.log, "ingest: http connection refused: limit reached", "remote", remote, "limit", o.MaxHTTPConns)
		})
		// No ReadTimeout: it would cut GET /tail streams, whose
		// connection the server reads in the background for as long as
		// they last. Bodies get their own read deadlines (readDeadline).
		s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: o.ReadTimeout, IdleTimeout: o.IdleTimeout,
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
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
		// The first queries find their readers open and their time
		// indexes read (the line-protocol listener takes lines meanwhile).
		names, _ := reader.Tables(o.DB)
		s.readers.warm(names)
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
	s.readers.close()
	if s.lis != nil {
		s.lis.stop()
	}
	close(s.sink.stopc)
	<-s.sink.donec
	s.closeErr = s.sink.err
	s.closeGroup() // after every table's writer is closed
	s.dbLock.Close()
	return s.closeErr
}

// closeGroup stops the server's writer.Group, if it made one. Every
// table's writer is closed by then: one that is not (a writer that
// failed to close) leaves the group running, logged.
func (s *Server) closeGroup() {
	if s.group == nil {
		return
	}
	if err := s.group.Close(); err != nil {
		s.log.Error("ingest: writer group", "err", err)
	}
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

// Defaults of the HTTP limits (Options).
const (
	// DefaultReadTimeout: a client that sends nothing for half a minute
	// is gone or hostile; any working client sends far faster than
	// MinBodyProgress per ReadTimeout.
	DefaultReadTimeout = 30 * time.Second
	// DefaultMaxDecompressed: 1 GiB of text, about 37 M tick lines: far
	// more than a client batches, little enough that one request cannot
	// take a writer's goroutine for long.
	DefaultMaxDecompressed = 1 << 30
	// DefaultMaxWriteMemory: 1 GiB for all write requests together, room
	// for about 35 M staged tick rows, or 4,096 stalled gzip requests'
	// buffers several times over.
	DefaultMaxWriteMemory = 1 << 30
)
