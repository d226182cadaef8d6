package servers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/tickdb/tickdb/internal/harness/gen"
)

// server is one server under test: tickdb serve or ClickHouse. Both run
// as a process of their own (proc), serve HTTP on 127.0.0.1 and are fed
// and asked by one client (one keep-alive connection).
//
// A server belongs to the goroutine running the benchmark, but for start
// and stop, which may run beside another server's.
type server interface {
	name() string
	proc() *proc
	client() *http.Client
	// start starts the process (creating the table the first time) and
	// returns how long it took until the server answered.
	start(ctx context.Context) (time.Duration, error)
	// appendBody appends ticks (symbol names: names) in the server's
	// write format.
	appendBody(dst []byte, ticks []gen.Tick, names []string) []byte
	// write sends one body and returns once the server acknowledged it
	// (tickdb: every row durable).
	write(ctx context.Context, body []byte) error
	// url is q's request (a GET), answered as CSV with a header line.
	url(q query, names []string) string
	// rows is the number of rows the table holds.
	rows(ctx context.Context) (int64, error)
	// settle waits until the server's background work on the ingested
	// data is done, and says what it waited for.
	settle(ctx context.Context) (string, error)
	// disk is the bytes allocated to the table's files (st_blocks): all
	// of them, and those that last (without files the server has already
	// replaced and will delete by itself later). It works on a stopped
	// server too.
	disk(ctx context.Context) (all, lasting int64, err error)
	// dataDir holds every file the server reads (evicted before a
	// restart).
	dataDir() string
}

// send makes one request and reads the whole answer into buf (reset
// first); a status other than want is an error that quotes the answer.
func send(c *http.Client, req *http.Request, want int, buf *bytes.Buffer) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s, want %d: %s", req.Method, req.URL.Path, resp.Status, want, clip(bytes.TrimSpace(buf.Bytes())))
	}
	return nil
}

// post sends body to url and wants status want.
func post(ctx context.Context, c *http.Client, url, contentType string, body []byte, want int, buf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	return send(c, req, want, buf)
}

// fetch GETs url into buf and wants 200.
func fetch(ctx context.Context, c *http.Client, url string, buf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	return send(c, req, http.StatusOK, buf)
}
