//go:build linux

// Package scaletables is the many-tables benchmark of `tickdb bench
// tables`: a real `tickdb serve` process over a fresh database with its
// default flags, N tables of a few rows created over HTTP, then written
// in turn, one POST /write after another at a fixed offered rate, each
// answered 204 once its rows are durable; beside it the same writes into
// one table. For each it reports serve's OS threads, open files and
// resident memory with the tables idle, while they are written (the
// peaks) and idle again after, and the write latency (p50, p99, p99.9,
// max, from each write's intended start: a server that falls behind
// shows as latency, not as a lower rate) and the rows stored a second.
//
// It sits beside `tickdb bench scale` (many symbols in one table), a
// second workload of the same kind: one serve process per run, figures
// read from /proc/<pid>.
//
// # Concurrency
//
// Run runs its workloads one at a time; nothing here is shared.
package scaletables

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickdb/tickdb/internal/harness/child"
	"github.com/tickdb/tickdb/reader"
)

// Config configures Run; zero fields take the defaults.
type Config struct {
	// Binary is the tickdb executable run as serve (default: this one),
	// Role the child role it runs in (internal/harness/child; tests re-execute
	// their own binary as the CLI).
	Binary, Role string
	// Dir holds the databases (default: the temp directory), LiveRoot
	// the live segments (default: serve's, /dev/shm/tickdb). Each run's
	// directories are removed after it unless Keep.
	Dir, LiveRoot string
	Keep          bool
	// Tables are the runs, one serve each (default 1 and 1000).
	Tables []int
	// Rows is the rows each table gets when it is created (default 5).
	Rows int
	// Rate is the writes a second offered while the tables are written
	// in turn (default 1000: a thousand tables once a second each), for
	// Duration (default 20 s), each of RowsPerWrite rows (default 10),
	// sent by Clients concurrent HTTP clients (default 16).
	Rate         int
	Duration     time.Duration
	RowsPerWrite int
	Clients      int
	// ServeArgs are added to serve's command line.
	ServeArgs []string
	// Log, when set, gets a progress line per step.
	Log io.Writer
}

func (c *Config) defaults() {
	if len(c.Tables) == 0 {
		c.Tables = []int{1, 1000}
	}
	if c.Dir == "" {
		c.Dir = os.TempDir()
	}
	if c.Rows <= 0 {
		c.Rows = 5
	}
	if c.Rate <= 0 {
		c.Rate = 1000
	}
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
	if c.RowsPerWrite <= 0 {
		c.RowsPerWrite = 10
	}
	if c.Clients <= 0 {
		c.Clients = 16
	}
	if c.Role == "" {
		c.Role = "scale-tables-serve"
	}
}

// Proc is what serve holds: OS threads, open files, and resident memory
// from /proc/<pid>/status in bytes: RSS (VmRSS) is anonymous memory
// (Anon: heap, stacks, flush buffers), file pages mapped (File: index
// files, and the binary) and shared memory mapped (Shmem: live slots).
type Proc struct {
	Threads, Files         int
	RSS, Anon, File, Shmem int64
}

// max keeps the larger of each figure.
func (p *Proc) max(q Proc) {
	p.Threads, p.Files = max(p.Threads, q.Threads), max(p.Files, q.Files)
	p.RSS, p.Anon, p.File, p.Shmem = max(p.RSS, q.RSS), max(p.Anon, q.Anon), max(p.File, q.File), max(p.Shmem, q.Shmem)
}

// Result is one run's figures.
type Result struct {
	Tables int
	// Create is the time to create every table (Rows rows each, one
	// write a table, Clients at a time).
	Create time.Duration
	// Start is serve after its start, before any table; Idle once every
	// table is created and durable; Written the peaks while the tables
	// are written in turn; After once idle again.
	Start, Idle, Written, After Proc
	// The writes in turn: how many were sent and answered 204, how many
	// not (Errors, with the first error), over Elapsed; their latency
	// from each write's intended start, in ns.
	Writes, Errors int64
	FirstError     string
	Elapsed        time.Duration
	Rows           int64
	P50, P99, P999 time.Duration
	Max            time.Duration
	// Verified is the rows read back from every table after serve's
	// clean stop (all of them, or Run fails).
	Verified uint64
}

