package ingest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/writer"
)

// sseEvent is one Server-Sent Event; comment holds a comment line's text
// (an event of its own here, so that tests can see heartbeats).
type sseEvent struct {
	id, data, comment string
}

// sseClient is a small SSE client over a raw connection, so that tests
// can bound every read with a deadline.
type sseClient struct {
	conn net.Conn
	resp *http.Response
	br   *bufio.Reader
}

// dialSSE sends GET path with the headers given as pairs and reads the
// response's head.
func dialSSE(t *testing.T, srv *Server, path string, hdr ...string) *sseClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", srv.HTTPAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return startSSE(t, conn, path, hdr...)
}

func startSSE(t *testing.T, conn net.Conn, path string, hdr ...string) *sseClient {
	t.Helper()
	req := "GET " + path + " HTTP/1.1\r\nHost: tickdb\r\nAccept: text/event-stream\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &sseClient{conn: conn, resp: resp}
	c.br = bufio.NewReader(resp.Body)
	return c
}

// next reads the next event or comment within timeout.
func (c *sseClient) next(timeout time.Duration) (sseEvent, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(timeout))
	var ev sseEvent
	data := []string(nil)
	for {
		line, err := c.br.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if data != nil || ev.id != "" {
				ev.data = strings.Join(data, "\n")
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
			return sseEvent{comment: strings.TrimSpace(line[1:])}, nil
		default:
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				ev.id = v
			case "data":
				data = append(data, v)
			case "retry":
			default:
				return ev, fmt.Errorf("unknown SSE field %q", line)
			}
		}
	}
}

// event reads the next event, skipping comments.
func (c *sseClient) event(t *testing.T, timeout time.Duration) sseEvent {
	t.Helper()
	for {
		ev, err := c.next(timeout)
		if err != nil {
			t.Fatalf("reading an event: %v", err)
		}
		if ev.comment == "" {
			return ev
		}
	}
}

// started waits for the stream's first comment ("tail T from seq N") and
// returns N.
func (c *sseClient) started(t *testing.T) uint64 {
	t.Helper()
	if c.resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(c.resp.Body, 4096))
		t.Fatalf("status %d: %s", c.resp.StatusCode, b)
	}
	if ct := c.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	ev, err := c.next(5 * time.Second)
	_, n, ok := strings.Cut(ev.comment, " from seq ")
	if err != nil || !ok {
		t.Fatalf("first event %+v, %v: want the start comment", ev, err)
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func writeLines(t *testing.T, srv *Server, body string, auth ...string) {
	t.Helper()
	if code, resp, _ := httpDo(t, srv, "POST", "/write", body, auth...); code != http.StatusNoContent {
		t.Fatalf("write: %d %s", code, resp)
	}
}

// tickT0 is when the tail tests' rows begin (2023-11-14T22:13:20Z): their
// times are tickT0 plus small offsets.
const tickT0 = 1_700_000_000_000_000_000

// tickLines is n line-protocol rows of table, symbols A and B in turn,
// ts from tickT0+ts0 by 1 ms.
func tickLines(table string, ts0 int64, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s,sym=%c price=%d.5,size=%di %d\n", table, 'A'+i%2, 100+i, i+1, tickT0+ts0+int64(i)*1e6)
	}
	return b.String()
}

