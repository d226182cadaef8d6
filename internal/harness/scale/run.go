//go:build linux

package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/loadgen"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// Config configures Run. Zero values give the defaults.
type Config struct {
	// Binary is the tickdb executable run as serve (default: this one).
	Binary string
	// Dir holds the databases (default: the temp directory; on disk,
	// since the figures include bytes on disk). Each run's database is
	// removed after it.
	Dir string
	// LiveRoot holds the live segments (default /dev/shm, or Dir where
	// there is none); each run's directory is removed after it.
	LiveRoot string
	// Workloads are run in order, each against a fresh serve.
	Workloads []Workload
	// Conns is the line-protocol connections the client sends over
	// (default 4).
	Conns int
	// ServeArgs are added to serve's command line (default flags when
	// empty).
	ServeArgs []string
	// Keep keeps each run's database (for a look afterwards).
	Keep bool
	// Log, when set, gets a progress line per step.
	Log io.Writer
}

// Result is one workload's figures.
type Result struct {
	Workload Workload
	// Rows stored (every row of the workload, checked).
	Rows uint64
	// Ingest through serve's TCP listener, from the first byte sent to
	// the last row visible to a reader: all rows, the rows naming a new
	// symbol (the first Symbols rows) and the rest.
	Ingest, IngestNew, IngestKnown Rate
	// Disk is the table's bytes on disk (allocated blocks) after serve's
	// clean stop, in all and by file kind; DiskOpen while serve ran.
	Disk     Files
	DiskOpen int64
	// Stop is serve's SIGTERM to exit after the ingest; Restart its
	// start to the first row written after it visible to a reader
	// (serve opens every table at start), Listen its start to its
	// line-protocol port accepting connections.
	Stop, Restart, Listen time.Duration
	// Serve's memory: the peaks while ingesting (VmHWM included), and
	// after the restart once it accepted a write.
	Mem, MemRestart Mem
	// Latest through GET /latest: one symbol, warm (median of the
	// repetitions after the first, which is First); every symbol, warm
	// (the better of two after the first, which is AllFirst), with the
	// rows it returned.
	LatestOne, LatestOneFirst, LatestAll, LatestAllFirst time.Duration
	LatestAllRows                                        int64
	// LatestOneIdle is LatestOne asked of the restarted serve, idle
	// (after an ingest, serve goes on building hot copies of the sealed
	// segments for a while, and the queries above share its cores).
	LatestOneIdle time.Duration
	// The same in this process over an open reader (the library's
	// warm figure): one symbol (median), every symbol (the second time;
	// the first, which sorts the names once, is LibAllFirst).
	LibOne, LibAll, LibAllFirst time.Duration
}

// Rate is rows over a time.
type Rate struct {
	Rows uint64
	Time time.Duration
}

// PerSec is the rate in rows per second.
func (r Rate) PerSec() float64 {
	if r.Time <= 0 {
		return 0
	}
	return float64(r.Rows) / r.Time.Seconds()
}

// Files is a table's bytes on disk by file kind.
type Files struct {
	Total, Segments, Post, Syms, TimeIdx, Other int64
}