// RowsPerSec is the rows stored a second while written in turn.
func (r *Result) RowsPerSec() float64 { return float64(r.Rows) / r.Elapsed.Seconds() }

// WritesPerSec is the writes answered a second.
func (r *Result) WritesPerSec() float64 { return float64(r.Writes) / r.Elapsed.Seconds() }

// Run runs every Config.Tables count in turn.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	cfg.defaults()
	var out []Result
	for _, n := range cfg.Tables {
		r, err := runOne(ctx, &cfg, n)
		if err != nil {
			return out, fmt.Errorf("bench tables: %d tables: %w", n, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "bench tables: "+format+"\n", args...)
	}
}

func runOne(ctx context.Context, cfg *Config, n int) (Result, error) {
	res := Result{Tables: n}
	dir, err := os.MkdirTemp(cfg.Dir, "tickdb-bench-tables-")
	if err != nil {
		return res, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(dir)
	}
	db := filepath.Join(dir, "db")
	live := filepath.Join(dir, "live")
	if cfg.LiveRoot != "" {
		if live, err = os.MkdirTemp(cfg.LiveRoot, "tickdb-bench-tables-"); err != nil {
			return res, err
		}
		if !cfg.Keep {
			defer os.RemoveAll(live)
		}
	} else if _, err := os.Stat("/dev/shm"); err == nil {
		if live, err = os.MkdirTemp("/dev/shm", "tickdb-bench-tables-"); err != nil {
			return res, err
		}
		if !cfg.Keep {
			defer os.RemoveAll(live)
		}
	}
	s, err := startServe(cfg, db, live)
	if err != nil {
		return res, err
	}
	defer s.kill()
	if err := s.waitHealthy(30 * time.Second); err != nil {
		return res, err
	}
	if res.Start, err = readProc(s.c.Pid); err != nil {
		return res, err
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConns: cfg.Clients, MaxIdleConnsPerHost: cfg.Clients, IdleConnTimeout: time.Minute,
	}}
	defer client.CloseIdleConnections()
	url := "http://" + s.web + "/write"

	cfg.logf("%d tables: creating, %d rows each", n, cfg.Rows)
	t0 := time.Now()
	if err := createTables(ctx, client, url, cfg, n); err != nil {
		return res, err
	}
	res.Create = time.Since(t0)
	if res.Idle, err = settle(s.c.Pid); err != nil {
		return res, err
	}

	cfg.logf("%d tables: written in turn, %d writes/s of %d rows for %v", n, cfg.Rate, cfg.RowsPerWrite, cfg.Duration)
	stop := make(chan struct{})
	sampled := make(chan Proc)
	go func() { sampled <- sample(s.c.Pid, stop) }()
	h, err := writeInTurn(ctx, client, url, cfg, n, &res)
	close(stop)
	res.Written = <-sampled
	if err != nil {
		return res, err
	}
	res.P50 = time.Duration(h.ValueAtQuantile(50))
	res.P99 = time.Duration(h.ValueAtQuantile(99))
	res.P999 = time.Duration(h.ValueAtQuantile(99.9))
	res.Max = time.Duration(h.Max())
	if res.After, err = settle(s.c.Pid); err != nil {
		return res, err
	}
	client.CloseIdleConnections()

	cfg.logf("%d tables: stopping serve, reading every table back", n)
	if err := s.stop(time.Minute); err != nil {
		return res, err
	}
	want := uint64(n*cfg.Rows) + uint64(res.Writes)*uint64(cfg.RowsPerWrite)
	if res.Verified, err = countRows(db, n); err != nil {
		return res, err
	}
	if res.Verified != want {
		return res, fmt.Errorf("%d rows stored in the %d tables, %d answered 204", res.Verified, n, want)
	}
	return res, nil
}

// tableName is table i's name.
func tableName(i int) string { return "t" + strconv.Itoa(i) }

// body is a write of rows rows to table i, row k of it numbered from
// seq: line protocol without timestamps (serve stamps them, so a table's
// rows are never late whatever the order of the writes).
func body(b *bytes.Buffer, i, rows int, seq int64) {
	b.Reset()
	for k := range rows {
		v := seq + int64(k)
		fmt.Fprintf(b, "%s,sym=S%d price=%d.25,size=%di\n", tableName(i), v%8, 100+v%50, 1+v%100)
	}
}

