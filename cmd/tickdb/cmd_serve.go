//go:build linux

package main

import (
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/writer"
)

type serveOpts struct {
	ilp, http     string
	cpu           int
	token         string
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
	hotBytes      byteSizeZero
	maxStreams    int
	streamTimeout time.Duration
}

func newServeCmd(g *globals) *cobra.Command {
	o := &serveOpts{lineLimit: 64 << 10, segment: 64 << 20, hotBytes: writer.DefaultHotBytes}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the line protocol over TCP (epoll) and HTTP into the database",
		Long: `serve accepts InfluxDB/QuestDB line protocol on a TCP listener (epoll event
loops, no goroutine per connection) and over HTTP (POST /write and
/api/v2/write), and feeds every table through one pinned writer goroutine.
A table is created from its first line. HTTP also serves GET /query,
/latest, /bars (OHLCV), /tail (new rows as Server-Sent Events), /metrics
(Prometheus), /settings (for QuestDB's clients), /health, and a web
console at / (tables, queries, a live candlestick chart).

A full disk refuses writes before storing them: HTTP gets 503 with
Retry-After, line-protocol lines wait (the connections are read no further
until there is room), reads go on, and /health says degraded; writes
resume by themselves once there is room.

Both listeners bind 127.0.0.1 unless told otherwise. SIGINT or SIGTERM stop
it gracefully: every accepted row is made durable before it exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.ilp, "ilp", "127.0.0.1:9009", `line-protocol TCP address ("off" to disable)`)
	f.StringVar(&o.http, "http", "127.0.0.1:9000", `HTTP address ("off" to disable)`)
	f.IntVar(&o.cpu, "cpu", -1, "pin the writer thread to this CPU (-1: not pinned)")
	f.StringVar(&o.token, "token", "", "require this token on HTTP (Authorization: Bearer or Token)")
	f.StringVar(&o.flush, "flush", "interval", "flush policy: interval, sync or none")
	f.DurationVar(&o.flushInterval, "flush-interval", time.Millisecond, "flush interval with --flush interval")
	f.DurationVar(&o.lateWindow, "late-window", ingest.DefaultLateWindow, "store a row up to this far behind its table's newest row as a late row (queries return it in ts order); 0: none")
	f.StringVar(&o.ooo, "out-of-order", "reject", "rows later than --late-window: reject (counted) or stamp (stored with the arrival time)")
	f.StringVar(&o.liveDir, "live-dir", "", "directory for the live segments, one sub-directory per table (default /dev/shm/tickdb)")
	f.IntVar(&o.maxConns, "max-conns", 4096, "line-protocol connection limit")
	f.DurationVar(&o.idle, "idle-timeout", 5*time.Minute, "close line-protocol connections idle this long")
	f.Var(&o.lineLimit, "line-limit", "longest line accepted (bytes, or with K/M)")
	f.IntVar(&o.loops, "loops", 2, "epoll event loops")
	f.IntVar(&o.maxStreams, "max-streams", ingest.DefaultMaxStreams, "GET /tail streams open at once (503 over it)")
	f.DurationVar(&o.streamTimeout, "stream-write-timeout", ingest.DefaultStreamWriteTimeout, "cut off a GET /tail client that takes longer than this to accept a batch of events")
	f.Var(&o.segment, "segment-size", "segment file size for new tables")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.DurationVar(&o.retainAge, "retain-age", 0, "at each segment roll, delete segments whose rows are all older than this before the table's last ts")
	f.Var(&o.retainBytes, "retain-bytes", "at each segment roll, delete the oldest segments beyond this many bytes per table")
	f.Var(&o.hotBytes, "hot-bytes", "shared memory per table for copies of its newest sealed, durable segments, read from memory instead of disk (0: none)")
	f.DurationVar(&o.compactAfter, "compact-after", 0, "compress sealed segments whose rows are all older than this before the table's last ts (in the background)")
	return cmd
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
	var ooo writer.OutOfOrderPolicy
	switch o.ooo {
	case "reject":
		ooo = writer.OutOfOrderReject
	case "stamp":
		ooo = writer.OutOfOrderStamp
	default:
		return fmt.Errorf("--out-of-order %q: want reject or stamp", o.ooo)
	}
	srv, err := ingest.Start(&ingest.Options{
		DB: g.db, ILPAddr: o.ilp, HTTPAddr: o.http, Loops: o.loops,
		PinCPU: o.cpu >= 0, CPU: o.cpu, Token: o.token,
		MaxConns: o.maxConns, IdleTimeout: o.idle, LineLimit: int(o.lineLimit),
		LiveRoot: o.liveDir, Logger: log, MaxStreams: o.maxStreams, StreamWriteTimeout: o.streamTimeout,
		Writer: writer.Options{Flush: flush, FlushInterval: o.flushInterval, OutOfOrder: ooo, LateWindow: o.lateWindow, SegmentSize: int64(o.segment),
			RetainAge: o.retainAge, RetainBytes: int64(o.retainBytes), CompactAge: o.compactAfter, HotBytes: hotOption(int64(o.hotBytes))},
	})
	if err != nil {
		return err
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

func addrString(a fmt.Stringer) string {
	if a == nil {
		return "off"
	}
	return a.String()
}
