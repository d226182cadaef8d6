package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/harness/s3test"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// archiveTable writes n ticks of 30 symbols (one in 40 late) into table
// name of db in segments of 8,192 rows, and closes it (every segment
// compressed).
func archiveTable(t *testing.T, db, live, name string, n int, seed uint64) {
	t.Helper()
	s := store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
	)
	w, err := writer.Open(db, name, &writer.Options{Schema: s, LiveDir: live, SegmentSize: 8192 * 32, LateWindow: time.Second, HotBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	row := s.NewRow()
	t0 := time.Date(2024, 3, 8, 14, 30, 0, 0, time.UTC).UnixNano()
	for i := range n {
		ts := t0 + int64(i)*int64(20*time.Millisecond)
		if rng.IntN(40) == 0 {
			ts -= rng.Int64N(int64(900 * time.Millisecond))
		}
		id, err := w.SymbolString(fmt.Sprintf("SYM%02d", rng.IntN(30)))
		if err != nil {
			t.Fatal(err)
		}
		row.SetTs(ts)
		row.SetSym(s.ColAt(1), id)
		row.SetF64(s.ColAt(2), 50+float64(rng.IntN(5000))/100)
		row.SetI64(s.ColAt(3), int64(1+rng.IntN(900)))
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestArchiveDB archives two tables with tickdb archive, then runs every
// read-only command with --db s3://... in another process (the database
// directory moved away meanwhile) and checks its output is the local
// one, byte for byte; the commands that write refuse the location, and
// --fetch-stats reports the traffic.
func TestArchiveDB(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	db, live := testutil.DB(t)
	archiveTable(t, db, live, "trades", 62_000, 1)
	archiveTable(t, db, live, "quotes", 54_000, 2)
	if code, _, errs := runCLI("archive", "--db", db, "--to", "s3://ticks/desk"); code != 0 {
		t.Fatalf("tickdb archive: %s", errs)
	}
	const from, to = "2024-03-08T14:40:00Z", "2024-03-08T14:41:30Z"
	cmds := [][]string{
		{"query", "--table", "trades"},
		{"query", "--table", "trades", "--sym", "SYM07", "--from", from, "--to", to},
		{"query", "--table", "quotes", "--from", from, "--to", to, "--limit", "500"},
		{"bars", "--table", "trades", "--sym", "SYM03", "--interval", "1m"},
		{"latest", "--table", "trades"},
		{"latest", "--table", "quotes", "--at", from, "--sym", "SYM01", "--sym", "SYM29"},
		{"asof", "--left", "trades", "--right", "quotes", "--sym", "SYM11", "--from", from, "--to", to, "--tolerance", "5s"},
	}
	want := make([]string, len(cmds))
	for i, c := range cmds {
		code, out, errs := runCLI(append(c, "--db", db)...)
		if code != 0 || len(out) < 100 {
			t.Fatalf("local tickdb %v: exit %d, %d bytes out: %s", c, code, len(out), errs)
		}
		want[i] = out
	}
	exportLocal := filepath.Join(t.TempDir(), "local")
	if code, _, errs := runCLI("export", "--db", db, "--table", "trades", "--format", "csv", "--out", exportLocal); code != 0 {
		t.Fatalf("local export: %s", errs)
	}
	_, statLocal, _ := runCLI("stat", "--db", db, "--format", "json")
	// The other process has the server only.
	gone := db + ".away"
	if err := os.Rename(db, gone); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(gone) })

	cache := t.TempDir()
	arch := []string{"--db", "s3://ticks/desk", "--cache-dir", cache}
	for i, c := range cmds {
		code, out, errs := execCLI(t, append(c, arch...)...)
		if code != 0 {
			t.Fatalf("tickdb %v --db s3://...: exit %d: %s", c, code, errs)
		}
		if out != want[i] {
			t.Errorf("tickdb %v: the archive's answer (%d bytes) differs from the local one (%d bytes)", c, len(out), len(want[i]))
		}
	}
	exportArch := filepath.Join(t.TempDir(), "arch")
	if code, _, errs := execCLI(t, append([]string{"export", "--table", "trades", "--format", "csv", "--out", exportArch}, arch...)...); code != 0 {
		t.Fatalf("export from the archive: %s", errs)
	}
	files, _ := filepath.Glob(filepath.Join(exportLocal, "*", "*"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(exportLocal, "*"))
	}
	if len(files) == 0 {
		t.Fatal("the local export wrote no file")
	}
	for _, f := range files {
		rel, _ := filepath.Rel(exportLocal, f)
		a, err1 := os.ReadFile(f)
		b, err2 := os.ReadFile(filepath.Join(exportArch, rel))
		if err1 != nil || err2 != nil || string(a) != string(b) {
			t.Errorf("export %s: the archive's differs from the local one (%v, %v)", rel, err1, err2)
		}
	}

	// stat: the same tables, rows and times.
	code, statArch, errs := execCLI(t, append([]string{"stat", "--format", "json"}, arch...)...)
	if code != 0 {
		t.Fatalf("stat of the archive: %s", errs)
	}
	type tab struct {
		Name                string
		Rows, First_seq     uint64
		First_ts, Last_ts   int64
		Symbols, Dictionary int
		Late_rows, Segments uint64
		Late_window_ns      int64
		Schema              []struct{ Name, Type string }
	}
	var sl, sa struct{ Tables []tab }
	if err := json.Unmarshal([]byte(statLocal), &sl); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(statArch), &sa); err != nil {
		t.Fatalf("%v: %s", err, statArch)
	}
	if fmt.Sprint(sl) != fmt.Sprint(sa) || len(sa.Tables) != 2 {
		t.Errorf("stat of the archive:\n%+v\nlocal:\n%+v", sa, sl)
	}

	// --fetch-stats: the traffic on stderr; a warm cache fetches no
	// segment bytes again.
	c := append(append([]string{}, cmds[1]...), arch...)
	code, out, errs := execCLI(t, append(c, "--fetch-stats")...)
	if code != 0 || out != want[1] {
		t.Fatalf("tickdb %v --fetch-stats: exit %d: %s", c, code, errs)
	}
	f := strings.Fields(errs[strings.Index(errs, "the query:"):])
	if len(f) < 5 || f[2] != "0" && f[2] != "0," {
		t.Errorf("a query on a warm cache fetched something: %q", errs)
	}
	cold := t.TempDir()
	code, _, errs = execCLI(t, "query", "--table", "trades", "--sym", "SYM07", "--from", from, "--to", to,
		"--db", "s3://ticks/desk", "--cache-dir", cold, "--fetch-stats")
	if code != 0 || !strings.Contains(errs, "fetched from s3://ticks/desk") {
		t.Fatalf("--fetch-stats: exit %d, stderr %q", code, errs)
	}
	i := strings.Index(errs, "the query: ")
	f = strings.Fields(errs[i+len("the query: "):])
	n, _ := strconv.Atoi(f[0])
	bytes, _ := strconv.ParseInt(f[2], 10, 64)
	size, _, _ := archive.CacheUsage(cold)
	t.Logf("a one-symbol window on a cold cache: %q (cache %d bytes)", strings.TrimSpace(errs), size)
	if n == 0 || bytes == 0 {
		t.Errorf("a query on a cold cache fetched nothing: %q", errs)
	}

	// The commands that write, or need the directory, refuse it.
	for _, c := range [][]string{{"tail", "--table", "trades"}, {"compact"}, {"retain", "--max-age", "1h"}, {"verify"}} {
		code, _, errs := runCLI(append(c, "--db", "s3://ticks/desk")...)
		if code == 0 || !strings.Contains(errs, "needs a database directory") {
			t.Errorf("tickdb %v --db s3://...: exit %d, %q; want a refusal", c, code, errs)
		}
	}
	// A table the archive lacks is named as such.
	code, _, errs = runCLI("query", "--table", "nope", "--db", "s3://ticks/desk", "--cache-dir", cache)
	if code == 0 || !strings.Contains(errs, `no table "nope"`) || !strings.Contains(errs, "quotes, trades") {
		t.Errorf("a missing table: exit %d, %q", code, errs)
	}
}

