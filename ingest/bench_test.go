package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/loadgen"
	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// Ingestion over real sockets on 127.0.0.1, the load generator in the same
// process as the server (so both share this machine's two cores).
//
//	go test -run '^$' -bench 'Ingest' -benchtime 2000000x -count 3 ./ingest
//
// BenchmarkIngestTCP sends b.N pre-encoded tick lines over conns
// connections as fast as the server reads and stops the clock when the
// last row is visible to a reader.
func BenchmarkIngestTCP(b *testing.B) {
	for _, conns := range []int{1, 8} {
		for _, ts := range []bool{false, true} {
			if ts && conns > 1 {
				continue // one table, several clients' clocks: rows would arrive out of order
			}
			b.Run(fmt.Sprintf("conns=%d/ts=%v", conns, ts), func(b *testing.B) { benchIngest(b, conns, ts) })
		}
	}
}

func benchIngest(b *testing.B, conns int, withTs bool) {
	srv, db := testServer(b, &Options{})
	data, err := loadgen.Ticks("ticks", b.N, 500, 1, withTs)
	if err != nil {
		b.Fatal(err)
	}
	parts := loadgen.Split(data, conns)
	b.SetBytes(int64(len(data) / b.N))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := loadgen.Send(srv.ILPAddr().String(), parts, 256<<10); err != nil {
		b.Fatal(err)
	}
	var r *reader.Reader
	for r == nil {
		r, _ = reader.Open(db, "ticks", nil)
	}
	defer r.Close()
	for r.Len() < uint64(b.N) {
		time.Sleep(20 * time.Microsecond)
	}
	el := time.Since(start)
	b.StopTimer()
	if got := r.Len(); got != uint64(b.N) {
		b.Fatalf("%d rows, want %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "lines/s")
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/line")
}

// BenchmarkIngestLatency offers lines at a fixed rate on one connection,
// each carrying its send time, and times each line from the client's
// write to the moment a tailing reader in another goroutine sees its row:
// socket, event loop, parse, queue, writer, publish and the reader's poll.
//
//	go test -run '^$' -bench 'IngestLatency' -benchtime 400000x ./ingest
func BenchmarkIngestLatency(b *testing.B) {
	for _, rate := range []int{100_000, 1_000_000} {
		b.Run("rate="+strconv.Itoa(rate), func(b *testing.B) {
			srv, db := testServer(b, &Options{})
			burst := max(1, rate/20_000) // a write every 50 µs
			// Create the table first so the reader can tail from row 0.
			c, err := net.Dial("tcp", srv.ILPAddr().String())
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "lat,sym=S t0=0i\n")
			c.Close()
			var r *reader.Reader
			for r == nil {
				r, _ = reader.Open(db, "lat", nil)
			}
			defer r.Close()
			// Let the preparer fault in the table's first live slots (a
			// fresh table's first second, not its steady state).
			time.Sleep(time.Second)
			t0 := r.Schema().ColAt(r.Schema().Index("t0"))
			h := benchutil.NewHist()
			done := make(chan struct{})
			go func() {
				defer close(done)
				tail := r.Tail(1, &reader.Backoff{MaxSleep: 20 * time.Microsecond})
				ctx := context.Background()
				for range b.N {
					row, _, err := tail.Wait(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					benchutil.Record(h, time.Now().UnixNano()-row.I64(t0))
				}
			}()
			srv.m.resetReadToVisible() // not the batch that created the table
			b.ResetTimer()
			err = loadgen.Paced(srv.ILPAddr().String(), b.N, rate, burst, func(dst []byte, i int, now int64) []byte {
				dst = append(dst, "lat,sym=S t0="...)
				dst = strconv.AppendInt(dst, now, 10)
				return append(dst, "i\n"...)
			})
			if err != nil {
				b.Fatal(err)
			}
			<-done
			b.StopTimer()
			benchutil.ReportHist(b, h, "send-to-seen-", "ns", 1)
			benchutil.ReportHist(b, srv.ReadToVisible(), "read-to-visible-", "ns", 1)
		})
	}
}

// BenchmarkIdleConnections holds 1,000 connections that each sent one line
// and reports the process's RSS growth (the worst iteration).
//
//	go test -run '^$' -bench IdleConnections -benchtime 3x ./ingest
func BenchmarkIdleConnections(b *testing.B) {
	srv, db := testServer(b, &Options{Writer: writer.Options{SegmentSize: 1 << 20}})
	c := dial(b, srv)
	fmt.Fprintf(c, "idle,conn=first v=1i\n")
	for n, _ := tablecheck.Rows(db, "idle"); len(n) == 0; n, _ = tablecheck.Rows(db, "idle") {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the preparer readies the next slots
	var worst int64
	for b.Loop() {
		runtime.GC()
		rss0 := benchutil.RSSKiB()
		cs := openIdle(b, srv, 1000)
		worst = max(worst, benchutil.RSSKiB()-rss0)
		for _, c := range cs {
			c.Close()
		}
	}
	b.ReportMetric(float64(worst)/1024, "MiB-rss-growth")
}

func openIdle(tb testing.TB, srv *Server, n int) []net.Conn {
	cs := make([]net.Conn, 0, n)
	for i := range n {
		c, err := net.Dial("tcp", srv.ILPAddr().String())
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(c, "idle,conn=c%d v=1i\n", i)
		cs = append(cs, c)
	}
	return cs
}

// 1,000 idle connections cost little memory: each holds no buffer between
// reads.
func TestIdleConnectionsMemory(t *testing.T) {
	if testutil.Race {
		t.Skip("the race detector's shadow memory makes RSS meaningless")
	}
	// Small segments, and the table first: the live slots the preparer
	// faults in are shared memory, not the connections' cost.
	srv, db := testServer(t, &Options{Writer: writer.Options{SegmentSize: 1 << 20}})
	c := dial(t, srv)
	fmt.Fprintf(c, "idle,conn=first v=1i\n")
	tableRows(t, db, "idle", 1, time.Minute)
	time.Sleep(200 * time.Millisecond) // the preparer readies the next slots
	runtime.GC()
	rss0 := benchutil.RSSKiB()
	cs := openIdle(t, srv, 1000)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	tableRows(t, db, "idle", 1001, time.Minute)
	grew := benchutil.RSSKiB() - rss0
	t.Logf("1000 idle connections: RSS grew %d KiB", grew)
	if grew > 64<<10 {
		t.Fatalf("RSS grew %d MiB for 1000 idle connections, want ≤ 64 MiB", grew>>10)
	}
	if v := counterValue(srv.m.conns); v != 1001 {
		t.Fatalf("connections gauge %v, want 1000", v)
	}
}

// BenchmarkHTTPWrite posts bodies of lines tick lines (server-stamped, so
// always in order) to POST /write, one request at a time, each answered
// 204 once durable; an op is one request. Reports rows/s, ns/row, the
// process's CPU time per row and its allocations per row (server and
// client).
//
//	go test -run '^$' -bench 'HTTPWrite' -benchtime 20x -count 3 ./ingest
func BenchmarkHTTPWrite(b *testing.B) {
	for _, lines := range []int{1_000, 100_000, 1_000_000} {
		for _, enc := range []string{"identity", "gzip"} {
			b.Run(fmt.Sprintf("lines=%d/enc=%s", lines, enc), func(b *testing.B) { benchHTTPWrite(b, lines, enc) })
		}
	}
}

func benchHTTPWrite(b *testing.B, lines int, enc string) {
	srv, _ := testServer(b, &Options{ILPAddr: "off"})
	data, err := loadgen.Ticks("ticks", lines, 500, 1, false)
	if err != nil {
		b.Fatal(err)
	}
	body := data
	if enc == "gzip" {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		zw.Write(data)
		zw.Close()
		body = zb.Bytes()
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	url := "http://" + srv.HTTPAddr().String() + "/write"
	post := func() {
		req, err := http.NewRequest("POST", url, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if enc == "gzip" {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			b.Fatalf("%d %s", resp.StatusCode, msg)
		}
	}
	post() // creates the table and its symbols
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	n := 0
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	c0 := benchutil.ProcCPU()
	for b.Loop() {
		post()
		n += lines
	}
	cpu := benchutil.ProcCPU() - c0
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/row")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/row")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(n), "allocs/row")
}

// BenchmarkHTTPWriteUnderLoad times a small writer's requests (10 lines
// each, b.N of them, one at a time, each from send to 204) while another
// client posts bodies of big lines (gzip) to another table back to back,
// and reports the small writer's p50, p99 and worst, and the longest the
// writer goroutine spent on one request (the histogram bucket's bound).
//
//	go test -run '^$' -bench 'HTTPWriteUnderLoad' -benchtime 300x ./ingest
func BenchmarkHTTPWriteUnderLoad(b *testing.B) {
	for _, big := range []int{1_000_000, 4_000_000} {
		b.Run(fmt.Sprintf("big=%d", big), func(b *testing.B) {
			srv, _ := testServer(b, &Options{ILPAddr: "off", Writer: writer.Options{SegmentSize: 64 << 20}})
			url := "http://" + srv.HTTPAddr().String() + "/write"
			var zb bytes.Buffer
			zw := gzip.NewWriter(&zb)
			data, err := loadgen.Ticks("big", big, 5000, 1, false)
			if err != nil {
				b.Fatal(err)
			}
			zw.Write(data)
			zw.Close()
			data = nil
			stop := make(chan struct{})
			bigDone := make(chan int)
			go func() {
				n := 0
				client := &http.Client{Timeout: 5 * time.Minute}
				for {
					select {
					case <-stop:
						bigDone <- n
						return
					default:
					}
					if code, msg, err := post(client, url, bytes.NewReader(zb.Bytes()), true); err != nil || code != 204 {
						b.Errorf("big: %d %s %v", code, msg, err)
					}
					n++
				}
			}()
			client := &http.Client{Timeout: 5 * time.Minute}
			h := benchutil.NewHist()
			var body []byte
			k := 0
			time.Sleep(time.Second) // the big client under way
			for b.Loop() {
				body = body[:0]
				for range 10 {
					body = fmt.Appendf(body, "small,c=1 k=%di\n", k)
					k++
				}
				t0 := time.Now()
				if code, msg, err := post(client, url, bytes.NewReader(body), false); err != nil || code != 204 {
					b.Fatalf("small: %d %s %v", code, msg, err)
				}
				benchutil.Record(h, time.Since(t0).Nanoseconds())
			}
			close(stop)
			n := <-bigDone
			benchutil.ReportHist(b, h, "small-", "ns", 1)
			b.ReportMetric(float64(n), "big-requests")
			b.ReportMetric(histMax(b, srv.m.writeApply), "apply-max-s")
		})
	}
}

// histMax is the upper bound of the highest non-empty bucket of h.
func histMax(tb testing.TB, h prometheus.Histogram) float64 {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		tb.Fatal(err)
	}
	var prev uint64
	top := 0.0
	for _, bk := range m.GetHistogram().GetBucket() {
		if bk.GetCumulativeCount() > prev {
			top = bk.GetUpperBound()
		}
		prev = bk.GetCumulativeCount()
	}
	return top
}
