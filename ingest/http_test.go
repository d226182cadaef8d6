package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tickdb/tickdb/reader"
)

// httpDo sends one request to the server and returns status and body.
func httpDo(t *testing.T, srv *Server, method, path, body string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+srv.HTTPAddr().String()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// errBody is the JSON error body of a rejected write.
type errBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Line    int    `json:"line"`
	ErrorID string `json:"errorId"`
}

func TestHTTPWrite(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	body := "q,sym=AAPL bid=1.5,ask=1.75 100\nq,sym=MSFT bid=2,ask=2.25 200\n"
	for i, path := range []string{"/write", "/api/v2/write?org=o&bucket=b&db=d"} {
		if i == 1 {
			body = strings.NewReplacer(" 100\n", " 300\n", " 200\n", " 400\n").Replace(body)
		}
		code, resp, _ := httpDo(t, srv, "POST", path, body)
		if code != http.StatusNoContent {
			t.Fatalf("%s: %d %s", path, code, resp)
		}
	}
	// 204 means durable, not only visible.
	r, err := reader.Open(db, "q", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != 4 || r.Durable() != 4 {
		t.Fatalf("after 204: count %d durable %d, want 4 and 4", r.Len(), r.Durable())
	}
}

func TestHTTPBadLineCommitsNothing(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	for _, tc := range []struct {
		name, body string
		line       int
		reason     string
	}{
		{"syntax", "n,sym=A v=1 1\nn,sym=A v=2 2\nn,sym=A v= 3\n", 3, ""},
		{"string into an f64 column", "n,sym=A v=1 1\nn,sym=A v=\"s\" 2\n", 2, `column "v" of table n is f64, got a string value`},
		{"tags alone", "n,sym=A v=1 1\nn,sym=A 2\n", 2, "no field after the tags"},
		{"type conflict with a column an earlier line adds", "n,sym=A v=1 1\n\nn,sym=A w=2 2\nn,sym=A w=\"s\" 3\n", 4, `column "w" of table n is f64, got a string value`},
		{"too many columns added", "n,sym=A v=1 1\nn,sym=A " + manyFields(57) + " 2\nn,sym=A v=1,x=1 3\n", 3, "more than the 60"},
		{"out of order", "n,sym=A v=1 5\nn,sym=A v=1 4\n", 2, "before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, resp, hdr := httpDo(t, srv, "POST", "/write", tc.body)
			if code != http.StatusBadRequest {
				t.Fatalf("status %d %s, want 400", code, resp)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			var e errBody
			if err := json.Unmarshal([]byte(resp), &e); err != nil {
				t.Fatalf("body %q: %v", resp, err)
			}
			if e.Code != "invalid" || e.Line != tc.line || e.ErrorID == "" || !strings.Contains(e.Message, tc.reason) {
				t.Fatalf("error body %+v, want line %d mentioning %q", e, tc.line, tc.reason)
			}
			if _, err := os.Stat(filepath.Join(db, "n")); !os.IsNotExist(err) {
				t.Fatalf("table n exists after a rejected request (%v)", err)
			}
		})
	}
	// An existing table: a bad line leaves it as it was.
	if code, resp, _ := httpDo(t, srv, "POST", "/write", "n,sym=A v=1 10\n"); code != 204 {
		t.Fatalf("%d %s", code, resp)
	}
	if code, _, _ := httpDo(t, srv, "POST", "/write", "n,sym=B v=2 11\nn,sym=C v=x 12\n"); code != 400 {
		t.Fatalf("status %d, want 400", code)
	}
	got := tableRows(t, db, "n", 1, 5*time.Second)
	if got[0] != "10 sym=A v=1" {
		t.Fatalf("rows %q", got)
	}
	r, _ := reader.Open(db, "n", nil)
	defer r.Close()
	if _, ok := r.SymbolID([]byte("B")); ok {
		t.Fatal("symbol B of the rejected request is in the dictionary")
	}
}

func TestHTTPPrecision(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	for i, p := range []string{"", "n", "ns", "u", "us", "ms", "s"} {
		q := ""
		if p != "" {
			q = "?precision=" + p
		}
		body := "p,prec=" + p + "x v=1 " + []string{"10", "20", "30", "40", "50", "60", "70"}[i] + "\n"
		if code, resp, _ := httpDo(t, srv, "POST", "/write"+q, body); code != 204 {
			t.Fatalf("precision %q: %d %s", p, code, resp)
		}
	}
	got := tableRows(t, db, "p", 7, 5*time.Second)
	want := []string{"10", "20", "30", "40000", "50000", "60000000", "70000000000"}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]+" ") {
			t.Fatalf("row %d: %q, want ts %s", i, got[i], want[i])
		}
	}
	if code, resp, _ := httpDo(t, srv, "POST", "/write?precision=weeks", "p v=1\n"); code != 400 || !strings.Contains(resp, "precision") {
		t.Fatalf("bad precision: %d %s", code, resp)
	}
}

func TestHTTPGzip(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	io.WriteString(zw, "g,sym=A v=1 1\ng,sym=B v=2 2\n")
	zw.Close()
	if code, resp, _ := httpDo(t, srv, "POST", "/write", b.String(), "Content-Encoding", "gzip"); code != 204 {
		t.Fatalf("%d %s", code, resp)
	}
	tableRows(t, db, "g", 2, 5*time.Second)
}

