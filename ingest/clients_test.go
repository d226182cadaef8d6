package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// The real-client tests run the official QuestDB and InfluxDB JavaScript
// clients, pinned in testdata/clients/package.json and package-lock.json,
// against a server, through a relay that keeps every byte each client sent,
// and check three things: the bytes on the wire (what the library really
// writes, escapes and all), the rows that come back from the table, and the
// error the library shows its user when the server rejects a line.
//
// They need node (20.18.1 or later, which the pinned undici asks for) and,
// when testdata/clients/node_modules is missing, npm to install it with
// "npm ci". Without node they skip, or fail when CI is set.

const (
	clientsDir     = "testdata/clients"
	clientsTimeout = 30 * time.Second // one script run
	npmCITimeout   = 3 * time.Minute
	clientsToken   = "s3cr3t"
)

// The rows both QuestDB transports write, in three flushes: two batches
// and a last one whose second line the server refuses: a string field,
// which would be a symbol, but of a column the table does not have.
var (
	qdbBatches = [][]qdbRow{
		{
			{Table: "quotes", Syms: [][2]string{{"sym", "New York, NY"}, {"venue", "a=b c"}},
				Cols: []clientCol{{"price", "f", "100"}, {"size", "i", 42}, {"buy", "b", true}}, At: "1700000000000000001", Unit: "ns"},
			{Table: "quotes", Syms: [][2]string{{"sym", `back\slash`}, {"venue", `ends\`}},
				Cols: []clientCol{{"price", "f", "1.5e-7"}, {"size", "i", -9007199254740991}, {"buy", "b", false}}, At: "1700000000000002", Unit: "us"},
			{Table: "quotes", Syms: [][2]string{{"sym", "Zürich €"}},
				Cols: []clientCol{{"price", "f", "-2.5"}}, At: "1700000000003", Unit: "ms"},
		},
		{
			{Table: "quotes", Syms: [][2]string{{"sym", `a,b=c d\e"f`}},
				Cols: []clientCol{{"price", "f", "-Infinity"}, {"size", "i", 9007199254740991}, {"buy", "b", true}}, At: "1700000000003000001", Unit: "ns"},
			{Table: "quotes", Syms: [][2]string{{"venue", "only venue"}},
				Cols: []clientCol{{"price", "f", "1e21"}, {"buy", "b", true}}, At: "1700000000003000002", Unit: "ns"},
			{Table: "quotes", Syms: [][2]string{{"sym", "NaN"}},
				Cols: []clientCol{{"price", "f", "NaN"}, {"size", "i", 0}}, At: "1700000000003000003", Unit: "ns"},
			{Table: "quotes", Syms: [][2]string{{"sym", "now"}}, Cols: []clientCol{{"price", "f", "0.1"}}}, // atNow
		},
	}
	qdbReject = []qdbRow{
		{Table: "quotes", Syms: [][2]string{{"sym", "kept"}}, Cols: []clientCol{{"price", "f", "1"}}},
		{Table: "quotes", Syms: [][2]string{{"sym", "bad"}}, Cols: []clientCol{{"price", "s", "hello"}}},
	}
	// What the client writes for each flush: every value as its
	// toString() spells it, a backslash escaped as \\, and the unit
	// multiplied into nanoseconds by the client.
	qdbWire = []string{
		`quotes,sym=New\ York\,\ NY,venue=a\=b\ c price=100,size=42i,buy=t 1700000000000000001` + "\n" +
			`quotes,sym=back\\slash,venue=ends\\ price=1.5e-7,size=-9007199254740991i,buy=f 1700000000000002000` + "\n" +
			`quotes,sym=Zürich\ € price=-2.5 1700000000003000000` + "\n",
		`quotes,sym=a\,b\=c\ d\\e"f price=-Infinity,size=9007199254740991i,buy=t 1700000000003000001` + "\n" +
			`quotes,venue=only\ venue price=1e+21,buy=t 1700000000003000002` + "\n" +
			`quotes,sym=NaN price=NaN,size=0i 1700000000003000003` + "\n" +
			`quotes,sym=now price=0.1` + "\n",
		`quotes,sym=kept price=1` + "\n" +
			`quotes,sym=bad price="hello"` + "\n",
	}
	// The table afterwards; NOW stands for a server-stamped time.
	qdbRows = []string{
		"1700000000000000001 sym=New York, NY venue=a=b c price=100 size=42 buy=true",
		`1700000000000002000 sym=back\slash venue=ends\ price=1.5e-07 size=-9007199254740991 buy=false`,
		"1700000000003000000 sym=Zürich € venue= price=-2.5 size=0 buy=false",
		`1700000000003000001 sym=a,b=c d\e"f venue= price=-Inf size=9007199254740991 buy=true`,
		"1700000000003000002 sym= venue=only venue price=1e+21 size=0 buy=true",
		"1700000000003000003 sym=NaN venue= price=NaN size=0 buy=false",
		"NOW sym=now venue= price=0.1 size=0 buy=false",
	}
	// Over TCP a bad line is skipped alone: the good line before it stays.
	qdbKeptRow = "NOW sym=kept venue= price=1 size=0 buy=false"
)

// qdbRow is one row for questdb.js: symbols, then columns of type f (value
// a string JavaScript's Number() reads), i, b or s, then at() with the
// unit, or atNow() when At is empty.
type qdbRow struct {
	Table string      `json:"table"`
	Syms  [][2]string `json:"syms,omitempty"`
	Cols  []clientCol `json:"cols,omitempty"`
	At    string      `json:"at,omitempty"`
	Unit  string      `json:"unit,omitempty"`
}

// clientCol is a column or field: name, type, value.
type clientCol [3]any

// qdbOut is what questdb.js prints.
type qdbOut struct {
	Client, Version, ProtocolVersion string
	Batches, Rows                    int
	Error                            *string
	Log                              []string
}

// influxPoint is one point for influxdb.js: tags, then fields of type f,
// i, u (value a decimal string), b or s, then the timestamp: a string as
// sent, a number, {"date": ms} for a JavaScript Date, or "" for none.
type influxPoint struct {
	Measurement string      `json:"measurement"`
	Tags        [][2]string `json:"tags,omitempty"`
	Fields      []clientCol `json:"fields"`
	Ts          any         `json:"ts"`
}

type influxBatch struct {
	Precision string        `json:"precision"`
	Points    []influxPoint `json:"points"`
}

// influxOut is what influxdb.js prints.
type influxOut struct {
	Client, Version string
	Batches, Points int
	Error           *struct {
		Name, Message, Code string
		StatusCode          int
		JSON                *errBody `json:"json"`
	}
	Log []string
}

func TestRealClients(t *testing.T) {
	node := clientsNode(t)
	for _, tc := range []struct {
		name, conf string
		http       bool
		// errWant is what the client's error must say about the
		// rejected flush; nil over TCP, where the client hears nothing.
		errWant []string
	}{
		{name: "questdb/http", http: true,
			conf:    "http::addr=%s;token=" + clientsToken + ";auto_flush=off;",
			errWant: []string{"statusCode=400", `"line":2`, "line 2", `field \"price\": column \"price\" of table quotes is f64, got a string value`}},
		// The client's other HTTP transport, on node:http. On an error
		// status it destroys the request in the response callback, before
		// the body is read (HttpTransport.send: "req.destroy(new
		// Error(`HTTP request failed, statusCode=${statusCode},
		// error=${Buffer.concat(body)}`))"), so its message carries the
		// status alone, whatever the server sends.
		{name: "questdb/http-stdlib", http: true,
			conf:    "http::addr=%s;token=" + clientsToken + ";auto_flush=off;stdlib_http=on;",
			errWant: []string{"statusCode=400"}},
		{name: "questdb/tcp", conf: "tcp::addr=%s;auto_flush=off;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, db := testServer(t, &Options{Token: clientsToken})
			target := srv.ILPAddr().String()
			if tc.http {
				target = srv.HTTPAddr().String()
			}
			relay := newWireTap(t, target)
			from := time.Now().UnixNano()
			var out qdbOut
			runClient(t, node, "questdb.js", map[string]any{
				"conf": fmt.Sprintf(tc.conf, relay.addr()), "batches": qdbBatches, "reject": qdbReject,
			}, &out)
			if out.Client != "@questdb/nodejs-client" || out.Version != "4.2.0" || out.ProtocolVersion != "1" ||
				out.Batches != len(qdbBatches) || out.Rows != len(qdbBatches[0])+len(qdbBatches[1]) || len(out.Log) != 0 {
				t.Errorf("client run: %+v; want @questdb/nodejs-client 4.2.0 on protocol version 1, every batch, no log", out)
			}

			// HTTP: /settings on a connection of its own (a fetch with
			// its own agent), then the writes.
			conns := 1
			if tc.http {
				conns = 2
			}
			streams := relay.streams(t, conns)
			want, stamped := qdbRows, 1
			if tc.http {
				checkQuestDBRequests(t, streams)
				if out.Error == nil {
					t.Fatalf("the rejected flush returned no error")
				}
				t.Logf("client error: %s", *out.Error)
				for _, s := range tc.errWant {
					if !strings.Contains(*out.Error, s) {
						t.Errorf("client error %q does not say %q", *out.Error, s)
					}
				}
			} else {
				if out.Error != nil {
					t.Errorf("client error over TCP: %s", *out.Error)
				}
				if len(streams) != 1 || string(streams[0]) != strings.Join(qdbWire, "") {
					t.Errorf("TCP streams:\n%q\nwant one:\n%q", streams, strings.Join(qdbWire, ""))
				}
				want, stamped = append(want[:len(want):len(want)], qdbKeptRow), 2
			}
			got := tableRows(t, db, "quotes", len(want), 10*time.Second)
			// Over TCP the server may read the last lines after the
			// client has exited: the window ends once the rows are in.
			got = serverStamped(t, got, stamped, from, time.Now().UnixNano())
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// The string field is a symbol, but price is an f64 column (a
			// string field the table lacks would add a sym column).
			if n := rejected(srv, "quotes", "type_mismatch"); n != 1 {
				t.Errorf("type_mismatch rejections of table quotes: %v, want 1", n)
			}
		})
	}

	t.Run("influxdb/http", func(t *testing.T) {
		srv, db := testServer(t, &Options{Token: clientsToken})
		relay := newWireTap(t, srv.HTTPAddr().String())
		batches, wire, rows := influxCase()
		from := time.Now().UnixNano()
		var out influxOut
		runClient(t, node, "influxdb.js", map[string]any{
			"url": "http://" + relay.addr(), "token": clientsToken, "org": "my org", "bucket": "b&1",
			"batches": batches,
			"reject": influxBatch{Precision: "ns", Points: []influxPoint{
				{Measurement: "ticks", Tags: [][2]string{{"sym", "kept"}}, Fields: []clientCol{{"price", "f", "1"}}, Ts: ""},
				{Measurement: "ticks", Tags: [][2]string{{"sym", "bad"}}, Fields: []clientCol{{"price", "s", "hello"}}, Ts: ""},
			}},
		}, &out)
		if out.Client != "@influxdata/influxdb-client" || out.Version != "1.35.0" || out.Batches != len(batches) {
			t.Errorf("client run: %+v; want @influxdata/influxdb-client 1.35.0, %d batches", out, len(batches))
		}
		// The library's error is an HttpError built from the JSON body:
		// its message and code are the body's.
		e := out.Error
		if e == nil {
			t.Fatalf("the rejected batch returned no error")
		}
		t.Logf("client error: %s %d %s: %s", e.Name, e.StatusCode, e.Code, e.Message)
		if e.Name != "HttpError" || e.StatusCode != 400 || e.Code != "invalid" ||
			e.JSON == nil || e.JSON.Line != 2 || e.JSON.ErrorID == "" || e.JSON.Message != e.Message ||
			!strings.Contains(e.Message, "line 2") || !strings.Contains(e.Message, `field "price": column "price" of table ticks is f64, got a string value`) {
			t.Errorf("client error %+v (body %+v), want an HttpError 400 naming line 2 and the string field's type conflict", *e, e.JSON)
		}
		if len(out.Log) != 1 || !strings.Contains(out.Log[0], `"price"`) {
			t.Errorf("client log %q, want the one failed write", out.Log)
		}

		// One POST per batch, and the library gzips a body over 1000
		// bytes.
		var want []wantRequest
		for i, body := range wire {
			prec := "ns"
			if i < len(batches) {
				prec = batches[i].Precision
			}
			enc := ""
			if len(body) > 1000 {
				enc = "gzip"
			}
			want = append(want, wantRequest{"POST", "/api/v2/write?org=my%20org&bucket=b%261&precision=" + prec,
				"Token " + clientsToken, enc, body})
		}
		checkRequests(t, wireRequests(t, relay.streams(t, 1)), want)
		got := tableRows(t, db, "ticks", len(rows), 10*time.Second)
		got = serverStamped(t, got, 1, from, time.Now().UnixNano())
		if strings.Join(got, "\n") != strings.Join(rows, "\n") {
			t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(rows, "\n"))
		}
		if n := rejected(srv, "ticks", "type_mismatch"); n != 1 {
			t.Errorf("type_mismatch rejections of table ticks: %v, want 1", n)
		}
	})
}

