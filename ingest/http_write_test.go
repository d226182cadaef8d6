package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/reader"
)

// One request that interleaves two tables, skips blank and comment lines,
// uses a key as an integer and as a float, adds a column midway, omits
// keys and fills a sym column from a tag and from a string field: every
// row is stored as the line's own rules say, and the line numbers of a bad
// line in it count every line.
func TestHTTPStagedRows(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	body := strings.Join([]string{
		"a,sym=X v=1.5,n=1i,ok=t 10",
		"b,host=h1 load=0.5 10",
		"",
		"# a comment",
		"a,sym=Y v=2i 20", // an integer into the f64 column
		"a,sym=Z n=3i,note=\"halted\" 30",
		"b load=1 20",          // no tag: ""
		"a,sym=W n=4i,v=4 40",  // another key order
		"a,sym=\"q\" ok=f 50",  // a tag value with quotes is a plain symbol
		"a,note=tagged v=6 60", // a tag into the column a string field added
		"b,host=h2 load=2,extra=7i 30",
	}, "\n") + "\n"
	if code, resp, _ := httpDo(t, srv, "POST", "/write", body); code != http.StatusNoContent {
		t.Fatalf("%d %s", code, resp)
	}
	want := map[string][]string{
		"a": {
			"10 sym=X v=1.5 n=1 ok=true note=",
			"20 sym=Y v=2 n=0 ok=false note=",
			"30 sym=Z v=NaN n=3 ok=false note=halted",
			"40 sym=W v=4 n=4 ok=false note=",
			`50 sym="q" v=NaN n=0 ok=false note=`,
			"60 sym= v=6 n=0 ok=false note=tagged",
		},
		"b": {
			"10 host=h1 load=0.5 extra=0",
			"20 host= load=1 extra=0",
			"30 host=h2 load=2 extra=7",
		},
	}
	for table, rows := range want {
		got := tableRows(t, db, table, len(rows), 10*time.Second)
		if strings.Join(got, "\n") != strings.Join(rows, "\n") {
			t.Errorf("table %s:\n%s\nwant:\n%s", table, strings.Join(got, "\n"), strings.Join(rows, "\n"))
		}
	}
	// A bad line in the second table, after blank and comment lines and
	// the first table's lines: its own line number; nothing stored.
	bad := "a,sym=X v=1 100\nb,host=h1 load=1 100\n\n# c\na,sym=X v=2 101\nb,host=h1 load=\"x\" 101\na,sym=X v=3 102\n"
	code, resp, _ := httpDo(t, srv, "POST", "/write", bad)
	var e errBody
	_ = json.Unmarshal([]byte(resp), &e)
	if code != http.StatusBadRequest || e.Line != 6 || !strings.Contains(e.Message, `column "load" of table b is f64`) {
		t.Fatalf("%d %+v, want 400 naming line 6", code, e)
	}
	tableRows(t, db, "a", 6, 10*time.Second)
	tableRows(t, db, "b", 3, 10*time.Second)
	// Of two bad lines in two tables, the first is named.
	bad = "a,sym=X v=1 100\nb,host=h1 load=\"x\" 100\na,sym=X v=\"y\" 101\n"
	if code, resp, _ := httpDo(t, srv, "POST", "/write", bad); code != http.StatusBadRequest || !strings.Contains(resp, `"line":2`) {
		t.Fatalf("%d %s, want 400 naming line 2", code, resp)
	}
}

// A line without a timestamp is stored at the server's clock, so a later
// line of the same request with an older timestamp would be late: the
// check sees it, and nothing of the request is stored (once the first
// line was stored and the second refused).
func TestHTTPStampedThenOlder(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	code, resp, _ := httpDo(t, srv, "POST", "/write", "late,sym=A v=1\nlate,sym=A v=2 1000\n")
	if code != http.StatusBadRequest || !strings.Contains(resp, `"line":2`) || !strings.Contains(resp, "before the last row of table late") {
		t.Fatalf("%d %s, want 400 naming line 2 as late", code, resp)
	}
	if reader.Exists(db, "late") {
		t.Fatal("table late exists after a rejected request")
	}
}

