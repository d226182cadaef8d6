package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// testServer starts a server on 127.0.0.1 ephemeral ports over a fresh
// database; it is closed (and the table verified) when the test ends.
func testServer(t testing.TB, o *Options) (*Server, string) {
	t.Helper()
	db, live := testutil.DB(t)
	if o == nil {
		o = &Options{}
	}
	o.DB = db
	o.LiveRoot = live
	if o.ILPAddr == "" {
		o.ILPAddr = "127.0.0.1:0"
	}
	if o.HTTPAddr == "" {
		o.HTTPAddr = "127.0.0.1:0"
	}
	srv, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		tablecheck.VerifyAll(t, db)
	})
	return srv, db
}

// counterValue reads a counter or gauge.
func counterValue(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// dial connects to the server's line-protocol port.
func dial(t testing.TB, srv *Server) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", srv.ILPAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// tableRows reads every row of table as text lines "ts col=value ..." in
// schema order, symbols by name, once count rows are visible (or fails
// after the timeout).
func tableRows(t *testing.T, db, table string, count int, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rows, err := tablecheck.Rows(db, table)
		if err == nil && len(rows) >= count {
			if len(rows) > count {
				t.Fatalf("table %s: %d rows, want %d:\n%s", table, len(rows), count, strings.Join(rows, "\n"))
			}
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("table %s: want %d rows within %v, have %d (err %v)", table, count, timeout, len(rows), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rejected reads the rejected-lines counter for reason.
func rejected(srv *Server, table, reason string) float64 {
	return counterValue(srv.m.rejectedV.WithLabelValues(table, reason))
}

func TestListenerStoresLines(t *testing.T) {
	srv, db := testServer(t, nil)
	c := dial(t, srv)
	in := "trades,sym=AAPL,venue=XNAS price=189.25,size=100i,buy=t 1700000000000000001\n" +
		"# a comment\n\r\n" +
		"trades,sym=MSFT price=410.5,size=7u 1700000000000000002\r\n" +
		"trades,venue=XLON,sym=New\\ York\\,\\=x size=3i,price=1e3 1700000000000000003\n" +
		"trades,sym=AAPL buy=false 1700000000000000004"
	if _, err := io.WriteString(c, in); err != nil {
		t.Fatal(err)
	}
	c.CloseWrite() // EOF: the last line has no '\n' and still counts
	got := tableRows(t, db, "trades", 4, 10*time.Second)
	want := []string{
		"1700000000000000001 sym=AAPL venue=XNAS price=189.25 size=100 buy=true",
		"1700000000000000002 sym=MSFT venue= price=410.5 size=7 buy=false",
		"1700000000000000003 sym=New York,=x venue=XLON price=1000 size=3 buy=false",
		"1700000000000000004 sym=AAPL venue= price=NaN size=0 buy=false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestListenerPartialWritesByteByByte(t *testing.T) {
	srv, db := testServer(t, nil)
	c := dial(t, srv)
	c.SetNoDelay(true)
	var in bytes.Buffer
	for i := range 20 {
		fmt.Fprintf(&in, "ticks,sym=S%d px=%d.5,n=%di %d\n", i%3, i, i, 1000+i)
	}
	for _, b := range in.Bytes() {
		if _, err := c.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Microsecond)
	}
	got := tableRows(t, db, "ticks", 20, 10*time.Second)
	for i, row := range got {
		want := fmt.Sprintf("%d sym=S%d px=%d.5 n=%d", 1000+i, i%3, i, i)
		if row != want {
			t.Fatalf("row %d: %q, want %q", i, row, want)
		}
	}
}

func TestListenerBadLinesSkipped(t *testing.T) {
	srv, db := testServer(t, &Options{LineLimit: 64 << 10})
	c := dial(t, srv)
	w := bufio.NewWriter(c)
	fmt.Fprintf(w, "t,sym=A v=1 1\n")
	fmt.Fprintf(w, "t,sym=A v=\"a string\" 2\n")                   // a string (a symbol) into the f64 column
	fmt.Fprintf(w, "t,sym=A v=1,extra=2 3\n")                      // a new field: adds column extra
	fmt.Fprintf(w, "t,sym=A v=2i 4\n")                             // i64 into f64: stored (converted)
	fmt.Fprintf(w, "t,sym=A v=t 5\n")                              // bool into f64: the cached key order, the wrong type
	fmt.Fprintf(w, "t,sym=A v=abc 5\n")                            // bad number
	fmt.Fprintf(w, "t,sym=%s v=9 6\n", strings.Repeat("x", 1<<20)) // 1 MiB line: over the limit
	fmt.Fprintf(w, "t,sym=B v=3 7\n")
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(i*131 + i>>3)
	}
	w.Write(junk)
	fmt.Fprintf(w, "\nt,sym=C v=4 8\n")
	fmt.Fprintf(w, "t,sym=C v=5 7\n") // out of order
	fmt.Fprintf(w, "t,sym=D v=6 9\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := tableRows(t, db, "t", 6, 10*time.Second)
	want := []string{"1 sym=A v=1 extra=NaN", "3 sym=A v=1 extra=2", "4 sym=A v=2 extra=NaN", "7 sym=B v=3 extra=NaN", "8 sym=C v=4 extra=NaN", "9 sym=D v=6 extra=NaN"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, tc := range []struct {
		table, reason string
		n             float64
	}{{"t", "unknown_column", 0}, {"", "too_long", 1}, {"t", "out_of_order", 1}, {"t", "value", 1}, {"t", "type_mismatch", 2}} {
		if v := rejected(srv, tc.table, tc.reason); v != tc.n {
			t.Errorf("rejected{table=%q,reason=%s} = %v, want %v", tc.table, tc.reason, v, tc.n)
		}
	}
	// The connection is still open and still served.
	fmt.Fprintf(c, "t,sym=E v=7 10\n")
	tableRows(t, db, "t", 7, 10*time.Second)
}

func TestListenerManyConnectionsKeepOrder(t *testing.T) {
	const conns, rows = 200, 100
	srv, db := testServer(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", srv.ILPAddr().String(), 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for k := range rows {
				// Several writes per connection, interleaving with the others.
				if _, err := fmt.Fprintf(c, "m,conn=c%d k=%di\n", i, k); err != nil {
					errs <- err
					return
				}
				if k%10 == 9 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := tableRows(t, db, "m", conns*rows, 30*time.Second)
	next := map[string]int{}
	var lastTs int64
	for _, row := range got {
		var ts int64
		var conn string
		var k int
		if _, err := fmt.Sscanf(strings.Replace(row, "conn=", "", 1), "%d %s k=%d", &ts, &conn, &k); err != nil {
			t.Fatalf("row %q: %v", row, err)
		}
		if ts < lastTs {
			t.Fatalf("server-stamped ts went back: %d after %d", ts, lastTs)
		}
		lastTs = ts
		if k != next[conn] {
			t.Fatalf("connection %s: row k=%d, want k=%d (order lost)", conn, k, next[conn])
		}
		next[conn]++
	}
	if len(next) != conns {
		t.Fatalf("%d connections stored, want %d", len(next), conns)
	}
}

func TestListenerIdleTimeout(t *testing.T) {
	srv, _ := testServer(t, &Options{IdleTimeout: 100 * time.Millisecond})
	start := time.Now() // before the dial: the server's clock starts at its accept
	c := dial(t, srv)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err != io.EOF {
		t.Fatalf("read = %d, %v; want EOF from the idle timeout", n, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", d)
	}
	if v := counterValue(srv.m.connsClosed.WithLabelValues("idle timeout")); v != 1 {
		t.Fatalf("idle closes counted %v, want 1", v)
	}
}

func TestListenerConnectionLimit(t *testing.T) {
	srv, db := testServer(t, &Options{MaxConns: 3})
	var cs []*net.TCPConn
	for range 3 {
		c := dial(t, srv)
		fmt.Fprintf(c, "x v=1\n") // make sure each is accepted before the next
		cs = append(cs, c)
	}
	tableRows(t, db, "x", 3, 10*time.Second)
	extra := dial(t, srv)
	extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("connection over the limit: read %d, %v; want it closed", n, err)
	}
	if v := counterValue(srv.m.connsRefused); v != 1 {
		t.Fatalf("refused = %v, want 1", v)
	}
	// The others are unaffected.
	fmt.Fprintf(cs[0], "x v=2\n")
	tableRows(t, db, "x", 4, 10*time.Second)
}

// A writer that cannot keep up makes the event loop stop reading: the
// client blocks in write once the kernel's socket buffers are full, and the
// server's memory stays bounded by its rings, not by what the client sends.
func TestListenerBackpressure(t *testing.T) {
	srv, db := testServer(t, &Options{RingSlots: 2, BatchBytes: 4 << 10, slowApply: 5 * time.Millisecond})
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc
	c := dial(t, srv)
	line := []byte("bp,sym=AAPL px=189.25,qty=100i\n")
	buf := bytes.Repeat(line, 2048)
	written := 0
	c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	for {
		n, err := c.Write(buf)
		written += n
		if err != nil {
			break // the deadline: the server stopped reading
		}
	}
	runtime.ReadMemStats(&ms)
	grew := int64(ms.HeapAlloc) - int64(heap0)
	t.Logf("client wrote %d MiB in 2 s; server heap grew %d KiB; backpressure events %v",
		written>>20, grew>>10, counterValue(srv.m.backpress))
	if written > 64<<20 {
		t.Fatalf("client wrote %d MiB against a writer that drains ~1 MiB/s: the server is buffering without bound", written>>20)
	}
	if grew > 32<<20 {
		t.Fatalf("server heap grew %d MiB", grew>>20)
	}
	if counterValue(srv.m.backpress) == 0 {
		t.Fatal("the event loop never waited for the writer")
	}
	c.Close()
	// Whatever was accepted is stored in order; Close drains it.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := tablecheck.Rows(db, "bp")
	if err != nil || len(rows) == 0 || len(rows) > written/len(line) {
		t.Fatalf("%d rows stored of %d written (%v)", len(rows), written/len(line), err)
	}
}

// A line break escaped with a backslash (as QuestDB's clients write one in
// a symbol) does not end the line, over TCP and HTTP alike; \n and \r
// (as lineproto.Encoder, and so tail --format ilp, writes one) stand for
// LF and CR.
func TestEscapedLineBreak(t *testing.T) {
	srv, db := testServer(t, nil)
	c := dial(t, srv)
	io.WriteString(c, "nl,sym=a\\\nb v=1 1\nnl,sym=c v=2 2\n")
	tableRows(t, db, "nl", 2, 10*time.Second) // before the HTTP row, whose ts is later
	if code, resp, _ := httpDo(t, srv, "POST", "/write", "nl,sym=d\\\ne v=3 3\nnl,sym=f\\ng\\rh v=4 4\n"); code != 204 {
		t.Fatalf("%d %s", code, resp)
	}
	got := tableRows(t, db, "nl", 4, 10*time.Second)
	want := []string{"1 sym=a\nb v=1", "2 sym=c v=2", "3 sym=d\ne v=3", "4 sym=f\ng\rh v=4"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

// A 1 MiB line under a limit raised past it is read whole and rejected for
// what it holds (a symbol over the dictionary's limit), not for its length;
// the lines around it are stored.
func TestListenerHugeLineUnderRaisedLimit(t *testing.T) {
	srv, db := testServer(t, &Options{LineLimit: 2 << 20})
	c := dial(t, srv)
	fmt.Fprintf(c, "big,sym=a v=0 1\nbig,sym=%s v=1 2\nbig,sym=small v=2 3\n", strings.Repeat("x", 1<<20))
	rows := tableRows(t, db, "big", 2, 10*time.Second)
	if rows[0] != "1 sym=a v=0" || rows[1] != "3 sym=small v=2" {
		t.Fatalf("rows %q", rows)
	}
	if v := rejected(srv, "big", "value"); v != 1 {
		t.Fatalf("rejected{big,value} = %v, want 1", v)
	}
}
