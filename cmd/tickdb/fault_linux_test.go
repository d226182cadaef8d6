package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
)

// TestServeDiskFull is the fault suite for a full disk: "tickdb serve",
// a real process, with its database or its live directory on a small real
// file system (a size-limited tmpfs, an ext4 image on a loop device),
// under steady HTTP and line-protocol load, while a filler file takes all
// the room and is then removed. While full: writes are answered 503 with
// Retry-After (nothing of them stored), GET /query is served, /health
// says degraded and tickdb_table_condition says no_space. Once the filler
// is gone: writes are answered 204 again by themselves. After SIGTERM
// (exit 0): every row of a 204 is there exactly once, no row of a 503 is,
// the TCP lines are there in order, each once, all of them (held while
// there was no room, never dropped), and verify is clean. Mounting needs
// root: the test skips without it, and fails under CI.
func TestServeDiskFull(t *testing.T) {
	for _, c := range []struct {
		name     string
		kind     testutil.FSKind
		live     bool // the live directory on the small file system, else the database
		stopFull bool // SIGTERM while the disk is full, under load
	}{
		{"db=tmpfs", testutil.Tmpfs, false, false},
		{"db=ext4", testutil.Ext4, false, false},
		{"live=tmpfs", testutil.Tmpfs, true, false},
		{"live=ext4", testutil.Ext4, true, false},
		{"db=ext4/stop-full", testutil.Ext4, false, true},
		{"live=tmpfs/stop-full", testutil.Tmpfs, true, true},
	} {
		t.Run(c.name, func(t *testing.T) { testServeDiskFull(t, c.kind, c.live, c.stopFull) })
	}
}

func testServeDiskFull(t *testing.T, kind testutil.FSKind, onLive, stopFull bool) {
	small := testutil.MountSmall(t, kind, 32<<20)
	db, live := testutil.DB(t)
	if onLive {
		live = filepath.Join(small, "live")
	} else {
		db = filepath.Join(small, "db")
	}
	// Small segments, so the room reserved ahead (a segment or two) is
	// used up quickly; no hot copies, which would share the live
	// directory's room.
	p := startServe(t, "--db", db, "--live-dir", live, "--segment-size", "64K", "--hot-bytes", "0")
	ld := newFaultLoad(t, p)
	ld.start()
	ld.waitFor(t, "the first writes", func() bool { return ld.ok.Load() > 5 && ld.tcpSent.Load() > 1000 })

	filler := filepath.Join(small, "filler")
	fill := func() {
		if _, err := testutil.Fill(filler); err != nil {
			t.Fatal(err)
		}
	}
	fill()
	// The room reserved before the disk filled is used up, then writes
	// are refused. (Fill again meanwhile: the server may free a little.)
	refused0 := ld.refused.Load()
	ld.waitFor(t, "a 503", func() bool {
		fill()
		return ld.refused.Load() > refused0
	})
	full := time.Now()
	// Refused writes said why and when to come back.
	if ra := ld.retryAfter.Load(); ra == nil || *ra != "1" {
		t.Errorf("503 without Retry-After: 1 (%v)", ra)
	}
	if body := ld.lastRefusal.Load(); body == nil || !strings.Contains(*body, `"code":"no space"`) {
		t.Errorf("503 body %v, want code \"no space\"", body)
	}
	// Reads go on.
	if code, body := get(t, p, "/query?table=h&limit=3"); code != http.StatusOK || strings.Count(body, "\n") != 3 {
		t.Errorf("GET /query while full: %d %q", code, body)
	}
	ld.waitFor(t, "/health degraded", func() bool {
		code, body := get(t, p, "/health")
		var h struct {
			Status  string
			Reasons []struct{ Table, Condition, Error string }
		}
		_ = json.Unmarshal([]byte(body), &h)
		return code == http.StatusOK && h.Status == "degraded" && len(h.Reasons) > 0 && h.Reasons[0].Condition == "no_space" && h.Reasons[0].Error != ""
	})
	ld.waitFor(t, "the no_space metric", func() bool {
		_, body := get(t, p, "/metrics")
		return strings.Contains(body, `tickdb_table_condition{condition="no_space",table="h"} 1`)
	})
	// The line-protocol lines wait (TCP backpressure), not dropped. With
	// only the live directory full, table tcp may need no new room: once
	// its live slots all exist it recycles them, and its durable files
	// are on a disk with room, so its lines may go on being stored; that
	// they are all stored, once, is checked at the end either way.
	held := func() bool {
		return strings.Contains(p.logText(), `msg="ingest: holding line-protocol lines until there is room"`)
	}
	if !onLive {
		ld.waitFor(t, "TCP lines held", held)
	}
	time.Sleep(200 * time.Millisecond) // more load against the full disk
	t.Logf("TCP lines held while full: %v", held())
	if stopFull {
		// SIGTERM now, the load still on: exit 0, every row answered 204
		// durable, the lines held dropped (counted), not claimed.
		stopServe(t, p)
		ld.stop()
		t.Logf("HTTP: %d answered 204, %d 503, %d unanswered; TCP: %d lines sent", ld.ok.Load(), ld.refused.Load(), len(ld.unknown), ld.tcpSent.Load())
		ld.check(t, db, true)
		if code, out, errOut := runCLI("verify", "--db", db); code != 0 {
			t.Fatalf("verify after a full disk: exit %d\n%s%s", code, out, errOut)
		}
		return
	}

	// Room again: writes are taken by themselves, no restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	ok0 := ld.ok.Load()
	ld.waitFor(t, "a 204 after the filler went", func() bool { return ld.ok.Load() > ok0+2 })
	t.Logf("full for %v; writes taken again %v after the filler went (an upper bound: a 204 waits for its rows to be durable)",
		freed.Sub(full).Round(time.Millisecond), time.Since(freed).Round(time.Millisecond))
	ld.waitFor(t, "/health ok", func() bool { _, body := get(t, p, "/health"); return strings.Contains(body, `"status":"ok"`) })
	tcp0 := ld.tcpSent.Load()
	ld.waitFor(t, "TCP lines flowing", func() bool { return ld.tcpSent.Load() > tcp0+1000 })
	ld.stop()
	// Every TCP line sent is stored once the server has read them.
	waitCount(t, p, db, "tcp", ld.tcpSent.Load())

	stopServe(t, p)
	t.Logf("HTTP: %d answered 204, %d 503, %d unanswered; TCP: %d lines", ld.ok.Load(), ld.refused.Load(), len(ld.unknown), ld.tcpSent.Load())
	ld.check(t, db, false)
	if code, out, errOut := runCLI("verify", "--db", db); code != 0 {
		t.Fatalf("verify after a full disk: exit %d\n%s%s", code, out, errOut)
	}
}