// A request of many slices is applied a slice at a time while TCP lines
// and small requests for other tables go on, and still all or nothing: a
// bad line at its end stores nothing; a good one, with a column added
// midway, stores every row. TCP lines for its own table wait for it and
// are stored after.
func TestHTTPLargeRequestSliced(t *testing.T) {
	srv, db := testServer(t, &Options{})
	const n = 3*txnSlice + 5
	var b bytes.Buffer
	for i := range n {
		if i == 2*txnSlice {
			fmt.Fprintf(&b, "big,sym=S%d k=%di,added=1i %d\n", i%50, i, 1000+i)
			continue
		}
		fmt.Fprintf(&b, "big,sym=S%d k=%di %d\n", i%50, i, 1000+i)
	}
	good := b.String()
	fmt.Fprintf(&b, "big,sym=S0 k=\"bad\" %d\n", 1000+n)
	badBody := b.String()

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var stopOnce sync.Once
	others := 0
	t.Cleanup(func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }) // before the server closes
	wg.Add(1)
	go func() { // small requests to another table meanwhile
		defer wg.Done()
		client := &http.Client{Timeout: time.Minute}
		for i := 0; ; i++ {
			select {
			case <-stop:
				others = i
				return
			default:
			}
			if code, msg, err := post(client, "http://"+srv.HTTPAddr().String()+"/write", strings.NewReader(fmt.Sprintf("other,c=1 k=%di\n", i)), false); err != nil || code != 204 {
				t.Errorf("small request: %d %s %v", code, msg, err)
				others = i
				return
			}
		}
	}()
	code, resp, _ := httpDo(t, srv, "POST", "/write", badBody)
	if code != http.StatusBadRequest || !strings.Contains(resp, fmt.Sprintf(`"line":%d`, n+1)) {
		t.Fatalf("%d %s, want 400 naming line %d", code, resp, n+1)
	}
	if reader.Exists(db, "big") {
		t.Fatal("table big exists after a rejected request")
	}
	// A TCP line for the request's table, sent once the request has
	// begun storing (the table exists): it waits for the request to end.
	// Were it stored in between, the request's later rows would be late
	// (no late window) and the request would fail half stored.
	c := dial(t, srv)
	tcpDone := make(chan struct{})
	go func() {
		defer close(tcpDone)
		for !reader.Exists(db, "big") {
			time.Sleep(100 * time.Microsecond)
		}
		fmt.Fprintf(c, "big,sym=T k=-1i %d\n", 1000+n)
	}()
	code, resp, _ = httpDo(t, srv, "POST", "/write", good)
	<-tcpDone
	if code != http.StatusNoContent {
		t.Fatalf("%d %s", code, resp)
	}
	stopOnce.Do(func() { close(stop) })
	wg.Wait()
	rows := tableRows(t, db, "big", n+1, time.Minute)
	for i := range n {
		added := 0
		if i == 2*txnSlice {
			added = 1
		}
		if want := fmt.Sprintf("%d sym=S%d k=%d added=%d", 1000+i, i%50, i, added); rows[i] != want {
			t.Fatalf("row %d: %q, want %q", i, rows[i], want)
		}
	}
	tableRows(t, db, "other", others, time.Minute)
	t.Logf("%d small requests to another table during the two large ones", others)
}

// What all write requests together hold is bounded: a request that alone
// needs more than MaxWriteMemory is answered 413, one that finds the
// memory held by others is answered 503 with Retry-After after a short
// wait; neither stores anything, and a retry once the memory is free
// succeeds.
func TestHTTPWriteMemoryBound(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off", MaxWriteMemory: 1 << 20, memoryWait: 200 * time.Millisecond})
	lines := func(table string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%s,sym=S%d v=%d.5 %d\n", table, i%10, i, 1000+i)
		}
		return b.String()
	}
	code, resp, hdr := httpDo(t, srv, "POST", "/write", lines("huge", 100_000))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(resp, "--max-write-memory") || hdr.Get("Retry-After") != "" {
		t.Fatalf("%d %s, want 413 naming --max-write-memory", code, resp)
	}
	// A request that holds memory: its body stalls after 20,000 lines.
	held := dialHTTP(t, srv)
	fmt.Fprintf(held, "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n%s", lines("held", 20_000))
	deadline := time.Now().Add(time.Minute)
	for counterValue(srv.m.writeMem) < 700<<10 {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled request holds %v bytes, want ≥ 700 KiB", counterValue(srv.m.writeMem))
		}
		time.Sleep(5 * time.Millisecond)
	}
	second := lines("second", 20_000)
	code, resp, hdr = httpDo(t, srv, "POST", "/write", second)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") != "1" || !strings.Contains(resp, "retry") {
		t.Fatalf("%d %s (Retry-After %q), want 503 with Retry-After: 1", code, resp, hdr.Get("Retry-After"))
	}
	held.Close() // its request fails: nothing stored, its memory back
	for counterValue(srv.m.writeMem) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("write memory %v after every request ended, want 0", counterValue(srv.m.writeMem))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, resp, _ = httpDo(t, srv, "POST", "/write", second); code != http.StatusNoContent {
		t.Fatalf("retry: %d %s", code, resp)
	}
	tableRows(t, db, "second", 20_000, time.Minute)
	for _, name := range []string{"huge", "held"} {
		if reader.Exists(db, name) {
			t.Errorf("table %s exists after its request failed", name)
		}
	}
}

