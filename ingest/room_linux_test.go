package ingest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// TestNoRoomForNewTable: on a full disk a write that would create a table
// is answered 503 with Retry-After, stores nothing (no table), and
// line-protocol lines for a new table are held, not rejected; /health
// says degraded (table ""). Once there is room the write is answered 204
// and the held lines are stored, with no restart.
func TestNoRoomForNewTable(t *testing.T) {
	small := testutil.MountSmall(t, testutil.Tmpfs, 8<<20)
	db := filepath.Join(small, "db")
	srv, err := Start(&Options{DB: db, LiveRoot: testutil.LiveDir(t), ILPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		tablecheck.VerifyAll(t, db)
	})
	if code, body, _ := httpDo(t, srv, "POST", "/write", "a,s=x v=1i\n"); code != 204 {
		t.Fatalf("first write: %d %s", code, body)
	}
	filler := filepath.Join(small, "filler")
	if _, err := testutil.Fill(filler); err != nil {
		t.Fatal(err)
	}

	code, body, hdr := httpDo(t, srv, "POST", "/write", "b,s=x v=1i\nb,s=y v=2i\n")
	if code != 503 || hdr.Get("Retry-After") != "1" || !strings.Contains(body, `"code":"no space"`) {
		t.Fatalf("write creating a table on a full disk: %d %q %s", code, hdr.Get("Retry-After"), body)
	}
	if _, err := os.Stat(filepath.Join(db, "b")); !os.IsNotExist(err) {
		t.Fatalf("table b after a refused write: %v", err)
	}
	c := dial(t, srv)
	if _, err := fmt.Fprintf(c, "c,s=x v=1i\nc,s=y v=2i\nc,s=z v=3i\n"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the lines held", func() bool { return srv.sink.heldN.load() > 0 })
	for _, reason := range []string{"write_error", "no_space"} {
		if n := rejected(srv, "", reason); n != 0 {
			t.Fatalf("%v lines rejected (%s) on a full disk, want them held", n, reason)
		}
	}
	var h struct {
		Status  string
		Reasons []healthReason
	}
	_, body, _ = httpDo(t, srv, "GET", "/health", "")
	if err := json.Unmarshal([]byte(body), &h); err != nil || h.Status != "degraded" || len(h.Reasons) != 1 || h.Reasons[0].Condition != "no_space" {
		t.Fatalf("/health on a full disk: %s (%v)", body, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a 204", func() bool {
		code, _, _ := httpDo(t, srv, "POST", "/write", "b,s=x v=1i\nb,s=y v=2i\n")
		return code == 204
	})
	if rows := tableRows(t, db, "b", 2, 10*time.Second); len(rows) != 2 {
		t.Fatal(rows)
	}
	tableRows(t, db, "c", 3, 10*time.Second)
	waitUntil(t, "/health ok", func() bool {
		_, body, _ := httpDo(t, srv, "GET", "/health", "")
		return body == `{"status":"ok"}`+"\n"
	})
}

// waitUntil polls cond for a generous while.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
