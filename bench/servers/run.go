package servers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

// Config configures Run. Zero values give the defaults.
type Config struct {
	N     int // ticks in the data set (default 10,000,000)
	Batch int // rows per write request (default 100,000)
	// Reps is the queries of each kind asked while the servers run
	// (default 7); ColdReps the queries of each kind asked after a
	// restart, each on freshly restarted servers with their files
	// evicted (default Reps; negative: none).
	Reps, ColdReps int
	Dir            string // where the servers' directories go (default os.TempDir(): a disk)
	// TickDB is the tickdb binary; "" builds ./cmd/tickdb of the tree
	// the bench module replaces github.com/tickdb/tickdb with.
	TickDB string
	// ClickHouse is the clickhouse-server binary: "" finds Debian's
	// (running tickdb alone, and saying so, where it is not installed);
	// "off" runs tickdb alone.
	ClickHouse string
	// SettleTimeout bounds the wait for ClickHouse's merges after the
	// ingest (default 10 minutes).
	SettleTimeout time.Duration
	Log           io.Writer // progress lines (nil: none)
}

func (c *Config) withDefaults() Config {
	r := *c
	if r.N <= 0 {
		r.N = 10_000_000
	}
	if r.Batch <= 0 {
		r.Batch = 100_000
	}
	if r.Reps <= 0 {
		r.Reps = 7
	}
	switch {
	case r.ColdReps == 0:
		r.ColdReps = r.Reps
	case r.ColdReps < 0:
		r.ColdReps = 0
	}
	if r.Dir == "" {
		r.Dir = os.TempDir()
	}
	if r.SettleTimeout <= 0 {
		r.SettleTimeout = 10 * time.Minute
	}
	if r.Log == nil {
		r.Log = io.Discard
	}
	return r
}

// run is one Run's state.
type run struct {
	cfg     Config
	ctx     context.Context
	d       *suite.Data
	plan    *plan
	servers []server
	rep     *Report
	samples map[string][]float64 // "metric\x00system" → figures
	rows    map[string][2]int64  // "metric\x00system" → min, max rows of the answers
	buf     bytes.Buffer         // answers
	bars    map[int][]bar        // expected bars by symbol
	latest  []latest
}

// Run runs the server benchmark: it generates the data set, starts
// tickdb serve (and ClickHouse, when installed) on their own directories
// under cfg.Dir, feeds each every tick over HTTP in Batch-row requests
// (bodies built before the timing), measures disk use, waits for the
// servers' background work, asks every query of the plan while they run,
// then, for every query after a restart, stops both, evicts their files
// from the page cache, starts both and asks it; every answer is checked
// against the data (a wrong answer is an error). It stops the servers
// and removes their directories before it returns.
func Run(ctx context.Context, c Config) (rep *Report, err error) {
	cfg := c.withDefaults()
	if cfg.N < 100*suite.NumSymbols {
		return nil, fmt.Errorf("servers: %d rows: want at least %d", cfg.N, 100*suite.NumSymbols)
	}
	x := &run{cfg: cfg, ctx: ctx, samples: map[string][]float64{}, rows: map[string][2]int64{}, bars: map[int][]bar{}}
	x.rep = &Report{Machine: suite.Describe(), Started: time.Now(), N: cfg.N, Batch: cfg.Batch, Reps: cfg.Reps, ColdReps: cfg.ColdReps}
	x.rep.Load = append(x.rep.Load, "at the start "+loadAvg())
	x.logf("generating %s ticks", suite.Count(int64(cfg.N)))
	x.d = suite.Generate(cfg.N)
	if x.plan, err = newPlan(x.d, cfg.Reps, cfg.ColdReps); err != nil {
		return nil, err
	}
	x.latest = expectLatest(x.d)

	base, err := os.MkdirTemp(cfg.Dir, "tickdb-servers-")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(base)) }()
	if err := x.setUp(base); err != nil {
		return nil, err
	}
	defer func() {
		err = errors.Join(err, x.stopAll())
		for _, s := range x.servers {
			s.client().CloseIdleConnections()
		}
	}()
	if err := x.measure(); err != nil {
		return nil, err
	}
	x.rep.Load = append(x.rep.Load, "at the end "+loadAvg())
	x.rep.Took = time.Since(x.rep.Started)
	x.results()
	return x.rep, nil
}

