package ingest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/reader"
)

// Many tables in one server: the writers' background work runs on the
// server's writer.Group, so threads do not grow with the tables, and an
// idle table holds one open file (its writer lock), a table being
// written at most three (the lock, the durable segment file its flusher
// writes, the hot copy written beside it).
const (
	filesIdlePerTable    = 1
	filesWrittenPerTable = 3
)

// TestManyTables writes 5 rows to each of 20 tables, then to 280 more
// (300), over HTTP, then 5 more rows to each over one TCP connection, and
// checks: the process's threads grew by at most a small constant from 20
// tables to 300 (a writer's own goroutines would add two locked threads a
// table), open files per table at most filesWrittenPerTable while written
// and filesIdlePerTable once idle, every table's rows durable and
// verified, and nothing left in the live directory after Close (goleak,
// in TestMain, checks the goroutines).
func TestManyTables(t *testing.T) {
	srv, db := testServer(t, nil)
	live := srv.opts.LiveRoot
	fds0 := openFiles(t)
	write := func(from, to int) {
		for i := from; i < to; i++ {
			var b strings.Builder
			for r := range 5 {
				fmt.Fprintf(&b, "m%d,sym=S%d price=%d.5,size=%di %d\n", i, r, r, r, 1_700_000_000_000_000_000+int64(r))
			}
			if code, body, _ := httpDo(t, srv, "POST", "/write", b.String()); code != 204 {
				t.Fatalf("write m%d: %d %s", i, code, body)
			}
		}
	}
	write(0, 20)
	idle(t, srv, 20)
	threads20, fds20 := threads(t), openFiles(t)
	write(20, 300)
	// Just written: each table's flush job may still hold its files.
	if fds := openFiles(t); fds-fds0 > 300*filesWrittenPerTable {
		t.Errorf("%d files open for 300 tables just written, want at most %d a table", fds-fds0, filesWrittenPerTable)
	}
	idle(t, srv, 300)
	threads300, fds300 := threads(t), openFiles(t)
	t.Logf("20 tables: %d threads, %d open files; 300 tables: %d threads, %d open files (%d before the first table)",
		threads20, fds20, threads300, fds300, fds0)
	if threads300-threads20 > 8 {
		t.Errorf("threads grew from %d with 20 tables to %d with 300", threads20, threads300)
	}
	if per := float64(fds300-fds20) / 280; per > filesIdlePerTable {
		t.Errorf("%.2f more open files a table from 20 tables to 300 (%d → %d), want at most %d", per, fds20, fds300, filesIdlePerTable)
	}
	if fds300-fds0 > 300*filesIdlePerTable+4 {
		t.Errorf("%d files open for 300 idle tables (%d before the first)", fds300-fds0, fds0)
	}

	// Every table again, over TCP, all in one connection's batches: the
	// writer goroutine publishes the tables each round touched.
	c := dial(t, srv)
	bw := bufio.NewWriter(c)
	for r := 5; r < 10; r++ {
		for i := range 300 {
			fmt.Fprintf(bw, "m%d,sym=S%d price=%d.5,size=%di %d\n", i, r, r, r, 1_700_000_000_000_000_000+int64(r))
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		waitDurableRows(t, db, "m"+strconv.Itoa(i), 10)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(live, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, path)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("%d files left in the live dir after Close, e.g. %s", len(left), left[0])
	}
	// testServer's cleanup verifies every table.
}

// idle waits until the server's n tables have every row durable and
// their flush jobs have let go of their files (a flush job that finds
// nothing left to write closes them).
func idle(t *testing.T, srv *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := srv.Stats()
		done := len(st) == n
		for _, s := range st {
			done = done && s.Durable == s.Appended
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tables, not all durable within a minute", len(st))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A flush job closes its files in the run that made the last rows
	// durable, right after publishing them: give it a moment to return.
	prev := -1
	for range 100 {
		f := openFiles(t)
		if f == prev {
			return
		}
		prev = f
		time.Sleep(20 * time.Millisecond)
	}
}

// waitDurableRows waits until table name of db has n rows durable.
func waitDurableRows(t *testing.T, db, name string, n uint64) {
	t.Helper()
	r, err := reader.Open(db, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	deadline := time.Now().Add(time.Minute)
	for r.Len() < n || r.Durable() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d rows, %d durable, want %d", name, r.Len(), r.Durable(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r.Len() != n {
		t.Fatalf("%s: %d rows, want %d", name, r.Len(), n)
	}
}

// threads is this process's OS thread count.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// openFiles is this process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // the directory ReadDir opened
}