// TestArchiveFleetQuery: two databases archive a table of one name under
// node prefixes of one bucket; query --db s3://bucket/prefix/* (in
// another process) prints both nodes' rows merged by ts, equal ts node
// after node: the two local queries' rows merged so; --sym and --limit
// apply to the merge; other commands refuse the fleet location.
func TestArchiveFleetQuery(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	var local [2][]string
	for i, node := range []string{"venueA", "venueB"} {
		db, live := testutil.DB(t)
		archiveTable(t, db, live, "trades", 20_000+7_000*i, uint64(10+i))
		if code, _, errs := runCLI("archive", "--db", db, "--to", "s3://ticks/fleet/"+node); code != 0 {
			t.Fatalf("tickdb archive: %s", errs)
		}
		// What the archive holds: Close leaves the last segment raw.
		code, out, errs := runCLI("query", "--db", db, "--table", "trades", "--format", "csv", "--ts", "ns", "--to", "2024-03-08T14:35:00Z")
		if code != 0 {
			t.Fatalf("local query: %s", errs)
		}
		local[i] = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	header := local[0][0]
	merged := mergeByTs(local[0][1:], local[1][1:])
	cache := t.TempDir()
	fleet := []string{"--db", "s3://ticks/fleet/*", "--cache-dir", cache, "--format", "csv", "--ts", "ns"}
	code, out, errs := execCLI(t, append([]string{"query", "--table", "trades", "--to", "2024-03-08T14:35:00Z"}, fleet...)...)
	if code != 0 {
		t.Fatalf("fleet query: exit %d: %s", code, errs)
	}
	if want := header + "\n" + strings.Join(merged, "\n") + "\n"; out != want {
		t.Fatalf("fleet query: %d bytes, the local queries merged %d bytes", len(out), len(want))
	}
	if len(merged) < 25_000 {
		t.Fatalf("%d rows merged: the archived rows of both nodes were expected", len(merged))
	}
	// One symbol, a limit.
	var sym []string
	for _, l := range merged {
		if strings.Split(l, ",")[1] == "SYM07" {
			sym = append(sym, l)
		}
	}
	code, out, errs = execCLI(t, append([]string{"query", "--table", "trades", "--sym", "SYM07", "--limit", "100", "--to", "2024-03-08T14:35:00Z"}, fleet...)...)
	if code != 0 || out != header+"\n"+strings.Join(sym[:100], "\n")+"\n" {
		t.Fatalf("fleet query --sym SYM07 --limit 100: exit %d (%s); output differs from the merged local rows", code, errs)
	}
	code, _, errs = execCLI(t, append([]string{"bars", "--table", "trades", "--sym", "SYM07", "--interval", "1m"}, fleet...)...)
	if code == 0 || !strings.Contains(errs, "is for query") {
		t.Fatalf("bars on a fleet: exit %d, %q; want a refusal naming query", code, errs)
	}
}

// mergeByTs merges two csv row lists, each in ts order (ts the first
// field, integer ns), by ts: equal ts, a's rows first.
func mergeByTs(a, b []string) []string {
	ts := func(l string) int64 {
		n, _ := strconv.ParseInt(l[:strings.IndexByte(l, ',')], 10, 64)
		return n
	}
	out := make([]string, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || len(a) > 0 && ts(a[0]) <= ts(b[0]) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

// TestRetainAfterArchive: tickdb retain --after-archive deletes only the
// segments the archive's manifest lists whole, whatever the limits say;
// a table the archive does not hold keeps every segment; without the
// flag the limits alone decide.
func TestRetainAfterArchive(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	db, live := testutil.DB(t)
	archiveTable(t, db, live, "trades", 62_000, 1) // 7 whole segments of 8,192 rows and a raw one
	archiveTable(t, db, live, "quotes", 30_000, 2)
	c, err := archive.Dial("s3://ticks/keep", archive.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Sync(t.Context(), c, db, "trades", &archive.SyncOptions{MaxSegments: 3}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("retain", "--db", db, "--max-bytes", "1", "--after-archive", "s3://ticks/keep")
	if code != 0 {
		t.Fatalf("retain --after-archive: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "trades: deleted 3 segments") || !strings.Contains(out, "first row now 24,576") ||
		!strings.Contains(out, "quotes: deleted 0 segments") {
		t.Fatalf("retain --after-archive printed:\n%s\nwant trades cut at the archive's 3 segments, quotes untouched", out)
	}
	for _, seg := range []string{"seg-0000000003.zdat", "seg-0000000006.zdat"} {
		if _, err := os.Stat(filepath.Join(db, "trades", seg)); err != nil {
			t.Fatalf("trades/%s, not archived, is gone: %v", seg, err)
		}
	}
	// Without the flag, the limit alone.
	if code, out, errs = runCLI("retain", "--db", db, "--table", "trades", "--max-bytes", "1"); code != 0 || strings.Contains(out, "deleted 0 segments") {
		t.Fatalf("retain without the flag: exit %d, %s%s", code, out, errs)
	}
}
