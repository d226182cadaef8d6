package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// Hostile HTTP clients against a serve in a child process (this test
// binary re-executed), whose resident memory the parent reads from
// /proc/<pid>/status while a well-behaved writer writes.
//
// TICKDB_HOSTILE_HEAVY=1 runs the full sizes: three 4 M-row gzip
// bodies at once, 10 M identical lines, 5,000 stalled connections (the
// connection limit raised above them).

const hostileRole = "ingest-serve-hostile"

// TestChildServeHostile is the server process: it serves TICKDB_DB with
// the limits the environment gives, reports "listening <ilp> <http>", and
// on SIGTERM closes and reports "closed". It logs warnings and errors to
// stderr (the parent reads them from the child's log).
func TestChildServeHostile(t *testing.T) {
	testutil.ChildRole(t, hostileRole)
	if n := testutil.EnvUint(t, "TICKDB_NOFILE"); n > 0 {
		lim := unix.Rlimit{Cur: n, Max: n}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			testutil.ChildFatalf(t, "setrlimit: %v", err)
		}
	}
	ctx, stop := signal.NotifyContext(t.Context(), syscall.SIGTERM)
	defer stop()
	srv, err := Start(&Options{
		DB: testutil.EnvString(t, "TICKDB_DB"), LiveRoot: testutil.EnvString(t, "TICKDB_LIVE"),
		ILPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		ReadTimeout:     time.Duration(testutil.EnvUint(t, "TICKDB_READ_TIMEOUT_MS")) * time.Millisecond,
		MaxDecompressed: int64(testutil.EnvUint(t, "TICKDB_MAX_DECOMPRESSED")),
		MaxHTTPConns:    int(testutil.EnvUint(t, "TICKDB_MAX_HTTP_CONNS")),
		// Small segments and no hot copies: a table's stored rows then
		// hold little memory in serve, and what it holds is the requests'.
		Writer: writer.Options{SegmentSize: 8 << 20, HotBytes: -1},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		testutil.ChildFatalf(t, "start: %v", err)
	}
	testutil.Report("listening %s %s", srv.ILPAddr(), srv.HTTPAddr())
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		testutil.ChildFatalf(t, "close: %v", err)
	}
	testutil.Report("closed")
}

type hostileChild struct {
	*testutil.Child
	db, ilp, http string
}

func startHostileChild(t *testing.T, env ...string) *hostileChild {
	t.Helper()
	db, live := testutil.DB(t)
	env = append([]string{"TICKDB_DB=" + db, "TICKDB_LIVE=" + live, "TICKDB_NOFILE=0", "TICKDB_READ_TIMEOUT_MS=1000",
		"TICKDB_MAX_DECOMPRESSED=0", "TICKDB_MAX_HTTP_CONNS=0"}, env...)
	c := testutil.StartChild(t, "TestChildServeHostile", hostileRole, &testutil.ChildOptions{Env: env})
	f := c.Expect(t, "listening", time.Minute, nil)
	return &hostileChild{Child: c, db: db, ilp: f[0], http: f[1]}
}

// stop ends the child with SIGTERM and waits for it to close cleanly.
func (c *hostileChild) stop(t *testing.T) {
	t.Helper()
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.Expect(t, "closed", time.Minute, nil)
	if err := c.Wait(time.Minute); err != nil {
		t.Fatalf("child: %v\n%s", err, c.Log())
	}
}

func (c *hostileChild) kib(t *testing.T, key string) int64 {
	t.Helper()
	n, err := testutil.ProcStatusKiB(c.Pid, key)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// gzipLines returns a reader of the gzip of n lines that line writes (it
// appends line i to dst), compressed as it is read.
func gzipLines(n int, line func(dst []byte, i int) []byte) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		var b []byte
		for i := 0; i < n; i++ {
			b = line(b, i)
			if len(b) >= 64<<10 || i == n-1 {
				if _, err := zw.Write(b); err != nil {
					pw.CloseWithError(err)
					return
				}
				b = b[:0]
			}
		}
		pw.CloseWithError(zw.Close())
	}()
	return pr
}

// post sends one write and returns its status and body.
func post(client *http.Client, url string, body io.Reader, gz bool) (int, string, error) {
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		return 0, "", err
	}
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// goodWriter posts 100-row bodies of table good (k = 0, 1, ...) on a
// new connection each, retrying every answer but 204 (a retry is always
// safe), until stop is closed; it returns the rows stored and the
// latency of each 204'd request.
type goodWriter struct {
	rows  int
	lat   []time.Duration
	fails map[string]int
	err   error
}

