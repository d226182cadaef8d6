package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/child"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
)

// serveProc is "tickdb serve" running as a separate process (this test
// binary re-executed as the CLI, see TestMain).
type serveProc struct {
	c         *child.Child
	ilp, http string
	mu        sync.Mutex
	log       strings.Builder
	done      chan error
}

var startedRE = regexp.MustCompile(`msg="tickdb serve: started" db=\S+ ilp=(\S+) http=(\S+)`)

func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	return startServeEnv(t, nil, args...)
}

// startServeEnv is startServe with more environment (the archive's keys).
func startServeEnv(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{done: make(chan error, 1)}
	stderr, errW := pipe(t)
	p.c = startCLIChildEnv(t, append([]string{"serve", "--ilp", "127.0.0.1:0", "--http", "127.0.0.1:0"}, args...), env, strings.NewReader(""), nil, errW)
	errW.Close()
	t.Cleanup(func() { p.c.Kill(); <-p.done })
	started := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := startedRE.FindStringSubmatch(sc.Text()); m != nil {
				started <- m[1:]
			}
		}
		<-p.c.Done()
		p.done <- p.c.ExitErr()
	}()
	select {
	case m := <-started:
		p.ilp, p.http = m[0], m[1]
	case <-time.After(time.Minute):
		t.Fatalf("tickdb serve did not start:\n%s", p.logText())
	}
	return p
}

