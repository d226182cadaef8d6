package ingest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/loadgen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// idleReaders is the readers the pool holds idle for table.
func idleReaders(srv *Server, table string) []*pooledReader {
	p := srv.readers
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*pooledReader(nil), p.idle[table]...)
}

// The endpoints that stream rows (/query in csv and json, /bars,
// /latest) read their table through one pooled reader, one request after
// another: the first opens it, the others take it back from the pool,
// and it sees the rows written between them.
func TestHTTPQueryReusesReader(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	writeLines(t, srv, tickLines("rq", 0, 100))
	if code, body, _ := httpDo(t, srv, "GET", "/query?table=rq&format=csv", ""); code != 200 || strings.Count(body, "\n") != 101 {
		t.Fatalf("first query: %d, %d lines", code, strings.Count(body, "\n"))
	}
	idle := idleReaders(srv, "rq")
	if len(idle) != 1 {
		t.Fatalf("%d idle readers after a query, want 1", len(idle))
	}
	first := idle[0]
	for i, path := range []string{
		"/query?table=rq&format=json",
		"/query?table=rq&format=csv&sym=A&ts=ns",
		"/bars?table=rq&sym=A&interval=1s",
		"/latest?table=rq",
		"/query?table=rq&format=csv",
	} {
		if i == 3 {
			writeLines(t, srv, tickLines("rq", 100e6, 10)) // after the first 100 rows' 100 ms
		}
		code, body, _ := httpDo(t, srv, "GET", path, "")
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		if idle := idleReaders(srv, "rq"); len(idle) != 1 || idle[0] != first {
			t.Fatalf("%s: idle readers %v, want only the first request's %p: a reader opened again", path, idle, first)
		}
		if i == 4 && strings.Count(body, "\n") != 111 {
			t.Fatalf("%s after 10 more rows: %d lines, want 111 (the header and 110 rows)", path, strings.Count(body, "\n"))
		}
	}
}

// A pooled reader sees the columns a write added since its last
// request: /query's header and rows carry them.
func TestHTTPQueryPooledReaderNewColumn(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	writeLines(t, srv, "nc,sym=A px=1.5 1700000000000000000\n")
	if code, body, _ := httpDo(t, srv, "GET", "/query?table=nc&format=csv&ts=ns", ""); code != 200 || !strings.HasPrefix(body, "ts,sym,px\n") {
		t.Fatalf("first query: %d %q", code, body)
	}
	writeLines(t, srv, "nc,sym=A px=3.5,qty=7i 1700000001000000000\n")
	code, body, _ := httpDo(t, srv, "GET", "/query?table=nc&format=csv&ts=ns", "")
	if code != 200 || len(idleReaders(srv, "nc")) != 1 {
		t.Fatalf("second query: %d %q", code, body)
	}
	if !strings.HasPrefix(body, "ts,sym,px,qty\n1700000000000000000,A,1.5,") || !strings.HasSuffix(body, "\n1700000001000000000,A,3.5,7\n") {
		t.Fatalf("after a column was added: %q, want qty in the header and the new row", body)
	}
}

// discardResponse is an http.ResponseWriter that keeps nothing.
type discardResponse struct {
	hdr  http.Header
	code int
	n    int64
}

func (d *discardResponse) Header() http.Header { return d.hdr }
func (d *discardResponse) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discardResponse) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	return len(p), nil
}

// A GET /query allocates per request, not per row or per write: 100
// times the rows costs about the same allocations, in csv and json,
// whichever ts format (the handler called directly, its output
// discarded).
func TestHTTPQueryAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	data, err := loadgen.Ticks("qa", 100_000, 100, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	writeLines(t, srv, string(data))
	h := srv.Handler()
	allocs := func(params string, rows int) float64 {
		req := httptest.NewRequest("GET", "/query?table=qa&"+params, nil)
		w := &discardResponse{hdr: http.Header{}}
		return testing.AllocsPerRun(10, func() {
			w.code, w.n = 0, 0
			h.ServeHTTP(w, req)
			if w.code != 0 && w.code != http.StatusOK {
				t.Fatalf("%s: status %d", params, w.code)
			}
			if w.n < int64(rows)*30 {
				t.Fatalf("%s: %d bytes for %d rows", params, w.n, rows)
			}
		})
	}
	for _, f := range []string{"csv", "json"} {
		for _, ts := range []string{"rfc3339", "ns"} {
			params := "format=" + f + "&ts=" + ts
			few := allocs(params+"&limit=1000", 1000)
			all := allocs(params, 100_000)
			// The encoder's buffer grows at most three times in a
			// request, and the pools under the handler (sync.Pool, the
			// reader's) move the count by a few between runs; an
			// allocation a row would add 99,000, one a write (of 256
			// KiB) about 18.
			if all-few > 10 {
				t.Errorf("%s: %v allocations for 1,000 rows, %v for 100,000", params, few, all)
			}
		}
	}
}

// GET /query?order=desc: the newest limit rows, newest first, exactly the
// ascending query's last rows reversed, in every format; a bad order or a
// missing limit is a 400 that says why.
func TestHTTPQueryOrderDesc(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	writeLines(t, srv, tickLines("od", 0, 40))
	rng := "&from=" + strconv.Itoa(tickT0+10e6) + "&to=" + strconv.Itoa(tickT0+30e6)
	for _, tc := range []struct {
		ascLast string
		n       int
	}{{"", 5}, {"&sym=B", 3}, {rng, 4}} {
		tc := struct {
			params, ascLast string
			n               int
		}{fmt.Sprintf("&limit=%d%s", tc.n, tc.ascLast), tc.ascLast, tc.n}
		for _, f := range []string{"csv", "json"} {
			code, asc, _ := httpDo(t, srv, "GET", "/query?table=od&format="+f+tc.ascLast, "")
			if code != 200 {
				t.Fatalf("asc: %d %s", code, asc)
			}
			code, desc, _ := httpDo(t, srv, "GET", "/query?table=od&order=desc&format="+f+tc.params, "")
			if code != 200 {
				t.Fatalf("%s: %d %s", tc.params, code, desc)
			}
			al := strings.Split(strings.TrimSuffix(asc, "\n"), "\n")
			var head []string
			if f == "csv" {
				head, al = al[:1], al[1:]
			}
			want := append([]string(nil), al[len(al)-tc.n:]...)
			slices.Reverse(want)
			want = append(head, want...)
			if got := strings.Split(strings.TrimSuffix(desc, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("order=desc%s (%s):\n%s\nwant\n%s", tc.params, f, desc, strings.Join(want, "\n"))
			}
		}
	}
	// The newest row first: tickLines' last (ts +39 ms, B, 139.5).
	if _, body, _ := httpDo(t, srv, "GET", "/query?table=od&order=desc&limit=1&ts=ns", ""); !strings.Contains(body, `"ts":`+strconv.Itoa(tickT0+39e6)+`,"sym":"B","price":139.5`) {
		t.Errorf("newest row: %s", body)
	}
	for _, tc := range []struct{ params, has string }{
		{"&order=newest&limit=3", `order \"newest\" is not asc or desc`},
		{"&order=desc", "needs a limit"},
		{"&order=desc&limit=0", "needs a limit"},
	} {
		if code, body, _ := httpDo(t, srv, "GET", "/query?table=od"+tc.params, ""); code != http.StatusBadRequest || !strings.Contains(body, tc.has) {
			t.Errorf("%s: %d %s, want 400 saying %s", tc.params, code, body, tc.has)
		}
	}
}