func runGoodWriter(addr string, stop <-chan struct{}, done chan<- *goodWriter) {
	g := &goodWriter{fails: map[string]int{}}
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	url := "http://" + addr + "/write"
	var body []byte
	for {
		select {
		case <-stop:
			done <- g
			return
		default:
		}
		body = body[:0]
		for k := g.rows; k < g.rows+100; k++ {
			body = fmt.Appendf(body, "good,w=1 k=%di\n", k)
		}
		t0 := time.Now()
		code, msg, err := post(client, url, bytes.NewReader(body), false)
		switch {
		case err != nil:
			g.fails["error"]++
		case code == http.StatusNoContent:
			g.lat = append(g.lat, time.Since(t0))
			g.rows += 100
			continue
		case code == http.StatusServiceUnavailable:
			g.fails["503"]++
		default:
			g.err = fmt.Errorf("good writer: %d %s", code, msg)
			done <- g
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkGood checks that table good holds k = -1 .. n-1, each once.
func checkGood(t *testing.T, db string, n int) {
	t.Helper()
	rows := tableRows(t, db, "good", n+1, time.Minute)
	seen := make([]bool, n+1)
	for _, row := range rows {
		_, v, _ := strings.Cut(row, " k=")
		k, err := strconv.Atoi(v)
		if k++; err != nil || k < 0 || k > n || seen[k] {
			t.Fatalf("table good: row %q (k out of range, or twice)", row)
		}
		seen[k] = true
	}
}

// stallKinds are requests that stop sending, each with what the server
// answers before it closes ("" for a close without an answer).
var stallKinds = []struct {
	name, head, want string
	trickle          bool // sends one byte of lines every 100 ms
}{
	{"content-length 1e9, small body", "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\nstall,sym=A v=1\n", "408", false},
	{"trickle", "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", "408", true},
	{"chunk of FFFFFFFF", "POST /write HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFF\r\nstall,sym=A v=1\n", "408", false},
	{"headers and no body", "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", "408", false},
	{"gzip header and no more", "POST /write HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 1000000\r\n\r\n\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", "408", false},
	{"half the headers", "POST /write HTTP/1.1\r\nHost: x\r\nContent-Le", "400", false}, // net/http's answer to a header timeout
	{"a GET with a stalled body", "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", "200", false},
}

// stall opens one stalled request of kind k and returns a channel that
// gets what the connection read before the server closed it, or an error
// when it was still open after wait.
func stall(addr string, k int, wait time.Duration) (<-chan error, error) {
	c, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		return nil, err
	}
	kind := stallKinds[k]
	if _, err := io.WriteString(c, kind.head); err != nil {
		c.Close()
		return nil, err
	}
	out := make(chan error, 1)
	done := make(chan struct{})
	if kind.trickle {
		go func() {
			line := []byte("stall,sym=A v=1\n")
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := c.Write(line[i%len(line) : i%len(line)+1]); err != nil {
					return
				}
			}
		}()
	}
	go func() {
		defer c.Close()
		defer close(done)
		_ = c.SetReadDeadline(time.Now().Add(wait))
		b, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			out <- fmt.Errorf("%s: still open after %v", kind.name, wait)
			return
		}
		// Closed, by EOF or a reset; what did it say first?
		status := ""
		if f := strings.Fields(string(b)); len(f) > 1 {
			status = f[1]
		}
		if status != kind.want && status != "503" { // 503: over the connection limit
			out <- fmt.Errorf("%s: answered %q, want %q", kind.name, status, kind.want)
			return
		}
		out <- nil
	}()
	return out, nil
}

