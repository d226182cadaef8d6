package ingest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// errorsLines are the rows of the error tests' table ee: AAPL and MSFT,
// 2023-11-14T22:13:20Z plus 0 to 3 s.
const errorsLines = "ee,sym=AAPL price=1.5,size=1i 1700000000000000000\n" +
	"ee,sym=MSFT price=2.5,size=2i 1700000001000000000\n" +
	"ee,sym=AAPL price=3.5,size=3i 1700000002000000000\n" +
	"ee,sym=MSFT price=4.5,size=4i 1700000003000000000\n"

// decodeErr decodes a JSON error body.
func decodeErr(t *testing.T, path, body string) errBody {
	t.Helper()
	var e errBody
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("%s: body %q is not a JSON error: %v", path, body, err)
	}
	return e
}

// A from after its to is a 400 naming both times, on every endpoint that
// takes a time range, not an empty 200.
func TestHTTPFromAfterTo(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	writeLines(t, srv, errorsLines)
	const from, to = "2023-11-14T22:13:22Z", "2023-11-14T22:13:21Z"
	for _, path := range []string{
		"/query?table=ee&from=" + from + "&to=" + to,
		"/query?table=ee&format=csv&from=1700000002000000000&to=1700000001000000000",
		"/query?table=ee&format=parquet&from=" + from + "&to=" + to,
		"/query?table=ee&sym=AAPL&from=" + from + "&to=" + to,
		"/bars?table=ee&sym=AAPL&interval=1s&from=" + from + "&to=" + to,
	} {
		code, body, hdr := httpDo(t, srv, "GET", path, "")
		if code != http.StatusBadRequest || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Fatalf("%s: %d %q %s, want 400 with a JSON error", path, code, hdr.Get("Content-Type"), body)
		}
		e := decodeErr(t, path, body)
		if e.Code != "invalid" || !strings.Contains(e.Message, "from "+from+" is after to "+to) {
			t.Errorf("%s: %+v, want code invalid and a message naming from %s and to %s", path, e, from, to)
		}
	}
	// Equal bounds are an empty range, not an error.
	if code, body, _ := httpDo(t, srv, "GET", "/query?table=ee&from="+to+"&to="+to, ""); code != 200 || body != "" {
		t.Fatalf("from = to: %d %q, want 200 and no rows", code, body)
	}
}

// A sym the table does not hold answers 200 with no rows, as before, and
// a Tickdb-Warning header that names it, the table and the nearest
// symbols; a known one gets no header.
func TestHTTPUnknownSymWarning(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	writeLines(t, srv, errorsLines)
	const aapx = `no symbol "AAPX" in table ee; nearest: AAPL`
	for _, tc := range []struct {
		path string
		want []string
		rows bool
	}{
		{"/query?table=ee&sym=AAPX", []string{aapx}, false},
		{"/query?table=ee&sym=AAPX&format=csv", []string{aapx}, true}, // the header row
		{"/query?table=ee&sym=AAPX&format=parquet", []string{aapx}, true},
		{"/query?table=ee&sym=msft", []string{`no symbol "msft" in table ee; nearest: MSFT`}, false},
		{"/query?table=ee&sym=ZZZZZZZZZZ", []string{`no symbol "ZZZZZZZZZZ" in table ee; none of its 2 symbols is close`}, false},
		{"/bars?table=ee&sym=AAPX&interval=1s", []string{aapx}, false},
		{"/latest?table=ee&sym=AAPX&sym=MSFT&sym=MSFX", []string{aapx, `no symbol "MSFX" in table ee; nearest: MSFT`}, true},
		{"/query?table=ee&sym=AAPL", nil, true},
		{"/query?table=ee", nil, true},
		{"/bars?table=ee&sym=MSFT&interval=1s", nil, true},
	} {
		code, body, hdr := httpDo(t, srv, "GET", tc.path, "")
		if code != 200 || (body != "") != tc.rows {
			t.Fatalf("%s: %d %q, want 200 (rows: %v)", tc.path, code, body, tc.rows)
		}
		if got := hdr.Values(WarningHeader); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %s %q, want %q", tc.path, WarningHeader, got, tc.want)
		}
	}
	// The tail of a symbol not written yet says so, and follows it.
	c := dialSSE(t, srv, "/tail?table=ee&sym=AAPX")
	if got := c.resp.Header.Get(WarningHeader); got != aapx {
		t.Errorf("/tail: %s %q, want %q", WarningHeader, got, aapx)
	}
	c.started(t)
	writeLines(t, srv, "ee,sym=AAPX price=9.5,size=9i 1700000004000000000\n")
	if ev := c.event(t, 10*time.Second); !strings.Contains(ev.data, `"sym":"AAPX"`) {
		t.Fatalf("/tail after AAPX was written: %+v, want its row", ev)
	}
}

// An unknown table is a 404 that names it and lists the tables, as the
// CLI does, and no path of the server's.
func TestHTTPNoTable(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	writeLines(t, srv, errorsLines+strings.ReplaceAll(errorsLines, "ee,", "aa,"))
	const want = `no table "trade"; tables: aa, ee`
	for _, path := range []string{
		"/query?table=trade",
		"/query?table=trade&format=parquet",
		"/bars?table=trade&sym=AAPL&interval=1s",
		"/latest?table=trade",
		"/tail?table=trade",
	} {
		code, body, _ := httpDo(t, srv, "GET", path, "")
		if code != http.StatusNotFound {
			t.Fatalf("%s: %d %s, want 404", path, code, body)
		}
		e := decodeErr(t, path, body)
		if e.Code != "not found" || e.Message != want {
			t.Errorf("%s: %+v, want message %q", path, e, want)
		}
		if strings.Contains(body, db) || strings.Contains(body, "/trade") {
			t.Errorf("%s: %s names a path of the server's (%s)", path, body, db)
		}
	}
}