// influxCase is what influxdb.js writes, one WriteApi per batch: the
// batches, each request body the library sends (tags and fields sorted by
// name, an empty tag left out, a backslash not escaped, the last batch's
// rejected request included), and the table's rows afterwards.
func influxCase() (batches []influxBatch, wire, rows []string) {
	batches = []influxBatch{
		{Precision: "ns", Points: []influxPoint{
			{Measurement: "ticks", Tags: [][2]string{{"venue", "a=b c"}, {"sym", "New York, NY"}},
				Fields: []clientCol{{"price", "f", "100"}, {"n", "i", 42}, {"qty", "u", "9223372036854775807"}, {"buy", "b", true}},
				Ts:     "1700000000000000001"},
			{Measurement: "ticks", Tags: [][2]string{{"sym", `back\slash`}, {"venue", ""}},
				Fields: []clientCol{{"price", "f", "1.5e-7"}, {"n", "i", -9007199254740991}, {"qty", "u", "0"}, {"buy", "b", false}},
				Ts:     map[string]int64{"date": 1700000000002}},
			{Measurement: "ticks", Tags: [][2]string{{"sym", "Zürich €"}}, Fields: []clientCol{{"price", "f", "-2.5"}},
				Ts: "1700000000003000000"},
		}},
		{Precision: "us", Points: []influxPoint{
			{Measurement: "ticks", Tags: [][2]string{{"sym", `a,b=c d"e`}},
				Fields: []clientCol{{"price", "f", "1e21"}, {"n", "i", 9007199254740991}, {"buy", "b", true}},
				Ts:     1700000000004000},
		}},
		{Precision: "ns"}, // over 1000 bytes: gzipped
		{Precision: "ms", Points: []influxPoint{
			{Measurement: "ticks", Tags: [][2]string{{"sym", "ms"}}, Fields: []clientCol{{"price", "f", "0.5"}}, Ts: "1700000000006"},
			{Measurement: "ticks", Tags: [][2]string{{"sym", "now"}}, Fields: []clientCol{{"price", "f", "0.1"}}, Ts: ""},
		}},
	}
	wire = []string{
		`ticks,sym=New\ York\,\ NY,venue=a\=b\ c buy=T,n=42i,price=100,qty=9223372036854775807u 1700000000000000001` + "\n" +
			`ticks,sym=back\slash buy=F,n=-9007199254740991i,price=1.5e-7,qty=0u 1700000000002000000` + "\n" +
			`ticks,sym=Zürich\ € price=-2.5 1700000000003000000`,
		`ticks,sym=a\,b\=c\ d"e buy=T,n=9007199254740991i,price=1e+21 1700000000004000`,
	}
	rows = []string{
		"1700000000000000001 sym=New York, NY venue=a=b c buy=true n=42 price=100 qty=9223372036854775807",
		`1700000000002000000 sym=back\slash venue= buy=false n=-9007199254740991 price=1.5e-07 qty=0`,
		"1700000000003000000 sym=Zürich € venue= buy=false n=0 price=-2.5 qty=0",
		`1700000000004000000 sym=a,b=c d"e venue= buy=true n=9007199254740991 price=1e+21 qty=0`,
	}
	var bulk []string
	for i := range 40 {
		ts := 1700000000005000000 + int64(i)
		batches[2].Points = append(batches[2].Points, influxPoint{Measurement: "ticks",
			Tags:   [][2]string{{"sym", fmt.Sprintf("bulk, i=%02d", i)}},
			Fields: []clientCol{{"n", "i", i}, {"price", "f", fmt.Sprint(float64(i) + 0.25)}}, Ts: strconv.FormatInt(ts, 10)})
		bulk = append(bulk, fmt.Sprintf(`ticks,sym=bulk\,\ i\=%02d n=%di,price=%v %d`, i, i, float64(i)+0.25, ts))
		rows = append(rows, fmt.Sprintf("%d sym=bulk, i=%02d venue= buy=false n=%d price=%v qty=0", ts, i, i, float64(i)+0.25))
	}
	wire = append(wire, strings.Join(bulk, "\n"),
		"ticks,sym=ms price=0.5 1700000000006\nticks,sym=now price=0.1",
		"ticks,sym=kept price=1\nticks,sym=bad price=\"hello\"")
	rows = append(rows,
		"1700000000006000000 sym=ms venue= buy=false n=0 price=0.5 qty=0",
		"NOW sym=now venue= buy=false n=0 price=0.1 qty=0")
	return batches, wire, rows
}