// setUp builds or finds the binaries and prepares the servers.
func (x *run) setUp(base string) error {
	bin := x.cfg.TickDB
	if bin == "" {
		x.logf("building tickdb")
		var err error
		if bin, err = buildTickDB(x.ctx, base); err != nil {
			return err
		}
	}
	t, err := newTickDB(bin, filepath.Join(base, "tickdb"))
	if err != nil {
		return err
	}
	x.servers = append(x.servers, t)
	x.rep.TickDB = strings.Join(t.p.argv[1:], " ") + " (every other flag at its default)"
	chBin := x.cfg.ClickHouse
	switch {
	case chBin == "off":
		x.rep.ClickHouse = "not run (--clickhouse off)"
		x.logf("ClickHouse off: running tickdb alone")
		return nil
	case chBin == "":
		if chBin = FindClickHouse(); chBin == "" {
			x.rep.ClickHouse = "not run: clickhouse-server is not installed (Debian: apt-get install clickhouse-server clickhouse-client)"
			x.logf("clickhouse-server is not installed: running tickdb alone (Debian: apt-get install -y --no-install-recommends clickhouse-server clickhouse-client)")
			return nil
		}
	}
	ch, err := newClickHouse(chBin, filepath.Join(base, "clickhouse"), x.cfg.SettleTimeout)
	if err != nil {
		return err
	}
	x.servers = append(x.servers, ch)
	return nil
}

// buildTickDB builds ./cmd/tickdb of the main module that this module's
// go.mod replaces github.com/tickdb/tickdb with (go list -m, run in the
// working directory, which must be in the bench module) into dir.
func buildTickDB(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/tickdb/tickdb").Output()
	root := strings.TrimSpace(string(out))
	if err != nil || root == "" {
		return "", fmt.Errorf("servers: finding tickdb's source (go list -m github.com/tickdb/tickdb in the bench module): %v; or pass a tickdb binary (--tickdb)", err)
	}
	bin := filepath.Join(dir, "bin", "tickdb")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tickdb")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("servers: go build ./cmd/tickdb in %s: %w: %s", root, err, b)
	}
	return bin, nil
}

// measure is the protocol (Run's doc).
func (x *run) measure() error {
	if err := x.startAll(false); err != nil {
		return err
	}
	for _, s := range x.servers {
		if ch, ok := s.(*clickhouseServer); ok {
			x.rep.ClickHouse = ch.version + " (Debian's clickhouse-server), MergeTree PARTITION BY day ORDER BY (sym, ts), fed CSV"
		}
	}
	for _, s := range x.servers {
		if err := x.ingest(s); err != nil {
			return fmt.Errorf("%s: ingest: %w", s.name(), err)
		}
	}
	x.rep.Load = append(x.rep.Load, "after the ingest "+loadAvg())
	for _, s := range x.servers {
		note, err := s.settle(x.ctx)
		if err != nil {
			return fmt.Errorf("%s: settle: %w", s.name(), err)
		}
		x.logf("%s settled: %s", s.name(), note)
		if err := x.disk(MDiskSettled, s); err != nil {
			return err
		}
		if r := x.rep.Find(MDiskSettled, s.name()); r.Note != "" {
			note += "; " + r.Note
		}
		x.notef(MDiskSettled, s.name(), "running; %s", note)
	}
	for k := range numKinds {
		x.logf("%d %s queries on the running servers", len(x.plan.running[k]), k)
		for i, q := range x.plan.running[k] {
			for _, s := range x.order(i) {
				if err := x.ask(s, q, false); err != nil {
					return err
				}
			}
		}
	}
	if err := x.stopAll(); err != nil {
		return err
	}
	for _, s := range x.servers {
		if err := x.disk(MDiskStopped, s); err != nil {
			return err
		}
	}
	for k := range numKinds {
		if len(x.plan.cold[k]) > 0 {
			x.logf("%d %s queries, each after a restart with the files evicted", len(x.plan.cold[k]), k)
		}
		for i, q := range x.plan.cold[k] {
			if err := x.startAll(true); err != nil {
				return err
			}
			for _, s := range x.order(i) {
				if err := x.ask(s, q, true); err != nil {
					return err
				}
			}
			if err := x.stopAll(); err != nil {
				return err
			}
		}
	}
	return nil
}