// stopServe sends the serve SIGTERM and wants exit status 0.
func stopServe(t *testing.T, p *serveProc) {
	t.Helper()
	if err := p.c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("tickdb serve exit after a full disk: %v\n%s", err, p.logText())
		}
	case <-time.After(time.Minute):
		t.Fatalf("tickdb serve did not stop on SIGTERM:\n%s", p.logText())
	}
}

// faultLoad is steady load on a serve: one HTTP client writing requests
// of httpLines rows to table h, each row's id its request's number ×
// 1000 + its line, and one TCP connection streaming rows to table tcp
// with ids 0, 1, 2, ... It records every request's answer.
type faultLoad struct {
	p                 *serveProc
	client            *http.Client
	stopc             chan struct{}
	wg                sync.WaitGroup
	ok, refused       atomic.Int64
	tcpSent           atomic.Uint64
	tcpErr            atomic.Pointer[error]
	retryAfter        atomic.Pointer[string]
	lastRefusal       atomic.Pointer[string]
	mu                sync.Mutex
	answered, unknown map[int]int // request → status; requests with no answer
	failed            []string    // unexpected answers
}

const httpLines = 20

func newFaultLoad(t *testing.T, p *serveProc) *faultLoad {
	ld := &faultLoad{p: p, stopc: make(chan struct{}), answered: map[int]int{}, unknown: map[int]int{},
		client: &http.Client{Timeout: time.Minute}}
	t.Cleanup(ld.stop)
	return ld
}

func (ld *faultLoad) start() {
	ld.wg.Add(2)
	go ld.httpWriter()
	go ld.tcpWriter()
}

func (ld *faultLoad) stop() {
	select {
	case <-ld.stopc:
	default:
		close(ld.stopc)
	}
	ld.wg.Wait()
}

func (ld *faultLoad) stopping() bool {
	select {
	case <-ld.stopc:
		return true
	default:
		return false
	}
}

