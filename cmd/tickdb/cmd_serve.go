//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/writer"
)

type serveOpts struct {
	ilp, http     string
	cpu           int
	token         string
	sql           string
	ilpInsecure   bool
	flush         string
	flushInterval time.Duration
	ooo           string
	lateWindow    time.Duration
	liveDir       string
	maxConns      int
	idle          time.Duration
	lineLimit     byteSize
	loops         int
	segment       byteSize
	logLevel      string
	retainAge     time.Duration
	retainBytes   byteSize
	compactAfter  time.Duration
	compact       bool
	hotBytes      byteSizeZero
	maxStreams    int
	streamTimeout time.Duration
	readTimeout   time.Duration
	maxHTTPConns  int
	maxBody       byteSize
	maxDecomp     byteSize
	writeMemory   byteSize
	maxFuture     time.Duration
	tsUnit        string
	allow1970     bool
	flushWorkers  int
	archive       string
	archiveEP     string
	archivePq     bool
	archiveUp     int
	retainArch    bool
}

func newServeCmd(g *globals) *cobra.Command {
	o := &serveOpts{lineLimit: 64 << 10, segment: 16 << 20, hotBytes: writer.DefaultHotBytes,
		maxBody: 256 << 20, maxDecomp: ingest.DefaultMaxDecompressed, writeMemory: ingest.DefaultMaxWriteMemory}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the line protocol over TCP (epoll) and HTTP into the database",
		Long: `serve accepts InfluxDB/QuestDB line protocol on a TCP listener (epoll event
loops, no goroutine per connection) and over HTTP (POST /write and
/api/v2/write), and feeds every table through one pinned writer goroutine.
A table is created from its first line. HTTP also serves GET /query,
/latest, /bars (OHLCV), /tail (new rows as Server-Sent Events), /metrics
(Prometheus), /settings (for QuestDB's clients), /health, and a web
console at / (tables, queries, a live candlestick chart). With --sql ADDR,
GET /sql passes SQL to the tickdb-sql server at ADDR (Postgres wire
protocol, --token as its password) and the console's Query panel takes
SQL; serve finds no SQL server by itself.

Both listeners bind 127.0.0.1 unless told otherwise. --token guards HTTP
only: the line-protocol TCP port takes no token, so with a token set serve
refuses to listen for TCP beyond loopback unless --ilp-insecure says the
network in front of it is trusted. One serve per database: a second one on
a --db that a live serve holds exits at once, naming its pid. SIGINT or
SIGTERM stop it gracefully: every accepted row is made durable before it
exits 0.

Timestamps: a row more than --max-future ahead of the server's clock is a
bad line (reason future), never stored, so one bad clock cannot make every
later real-time row late. A timestamp that reads as the first weeks of 1970
in ns but as now in seconds, ms or µs is a bad line (reason ts_unit) that
names the fix: precision=s|ms|us on HTTP, --ts-unit for the TCP listener's
lines; --allow-1970 stores such rows as given. A table that already holds a
row far ahead (written before this check, or with it off) is named in an
error at start, with the way out (docs/DESIGN.md, Ingestion).

A full disk refuses writes before storing them: HTTP gets 503 with
Retry-After, line-protocol lines wait (the connections are read no further
until there is room), reads go on, and /health says degraded; writes
resume by themselves once there is room.

An HTTP write is all or nothing: 204 once every row is durable; any other
answer stored nothing, so a client may always retry it. Its body is parsed
as it arrives (gzip too) and held as compact rows, about their stored size;
the limits, each answered with nothing stored: --max-body on the wire and
--max-body-decompressed (413); --max-write-memory for all write requests
together (503 with Retry-After: 1 after a second's wait; 413 for a request
that alone needs more); a body that brings less than 64 KiB (on the wire or
decompressed) in a --read-timeout is cut off (408), and so are headers
that take longer; a connection over --max-http-conns is answered 503 and
closed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.ilp, "ilp", "127.0.0.1:9009", `line-protocol TCP address ("off" to disable)`)
	f.StringVar(&o.http, "http", "127.0.0.1:9000", `HTTP address ("off" to disable)`)
	f.IntVar(&o.cpu, "cpu", -1, "pin the writer thread to this CPU (-1: not pinned)")
	f.StringVar(&o.token, "token", "", "require this token on HTTP (Authorization: Bearer or Token); the TCP port takes no token, so with one set serve refuses a --ilp address beyond loopback unless --ilp-insecure")
	f.StringVar(&o.sql, "sql", "", "address of a tickdb-sql server (Postgres wire protocol) that the console's Query panel sends SQL to; its password is --token (only this flag names one: serve looks for none)")
	f.BoolVar(&o.ilpInsecure, "ilp-insecure", false, "with --token, let the line-protocol TCP listener listen beyond loopback, open to anyone who reaches it")
	f.StringVar(&o.flush, "flush", "interval", "flush policy: interval, sync or none")
	f.DurationVar(&o.flushInterval, "flush-interval", time.Millisecond, "flush interval with --flush interval")
	f.DurationVar(&o.lateWindow, "late-window", ingest.DefaultLateWindow, "store a row up to this far behind its table's newest row as a late row (queries return it in ts order); 0: none")
	f.StringVar(&o.ooo, "out-of-order", "reject", "rows later than --late-window: reject (counted) or stamp (stored with the arrival time)")
	f.DurationVar(&o.maxFuture, "max-future", ingest.DefaultMaxFuture, "refuse rows more than this far ahead of the server's clock (reason future); 0: no limit")
	f.StringVar(&o.tsUnit, "ts-unit", "ns", "unit of the TCP listener's timestamps: s, ms, us or ns (HTTP takes precision=)")
	f.BoolVar(&o.allow1970, "allow-1970", false, "store timestamps that read as the first weeks of 1970 in ns but as now in s, ms or µs (else a bad line, reason ts_unit)")
	f.StringVar(&o.liveDir, "live-dir", "", "directory for the live segments, one sub-directory per table (default /dev/shm/tickdb)")
	f.IntVar(&o.maxConns, "max-conns", 4096, "line-protocol connection limit")
	f.DurationVar(&o.idle, "idle-timeout", 5*time.Minute, "close line-protocol connections, and HTTP connections between requests, idle this long")
	f.DurationVar(&o.readTimeout, "read-timeout", ingest.DefaultReadTimeout, "cut off an HTTP request whose headers take longer than this, or whose body brings less than 64 KiB in this long (408); responses are not cut")
	f.IntVar(&o.maxHTTPConns, "max-http-conns", 4096, "HTTP connection limit (a connection over it is answered 503 and closed)")
	f.Var(&o.maxBody, "max-body", "largest HTTP write body on the wire (413 over it)")
	f.Var(&o.maxDecomp, "max-body-decompressed", "largest HTTP write body once decompressed (413 over it)")
	f.Var(&o.writeMemory, "max-write-memory", "memory all HTTP write requests together may hold, about their rows' stored size (503 with Retry-After over it)")
	f.Var(&o.lineLimit, "line-limit", "longest line accepted (bytes, or with K/M)")
	f.IntVar(&o.loops, "loops", 2, "epoll event loops")
	f.IntVar(&o.maxStreams, "max-streams", ingest.DefaultMaxStreams, "GET /tail streams open at once (503 over it)")
	f.DurationVar(&o.streamTimeout, "stream-write-timeout", ingest.DefaultStreamWriteTimeout, "cut off a GET /tail client that takes longer than this to accept a batch of events")
	f.Var(&o.segment, "segment-size", "segment file size for new tables")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.DurationVar(&o.retainAge, "retain-age", 0, "at each segment roll, delete segments whose rows are all older than this before the table's last ts")
	f.Var(&o.retainBytes, "retain-bytes", "at each segment roll, delete the oldest segments beyond this many bytes per table")
	f.Var(&o.hotBytes, "hot-bytes", "shared memory per table for copies of its newest sealed, durable segments, read from memory instead of disk (0: none)")
	f.BoolVar(&o.compact, "compact", true, "compress sealed segments in the background, clustered by symbol (false: keep them raw until tickdb compact)")
	f.DurationVar(&o.compactAfter, "compact-after", 0, "compress a sealed segment once its rows are all older than this before the table's last ts (0: as soon as it is sealed and durable)")
	f.StringVar(&o.archive, "archive", "", "archive every compressed segment to s3://bucket/prefix as it is made, in the background (credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION; server: AWS_ENDPOINT_URL or --archive-endpoint)")
	f.StringVar(&o.archiveEP, "archive-endpoint", "", "S3 endpoint URL for --archive, e.g. http://127.0.0.1:7070 (default: AWS_ENDPOINT_URL, else AWS)")
	f.BoolVar(&o.archivePq, "archive-parquet", false, "with --archive, also write each segment's rows as Parquet under PREFIX/parquet/table=T/date=YYYY-MM-DD/")
	f.IntVar(&o.archiveUp, "archive-uploads", 2, "with --archive, segments uploaded at once")
	f.BoolVar(&o.retainArch, "retain-after-archive", true, "with --archive, --retain-age and --retain-bytes delete only segments the archive's manifest lists")
	f.IntVar(&o.flushWorkers, "flush-workers", writer.DefaultFlushers, "flush workers shared by every table: how many tables' durable writes may be in flight at once")
	return cmd
}

// compactOption is writer.Options.CompactAge for --compact and
// --compact-after.
func compactOption(on bool, after time.Duration) time.Duration {
	if !on {
		return -1
	}
	return after
}

// hotOption is writer.Options.HotBytes for a --hot-bytes value (0: none).
func hotOption(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

func runServe(cmd *cobra.Command, g *globals, o *serveOpts) error {
	if o.maxStreams <= 0 || o.streamTimeout <= 0 {
		return fmt.Errorf("--max-streams %d, --stream-write-timeout %v: want both positive", o.maxStreams, o.streamTimeout)
	}
	if o.readTimeout <= 0 || o.maxHTTPConns <= 0 {
		return fmt.Errorf("--read-timeout %v, --max-http-conns %d: want both positive", o.readTimeout, o.maxHTTPConns)
	}
	if o.retainAge < 0 || o.compactAfter < 0 {
		return fmt.Errorf("--retain-age %v, --compact-after %v: negative", o.retainAge, o.compactAfter)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	flush, err := writer.ParseFlushPolicy(o.flush)
	if err != nil {
		return fmt.Errorf("--flush: %w", err)
	}
	if o.maxFuture < 0 {
		return fmt.Errorf("--max-future %v: negative (0 turns the check off)", o.maxFuture)
	}
	tsUnit, err := ingest.ParseTsUnit(o.tsUnit)
	if err != nil {
		return fmt.Errorf("--ts-unit: %w", err)
	}
	var ooo writer.OutOfOrderPolicy
	switch o.ooo {
	case "reject":
		ooo = writer.OutOfOrderReject
	case "stamp":
		ooo = writer.OutOfOrderStamp
	default:
		return fmt.Errorf("--out-of-order %q: want reject or stamp", o.ooo)
	}
	arch, err := startArchive(cmd, g, o, log)
	if err != nil {
		return err
	}
	if arch != nil {
		defer arch.Close()
	}
	wopts := writer.Options{Flush: flush, FlushInterval: o.flushInterval, OutOfOrder: ooo, LateWindow: o.lateWindow, SegmentSize: int64(o.segment),
		RetainAge: o.retainAge, RetainBytes: int64(o.retainBytes), CompactAge: compactOption(o.compact, o.compactAfter), HotBytes: hotOption(int64(o.hotBytes))}
	if arch != nil && o.retainArch {
		wopts.RetainBelow = arch.RetainBelow
	}
	srv, err := ingest.Start(&ingest.Options{
		DB: g.db, ILPAddr: o.ilp, HTTPAddr: o.http, Loops: o.loops,
		PinCPU: o.cpu >= 0, CPU: o.cpu, Token: o.token, SQLAddr: o.sql, ILPInsecure: o.ilpInsecure,
		MaxConns: o.maxConns, IdleTimeout: o.idle, LineLimit: int(o.lineLimit),
		LiveRoot: o.liveDir, Logger: log, MaxStreams: o.maxStreams, StreamWriteTimeout: o.streamTimeout,
		ReadTimeout: o.readTimeout, MaxHTTPConns: o.maxHTTPConns, MaxBody: int64(o.maxBody),
		MaxDecompressed: int64(o.maxDecomp), MaxWriteMemory: int64(o.writeMemory),
		MaxFuture: maxFutureOption(o.maxFuture), TsUnit: tsUnit, Allow1970: o.allow1970,
		Group:  writer.GroupOptions{Flushers: o.flushWorkers},
		Writer: wopts, Archive: arch,
	})
	if err != nil {
		return err
	}
	if arch != nil {
		log.Info("tickdb serve: archiving", "to", arch.Location().String(), "retain_after_archive", o.retainArch)
	}
	log.Info("tickdb serve: started", "db", g.db, "ilp", addrString(srv.ILPAddr()), "http", addrString(srv.HTTPAddr()))
	<-cmd.Context().Done()
	log.Info("tickdb serve: stopping")
	err = srv.Close()
	stats := srv.Stats()
	names := make([]string, 0, len(stats))
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := stats[n]
		log.Info("tickdb serve: table", "table", n, "rows", st.Appended, "durable", st.Durable)
	}
	if err != nil {
		log.Error("tickdb serve: stopped with an error", "err", err)
		return err
	}
	log.Info("tickdb serve: stopped")
	return nil
}

// maxFutureOption is Options.MaxFuture for a --max-future value (0: off).
func maxFutureOption(d time.Duration) time.Duration {
	if d == 0 {
		return ingest.MaxFutureOff
	}
	return d
}

func addrString(a fmt.Stringer) string {
	if a == nil {
		return "off"
	}
	return a.String()
}

// startArchive starts serve's --archive: a wrong key or a missing bucket
// stops serve at once; a server that does not answer yet does not (the
// archive's lag grows, reported, and uploads start once it answers).
func startArchive(cmd *cobra.Command, g *globals, o *serveOpts, log *slog.Logger) (*archive.Archiver, error) {
	if o.archive == "" {
		if o.archiveEP != "" || o.archivePq {
			return nil, fmt.Errorf("--archive-endpoint and --archive-parquet need --archive s3://bucket/prefix")
		}
		return nil, nil
	}
	if !o.compact {
		return nil, fmt.Errorf("--archive uploads compressed segments: it needs --compact (on by default), not --compact=false")
	}
	if o.archiveUp < 1 {
		return nil, fmt.Errorf("--archive-uploads %d: want 1 or more", o.archiveUp)
	}
	c, err := archive.Dial(o.archive, archive.Config{Endpoint: o.archiveEP})
	if err != nil {
		return nil, fmt.Errorf("--archive: %w", err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	err = c.Check(ctx)
	cancel()
	switch {
	case errors.Is(err, archive.ErrDenied) || errors.Is(err, archive.ErrNoBucket):
		return nil, fmt.Errorf("--archive: %w", err)
	case err != nil:
		log.Warn("tickdb serve: the archive's server does not answer; archiving starts once it does", "to", o.archive, "err", err)
	}
	return archive.Start(c, g.db, &archive.Options{SyncOptions: archive.SyncOptions{Uploads: o.archiveUp, Parquet: o.archivePq},
		Logger: log, StatusFile: filepath.Join(g.db, archive.StatusName)}), nil
}