// order is the servers in the order the i-th repetition asks them: turn
// about, so that neither always goes first.
func (x *run) order(i int) []server {
	ss := append([]server(nil), x.servers...)
	if i%2 == 1 {
		for a, b := 0, len(ss)-1; a < b; a, b = a+1, b-1 {
			ss[a], ss[b] = ss[b], ss[a]
		}
	}
	return ss
}

// startAll starts every server, side by side. After the first start
// (restart), each server's files are evicted from the page cache first
// and the time until it answered is recorded.
func (x *run) startAll(restart bool) error {
	var wg sync.WaitGroup
	errs := make([]error, len(x.servers))
	took := make([]time.Duration, len(x.servers))
	for i, s := range x.servers {
		if restart {
			if err := suite.Evict(s.dataDir()); err != nil {
				return fmt.Errorf("%s: %w", s.name(), err)
			}
		}
		wg.Go(func() { took[i], errs[i] = s.start(x.ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, s := range x.servers {
		if restart {
			x.sample(MStart, s.name(), "ns", true, float64(took[i]))
			if b := s.proc().readBytes(); b >= 0 {
				x.sample(MStartBytes, s.name(), suite.UnitBytes, true, float64(b))
			}
		} else {
			x.logf("%s serving (pid %d) after %v", s.name(), s.proc().pid(), took[i].Round(time.Millisecond))
		}
	}
	return nil
}

// stopAll stops every running server, side by side.
func (x *run) stopAll() error {
	var wg sync.WaitGroup
	errs := make([]error, len(x.servers))
	for i, s := range x.servers {
		// Close the keep-alive connection first: ClickHouse waits for its
		// clients' connections (keep_alive_timeout, 3 s) as it stops.
		s.client().CloseIdleConnections()
		wg.Go(func() { errs[i] = s.proc().stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ingest feeds s every tick: the bodies are built first (timed apart),
// then sent one request at a time until the last is acknowledged.
func (x *run) ingest(s server) error {
	n, batch := len(x.d.Ticks), x.cfg.Batch
	t0 := time.Now()
	bodies := make([][]byte, 0, (n+batch-1)/batch)
	size := 0
	for i := 0; i < n; i += batch {
		b := s.appendBody(make([]byte, 0, size+size/8), x.d.Ticks[i:min(i+batch, n)], x.d.Symbols)
		size = len(b)
		bodies = append(bodies, b)
	}
	x.sample(MFormat, s.name(), "rows/s", false, float64(n)/time.Since(t0).Seconds())
	var total int64
	for _, b := range bodies {
		total += int64(len(b))
	}
	x.logf("ingesting %s rows into %s (pid %d): %d requests, %.0f MB", suite.Count(int64(n)), s.name(), s.proc().pid(), len(bodies), float64(total)/1e6)

	t, isTickDB := s.(*tickdbServer)
	var apply0 applyStats
	if isTickDB {
		var err error
		if apply0, err = t.applyStats(x.ctx); err != nil {
			return err
		}
	}
	cpu0 := s.proc().cpu()
	t1 := time.Now()
	for _, b := range bodies {
		r0 := time.Now()
		if err := s.write(x.ctx, b); err != nil {
			return err
		}
		x.sample(MWriteReq, s.name(), "ns", true, float64(time.Since(r0)))
	}
	took := time.Since(t1)
	cpu := s.proc().cpu() - cpu0
	if isTickDB {
		apply, err := t.applyStats(x.ctx)
		if err != nil {
			return err
		}
		if n := apply.count - apply0.count; n > 0 {
			x.sample(MWriteApply, s.name(), "ns", true, float64(apply.sum-apply0.sum)/float64(n))
			x.notef(MWriteApply, s.name(), "mean over %.0f requests (tickdb_http_write_apply_seconds)", n)
		}
	}
	bodies = nil
	debug.FreeOSMemory() // hand the bodies' memory back before the next server's turn

	x.sample(MIngest, s.name(), "rows/s", false, float64(n)/took.Seconds())
	ack := "200: written as a new part, not fsynced"
	if isTickDB {
		ack = "204: every row durable"
	}
	x.notef(MIngest, s.name(), "%v for %d requests of %s rows, %.0f B/row on the wire; acknowledged with %s", took.Round(time.Millisecond),
		(n+batch-1)/batch, suite.Count(int64(batch)), float64(total)/float64(n), ack)
	if cpu > 0 {
		x.sample(MIngestCPU, s.name(), "ns/row", true, float64(cpu)/float64(n))
		x.notef(MIngestCPU, s.name(), "%v of CPU (every thread of the server) over %v", cpu.Round(time.Millisecond), took.Round(time.Millisecond))
	}
	x.logf("%s: %s rows/s over HTTP (%v), server CPU %v", s.name(), suite.Num(float64(n)/took.Seconds()), took.Round(time.Millisecond), cpu.Round(time.Millisecond))
	if err := x.disk(MDiskIngest, s); err != nil {
		return err
	}
	if isTickDB {
		_, shm, err := t.stat(x.ctx)
		if err != nil {
			return err
		}
		x.sample(MShmIngest, s.name(), "B/tick", true, float64(shm)/float64(n))
		x.notef(MShmIngest, s.name(), "the live and hot segments in /dev/shm (tickdb stat: live_bytes + hot_bytes), on top of the disk")
	}
	got, err := s.rows(x.ctx)
	if err != nil {
		return err
	}
	if got != int64(n) {
		return fmt.Errorf("%d rows in the table after the ingest, want %d", got, n)
	}
	return nil
}

// disk records the bytes per tick allocated to s's table: all of its
// files right after the ingest, what lasts after that (ClickHouse keeps
// the parts its merges replaced for 8 minutes; the note gives both).
func (x *run) disk(metric string, s server) error {
	all, lasting, err := s.disk(x.ctx)
	if err != nil {
		return fmt.Errorf("%s: disk: %w", s.name(), err)
	}
	n := float64(len(x.d.Ticks))
	if metric == MDiskIngest {
		x.sample(metric, s.name(), "B/tick", true, float64(all)/n)
		return nil
	}
	x.sample(metric, s.name(), "B/tick", true, float64(lasting)/n)
	if all != lasting {
		x.notef(metric, s.name(), "without the parts its merges replaced, which it deletes 8 minutes later (old_parts_lifetime): %.1f B/tick with them", float64(all)/n)
	}
	return nil
}

// ask times q on s (until the whole answer is read) and checks the
// answer.
func (x *run) ask(s server, q query, cold bool) error {
	req, err := http.NewRequestWithContext(x.ctx, http.MethodGet, s.url(q, x.d.Symbols), nil)
	if err != nil {
		return err
	}
	rb := s.proc().readBytes()
	t0 := time.Now()
	err = send(s.client(), req, http.StatusOK, &x.buf)
	took := time.Since(t0)
	if rb1 := s.proc().readBytes(); cold && rb >= 0 && rb1 >= 0 {
		x.sample(bytesMetric(q.kind), s.name(), suite.UnitBytes, true, float64(rb1-rb))
	}
	if err != nil {
		return fmt.Errorf("%s: %s: %w", s.name(), q.kind, err)
	}
	var rows int64
	switch q.kind {
	case kWindow, kScan:
		rows, err = checkRows(x.buf.Bytes(), x.d.Symbols[q.sym], q.want)
	case kBars:
		want, ok := x.bars[q.sym]
		if !ok {
			want = expectBars(x.d, q.sym)
			x.bars[q.sym] = want
		}
		rows, err = checkBars(x.buf.Bytes(), want)
	case kLatest:
		rows, err = checkLatest(x.buf.Bytes(), x.d.Symbols, x.latest)
	}
	if err != nil {
		return fmt.Errorf("%s: wrong answer to %s of %s: %w", s.name(), q.kind, symName(x.d, q.sym), err)
	}
	m := queryMetric(q.kind, cold)
	x.sample(m, s.name(), "ns", true, float64(took))
	key := m + "\x00" + s.name()
	r, seen := x.rows[key]
	if !seen {
		r = [2]int64{rows, rows}
	}
	x.rows[key] = [2]int64{min(r[0], rows), max(r[1], rows)}
	return nil
}

func symName(d *suite.Data, sym int) string {
	if sym == suite.AllSymbols {
		return "every symbol"
	}
	return d.Symbols[sym]
}

func (x *run) logf(format string, args ...any) {
	fmt.Fprintf(x.cfg.Log, "servers: "+format+"\n", args...)
}

// loadAvg is /proc/loadavg's 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