func TestHTTPToken(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", Token: "s3cret"})
	for _, path := range []string{"/write", "/api/v2/write", "/query?table=a", "/metrics", "/ping"} {
		method := "GET"
		if strings.HasSuffix(path, "write") {
			method = "POST"
		}
		if code, _, _ := httpDo(t, srv, method, path, "a v=1 1\n"); code != http.StatusUnauthorized {
			t.Errorf("%s without token: %d, want 401", path, code)
		}
		if code, _, _ := httpDo(t, srv, method, path, "a v=1 1\n", "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %d, want 401", path, code)
		}
	}
	if code, resp, _ := httpDo(t, srv, "POST", "/write", "a v=1 1\n", "Authorization", "Bearer s3cret"); code != 204 {
		t.Fatalf("Bearer: %d %s", code, resp)
	}
	if code, resp, _ := httpDo(t, srv, "POST", "/api/v2/write", "a v=2 2\n", "Authorization", "Token s3cret"); code != 204 {
		t.Fatalf("Token: %d %s", code, resp)
	}
	for _, path := range []string{"/health", "/settings"} {
		if code, _, _ := httpDo(t, srv, "GET", path, ""); code >= 300 {
			t.Errorf("%s needs no token, got %d", path, code)
		}
	}
}

func TestHTTPSettings(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	code, body, _ := httpDo(t, srv, "GET", "/settings", "")
	if code != 200 {
		t.Fatal(code, body)
	}
	var s struct {
		Config struct {
			Versions []int `json:"line.proto.support.versions"`
			MaxName  int   `json:"cairo.max.file.name.length"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Config.Versions) != 1 || s.Config.Versions[0] != 1 || s.Config.MaxName == 0 {
		t.Fatalf("settings %+v: clients must negotiate text protocol version 1", s)
	}
}

func TestHTTPMetricsParse(t *testing.T) {
	srv, _ := testServer(t, nil)
	httpDo(t, srv, "POST", "/write", "mm,sym=A v=1 1\n")
	httpDo(t, srv, "POST", "/write", "mm,sym=A v=x 2\n")
	c := dial(t, srv)
	io.WriteString(c, "mm,sym=B v=2 3\n")
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body, _ := httpDo(t, srv, "GET", "/metrics", "")
		if code != 200 {
			t.Fatal(code, body)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("metrics do not parse as Prometheus text: %v\n%s", err, body)
		}
		missing := ""
		for _, name := range []string{"tickdb_ingest_rows_accepted_total", "tickdb_ingest_rows_rejected_total",
			"tickdb_ingest_connections", "tickdb_ingest_queue_depth", "tickdb_append_batch_seconds",
			"tickdb_publish_seconds", "tickdb_flush_seconds", "tickdb_table_rows", "tickdb_table_durable_lag_rows", "tickdb_table_hot_rows", "tickdb_table_hot_segments",
			"tickdb_http_requests_total"} {
			if fams[name] == nil {
				missing = name
			}
		}
		acc := fams["tickdb_ingest_rows_accepted_total"].GetMetric()
		if missing == "" && len(acc) == 1 && acc[0].GetCounter().GetValue() == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric %q missing, or accepted rows never reached 2:\n%s", missing, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHTTPQuery(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	httpDo(t, srv, "POST", "/write", "qq,sym=A px=1.5 10000000000\nqq,sym=B px=2.5 20000000000\nqq,sym=A px=3.5 30000000000\n")
	code, body, hdr := httpDo(t, srv, "GET", "/query?table=qq&sym=A&format=csv&ts=ns", "")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/csv") {
		t.Fatalf("%d %s", code, body)
	}
	if want := "ts,sym,px\n10000000000,A,1.5\n30000000000,A,3.5\n"; body != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", body, want)
	}
	code, body, _ = httpDo(t, srv, "GET", "/query?table=qq&from=1970-01-01T00:00:20Z&limit=1", "")
	// One JSON object per line (NDJSON).
	var rows []map[string]any
	for line := range strings.Lines(body) {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil || code != 200 {
			t.Fatalf("%d %s: %v", code, body, err)
		}
		rows = append(rows, row)
	}
	if len(rows) != 1 || rows[0]["sym"] != "B" || rows[0]["px"] != 2.5 {
		t.Fatalf("json rows %v", rows)
	}
	if code, body, _ := httpDo(t, srv, "GET", "/query?table=nope", ""); code != 404 {
		t.Fatalf("unknown table: %d %s", code, body)
	}
	if code, body, _ := httpDo(t, srv, "GET", "/query?table=qq&from=yesterday", ""); code != 400 || !strings.Contains(body, "yesterday") {
		t.Fatalf("bad from: %d %s", code, body)
	}
}

func TestParsePrecision(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"", 1}, {"n", 1}, {"ns", 1}, {"u", 1000}, {"us", 1000}, {"ms", 1_000_000}, {"s", 1_000_000_000}} {
		got, err := ParsePrecision(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParsePrecision(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"m", "h", "NS", "µs", "sec", " s"} {
		_, err := ParsePrecision(in)
		if err == nil || !strings.Contains(err.Error(), "n, ns, u, us, ms, s") {
			t.Errorf("ParsePrecision(%q) error = %v; want one naming the accepted values", in, err)
		}
	}
}