func dialHTTP(t *testing.T, srv *Server) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", srv.HTTPAddr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The body limits: on the wire (MaxBody) and decompressed
// (MaxDecompressed), each a 413 that names its flag, nothing stored.
func TestHTTPBodyLimits(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off", MaxBody: 64 << 10, MaxDecompressed: 256 << 10})
	line := "lim,sym=A v=1\n"
	code, resp, _ := httpDo(t, srv, "POST", "/write", strings.Repeat(line, 100<<10/len(line)))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(resp, "--max-body") {
		t.Fatalf("wire: %d %s", code, resp)
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	io.WriteString(zw, strings.Repeat(line, 300<<10/len(line)))
	zw.Close()
	code, resp, _ = httpDo(t, srv, "POST", "/write", zb.String(), "Content-Encoding", "gzip")
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(resp, "--max-body-decompressed") {
		t.Fatalf("decompressed: %d %s", code, resp)
	}
	if reader.Exists(db, "lim") {
		t.Fatal("table lim exists")
	}
	// Under both limits: stored.
	code, resp, _ = httpDo(t, srv, "POST", "/write", strings.Repeat(line, 4000), "Content-Encoding", "identity")
	if code != http.StatusNoContent {
		t.Fatalf("%d %s", code, resp)
	}
}

// Stalled requests are cut off after the read timeout, whatever they
// declared, and store nothing; a GET /tail stream, which only writes,
// outlives the read timeout many times over.
func TestHTTPReadTimeout(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off", ReadTimeout: 300 * time.Millisecond, tailHeartbeat: 50 * time.Millisecond})
	writeLines(t, srv, tickLines("tk", 1e9, 2))
	sse := dialSSE(t, srv, "/tail?table=tk")
	sse.started(t)
	var cuts []<-chan error
	for k := range stallKinds {
		ch, err := stall(srv.HTTPAddr().String(), k, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cuts = append(cuts, ch)
	}
	for _, ch := range cuts {
		if err := <-ch; err != nil {
			t.Error(err)
		}
	}
	if reader.Exists(db, "stall") {
		t.Fatal("a stalled request stored rows")
	}
	time.Sleep(time.Second) // the stream stays, well past the read timeout
	writeLines(t, srv, tickLines("tk", 2e9, 1))
	for {
		ev := sse.event(t, 10*time.Second)
		if strings.Contains(ev.data, "price") {
			break
		}
	}
}

// The HTTP connection limit: a connection over it reads a 503 with
// Retry-After and is closed; once a connection closes, a new one is
// served.
func TestHTTPConnLimit(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", MaxHTTPConns: 3})
	var held []net.Conn
	for range 3 {
		held = append(held, dialHTTP(t, srv))
	}
	deadline := time.Now().Add(time.Minute)
	for counterValue(srv.m.httpConns) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%v connections open, want 3", counterValue(srv.m.httpConns))
		}
		time.Sleep(5 * time.Millisecond)
	}
	over := dialHTTP(t, srv)
	_ = over.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(over), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "--max-http-conns") {
		t.Fatalf("over the limit: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if counterValue(srv.m.httpRefused) != 1 {
		t.Fatalf("refused %v, want 1", counterValue(srv.m.httpRefused))
	}
	held[0].Close()
	for counterValue(srv.m.httpConns) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%v connections open, want 2", counterValue(srv.m.httpConns))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, resp, _ := httpDo(t, srv, "POST", "/write", "cl,sym=A v=1\n"); code != http.StatusNoContent {
		t.Fatalf("under the limit again: %d %s", code, resp)
	}
}

// Staging a line of a known table and keys allocates nothing.
func TestStageAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("the race detector allocates")
	}
	var lines [][]byte
	for i := range 1000 {
		lines = append(lines, fmt.Appendf(nil, "ticks,sym=S%d price=%d.25,size=%di %d", i%50, i, i, 1000+i))
	}
	var p lineproto.Parser
	var l lineproto.Line
	st := newStage(nil)
	n := uint64(0)
	stageAll := func() {
		for _, line := range lines {
			if _, err := p.Parse(line, &l); err != nil {
				t.Fatal(err)
			}
			n++
			if _, err := st.add(&l, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	stageAll() // the table, its slots and symbols
	// Room for every run to come, so that no block is made during them.
	tb := st.tables[0]
	tb.blocks[len(tb.blocks)-1] = append(make([]byte, 0, 80*1000*29), tb.blocks[len(tb.blocks)-1]...)
	if a := testing.AllocsPerRun(20, stageAll); a != 0 {
		t.Errorf("%v allocations per 1,000 lines staged", a)
	}
	if st.rows != 22*1000 {
		t.Fatalf("%d rows staged, want %d", st.rows, 22*1000)
	}
}