func (p *serveProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// TestServeCommand runs "tickdb serve", writes over TCP and HTTP, stops it
// with SIGTERM and checks the exit status, the log lines and the rows.
func TestServeCommand(t *testing.T) {
	db, live := testutil.DB(t)
	p := startServe(t, "--db", db, "--live-dir", live, "--token", "tok")
	c, err := net.DialTimeout("tcp", p.ilp, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "trades,sym=AAPL price=189.5,size=100i 1000\ntrades,sym=MSFT price=410.25,size=7i 2000\n")
	c.Close()
	waitCount(t, p, db, "trades", 2) // stored before the HTTP row, whose ts is later
	req, _ := http.NewRequest("POST", "http://"+p.http+"/write", strings.NewReader("trades,sym=AAPL price=190,size=5i 3000\n"))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := (&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /write: %d", resp.StatusCode)
	}
	waitCount(t, p, db, "trades", 3)
	if err := p.c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("tickdb serve exit: %v\n%s", err, p.logText())
		}
	case <-time.After(time.Minute):
		t.Fatalf("tickdb serve did not stop on SIGTERM:\n%s", p.logText())
	}
	log := p.logText()
	for _, want := range []string{`msg="tickdb serve: stopping"`, `msg="tickdb serve: table" table=trades rows=3 durable=3`, `msg="tickdb serve: stopped"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log has no %s:\n%s", want, log)
		}
	}
	r, err := reader.Open(db, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != 3 || r.Durable() != 3 {
		t.Fatalf("count %d durable %d after stop", r.Len(), r.Durable())
	}
	if ents, _ := os.ReadDir(live); len(ents) != 0 {
		t.Fatalf("live dir not emptied after a clean stop: %v", ents)
	}
}

// TestServeSecondOnHeldDB: a second serve on a database a live serve holds
// exits non-zero at once, naming the holder's pid, and the first goes on.
func TestServeSecondOnHeldDB(t *testing.T) {
	db, live := testutil.DB(t)
	p := startServe(t, "--db", db, "--live-dir", live)
	start := time.Now()
	code, _, stderr := execCLI(t, "serve", "--db", db, "--live-dir", live, "--ilp", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, fmt.Sprintf("already served by another process (pid %d)", p.c.Pid)) {
		t.Fatalf("second serve: exit %d after %v, stderr:\n%s", code, time.Since(start), stderr)
	}
	if strings.Contains(stderr, "started") {
		t.Fatalf("second serve said it started:\n%s", stderr)
	}
	c, err := net.DialTimeout("tcp", p.ilp, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "trades,sym=AAPL price=1.5 1000\n")
	c.Close()
	waitCount(t, p, db, "trades", 1)
}

func TestServeBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--flush", "sometimes"}, "unknown flush policy"},
		{[]string{"serve", "--out-of-order", "maybe"}, "want reject or stamp"},
		{[]string{"serve", "--ilp", "256.1.1.1:1"}, "ilp address"},
		{[]string{"serve", "--max-streams", "0"}, "want both positive"},
		{[]string{"serve", "--token", "tok", "--ilp", "0.0.0.0:0"}, "--ilp-insecure"},
		{[]string{"serve", "--ts-unit", "min"}, "want s, ms, us or ns"},
		{[]string{"serve", "--max-future", "-1m"}, "negative (0 turns the check off)"},
	} {
		var out, errb strings.Builder
		if code := run(append(tc.args, "--db", t.TempDir(), "--http", "off"), &out, &errb); code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// waitCount waits until table holds n rows.
func waitCount(t *testing.T, p *serveProc, db, table string, n uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := reader.Open(db, table, nil)
		if err == nil {
			c := r.Len()
			r.Close()
			if c == n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("rows never reached %d:\n%s", n, p.logText())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeKill9 kills "tickdb serve" with SIGKILL while a client streams,
// restarts it, stops it cleanly, and checks the table verifies clean and
// holds a prefix of what was sent.
func TestServeKill9(t *testing.T) {
	db, live := testutil.DB(t)
	p := startServe(t, "--db", db, "--live-dir", live)
	c, err := net.DialTimeout("tcp", p.ilp, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := make(chan int, 1)
	go func() {
		w := bufio.NewWriterSize(c, 8<<10)
		k := 0
		for ; ; k++ {
			if _, err := fmt.Fprintf(w, "k,sym=S%d n=%di %d\n", k%5, k, k+1); err != nil {
				break
			}
		}
		sent <- k
	}()
	for {
		r, err := reader.Open(db, "k", nil)
		if err == nil {
			n := r.Len()
			r.Close()
			if n >= 20_000 {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	p.c.Kill()
	<-p.done
	p.done <- nil // for the cleanup
	k := <-sent   // the client's write fails once the server is gone
	p2 := startServe(t, "--db", db, "--live-dir", live)
	p2.c.Signal(syscall.SIGTERM)
	if err := <-p2.done; err != nil {
		t.Fatalf("restarted serve: %v\n%s", err, p2.logText())
	}
	p2.done <- nil
	rep, err := reader.Verify(db, "k", nil)
	if err != nil || rep.Unpublished != 0 {
		t.Fatalf("verify after kill and restart: %+v, %v", rep, err)
	}
	r, err := reader.Open(db, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := r.Schema()
	nc := s.ColAt(s.Index("n"))
	n := r.Len()
	if n < 20_000 || n > uint64(k) || r.Durable() != n {
		t.Fatalf("%d rows (%d durable) after the kill; the client wrote %d lines", n, r.Durable(), k)
	}
	for seq := range n {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		if row.I64(nc) != int64(seq) || row.Ts() != int64(seq+1) {
			t.Fatalf("row %d: n=%d ts=%d: not a prefix of what was sent", seq, row.I64(nc), row.Ts())
		}
	}
}

// serve's time flags: --ts-unit s reads the TCP listener's timestamps in
// seconds (HTTP keeps precision=, and names it); the default refuses a row
// ahead of the clock; --max-future 0 and --allow-1970 opt out.
func TestServeTimeFlags(t *testing.T) {
	post := func(p *serveProc, body string) (int, string) {
		t.Helper()
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Post("http://"+p.http+"/write", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	now := time.Now().UnixNano()
	sec := now / 1e9
	db, live := testutil.DB(t)
	p := startServe(t, "--db", db, "--live-dir", live, "--ts-unit", "s")
	c, err := net.DialTimeout("tcp", p.ilp, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "a,sym=A v=1 %d\n", sec)
	c.Close()
	waitCount(t, p, db, "a", 1)
	if rows := ingestRows(t, db, "a"); len(rows) != 1 || !strings.HasPrefix(rows[0], fmt.Sprint(sec*1e9, " ")) {
		t.Errorf("--ts-unit s: rows %q, want ts %d", rows, sec*1e9)
	}
	if code, resp := post(p, fmt.Sprintf("h,sym=A v=1 %d\n", sec)); code != http.StatusBadRequest || !strings.Contains(resp, "send precision=s") {
		t.Errorf("HTTP seconds without precision: %d %s", code, resp)
	}
	if code, resp := post(p, fmt.Sprintf("h,sym=A v=1 %d\n", now+int64(time.Hour))); code != http.StatusBadRequest || !strings.Contains(resp, "more than the 1m0s max-future allows") {
		t.Errorf("HTTP an hour ahead: %d %s", code, resp)
	}

	db2, live2 := testutil.DB(t)
	p2 := startServe(t, "--db", db2, "--live-dir", live2, "--max-future", "0", "--allow-1970")
	if code, resp := post(p2, fmt.Sprintf("h,sym=A v=1 %d\nh,sym=A v=2 %d\n", sec, now+int64(time.Hour))); code != http.StatusNoContent {
		t.Errorf("--allow-1970 --max-future 0: %d %s", code, resp)
	}
	want := []string{fmt.Sprintf(`%d sym="A" v=1`, sec), fmt.Sprintf(`%d sym="A" v=2`, now+int64(time.Hour))}
	if rows := ingestRows(t, db2, "h"); strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows %q, want %q", rows, want)
	}
}

// TestServeOutOfOrderAgrees: rows refused as too old, over HTTP and then
// over TCP, are counted once and the same at once in tickdb stat, the
// console's /api/tables and /metrics, with no row accepted after them.
func TestServeOutOfOrderAgrees(t *testing.T) {
	db, live := testutil.DB(t)
	p := startServe(t, "--db", db, "--live-dir", live, "--token", "tok")
	const t0 = 1_700_000_000_000_000_000
	serveDo(t, p, "POST", "/write", fmt.Sprintf("o,sym=A v=1 %d\n", t0))
	metric := func(prefix string) string {
		for _, l := range strings.Split(serveDo(t, p, "GET", "/metrics", ""), "\n") {
			if v, ok := strings.CutPrefix(l, prefix+" "); ok {
				return v
			}
		}
		return "(none)"
	}
	agree := func(want int) {
		t.Helper()
		code, out, errs := runCLI("stat", "--db", db, "--format", "json")
		if code != 0 {
			t.Fatalf("stat: exit %d: %s", code, errs)
		}
		st := parseStat(t, out).Tables[0]
		var api struct {
			Tables []struct {
				OutOfOrder uint64 `json:"out_of_order"`
			}
		}
		if err := json.Unmarshal([]byte(serveDo(t, p, "GET", "/api/tables", "")), &api); err != nil || len(api.Tables) != 1 {
			t.Fatalf("/api/tables: %v", err)
		}
		table := metric(`tickdb_table_out_of_order_total{table="o"}`)
		rejected := metric(`tickdb_ingest_rows_rejected_total{reason="out_of_order",table="o"}`)
		w := strconv.Itoa(want)
		if st.OutOfOrder != uint64(want) || api.Tables[0].OutOfOrder != uint64(want) || table != w || rejected != w || st.Rows != 1 {
			t.Fatalf("out-of-order rows: stat %d, /api/tables %d, tickdb_table_out_of_order_total %s, rejected{out_of_order} %s; want %d everywhere (rows %d, want 1)",
				st.OutOfOrder, api.Tables[0].OutOfOrder, table, rejected, want, st.Rows)
		}
	}
	req, _ := http.NewRequest("POST", "http://"+p.http+"/write", strings.NewReader(fmt.Sprintf("o,sym=A v=2 %d\n", t0-int64(time.Hour))))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("late row over HTTP: %d, want 400", resp.StatusCode)
	}
	agree(1) // the answer came after the count
	c, err := net.DialTimeout("tcp", p.ilp, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "o,sym=A v=3 %d\n", t0-2*int64(time.Hour))
	// TCP has no answer: wait for the rejected-lines metric, which is
	// counted after the table's counter.
	deadline := time.Now().Add(30 * time.Second)
	for metric(`tickdb_ingest_rows_rejected_total{reason="out_of_order",table="o"}`) != "2" {
		if time.Now().After(deadline) {
			t.Fatalf("the late TCP line was never rejected:\n%s", p.logText())
		}
		time.Sleep(5 * time.Millisecond)
	}
	agree(2)
}
