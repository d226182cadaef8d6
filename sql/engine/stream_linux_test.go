package engine

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rss is the process's resident memory, in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestStreaming: a statement over 100 M rows hands out its first rows
// while DuckDB holds a few chunks of it, not the result; closing it early
// stops it, and the session goes on.
func TestStreaming(t *testing.T) {
	db := t.TempDir()
	writeTicks(t, db, "trades", []tick{{time.Now().UnixNano(), "AAPL", 1, 1}})
	s := openSession(t, db, nil)
	ctx := context.Background()
	before := rss(t)
	rows, err := s.Query(ctx, "SELECT range AS i, range * 2 AS j FROM range(100000000)")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rows.(*streamRows); !ok {
		t.Fatalf("rows are %T, not a streaming result", rows)
	}
	for want := int64(0); want < 100_000; want++ {
		if !rows.Next() {
			t.Fatalf("ended at row %d: %v", want, rows.Err())
		}
		var i, j int64
		if err := rows.Scan(&i, &j); err != nil {
			t.Fatal(err)
		}
		if i != want || j != 2*want {
			t.Fatalf("row %d: %d %d", want, i, j)
		}
	}
	// The whole result is 1.6 GB (two BIGINTs × 100 M): duckdb-go's
	// database/sql path holds it all (and takes seconds) before row one.
	if grew := rss(t) - before; grew > 256<<20 {
		t.Fatalf("the process grew by %d bytes with the result open after 100,000 rows", grew)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err = s.Query(ctx, "SELECT count(*) FROM trades")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for rows.Next() {
		rows.Scan(&n)
	}
	if err := rows.Err(); err != nil || n != 1 {
		t.Fatalf("after an early close: count %d, %v", n, err)
	}
	rows.Close()
}

// TestStreamingCancel: a cancelled context stops a streaming statement
// with an error, not a short result that looks whole.
func TestStreamingCancel(t *testing.T) {
	db := t.TempDir()
	writeTicks(t, db, "trades", []tick{{time.Now().UnixNano(), "AAPL", 1, 1}})
	s := openSession(t, db, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rows, err := s.Query(ctx, "SELECT range FROM range(100000000)")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if n++; n == 10_000 {
			cancel()
		}
	}
	if rows.Err() == nil {
		t.Fatalf("%d rows and no error after a cancel", n)
	}
	if n >= 100_000_000 {
		t.Fatal("the cancel did not stop the statement")
	}
}

// TestSessionCloseWithStream: closing a session whose streaming result is
// still open ends the result first (not a result on a closed connection).
func TestSessionCloseWithStream(t *testing.T) {
	db := t.TempDir()
	writeTicks(t, db, "trades", []tick{{time.Now().UnixNano(), "AAPL", 1, 1}})
	e, err := Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := e.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Query(context.Background(), "SELECT range FROM range(100000000)")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Fatal("a row after the session closed")
	}
	rows.Close() // again: a no-op
}