// post sends one write and checks the 204.
func post(ctx context.Context, client *http.Client, url string, b []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("POST /write: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// createTables writes cfg.Rows rows to each of n tables, Clients at a
// time.
func createTables(ctx context.Context, client *http.Client, url string, cfg *Config, n int) error {
	next := make(chan int)
	errc := make(chan error, cfg.Clients)
	var wg sync.WaitGroup
	for range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b bytes.Buffer
			for i := range next {
				body(&b, i, cfg.Rows, 0)
				if err := post(ctx, client, url, b.Bytes()); err != nil {
					errc <- fmt.Errorf("create %s: %w", tableName(i), err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errc:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

// writeInTurn offers cfg.Rate writes a second for cfg.Duration, write k to
// table k mod n, each timed from its intended start.
func writeInTurn(ctx context.Context, client *http.Client, url string, cfg *Config, n int, res *Result) (*hdrhistogram.Histogram, error) {
	type write struct {
		k  int64
		at time.Time
	}
	total := int64(cfg.Duration.Seconds() * float64(cfg.Rate))
	every := time.Second / time.Duration(cfg.Rate)
	queue := make(chan write, 1<<16)
	hists := make([]*hdrhistogram.Histogram, cfg.Clients)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		h := hdrhistogram.New(1, int64(time.Minute), 3)
		hists[c] = h
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b bytes.Buffer
			for w := range queue {
				i := int(w.k % int64(n))
				// Row numbers: the table's created rows, then this
				// write's place among the table's writes.
				body(&b, i, cfg.RowsPerWrite, int64(cfg.Rows)+w.k/int64(n)*int64(cfg.RowsPerWrite))
				err := post(ctx, client, url, b.Bytes())
				d := time.Since(w.at)
				mu.Lock()
				if err != nil {
					res.Errors++
					if res.FirstError == "" {
						res.FirstError = err.Error()
					}
				} else {
					res.Writes++
					res.Rows += int64(cfg.RowsPerWrite)
				}
				mu.Unlock()
				_ = h.RecordValue(max(int64(d), 1))
			}
		}()
	}
	start := time.Now()
	for k := range total {
		at := start.Add(time.Duration(k) * every)
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		select {
		case queue <- write{k: k, at: at}:
		case <-ctx.Done():
			close(queue)
			wg.Wait()
			return nil, ctx.Err()
		}
	}
	close(queue)
	wg.Wait()
	res.Elapsed = time.Since(start)
	h := hists[0]
	for _, o := range hists[1:] {
		h.Merge(o)
	}
	if res.Errors > 0 {
		return h, fmt.Errorf("%d of %d writes failed, the first: %s", res.Errors, total, res.FirstError)
	}
	return h, nil
}

// countRows opens every table of db and adds up their rows (serve has
// stopped: they are all durable).
func countRows(db string, n int) (uint64, error) {
	var total uint64
	for i := range n {
		r, err := reader.Open(db, tableName(i), nil)
		if err != nil {
			return total, err
		}
		if r.Durable() != r.Len() {
			r.Close()
			return total, fmt.Errorf("%s: %d rows, %d durable after serve stopped", tableName(i), r.Len(), r.Durable())
		}
		total += r.Len()
		r.Close()
	}
	return total, nil
}

// serve is the `tickdb serve` child process.
type serve struct {
	c   *child.Child
	web string
	log *bytes.Buffer
	mu  sync.Mutex
}

func (s *serve) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log.Len() < 1<<20 {
		s.log.Write(p)
	}
	return len(p), nil
}

func (s *serve) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.log.Bytes()
	return string(b[max(0, len(b)-4096):])
}

func startServe(cfg *Config, db, live string) (*serve, error) {
	ilp, err := freeAddr()
	if err != nil {
		return nil, err
	}
	web, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--db", db, "--ilp", ilp, "--http", web, "--live-dir", live, "--log-level", "warn"}, cfg.ServeArgs...)
	s := &serve{web: web, log: &bytes.Buffer{}}
	s.c, err = child.Start(cfg.Role, &child.Options{Binary: cfg.Binary, Args: args, Stdout: s, Stderr: s})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// waitHealthy waits until GET /health answers.
func (s *serve) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get("http://" + s.web + "/health")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if s.c.Exited() {
			return fmt.Errorf("serve exited: %v\n%s", s.c.ExitErr(), s.logTail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("serve not answering on %s after %v: %w", s.web, timeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (s *serve) stop(timeout time.Duration) error {
	if err := s.c.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if err := s.c.Wait(timeout); err != nil {
		return fmt.Errorf("serve's stop: %w\n%s", err, s.logTail())
	}
	return nil
}

func (s *serve) kill() { s.c.Kill() }

// freeAddr is a 127.0.0.1 address with a port free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// readProc reads pid's threads, open files and resident memory.
func readProc(pid int) (Proc, error) {
	var p Proc
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "Threads":
			p.Threads = int(n)
		case "VmRSS":
			p.RSS = n << 10
		case "RssAnon":
			p.Anon = n << 10
		case "RssFile":
			p.File = n << 10
		case "RssShmem":
			p.Shmem = n << 10
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return p, err
	}
	p.Files = len(ents)
	return p, nil
}

// settle waits until pid's open files stop changing (its flush jobs close
// theirs once every row is durable: a second at most) and reads it.
func settle(pid int) (Proc, error) {
	var last Proc
	for i := range 50 {
		p, err := readProc(pid)
		if err != nil {
			return p, err
		}
		if i > 0 && p.Files == last.Files && p.Threads == last.Threads {
			return p, nil
		}
		last = p
		time.Sleep(100 * time.Millisecond)
	}
	return last, nil
}

// sample reads pid every 100 ms until stop, keeping the peaks.
func sample(pid int, stop <-chan struct{}) Proc {
	var peak Proc
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if p, err := readProc(pid); err == nil {
			peak.max(p)
		}
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}

// Print writes the results as a table.
func Print(w io.Writer, cfg Config, rs []Result) {
	cfg.defaults()
	fmt.Fprintf(w, "Many tables: tickdb serve (default flags); each table created with %d rows, then POST /write of %d rows (204 once durable), %d writes/s offered for %v, tables written in turn by %d clients\n\n",
		cfg.Rows, cfg.RowsPerWrite, cfg.Rate, cfg.Duration, cfg.Clients)
	fmt.Fprintf(w, "%8s %9s %17s %20s %26s %9s %9s %9s %9s %10s %10s\n",
		"tables", "create", "threads idle/wr", "open files idle/wr", "RSS MiB idle/written/after", "p50", "p99", "p99.9", "max", "writes/s", "rows/s")
	for _, r := range rs {
		fmt.Fprintf(w, "%8d %9s %17s %20s %26s %9s %9s %9s %9s %10.0f %10.0f\n",
			r.Tables, r.Create.Round(time.Millisecond),
			fmt.Sprintf("%d/%d", r.Idle.Threads, r.Written.Threads),
			fmt.Sprintf("%d/%d", r.Idle.Files, r.Written.Files),
			fmt.Sprintf("%.0f/%.0f/%.0f", mib(r.Idle.RSS), mib(r.Written.RSS), mib(r.After.RSS)),
			dur(r.P50), dur(r.P99), dur(r.P999), dur(r.Max), r.WritesPerSec(), r.RowsPerSec())
	}
	fmt.Fprintf(w, "\nResident memory by kind, MiB (anonymous / file pages mapped / shared memory), idle after creating and peak while written:\n")
	for _, r := range rs {
		fmt.Fprintf(w, "%8d tables: idle %.1f / %.1f / %.1f; written %.1f / %.1f / %.1f; serve at start: %d threads, %d files, %.1f MiB\n",
			r.Tables, mib(r.Idle.Anon), mib(r.Idle.File), mib(r.Idle.Shmem), mib(r.Written.Anon), mib(r.Written.File), mib(r.Written.Shmem),
			r.Start.Threads, r.Start.Files, mib(r.Start.RSS))
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// dur prints a latency in ms with two decimals.
func dur(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }
