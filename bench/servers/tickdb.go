package servers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/suite"
)

// tickdbServer is `tickdb serve` with its default flags but --db (a
// directory of the run's) and --http and --ilp (free ports on 127.0.0.1),
// fed line protocol over HTTP POST /write and asked over GET /query,
// /bars and /latest.
type tickdbServer struct {
	bin  string // the tickdb binary
	db   string // --db
	base string // http://127.0.0.1:port
	p    *proc
	c    *http.Client
	buf  bytes.Buffer // write answers
}

// newTickDB prepares a tickdb serve on db (created) run from bin, its
// output in dir.
func newTickDB(bin, dir string) (*tickdbServer, error) {
	db := filepath.Join(dir, "db")
	if err := os.MkdirAll(db, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	s := &tickdbServer{bin: bin, db: db, base: "http://" + httpAddr, c: newClient()}
	s.p = &proc{
		name: "tickdb serve",
		argv: []string{bin, "serve", "--db", db, "--http", httpAddr, "--ilp", fmt.Sprintf("127.0.0.1:%d", ports[1])},
		dir:  dir, log: filepath.Join(dir, "serve.log"), ready: s.base + "/health",
	}
	return s, nil
}

func (s *tickdbServer) name() string         { return suite.TickDB }
func (s *tickdbServer) proc() *proc          { return s.p }
func (s *tickdbServer) client() *http.Client { return s.c }
func (s *tickdbServer) dataDir() string      { return s.db }

// disk is the table directory's st_blocks: tickdb deletes nothing later.
func (s *tickdbServer) disk(context.Context) (all, lasting int64, err error) {
	all, err = diskBytes(filepath.Join(s.db, suite.Table))
	return all, all, err
}

func (s *tickdbServer) start(ctx context.Context) (time.Duration, error) {
	s.c.CloseIdleConnections() // the last run's connection is gone
	return s.p.start(ctx, s.c)
}

// appendBody writes one line per tick:
//
//	ticks,sym=AAPL price=185.23,size=300i 1704205800000001234
//
// so the table is ts, sym (a tag), price (f64), size (i64).
func (s *tickdbServer) appendBody(dst []byte, ticks []gen.Tick, names []string) []byte {
	for i := range ticks {
		t := &ticks[i]
		dst = append(dst, suite.Table+",sym="...)
		dst = append(dst, names[t.Sym]...)
		dst = append(dst, " price="...)
		dst = strconv.AppendFloat(dst, t.Price, 'f', -1, 64)
		dst = append(dst, ",size="...)
		dst = strconv.AppendInt(dst, t.Size, 10)
		dst = append(dst, "i "...)
		dst = strconv.AppendInt(dst, t.Ts, 10)
		dst = append(dst, '\n')
	}
	return dst
}

// write posts one body to /write, which answers 204 once every row of it
// is durable.
func (s *tickdbServer) write(ctx context.Context, body []byte) error {
	return post(ctx, s.c, s.base+"/write", "text/plain; charset=utf-8", body, http.StatusNoContent, &s.buf)
}

func (s *tickdbServer) url(q query, names []string) string {
	v := url.Values{"table": {suite.Table}, "format": {"csv"}, "ts": {"ns"}}
	path := "/query"
	switch q.kind {
	case kWindow:
		v.Set("sym", names[q.sym])
		v.Set("from", strconv.FormatInt(q.from, 10))
		v.Set("to", strconv.FormatInt(q.to, 10))
	case kScan:
		v.Set("sym", names[q.sym])
	case kBars:
		path = "/bars"
		v.Set("sym", names[q.sym])
		v.Set("interval", "1s")
	case kLatest:
		path = "/latest"
	}
	return s.base + path + "?" + v.Encode()
}

// tickdbStat is what the benchmark reads of `tickdb stat --format json`.
type tickdbStat struct {
	Tables []struct {
		Name      string `json:"name"`
		Rows      int64  `json:"rows"`
		LiveDir   string `json:"live_dir"`
		LiveBytes int64  `json:"live_bytes"`
		HotBytes  int64  `json:"hot_bytes"`
	} `json:"tables"`
}

// stat runs `tickdb stat --format json` on the database (safe while serve
// runs: it takes no lock) and returns the table's figures.
func (s *tickdbServer) stat(ctx context.Context) (rows, shm int64, err error) {
	out, err := exec.CommandContext(ctx, s.bin, "stat", "--db", s.db, "--format", "json").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return 0, 0, fmt.Errorf("tickdb stat: %w", err)
	}
	var st tickdbStat
	if err := json.Unmarshal(out, &st); err != nil {
		return 0, 0, fmt.Errorf("tickdb stat: %w", err)
	}
	for _, t := range st.Tables {
		if t.Name == suite.Table {
			return t.Rows, t.LiveBytes + t.HotBytes, nil
		}
	}
	return 0, 0, fmt.Errorf("tickdb stat: no table %s", suite.Table)
}

func (s *tickdbServer) rows(ctx context.Context) (int64, error) {
	n, _, err := s.stat(ctx)
	return n, err
}

// settle waits for serve's background compaction (on by default) to
// finish with the written rows: until the table's disk bytes have not
// changed for a second (at most a minute).
func (s *tickdbServer) settle(ctx context.Context) (string, error) {
	t0 := time.Now()
	last, err := diskBytes(filepath.Join(s.db, suite.Table))
	if err != nil {
		return "", err
	}
	for still := time.Now(); time.Since(still) < time.Second; {
		if time.Since(t0) > time.Minute {
			return "the background compaction still running after a minute", nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		n, err := diskBytes(filepath.Join(s.db, suite.Table))
		if err != nil {
			return "", err
		}
		if n != last {
			last, still = n, time.Now()
		}
	}
	return fmt.Sprintf("the background compaction (on by default) settled after %s", time.Since(t0).Round(10*time.Millisecond)), nil
}

// applyStats is the sum (ns) and count of serve's
// tickdb_http_write_apply_seconds histogram: the writer goroutine's time
// to check and store each write request.
type applyStats struct{ sum, count float64 }

// applyStats reads the histogram from GET /metrics.
func (s *tickdbServer) applyStats(ctx context.Context) (applyStats, error) {
	var a applyStats
	if err := fetch(ctx, s.c, s.base+"/metrics", &s.buf); err != nil {
		return a, fmt.Errorf("tickdb: metrics: %w", err)
	}
	for line := range strings.Lines(s.buf.String()) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		switch name {
		case "tickdb_http_write_apply_seconds_sum":
			f, err := strconv.ParseFloat(v, 64)
			a.sum = f * 1e9
			if err != nil {
				return a, fmt.Errorf("tickdb: metrics: %s: %w", line, err)
			}
		case "tickdb_http_write_apply_seconds_count":
			f, err := strconv.ParseFloat(v, 64)
			a.count = f
			if err != nil {
				return a, fmt.Errorf("tickdb: metrics: %s: %w", line, err)
			}
		}
	}
	return a, nil
}