func TestTailSSE(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", Token: "s3cret", tailHeartbeat: 50 * time.Millisecond})
	auth := []string{"Authorization", "Bearer s3cret"}
	writeLines(t, srv, tickLines("tk", 1e9, 4), auth...)

	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}} {
		c := dialSSE(t, srv, "/tail?table=tk", hdr...)
		if c.resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %v: %d, want 401", hdr, c.resp.StatusCode)
		}
	}
	if c := dialSSE(t, srv, "/tail?table=tk&token=wrong"); c.resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token parameter: %d, want 401", c.resp.StatusCode)
	}
	for _, tc := range []struct{ path, code string }{
		{"/tail", "400"}, {"/tail?table=../x", "400"}, {"/tail?table=nope", "404"},
		{"/tail?table=tk&from=x", "400"}, {"/tail?table=tk&ts=x", "400"},
	} {
		c := dialSSE(t, srv, tc.path, auth...)
		if strconv.Itoa(c.resp.StatusCode) != tc.code || c.resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %q, want %s with a JSON body", tc.path, c.resp.StatusCode, c.resp.Header.Get("Content-Type"), tc.code)
		}
	}

	// New rows only, by default; the token as a parameter (EventSource).
	all := dialSSE(t, srv, "/tail?table=tk&token=s3cret")
	if seq := all.started(t); seq != 4 {
		t.Fatalf("starts at seq %d, want 4 (after the rows already there)", seq)
	}
	onlyB := dialSSE(t, srv, "/tail?table=tk&sym=B&ts=ns", auth...)
	onlyB.started(t)
	// A symbol that is not in the table yet.
	onlyC := dialSSE(t, srv, "/tail?table=tk&sym=C", auth...)
	onlyC.started(t)
	// A heartbeat comes while nothing is published.
	for {
		ev, err := all.next(2 * time.Second)
		if err != nil {
			t.Fatalf("no heartbeat: %v", err)
		}
		if ev.comment == "ping" {
			break
		}
	}
	writeLines(t, srv, tickLines("tk", 2e9, 6)+fmt.Sprintf("tk,sym=C price=1,size=1i %d\n", tickT0+int64(3e9)), auth...)

	// Each event's data is the row as GET /query's json has it.
	_, body, _ := httpDo(t, srv, "GET", "/query?table=tk", "", auth...)
	want := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if len(want) != 11 {
		t.Fatalf("query: %d rows", len(want))
	}
	for seq := 4; seq < 11; seq++ {
		ev := all.event(t, 5*time.Second)
		if ev.id != strconv.Itoa(seq) || ev.data != want[seq] {
			t.Fatalf("event %+v, want id %d data %s", ev, seq, want[seq])
		}
	}
	for _, seq := range []int{5, 7, 9} {
		ev := onlyB.event(t, 5*time.Second)
		var row map[string]any
		if err := json.Unmarshal([]byte(ev.data), &row); err != nil {
			t.Fatal(err)
		}
		if ev.id != strconv.Itoa(seq) || row["sym"] != "B" || row["ts"] != float64(tickT0+2e9+int64(seq-4)*1e6) {
			t.Fatalf("sym=B: event %+v, want seq %d", ev, seq)
		}
	}
	if ev := onlyC.event(t, 5*time.Second); ev.id != "10" {
		t.Fatalf("sym=C: event %+v, want seq 10", ev)
	}

	// from: from that seq on.
	c := dialSSE(t, srv, "/tail?table=tk&from=9", auth...)
	if seq := c.started(t); seq != 9 {
		t.Fatalf("from=9 starts at %d", seq)
	}
	if ev := c.event(t, 5*time.Second); ev.id != "9" || ev.data != want[9] {
		t.Fatalf("from=9: %+v", ev)
	}
}

