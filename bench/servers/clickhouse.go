package servers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/suite"
)

// ClickHouseConfigDir is where Debian's clickhouse-server package puts
// the configuration the benchmark starts from (config.xml and users.xml).
const ClickHouseConfigDir = "/etc/clickhouse-server"

// FindClickHouse returns the clickhouse-server binary: on the PATH, or
// where Debian installs it; "" when it is not installed.
func FindClickHouse() string {
	if p, err := exec.LookPath("clickhouse-server"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// The table, as ClickHouse users build one for ticks: MergeTree sorted by
// (sym, ts) with a partition per day. ts is Int64 ns: Debian's 18.16 has
// no DateTime64; sym is a plain String (LowCardinality is experimental
// there). No column codecs (18.16 has none): the columns are compressed
// with the server's default (LZ4).
const clickhouseTable = "CREATE TABLE " + suite.Table + ` (ts Int64, sym String, price Float64, size Int64)
ENGINE = MergeTree() PARTITION BY intDiv(ts, 86400000000000) ORDER BY (sym, ts)`

// clickhouseServer is Debian's clickhouse-server run from a copy of its
// configuration with its own directories and free ports on 127.0.0.1 only,
// fed CSV over HTTP (INSERT ... FORMAT CSV) and asked SQL over HTTP GET.
type clickhouseServer struct {
	dir      string // config.xml, users.xml, data/, log/
	base     string // http://127.0.0.1:port
	p        *proc
	c        *http.Client
	created  bool
	version  string
	outdated []string // the parts merges replaced, as the server last said
	// settleTimeout bounds settle's wait; past it the figures are taken
	// as they are and the note says so.
	settleTimeout time.Duration
	buf           bytes.Buffer
}

// newClickHouse prepares a clickhouse-server run from bin in dir: it
// copies Debian's configuration there and points it at dir.
func newClickHouse(bin, dir string, settleTimeout time.Duration) (*clickhouseServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	if err := writeClickHouseConfig(dir, ports[0], ports[1], ports[2]); err != nil {
		return nil, err
	}
	s := &clickhouseServer{dir: dir, base: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), c: newClient(), settleTimeout: settleTimeout}
	s.p = &proc{
		name: "clickhouse-server",
		argv: []string{bin, "--config-file=" + filepath.Join(dir, "config.xml")},
		dir:  dir, log: filepath.Join(dir, "server.out"), ready: s.base + "/ping",
	}
	return s, nil
}

// writeClickHouseConfig writes dir/config.xml and dir/users.xml: Debian's
// files, with the HTTP, native and interserver ports replaced (never the
// defaults 8123, 9000 and 9009: 9000 and 9009 are tickdb's), every
// listen_host replaced by 127.0.0.1 alone, the secure ports dropped, the
// test clusters pointed at this server's native port, and
// every /var/lib/clickhouse/ and /var/log/clickhouse-server/ path moved
// under dir. The config names users.xml relative to itself, so it is
// copied beside it.
func writeClickHouseConfig(dir string, httpPort, tcpPort, interPort int) error {
	cfg, err := os.ReadFile(filepath.Join(ClickHouseConfigDir, "config.xml"))
	if err != nil {
		return fmt.Errorf("clickhouse configuration: %w", err)
	}
	users, err := os.ReadFile(filepath.Join(ClickHouseConfigDir, "users.xml"))
	if err != nil {
		return fmt.Errorf("clickhouse configuration: %w", err)
	}
	s := string(cfg)
	for _, r := range []struct {
		tag  string
		port int
		need bool
	}{{"http_port", httpPort, true}, {"tcp_port", tcpPort, true}, {"interserver_http_port", interPort, false},
		{"https_port", 0, false}, {"tcp_port_secure", 0, false}, {"mysql_port", 0, false}, {"postgresql_port", 0, false}} {
		re := regexp.MustCompile(`<` + r.tag + `>\s*\d+\s*</` + r.tag + `>`)
		if r.need && !re.MatchString(s) {
			return fmt.Errorf("clickhouse configuration %s: no <%s>", filepath.Join(ClickHouseConfigDir, "config.xml"), r.tag)
		}
		with := ""
		if r.port != 0 {
			with = fmt.Sprintf("<%s>%d</%s>", r.tag, r.port, r.tag)
		}
		s = re.ReplaceAllLiteralString(s, with)
	}
	// The test clusters of remote_servers name the native port of
	// localhost: this server's.
	s = strings.ReplaceAll(s, "<port>9000</port>", fmt.Sprintf("<port>%d</port>", tcpPort))
	s = regexp.MustCompile(`<listen_host>[^<]*</listen_host>`).ReplaceAllLiteralString(s, "")
	i := strings.Index(s, "<http_port>")
	s = s[:i] + "<listen_host>127.0.0.1</listen_host>\n    " + s[i:]
	data, logs := filepath.Join(dir, "data")+"/", filepath.Join(dir, "log")+"/"
	s = strings.ReplaceAll(s, "/var/lib/clickhouse/", data)
	s = strings.ReplaceAll(s, "/var/log/clickhouse-server/", logs)
	if strings.Contains(s, "/var/lib/clickhouse") || strings.Contains(s, "/var/log/clickhouse-server") {
		return errors.New("clickhouse configuration: a path under /var/lib/clickhouse or /var/log/clickhouse-server left after the rewrite")
	}
	for _, d := range []string{data, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return errors.Join(os.WriteFile(filepath.Join(dir, "config.xml"), []byte(s), 0o644),
		os.WriteFile(filepath.Join(dir, "users.xml"), users, 0o644))
}

func (s *clickhouseServer) name() string         { return "clickhouse" }
func (s *clickhouseServer) proc() *proc          { return s.p }
func (s *clickhouseServer) client() *http.Client { return s.c }
func (s *clickhouseServer) dataDir() string      { return filepath.Join(s.dir, "data") }

// disk is the table directory's st_blocks, all of it, and without the
// parts that merges replaced: ClickHouse keeps those on disk for
// old_parts_lifetime (8 minutes by default, restarts included) before it
// deletes them. The running server names them (system.parts, not
// active); a stopped one is taken to have the ones it named last.
func (s *clickhouseServer) disk(ctx context.Context) (all, lasting int64, err error) {
	dir := filepath.Join(s.dir, "data", "data", "default", suite.Table)
	if s.p.pid() != 0 {
		names, err := s.scalar(ctx, "SELECT arrayStringConcat(groupArray(name), ' ') FROM system.parts WHERE NOT active AND database = 'default' AND table = '"+suite.Table+"'")
		if err != nil {
			return 0, 0, err
		}
		s.outdated = strings.Fields(names)
	}
	if all, err = diskBytes(dir); err != nil {
		return 0, 0, err
	}
	lasting = all
	for _, name := range s.outdated {
		b, err := diskBytes(filepath.Join(dir, name))
		if err != nil {
			return 0, 0, err
		}
		lasting -= b
	}
	return all, lasting, nil
}

// start starts the server and, the first time, creates the table.
func (s *clickhouseServer) start(ctx context.Context) (time.Duration, error) {
	s.c.CloseIdleConnections()
	took, err := s.p.start(ctx, s.c)
	if err != nil || s.created {
		return took, err
	}
	if err := s.exec(ctx, clickhouseTable); err != nil {
		return took, fmt.Errorf("clickhouse: create table: %w", err)
	}
	s.created = true
	v, err := s.scalar(ctx, "SELECT version()")
	s.version = v
	return took, err
}

// exec runs a statement (POST: GET is read-only).
func (s *clickhouseServer) exec(ctx context.Context, sql string) error {
	return post(ctx, s.c, s.base+"/", "text/plain; charset=utf-8", []byte(sql), http.StatusOK, &s.buf)
}

// scalar runs a query whose answer is one value.
func (s *clickhouseServer) scalar(ctx context.Context, sql string) (string, error) {
	if err := fetch(ctx, s.c, s.base+"/?"+url.Values{"query": {sql}}.Encode(), &s.buf); err != nil {
		return "", fmt.Errorf("clickhouse: %s: %w", sql, err)
	}
	return strings.TrimSpace(s.buf.String()), nil
}

// appendBody writes one CSV line per tick: ts,sym,price,size.
func (s *clickhouseServer) appendBody(dst []byte, ticks []gen.Tick, names []string) []byte {
	for i := range ticks {
		t := &ticks[i]
		dst = strconv.AppendInt(dst, t.Ts, 10)
		dst = append(dst, ',')
		dst = append(dst, names[t.Sym]...)
		dst = append(dst, ',')
		dst = strconv.AppendFloat(dst, t.Price, 'f', -1, 64)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, t.Size, 10)
		dst = append(dst, '\n')
	}
	return dst
}

// write inserts one CSV body; ClickHouse answers 200 once it has written
// the rows as a new part (in the page cache: it does not fsync).
func (s *clickhouseServer) write(ctx context.Context, body []byte) error {
	u := s.base + "/?" + url.Values{"query": {"INSERT INTO " + suite.Table + " FORMAT CSV"}}.Encode()
	return post(ctx, s.c, u, "text/csv", body, http.StatusOK, &s.buf)
}

// The queries, in the SQL a ClickHouse user writes for them. Rows come in
// ts order, as tickdb sends them. Bars and the latest rows break ties of
// equal timestamps as argMin/argMax do (the checks allow for it).
const (
	chRows   = "SELECT ts, sym, price, size FROM " + suite.Table + " WHERE sym = %s%s ORDER BY ts FORMAT CSVWithNames"
	chBars   = "SELECT intDiv(ts, %d) * %d AS t, argMin(price, ts) AS open, max(price) AS high, min(price) AS low, argMax(price, ts) AS close, sum(size) AS volume, count() AS count FROM " + suite.Table + " WHERE sym = %s GROUP BY t ORDER BY t FORMAT CSVWithNames"
	chLatest = "SELECT last AS ts, sym, r.1 AS price, r.2 AS size FROM (SELECT sym, max(ts) AS last, argMax((price, size), ts) AS r FROM " + suite.Table + " GROUP BY sym) ORDER BY sym FORMAT CSVWithNames"
)

func (s *clickhouseServer) url(q query, names []string) string {
	var sql string
	switch q.kind {
	case kWindow:
		sql = fmt.Sprintf(chRows, quote(names[q.sym]), fmt.Sprintf(" AND ts >= %d AND ts < %d", q.from, q.to))
	case kScan:
		sql = fmt.Sprintf(chRows, quote(names[q.sym]), "")
	case kBars:
		sql = fmt.Sprintf(chBars, barWidth, barWidth, quote(names[q.sym]))
	case kLatest:
		sql = chLatest
	}
	return s.base + "/?" + url.Values{"query": {sql}}.Encode()
}

// quote is a ClickHouse string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func (s *clickhouseServer) rows(ctx context.Context) (int64, error) {
	v, err := s.scalar(ctx, "SELECT count() FROM "+suite.Table)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// Settling: ClickHouse merges the parts the inserts wrote in the
// background. The table has settled when no merge has run and the count
// of active parts has not changed for settleQuiet.
const (
	settlePoll  = time.Second
	settleQuiet = 3 * time.Second
)

func (s *clickhouseServer) settle(ctx context.Context) (string, error) {
	t0 := time.Now()
	var quietSince time.Time
	last := ""
	for {
		state, err := s.scalar(ctx, "SELECT (SELECT count() FROM system.merges), (SELECT count() FROM system.parts WHERE active AND database = 'default' AND table = '"+suite.Table+"')")
		if err != nil {
			return "", err
		}
		merges, parts, _ := strings.Cut(state, "\t")
		switch {
		case merges != "0" || state != last:
			quietSince, last = time.Now(), state
		case time.Since(quietSince) >= settleQuiet:
			return fmt.Sprintf("its merges done after %v: %s active parts", time.Since(t0).Round(100*time.Millisecond), parts), nil
		}
		if time.Since(t0) > s.settleTimeout {
			return fmt.Sprintf("still merging after %v (%s merges, %s active parts): taken as it was", s.settleTimeout, merges, parts), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(settlePoll):
		}
	}
}