func (ld *faultLoad) httpWriter() {
	defer ld.wg.Done()
	for req := 0; !ld.stopping(); req++ {
		var b strings.Builder
		for i := range httpLines {
			fmt.Fprintf(&b, "h,src=http id=%di\n", req*1000+i)
		}
		resp, err := ld.client.Post("http://"+ld.p.http+"/write", "text/plain", strings.NewReader(b.String()))
		if err != nil {
			ld.mu.Lock()
			ld.unknown[req] = 0
			ld.mu.Unlock()
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ld.mu.Lock()
		ld.answered[req] = resp.StatusCode
		switch resp.StatusCode {
		case http.StatusNoContent:
			ld.ok.Add(1)
		case http.StatusServiceUnavailable:
			// What the refusal said first: a waiter that sees the count
			// go up reads them without the lock.
			ra, s := resp.Header.Get("Retry-After"), string(body)
			ld.retryAfter.Store(&ra)
			ld.lastRefusal.Store(&s)
			ld.refused.Add(1)
		default:
			ld.failed = append(ld.failed, fmt.Sprintf("request %d: %d %s", req, resp.StatusCode, body))
		}
		ld.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
}

// tcpWriter streams lines, 100 rows every 5 ms; tcpSent counts the rows of the
// writes that completed (a write blocks while the server holds its lines
// for want of room: TCP backpressure).
func (ld *faultLoad) tcpWriter() {
	defer ld.wg.Done()
	c, err := net.DialTimeout("tcp", ld.p.ilp, 10*time.Second)
	if err != nil {
		ld.tcpErr.Store(&err)
		return
	}
	defer c.Close()
	var buf []byte
	for n := uint64(0); !ld.stopping(); {
		buf = buf[:0]
		for i := range uint64(100) {
			buf = fmt.Appendf(buf, "tcp,src=tcp id=%di\n", n+i)
		}
		// A deadline so that stop is noticed while the server holds the
		// lines; a write cut by it is written again from where it was cut.
		for len(buf) > 0 {
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			k, err := c.Write(buf)
			buf = buf[k:]
			if err != nil && !os.IsTimeout(err) {
				ld.tcpErr.Store(&err)
				return
			}
			if err != nil && ld.stopping() && len(buf) > 0 {
				// Stopping mid-batch: finish it (a generous deadline), so
				// that what was sent is whole lines of known ids.
				_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
				if _, err := c.Write(buf); err != nil {
					ld.tcpErr.Store(&err)
					return
				}
				buf = nil
			}
		}
		n += 100
		ld.tcpSent.Store(n)
		// Steady, not flat out: about 20,000 rows (640 KB) a second, so
		// the load itself fills the small disk in no less than a minute.
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFor polls cond for a generous while.
func (ld *faultLoad) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			ld.mu.Lock()
			failed := ld.failed
			ld.mu.Unlock()
			t.Fatalf("timed out waiting for %s (HTTP %d ok, %d refused, other answers %v)\n%s", what, ld.ok.Load(), ld.refused.Load(), failed, ld.p.logText())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// check reads both tables back: every row of a 204 exactly once, no row
// of another answer, the TCP ids 0..sent-1 in order (with stopped, a
// prefix of them: the server stopped while it held lines, and TCP has no
// answers to say which were stored).
func (ld *faultLoad) check(t *testing.T, db string, stopped bool) {
	t.Helper()
	ld.mu.Lock()
	defer ld.mu.Unlock()
	for _, f := range ld.failed {
		t.Errorf("unexpected answer: %s", f)
	}
	if err := ld.tcpErr.Load(); err != nil && !stopped {
		t.Errorf("TCP writer: %v", *err)
	}
	seen := map[int64]int{}
	for _, id := range readIDs(t, db, "h") {
		seen[id]++
	}
	for req, code := range ld.answered {
		for i := range httpLines {
			id := int64(req*1000 + i)
			switch {
			case code == http.StatusNoContent && seen[id] != 1:
				t.Errorf("request %d (204) line %d: stored %d times", req, i, seen[id])
			case code != http.StatusNoContent && seen[id] != 0:
				t.Errorf("request %d (%d) line %d: stored %d times", req, code, i, seen[id])
			}
			delete(seen, id)
		}
	}
	for req := range ld.unknown {
		for i := range httpLines {
			delete(seen, int64(req*1000+i))
		}
	}
	for id, n := range seen {
		t.Errorf("row id %d (stored %d times) belongs to no request sent", id, n)
	}
	ids := readIDs(t, db, "tcp")
	if n := uint64(len(ids)); n != ld.tcpSent.Load() && (!stopped || n > ld.tcpSent.Load()+100) {
		t.Errorf("TCP: %d rows stored, %d sent", len(ids), ld.tcpSent.Load())
	}
	for i, id := range ids {
		if id != int64(i) {
			t.Fatalf("TCP row %d has id %d: lines lost, repeated or reordered", i, id)
		}
	}
}

// readIDs is the id column of every row of table, in seq order.
func readIDs(t *testing.T, db, table string) []int64 {
	t.Helper()
	r, err := reader.Open(db, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	col, ok := r.Schema().Col("id")
	if !ok {
		t.Fatalf("table %s has no id column", table)
	}
	ids := make([]int64, 0, r.Len())
	for seq := range r.Len() {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row.I64(col))
	}
	return ids
}

// get answers a GET of path on the serve.
func get(t *testing.T, p *serveProc, path string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + p.http + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
