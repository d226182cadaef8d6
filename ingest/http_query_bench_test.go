package ingest

import (
	"bytes"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/loadgen"
)

// BenchmarkHTTPQuery is GET /query of a whole table of 1 M ticks of 100
// symbols (internal/harness/gen through loadgen, written over POST /write
// first), csv and json, ts as rfc3339 (the default) and ns, end to end
// on 127.0.0.1: a server with the default options, one client on a
// kept-alive connection that reads each body to the end and discards
// it. An op is one request; rows/s and ns/row count the table's rows,
// B/row the body's size. Client and server share the machine's cores:
// cpu-ns/row is the CPU time of the whole process (server and client,
// user and system) per row, less disturbed than the clock by other work
// on the machine.
//
//	go test -run '^$' -bench 'HTTPQuery' -count 5 ./ingest/ > new.txt; benchstat old.txt new.txt
func BenchmarkHTTPQuery(b *testing.B) {
	const n = 1_000_000
	srv, _ := testServer(b, &Options{ILPAddr: "off"})
	data, err := loadgen.Ticks("ticks", n, 100, 1, true)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	base := "http://" + srv.HTTPAddr().String()
	for _, part := range loadgen.Split(data, 10) {
		resp, err := client.Post(base+"/write", "text/plain", bytes.NewReader(part))
		if err != nil {
			b.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			b.Fatalf("write: %d %s", resp.StatusCode, msg)
		}
	}
	data = nil
	get := func(b *testing.B, url string, w io.Writer) {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(resp.Body)
			b.Fatalf("%d %s", resp.StatusCode, msg)
		}
		if _, err := io.Copy(w, resp.Body); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range []string{"csv", "json"} {
		for _, ts := range []string{"rfc3339", "ns"} {
			b.Run("format="+f+"/ts="+ts, func(b *testing.B) {
				url := base + "/query?table=ticks&format=" + f + "&ts=" + ts
				var first bytes.Buffer
				get(b, url, &first)
				lines := bytes.Count(first.Bytes(), []byte{'\n'})
				if f == "csv" {
					lines-- // the header row
				}
				if lines != n {
					b.Fatalf("%d rows, want %d", lines, n)
				}
				size := first.Len()
				first = bytes.Buffer{}
				b.ReportAllocs()
				rows := 0
				cpu0 := processCPU(b)
				for b.Loop() {
					body := countWriter{w: io.Discard}
					get(b, url, &body)
					if body.n != int64(size) {
						b.Fatalf("body of %d bytes, the first was %d", body.n, size)
					}
					rows += n
				}
				b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
				b.ReportMetric(float64(size)/n, "B/row")
				b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(rows), "cpu-ns/row")
			})
		}
	}
	// A page of the console's Query panel: the first 100 rows (and one
	// more, to know there is a next page) oldest first, and the newest
	// newest first (order=desc reads back from the end in time windows),
	// of the whole table and of one symbol.
	sym := "sym=" + gen.Symbols(100)[50] // one of the less active
	for _, q := range []string{"limit=101", "order=desc&limit=101", sym + "&limit=101", sym + "&order=desc&limit=101"} {
		b.Run("page/"+q, func(b *testing.B) {
			url := base + "/query?table=ticks&format=json&" + q
			var first bytes.Buffer
			get(b, url, &first)
			if lines := bytes.Count(first.Bytes(), []byte{'\n'}); lines != 101 {
				b.Fatalf("%s: %d rows, want 101", q, lines)
			}
			b.ReportAllocs()
			for b.Loop() {
				get(b, url, io.Discard)
			}
		})
	}
}

// processCPU is the user and system CPU time the process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