// checkQuestDBRequests checks what the QuestDB client sent over HTTP: GET
// /settings (to choose the protocol version, with no token), then one POST
// /write?precision=n per flush, with the token, each body exactly the
// flush's lines.
func checkQuestDBRequests(t *testing.T, streams [][]byte) {
	t.Helper()
	want := []wantRequest{{"GET", "/settings", "", "", ""}}
	for _, body := range qdbWire {
		want = append(want, wantRequest{"POST", "/write?precision=n", "Bearer " + clientsToken, "", body})
	}
	checkRequests(t, wireRequests(t, streams), want)
}

// wantRequest is a request a client must send: method, request URI, the
// Authorization and Content-Encoding headers, and the decoded body.
type wantRequest struct{ method, uri, auth, encoding, body string }

// checkRequests checks that got holds each wanted request once, and no
// other. Order is not checked: a client may spread its requests over
// connections, and the table's rows show the order of the writes.
func checkRequests(t *testing.T, got []wireRequest, want []wantRequest) {
	t.Helper()
	used := make([]bool, len(got))
next:
	for _, w := range want {
		for i, r := range got {
			if !used[i] && r.method == w.method && r.uri == w.uri && r.header.Get("Authorization") == w.auth &&
				r.header.Get("Content-Encoding") == w.encoding && r.body == w.body {
				used[i] = true
				continue next
			}
		}
		t.Errorf("no request %s %s (Authorization %q, Content-Encoding %q) with body\n%q", w.method, w.uri, w.auth, w.encoding, w.body)
	}
	for i, r := range got {
		if !used[i] {
			t.Errorf("unexpected request %s %s %v with body\n%q", r.method, r.uri, r.header, r.body)
		}
	}
}