func TestTailResume(t *testing.T) {
	// 128 rows per segment: the stream crosses several rolls.
	wo := writer.Options{SegmentSize: 4096}
	srv, db := testServer(t, &Options{ILPAddr: "off", Writer: wo})
	writeLines(t, srv, tickLines("rs", 1e9, 10)) // creates the table
	c := dialSSE(t, srv, "/tail?table=rs&from=0")
	c.started(t)
	next := 0
	expect := func(c *sseClient, upto int) {
		t.Helper()
		for ; next < upto; next++ {
			if ev := c.event(t, 5*time.Second); ev.id != strconv.Itoa(next) {
				t.Fatalf("event id %q, want %d", ev.id, next)
			}
		}
	}
	ts := int64(2e9)
	for range 3 {
		writeLines(t, srv, tickLines("rs", ts, 100))
		ts += 1e9
	}
	expect(c, 150)
	c.conn.Close() // mid-stream, past a roll
	writeLines(t, srv, tickLines("rs", ts, 200))
	ts += 1e9

	c = dialSSE(t, srv, "/tail?table=rs&from=0", "Last-Event-ID", strconv.Itoa(next-1))
	if seq := c.started(t); seq != uint64(next) {
		t.Fatalf("resumes at %d, want %d", seq, next)
	}
	expect(c, 400)

	// Closing the server ends the stream.
	done := make(chan error, 1)
	go func() { done <- srv.Close() }()
	for {
		if _, err := c.next(10 * time.Second); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the stream did not end when the server closed")
			}
			break
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return with a stream open")
	}

	// A new server (a new writer) on the same database: rows written while
	// nobody followed come first, then new ones, each once.
	srv2, err := Start(&Options{DB: db, LiveRoot: srv.opts.LiveRoot, ILPAddr: "off", HTTPAddr: "127.0.0.1:0", Writer: wo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv2.Close(); err != nil {
			t.Error(err)
		}
	})
	writeLines(t, srv2, tickLines("rs", ts, 50))
	ts += 1e9
	c = dialSSE(t, srv2, "/tail?table=rs", "Last-Event-ID", strconv.Itoa(next-1))
	c.started(t)
	writeLines(t, srv2, tickLines("rs", ts, 60))
	expect(c, 620)
	if ev, err := c.next(200 * time.Millisecond); err == nil && ev.comment == "" {
		t.Fatalf("an event past the last row: %+v", ev)
	}
}

func TestTailStreamCap(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", MaxStreams: 1})
	writeLines(t, srv, tickLines("cap", 1e9, 2))
	first := dialSSE(t, srv, "/tail?table=cap")
	first.started(t)
	if c := dialSSE(t, srv, "/tail?table=cap"); c.resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second stream: %d, want 503", c.resp.StatusCode)
	}
	first.conn.Close()
	// The slot comes back once the first stream has seen its client go.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := dialSSE(t, srv, "/tail?table=cap")
		if c.resp.StatusCode == http.StatusOK {
			break
		}
		c.conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the slot was not given back: %d", c.resp.StatusCode)
		}
		// A gone client is seen at the stream's next write: give it one.
		writeLines(t, srv, tickLines("cap", time.Now().UnixNano()-tickT0, 1))
		time.Sleep(20 * time.Millisecond)
	}
}

// cutoffs reads tickdb_http_tail_cutoffs_total.
func cutoffs(t *testing.T, srv *Server) float64 {
	t.Helper()
	mfs, err := srv.m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tickdb_http_tail_cutoffs_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no tickdb_http_tail_cutoffs_total")
	return 0
}

func TestTailSlowClientCutOff(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", StreamWriteTimeout: 200 * time.Millisecond})
	writeLines(t, srv, tickLines("slow", 1e6, 1))
	// A client with a tiny receive window that never reads.
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", srv.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := startSSE(t, conn, "/tail?table=slow")
	c.started(t)
	// The writer keeps appending, each request answered promptly, until
	// the stream gives up on the client.
	ts := int64(1e9)
	const batch = 5000
	start := time.Now()
	writes := 0
	for cutoffs(t, srv) == 0 {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("no cutoff after %d writes of %d rows", writes, batch)
		}
		t0 := time.Now()
		writeLines(t, srv, tickLines("slow", ts, batch))
		if d := time.Since(t0); d > 30*time.Second { // a hang, not a timing: a blocked writer never answers
			t.Fatalf("a write took %v with a slow stream open", d)
		}
		ts += batch * 1e6
		writes++
	}
	t.Logf("cut off after %d writes of %d rows", writes, batch)
	for range 3 {
		writeLines(t, srv, tickLines("slow", ts, batch))
		ts += batch * 1e6
	}
	if n := cutoffs(t, srv); n != 1 {
		t.Fatalf("cutoffs %v, want 1", n)
	}
}