// Run runs every workload of cfg in turn, each against a serve of its
// own over a fresh database, and returns their results.
func Run(cfg Config) ([]Result, error) {
	if cfg.Binary == "" {
		var err error
		if cfg.Binary, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if cfg.Dir == "" {
		cfg.Dir = os.TempDir()
	}
	if cfg.LiveRoot == "" {
		cfg.LiveRoot = "/dev/shm"
		if st, err := os.Stat(cfg.LiveRoot); err != nil || !st.IsDir() {
			cfg.LiveRoot = cfg.Dir
		}
	}
	if cfg.Conns <= 0 {
		cfg.Conns = 4
	}
	var out []Result
	for _, w := range cfg.Workloads {
		r, err := runOne(&cfg, w)
		if err != nil {
			return out, fmt.Errorf("scale: %s: %w", w.Name(), err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (cfg *Config) logf(f string, args ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "%s "+f+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

func runOne(cfg *Config, w Workload) (res Result, err error) {
	res.Workload = w
	if w.Table == "" {
		w.Table = "opt"
		res.Workload.Table = w.Table
	}
	db, err := os.MkdirTemp(cfg.Dir, "tickdb-scale-*")
	if err != nil {
		return res, err
	}
	live, err := os.MkdirTemp(cfg.LiveRoot, "tickdb-scale-live-*")
	if err != nil {
		os.RemoveAll(db)
		return res, err
	}
	defer func() {
		os.RemoveAll(live)
		if !cfg.Keep {
			os.RemoveAll(db)
		} else {
			cfg.logf("kept %s", db)
		}
	}()

	cfg.logf("%s: encoding %d rows", w.Name(), w.Rows)
	plan := w.Plan()
	nNew := min(w.Symbols, len(plan))
	newLines, err := w.Lines(plan[:nNew])
	if err != nil {
		return res, err
	}
	knownLines, err := w.Lines(plan[nNew:])
	if err != nil {
		return res, err
	}
	// The name of the busiest symbol for the one-symbol queries: the
	// last row's (in the Zipf mix, most likely a busy one).
	probe := string(OptionSymbol(nil, int(plan[len(plan)-1])))
	plan = nil

	s, err := startServe(cfg.Binary, db, live, cfg.ServeArgs)
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			s.Kill()
		}
	}()
	if err = s.waitListening(time.Minute); err != nil {
		return res, err
	}

	// Ingest: the rows naming new symbols, then the others, each phase
	// timed to its last row visible.
	var rd *reader.Reader
	defer func() {
		if rd != nil {
			rd.Close()
		}
	}()
	cfg.logf("%s: ingest %d rows naming new symbols", w.Name(), nNew)
	if res.IngestNew, err = send(cfg, s, db, w.Table, &rd, newLines, uint64(nNew)); err != nil {
		return res, err
	}
	cfg.logf("%s: %.0f rows/s; ingest %d more rows", w.Name(), res.IngestNew.PerSec(), len(plan))
	if res.IngestKnown, err = send(cfg, s, db, w.Table, &rd, knownLines, uint64(w.Rows)); err != nil {
		return res, err
	}
	newLines, knownLines = nil, nil
	res.Ingest = Rate{Rows: res.IngestNew.Rows + res.IngestKnown.Rows, Time: res.IngestNew.Time + res.IngestKnown.Time}
	res.Rows = rd.Len()
	res.Mem = s.Peak()
	cfg.logf("%s: %.0f rows/s; serve RSS peak %d MiB", w.Name(), res.IngestKnown.PerSec(), res.Mem.RSS>>20)
	if res.DiskOpen, err = du(filepath.Join(db, w.Table)); err != nil {
		return res, err
	}

	// Latest, over HTTP and in process.
	if err = latest(cfg, s, w, &res, rd, probe); err != nil {
		return res, err
	}

	// Stop, restart, a write.
	if res.Stop, err = s.Stop(5 * time.Minute); err != nil {
		return res, err
	}
	if res.Disk, err = diskFiles(filepath.Join(db, w.Table)); err != nil {
		return res, err
	}
	cfg.logf("%s: stopped in %v; %d MiB on disk; restarting", w.Name(), res.Stop, res.Disk.Total>>20)
	s, err = startServe(cfg.Binary, db, live, cfg.ServeArgs)
	if err != nil {
		return res, err
	}
	if err = s.waitListening(5 * time.Minute); err != nil {
		return res, err
	}
	res.Listen = time.Since(s.started)
	line := []byte(w.Table + ",sym=" + probe + " price=1.0,size=1i\n")
	if err = writeOne(s, rd, line, res.Rows+1, 5*time.Minute); err != nil {
		return res, err
	}
	res.Restart = time.Since(s.started)
	res.MemRestart, _ = s.Now()
	if res.LatestOneIdle, _, err = latestOne(s, w, probe); err != nil {
		return res, err
	}
	cfg.logf("%s: restart to a write visible %v (listening after %v)", w.Name(), res.Restart, res.Listen)
	if _, err = s.Stop(5 * time.Minute); err != nil {
		return res, err
	}
	return res, nil
}

// send writes lines over cfg.Conns connections and waits until the
// table's published count reaches want.
func send(cfg *Config, s *serve, db, table string, rd **reader.Reader, lines []byte, want uint64) (Rate, error) {
	have := uint64(0)
	if *rd != nil {
		have = (*rd).Len()
	}
	n := uint64(loadgen.Lines(lines))
	t0 := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- loadgen.Send(s.ilp, loadgen.Split(lines, cfg.Conns), 256<<10) }()
	if err := waitRows(s, db, table, rd, want, 30*time.Minute); err != nil {
		return Rate{}, err
	}
	el := time.Since(t0)
	if err := <-errc; err != nil {
		return Rate{}, err
	}
	if got := (*rd).Len(); got != have+n || got != want {
		return Rate{}, fmt.Errorf("table has %d rows after sending %d to %d, want %d", got, n, have, want)
	}
	return Rate{Rows: n, Time: el}, nil
}

// waitRows waits until table's published count reaches want, opening
// *rd once the table exists.
func waitRows(s *serve, db, table string, rd **reader.Reader, want uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if *rd == nil && reader.Exists(db, table) {
			r, err := reader.Open(db, table, nil)
			if err != nil {
				return err
			}
			*rd = r
		}
		if *rd != nil && (*rd).Len() >= want {
			return nil
		}
		if s.c.Exited() {
			return fmt.Errorf("serve exited: %v\n%s", s.c.ExitErr(), s.Log())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d rows not visible after %v\n%s", want, timeout, s.Log())
		}
		time.Sleep(time.Millisecond)
	}
}

// writeOne sends line until a reader sees the table reach want rows: serve
// may listen before its tables are open, and a line it could not store
// yet is sent again.
func writeOne(s *serve, rd *reader.Reader, line []byte, want uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c, err := net.DialTimeout("tcp", s.ilp, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write(line); err != nil {
		return err
	}
	for rd.Len() < want {
		if s.c.Exited() {
			return fmt.Errorf("serve exited: %v\n%s", s.c.ExitErr(), s.Log())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the row written after the restart is not visible after %v\n%s", timeout, s.Log())
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// latestReps is how many times the one-symbol latest is asked.
const latestReps = 21

// latest times GET /latest for one symbol and for all, and the same
// through the library over an open reader.
func latest(cfg *Config, s *serve, w Workload, res *Result, rd *reader.Reader, probe string) error {
	var err error
	if res.LatestOne, res.LatestOneFirst, err = latestOne(s, w, probe); err != nil {
		return err
	}
	for i := range 3 {
		t0 := time.Now()
		n, err := get("http://" + s.web + "/latest?format=csv&table=" + w.Table)
		if err != nil {
			return err
		}
		el := time.Since(t0)
		if n != int64(w.Symbols) {
			return fmt.Errorf("GET /latest: %d rows, want one for each of %d symbols", n, w.Symbols)
		}
		res.LatestAllRows = n
		switch {
		case i == 0:
			res.LatestAllFirst = el
		case i == 1 || el < res.LatestAll:
			res.LatestAll = el
		}
	}
	cfg.logf("%s: latest over HTTP: one %v (first %v), all %v (first %v)", w.Name(), res.LatestOne, res.LatestOneFirst, res.LatestAll, res.LatestAllFirst)

	// In process, over the reader open since the ingest.
	id, ok := rd.SymbolID([]byte(probe))
	if !ok {
		return fmt.Errorf("reader: no symbol %s", probe)
	}
	row := rd.Schema().NewRow()
	var times []time.Duration
	for range latestReps {
		t0 := time.Now()
		if _, ok, err := rd.LastSym(id, math.MaxInt64, row); err != nil || !ok {
			return fmt.Errorf("reader.LastSym(%s): %v, %v", probe, ok, err)
		}
		times = append(times, time.Since(t0))
	}
	res.LibOne = median(times)
	for i := range 2 {
		t0 := time.Now()
		nl, err := query.Latest(context.Background(), rd, query.LatestQuery{Table: w.Table}, func(store.Row) error { return nil })
		if err != nil {
			return err
		}
		if i == 0 {
			res.LibAllFirst = time.Since(t0)
		} else {
			res.LibAll = time.Since(t0)
		}
		if nl != int64(w.Symbols) {
			return fmt.Errorf("query.Latest: %d rows, want %d", nl, w.Symbols)
		}
	}
	cfg.logf("%s: latest in process: one %v, all %v", w.Name(), res.LibOne, res.LibAll)
	return nil
}

// latestOne asks GET /latest for symbol probe latestReps times: the
// median of all but the first, and the first.
func latestOne(s *serve, w Workload, probe string) (warm, first time.Duration, err error) {
	one := "http://" + s.web + "/latest?format=csv&table=" + w.Table + "&sym=" + url.QueryEscape(probe)
	var times []time.Duration
	for i := range latestReps {
		t0 := time.Now()
		n, err := get(one)
		if err != nil {
			return 0, 0, err
		}
		el := time.Since(t0)
		if n != 1 {
			return 0, 0, fmt.Errorf("GET /latest for %s: %d rows, want 1", probe, n)
		}
		if i == 0 {
			first = el
		} else {
			times = append(times, el)
		}
	}
	return median(times), first, nil
}

// get reads url's body and counts its lines past the CSV header.
func get(u string) (int64, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("GET %s: %s: %s", u, resp.Status, b)
	}
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	var n int64
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			n++
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return 0, err
		}
	}
	return n - 1, nil // the header
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// du is the bytes allocated on disk to the files under dir.
func du(dir string) (int64, error) {
	f, err := diskFiles(dir)
	return f.Total, err
}

// diskFiles is the bytes allocated on disk to a table's files, by kind.
func diskFiles(dir string) (Files, error) {
	var f Files
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n := fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n = st.Blocks * 512
		}
		f.Total += n
		name := d.Name()
		switch {
		case name == format.PostName:
			f.Post += n
		case name == format.SymName:
			f.Syms += n
		case name == format.TimeIdxName:
			f.TimeIdx += n
		case strings.HasPrefix(name, "seg-"):
			f.Segments += n
		default:
			f.Other += n
		}
		return nil
	})
	return f, err
}