// serverStamped checks that the last n rows carry a time the server gave
// them, within [from, to], and replaces it with "NOW".
func serverStamped(t *testing.T, rows []string, n int, from, to int64) []string {
	t.Helper()
	out := append([]string(nil), rows...)
	for i := len(out) - n; i < len(out); i++ {
		tsText, rest, _ := strings.Cut(out[i], " ")
		ts, err := strconv.ParseInt(tsText, 10, 64)
		if err != nil || ts < from || ts > to {
			t.Errorf("row %q: want a server time within [%d, %d]", out[i], from, to)
		}
		out[i] = "NOW " + rest
	}
	return out
}

var nodeVersion = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)`)

// clientsNode returns the node binary, with testdata/clients/node_modules
// installed (by "npm ci" from the committed lock file when missing). No
// node, or one too old for the pinned packages: skip, or fail under CI.
func clientsNode(t *testing.T) string {
	t.Helper()
	missing := func(msg string) {
		msg += "; install Node.js 20.18.1 or later with npm to run the real-client tests"
		testutil.Need(t, msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	v, err := exec.Command(node, "--version").Output()
	m := nodeVersion.FindStringSubmatch(string(v))
	if err != nil || m == nil {
		missing(fmt.Sprintf("%s --version: %q, %v", node, v, err))
	}
	var ver [3]int
	for i := range ver {
		ver[i], _ = strconv.Atoi(m[i+1])
	}
	if ver[0] < 20 || ver[0] == 20 && (ver[1] < 18 || ver[1] == 18 && ver[2] < 1) {
		missing(fmt.Sprintf("%s is %s, older than the pinned undici allows", node, strings.TrimSpace(string(v))))
	}
	if _, err := os.Stat(filepath.Join(clientsDir, "node_modules")); errors.Is(err, os.ErrNotExist) {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("%s/node_modules is missing and npm is not on PATH to install it (npm ci)", clientsDir)
		}
		ctx, cancel := context.WithTimeout(t.Context(), npmCITimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--prefix", clientsDir, "--no-audit", "--no-fund")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("npm ci --prefix %s: %v\n%s", clientsDir, err, out)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return node
}

// runClient runs one script of testdata/clients with input as its JSON
// argument and decodes the JSON line it prints into out.
func runClient(t *testing.T, node, script string, input, out any) {
	t.Helper()
	arg, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), clientsTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, string(arg))
	cmd.Dir = clientsDir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.Bytes(), stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", script, stderr.Bytes())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node %s printed %q: %v", script, stdout.Bytes(), err)
	}
}

// wireTap is a TCP relay in front of one of the server's listeners. It
// keeps what the client sent on each connection, so a test can check, and
// print, the exact bytes a client library put on the wire.
type wireTap struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup // the accept loop and every copy

	mu     sync.Mutex
	conns  []net.Conn
	bufs   []*bytes.Buffer // what each client sent
	open   int             // client-to-server copies still running
	closed bool
}

func newWireTap(t *testing.T, target string) *wireTap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wireTap{ln: ln, target: target}
	w.wg.Add(1)
	go w.accept()
	t.Cleanup(func() {
		ln.Close()
		w.mu.Lock()
		w.closed = true
		for _, c := range w.conns {
			c.Close()
		}
		w.mu.Unlock()
		w.wg.Wait()
	})
	return w
}

func (w *wireTap) addr() string { return w.ln.Addr().String() }

func (w *wireTap) accept() {
	defer w.wg.Done()
	for {
		c, err := w.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", w.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		buf := &bytes.Buffer{}
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		w.conns = append(w.conns, c, up)
		w.bufs = append(w.bufs, buf)
		w.open++
		w.mu.Unlock()
		w.wg.Add(2)
		var both sync.WaitGroup
		both.Add(2)
		go func() { // client → server, kept
			defer w.wg.Done()
			defer both.Done()
			_, _ = io.Copy(up, io.TeeReader(c, lockedWriter{&w.mu, buf}))
			_ = up.(*net.TCPConn).CloseWrite()
			w.mu.Lock()
			w.open--
			w.mu.Unlock()
		}()
		go func() { // server → client
			defer w.wg.Done()
			defer both.Done()
			_, _ = io.Copy(c, up)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			both.Wait()
			c.Close()
			up.Close()
		}()
	}
}

// streams waits until at least min connections came and every client
// closed its side (the script has exited by then), and returns what each
// connection sent, in accept order. With -v it prints them.
func (w *wireTap) streams(t *testing.T, min int) [][]byte {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		n, open := len(w.bufs), w.open
		w.mu.Unlock()
		if n >= min && open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("relay: %d connections (want at least %d), %d still sending after the client exited", n, min, open)
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([][]byte, len(w.bufs))
	for i, b := range w.bufs {
		out[i] = bytes.Clone(b.Bytes())
		t.Logf("connection %d sent %d bytes:\n%s", i, len(out[i]), strconv.Quote(string(out[i])))
	}
	return out
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// wireRequest is one HTTP request read back from a captured stream, its
// body de-chunked and gunzipped.
type wireRequest struct {
	method, uri string
	header      http.Header
	body        string
}

func wireRequests(t *testing.T, streams [][]byte) []wireRequest {
	t.Helper()
	var out []wireRequest
	for i, s := range streams {
		br := bufio.NewReader(bytes.NewReader(s))
		for {
			req, err := http.ReadRequest(br)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			var body io.Reader = req.Body
			if req.Header.Get("Content-Encoding") == "gzip" {
				if body, err = gzip.NewReader(req.Body); err != nil {
					t.Fatalf("connection %d: %s %s: %v", i, req.Method, req.RequestURI, err)
				}
			}
			b, err := io.ReadAll(body)
			if err != nil {
				t.Fatalf("connection %d: %s %s body: %v", i, req.Method, req.RequestURI, err)
			}
			out = append(out, wireRequest{req.Method, req.RequestURI, req.Header, string(b)})
		}
	}
	return out
}