// TestHostileHTTP sends large, compressed and stalled bodies to a serve
// while a well-behaved writer writes, and checks that serve's resident
// memory stays within its bound, that every stalled request is cut off,
// that nothing of a refused or cut request is stored, and that every row
// the good writer was answered 204 for is stored exactly once.
//
// The bound: the peak resident set (VmHWM) over the baseline (VmRSS once
// the tables exist) is at most
//
//	the staged size of the rows in flight (in anonymous mappings, off
//	  the Go heap, so not doubled by the garbage collector's pace)
//	+ the stored size of the rows written (the live segments are mapped
//	  shared memory, resident in serve; with hot copies off and 8 MiB
//	  segments, far less stays)
//	+ 128 KiB per stalled connection (goroutine, net/http's buffers, the
//	  first read buffer, a gzip decompressor)
//	+ 64 MiB (the Go heap's share: parsers, dictionaries, small blocks,
//	  segments the writer prepares ahead, the runtime)
//
// where a big body's row (sym, price, size) stages in 29 bytes and is
// stored in 32, and an identical line's (sym, v) in 21 and 24. Before
// bodies streamed, one 1 M-row body alone took about 420 MB.
func TestHostileHTTP(t *testing.T) {
	if testutil.Race {
		t.Skip("the race detector's shadow memory makes RSS meaningless")
	}
	heavy := os.Getenv("TICKDB_HOSTILE_HEAVY") != ""
	bigBodies, bigRows, sameRows, stalls := 2, 1_000_000, 2_000_000, 210
	maxDecompressed := int64(64 << 20)
	if heavy {
		// The bodies of the issue, all under a decompressed limit that
		// still lets every request in flight fit in the default write
		// memory (1 GiB): about 800 MiB staged at once.
		bigBodies, bigRows, sameRows, stalls = 3, 4_190_000, 10_000_000, 5000
		maxDecompressed = 160 << 20
	}
	// Room for every stalled connection and the writers besides (the
	// connection limit itself is TestHTTPConnLimit's): 5,000 stalled
	// connections would otherwise fill the default 4,096 and the bodies
	// be refused.
	c := startHostileChild(t, fmt.Sprintf("TICKDB_MAX_DECOMPRESSED=%d", maxDecompressed), fmt.Sprintf("TICKDB_MAX_HTTP_CONNS=%d", max(stalls+64, 4096)))
	url := "http://" + c.http + "/write"
	client := &http.Client{Timeout: 5 * time.Minute}
	// The tables first: their first segments are in the baseline.
	for _, body := range []string{"good,w=1 k=-1i\n", "big,sym=S0 price=1.5,size=1i\n", "same,sym=A v=1\n"} {
		if code, msg, err := post(client, url, strings.NewReader(body), false); err != nil || code != 204 {
			t.Fatalf("%q: %d %s %v", body, code, msg, err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the preparers ready their next slots
	rss0 := c.kib(t, "VmRSS")

	stopGood := make(chan struct{})
	goodDone := make(chan *goodWriter, 1)
	go runGoodWriter(c.http, stopGood, goodDone)

	// Stalled connections, of every kind in turn.
	var cuts []<-chan error
	for i := range stalls {
		ch, err := stall(c.http, i%len(stallKinds), 2*time.Minute)
		if err != nil {
			t.Fatalf("stalled connection %d: %v", i, err)
		}
		cuts = append(cuts, ch)
	}

	// The bodies: big ones at once, a body of identical lines, and one
	// over the decompressed limit.
	type result struct {
		name string
		code int
		msg  string
		err  error
	}
	results := make(chan result, bigBodies+2)
	var wg sync.WaitGroup
	send := func(name string, body io.Reader) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, msg, err := post(client, url, body, true)
			results <- result{name, code, msg, err}
		}()
	}
	for b := range bigBodies {
		send(fmt.Sprintf("big %d", b), gzipLines(bigRows, func(dst []byte, i int) []byte {
			return fmt.Appendf(dst, "big,sym=S%d price=%d.25,size=%di\n", (i*7+b)%5000, i%1000, i%500)
		}))
	}
	send("same", gzipLines(sameRows, func(dst []byte, _ int) []byte { return append(dst, "same,sym=A v=1\n"...) }))
	bombLine := "bomb,sym=A v=1\n"
	send("bomb", gzipLines(int(maxDecompressed)/len(bombLine)+1000, func(dst []byte, _ int) []byte { return append(dst, bombLine...) }))
	wg.Wait()
	close(results)
	for r := range results {
		want := http.StatusNoContent
		if r.name == "bomb" {
			want = http.StatusRequestEntityTooLarge
		}
		if r.err != nil || r.code != want {
			t.Errorf("%s: %d %s %v; want %d", r.name, r.code, r.msg, r.err, want)
		}
	}
	for _, ch := range cuts {
		if err := <-ch; err != nil {
			t.Error(err)
		}
	}
	close(stopGood)
	g := <-goodDone
	if g.err != nil {
		t.Fatal(g.err)
	}
	hwm := c.kib(t, "VmHWM")

	// The bomb is staged up to the decompressed limit before its 413.
	staged := int64(bigBodies)*int64(bigRows)*29 + int64(sameRows)*21 + maxDecompressed/int64(len(bombLine))*21
	stored := int64(bigBodies)*int64(bigRows)*32 + int64(sameRows)*24
	bound := staged + stored + int64(stalls)*128<<10 + 64<<20
	slices.Sort(g.lat)
	worst := time.Duration(0)
	if len(g.lat) > 0 {
		worst = g.lat[len(g.lat)-1]
	}
	t.Logf("serve: VmRSS %d MiB before, VmHWM %d MiB; grew %d MiB, bound %d MiB (staged %d MiB, stored %d MiB)",
		rss0>>10, hwm>>10, (hwm-rss0)>>10, bound>>20, staged>>20, stored>>20)
	t.Logf("good writer: %d rows in %d requests, worst 204 %v, p50 %v; retried: %v", g.rows, len(g.lat), worst, g.lat[len(g.lat)/2], g.fails)
	t.Logf("serve now: RssAnon %d MiB, RssShmem %d MiB, RssFile %d MiB", c.kib(t, "RssAnon")>>10, c.kib(t, "RssShmem")>>10, c.kib(t, "RssFile")>>10)
	if (hwm-rss0)<<10 > bound {
		t.Errorf("serve's resident memory grew %d MiB, over the bound of %d MiB", (hwm-rss0)>>10, bound>>20)
	}

	// The good rows each once (k=-1 was the first); the big and same
	// rows all; nothing of the bomb or the stalled requests.
	checkGood(t, c.db, g.rows)
	for name, n := range map[string]int{"big": bigBodies*bigRows + 1, "same": sameRows + 1} {
		r, err := reader.Open(c.db, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Len() != uint64(n) {
			t.Errorf("table %s: %d rows, want %d", name, r.Len(), n)
		}
		r.Close()
	}
	for _, name := range []string{"bomb", "stall"} {
		if reader.Exists(c.db, name) {
			t.Errorf("table %s exists: a refused or cut request stored something", name)
		}
	}
	c.stop(t)
}

// TestAcceptBackoff runs serve with few file descriptors and opens more
// connections to both listeners than it can accept: accept fails with
// EMFILE, and each listener backs off (a few failures a second, not a
// spin) and logs at most once a second with a count; the connections it
// holds keep being served, and once they close it accepts again.
func TestAcceptBackoff(t *testing.T) {
	c := startHostileChild(t, "TICKDB_NOFILE=64")
	// A table and a connection first, while there are descriptors.
	held, err := net.DialTimeout("tcp", c.ilp, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conns := []net.Conn{held}
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	io.WriteString(held, "held,sym=A v=1\n")
	tableRows(t, c.db, "held", 1, time.Minute)
	// The kernel completes connections into the listen queue whether
	// serve accepts them or not; 80 of each exhaust its 64 descriptors.
	for _, addr := range []string{c.ilp, c.http} {
		for range 80 {
			cn, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, cn)
		}
	}
	start := time.Now()
	time.Sleep(3 * time.Second) // let both listeners fail and back off a while
	// Served meanwhile: the connection accepted before.
	if _, err := io.WriteString(held, "held,sym=A v=2\n"); err != nil {
		t.Fatal(err)
	}
	tableRows(t, c.db, "held", 2, time.Minute)
	elapsed := time.Since(start)
	lines, failures := acceptLog(c.Log())
	t.Logf("after %v: %d accept log lines, %v failures", elapsed, len(lines), failures)
	for _, what := range []string{"line protocol", "http"} {
		n, ok := failures[what]
		if !ok {
			t.Fatalf("no accept failure logged for the %s listener:\n%s", what, c.Log())
		}
		// A spin fails ~10^5 times a second; the backoff, about 8 times
		// in its first second and once a second after.
		if limit := 10 + 2*int(elapsed/time.Second+1); n > limit {
			t.Errorf("%s listener: %d accept failures logged in %v, want ≤ %d (no spin)", what, n, elapsed, limit)
		}
	}
	for what, n := range perListener(lines) {
		if limit := int(elapsed/time.Second) + 2; n > limit {
			t.Errorf("%s listener: %d log lines in %v, want ≤ %d (once a second)", what, n, elapsed, limit)
		}
	}
	for _, cn := range conns {
		cn.Close()
	}
	conns = nil
	// Room again: both listeners accept within their backoff (≤ 1 s).
	var code int
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		code, _, err = post(&http.Client{Timeout: 10 * time.Second}, "http://"+c.http+"/write", strings.NewReader("after,sym=A v=1\n"), false)
		if err == nil && code == 204 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code != 204 {
		t.Fatalf("after the connections closed: HTTP write %d", code)
	}
	cn, err := net.DialTimeout("tcp", c.ilp, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(cn, "after2,sym=A v=1\n")
	cn.Close()
	tableRows(t, c.db, "after2", 1, time.Minute)
	c.stop(t)
}

// acceptLog returns the "accept failed" log lines and, per listener, the
// sum of their failure counts.
func acceptLog(log string) ([]string, map[string]int) {
	var lines []string
	sum := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		l := sc.Text()
		if !strings.Contains(l, "accept failed") {
			continue
		}
		lines = append(lines, l)
		what := "http"
		if strings.Contains(l, `listener="line protocol"`) {
			what = "line protocol"
		}
		_, v, _ := strings.Cut(l, "failures=")
		v, _, _ = strings.Cut(v, " ")
		n, _ := strconv.Atoi(v)
		sum[what] += n
	}
	return lines, sum
}

func perListener(lines []string) map[string]int {
	n := map[string]int{}
	for _, l := range lines {
		if strings.Contains(l, `listener="line protocol"`) {
			n["line protocol"]++
		} else {
			n["http"]++
		}
	}
	return n
}
