//go:build linux

package main

// The archive with a real S3 server (versitygw, internal/harness/s3test)
// and real processes: serve --archive under ingest, SIGKILL mid-upload,
// the server gone for 30 s, a wrong key, a full bucket, retention that
// waits for the archive, and the one-shot tickdb archive.
//
// What went up is read from the server's backing directory (versitygw's
// POSIX backend: bucket = directory, object = file), so the tests hold no
// S3 connection of their own; the processes under test talk S3.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/harness/s3test"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
)

const (
	archBucket = "ticks"
	archPrefix = "node1"
	archLoc    = "s3://" + archBucket + "/" + archPrefix
	// archSeg is serve's --segment-size in these tests: 512 rows of the
	// feed's table, so segments roll (and are compressed and archived)
	// many times a second.
	archSeg = "16K"
)

// archServer starts versitygw over root ("" = a temp dir) with the
// archive's bucket.
func archServer(t *testing.T, root string) *s3test.Server {
	t.Helper()
	s := s3test.Start(t, root)
	s.Bucket(t, archBucket)
	return s
}

// archObj is the path of an archived object in the server's backing
// directory.
func archObj(s *s3test.Server, key string) string {
	return filepath.Join(s.Root, archBucket, archPrefix, filepath.FromSlash(key))
}

// archManifest reads table's manifest from the server's directory (nil
// when there is none yet).
func archManifest(t *testing.T, s *s3test.Server, table string) *archive.Manifest {
	t.Helper()
	b, err := os.ReadFile(archObj(s, table+"/"+archive.ManifestName))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	m := new(archive.Manifest)
	if err := json.Unmarshal(b, m); err != nil {
		t.Fatalf("manifest of %s: %v\n%s", table, err, b)
	}
	return m
}

// checkManifestObjects: every object the manifest lists is there, with
// the size it says (the manifest is written after its objects).
func checkManifestObjects(t *testing.T, s *s3test.Server, m *archive.Manifest) {
	t.Helper()
	size := func(key string) int64 {
		st, err := os.Stat(archObj(s, key))
		if err != nil {
			t.Fatalf("the manifest lists %s, not in the bucket: %v", key, err)
		}
		return st.Size()
	}
	size(m.Ctl)
	if m.Schema != "" {
		size(m.Schema)
	}
	var sym uint64
	for _, p := range m.Sym {
		if p.From != sym || size(p.Key) != int64(p.To-p.From) {
			t.Fatalf("sym piece %+v: want from %d, %d bytes", p, sym, p.To-p.From)
		}
		sym = p.To
	}
	if sym != m.SymBytes {
		t.Fatalf("sym pieces end at %d, the manifest says %d", sym, m.SymBytes)
	}
	next := m.FirstSeq
	for _, g := range m.Segments {
		if g.FirstSeq != next {
			t.Fatalf("segment %d starts at row %d, want %d", g.Seg, g.FirstSeq, next)
		}
		next = g.EndSeq
		if n := size(g.Key); n != g.Size {
			t.Fatalf("%s: %d bytes in the bucket, the manifest says %d", g.Key, n, g.Size)
		}
		if n := size(g.TsIdx); n != int64(g.TsCount)*8 {
			t.Fatalf("%s: %d bytes, want %d entries", g.TsIdx, n, g.TsCount)
		}
		if g.Late != "" && size(g.Late) != int64(g.LateCount)*32 {
			t.Fatalf("%s: want %d entries", g.Late, g.LateCount)
		}
	}
	if next != m.EndSeq {
		t.Fatalf("segments end at %d, the manifest says %d", next, m.EndSeq)
	}
}

// localZSegs lists table's compressed segment numbers in db.
func localZSegs(t *testing.T, db, table string) []uint64 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(db, table))
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, e := range ents {
		var n uint64
		if _, err := fmt.Sscanf(e.Name(), "seg-%d.zdat", &n); err == nil && strings.HasSuffix(e.Name(), ".zdat") {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// archiveCovers reports whether the manifest lists every compressed local
// segment of table, byte for byte (what is missing or differs, else "").
func archiveCovers(t *testing.T, s *s3test.Server, db, table string) (*archive.Manifest, string) {
	t.Helper()
	m := archManifest(t, s, table)
	segs := localZSegs(t, db, table)
	if len(segs) == 0 {
		return m, "no compressed segment on the disk yet"
	}
	if m == nil {
		return m, "no manifest yet"
	}
	listed := map[uint64]archive.Segment{}
	for _, g := range m.Segments {
		listed[g.Seg] = g
	}
	for _, n := range segs {
		g, ok := listed[n]
		if !ok {
			return m, fmt.Sprintf("segment %d (of %d local) not in the manifest (it has %d)", n, len(segs), len(m.Segments))
		}
		local, err := os.ReadFile(filepath.Join(db, table, fmt.Sprintf("seg-%010d.zdat", n)))
		if err != nil {
			return m, err.Error() // gone since (retention)
		}
		up, err := os.ReadFile(archObj(s, g.Key))
		if err != nil {
			return m, err.Error()
		}
		if !bytes.Equal(local, up) || int64(len(up)) != g.Size {
			return m, fmt.Sprintf("%s: %d bytes up (manifest %d), %d local, not the same", g.Key, len(up), g.Size, len(local))
		}
	}
	return m, ""
}

// waitArchived waits until the manifest lists every compressed local
// segment (see archiveCovers) and returns it; every manifest it sees on
// the way lists only objects that are there.
func waitArchived(t *testing.T, p *serveProc, s *s3test.Server, db, table string, within time.Duration) *archive.Manifest {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m, why := archiveCovers(t, s, db, table)
		if m != nil {
			// At every look, not only at the end: the manifest is
			// written after what it lists.
			checkManifestObjects(t, s, m)
		}
		if why == "" {
			return m
		}
		if time.Now().After(deadline) {
			log := ""
			if p != nil {
				log = p.logText()
			}
			t.Fatalf("archive not caught up after %v: %s\n%s", within, why, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// archFeed posts line protocol to a serve over HTTP: batch rows of table
// every period, with increasing timestamps an hour behind the clock but
// for one row in 97, which is late (so segments have late entries).
type archFeed struct {
	client *http.Client
	url    string
	table  string
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	acked  uint64   // rows of the 204s
	failed []string // any other answer
}

func startFeed(t *testing.T, p *serveProc, table string, batch int, period time.Duration) *archFeed {
	f := &archFeed{client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		url: "http://" + p.http + "/write", table: table, stop: make(chan struct{}), done: make(chan struct{})}
	base := time.Now().Add(-time.Hour).UnixNano()
	go func() {
		defer close(f.done)
		var b strings.Builder
		for k := uint64(0); ; {
			select {
			case <-f.stop:
				return
			case <-time.After(period):
			}
			b.Reset()
			for i := range uint64(batch) {
				ts := base + int64(k+i)*1000
				if (k+i)%97 == 96 {
					ts -= 50_000 // 50 rows back: a late row (serve's late window is 10 s)
				}
				fmt.Fprintf(&b, "%s,sym=S%d price=%d.25,size=%di %d\n", table, (k+i)%7, k+i, k+i, ts)
			}
			resp, err := f.client.Post(f.url, "text/plain", strings.NewReader(b.String()))
			if err != nil {
				f.mu.Lock()
				f.failed = append(f.failed, err.Error())
				f.mu.Unlock()
				return // the server is gone
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			f.mu.Lock()
			if resp.StatusCode == http.StatusNoContent {
				f.acked += uint64(batch)
				k += uint64(batch)
			} else {
				f.failed = append(f.failed, fmt.Sprintf("%d %s", resp.StatusCode, body))
			}
			f.mu.Unlock()
		}
	}()
	t.Cleanup(f.halt)
	return f
}

// halt stops the feed and waits for it (idempotent).
func (f *archFeed) halt() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

// result stops the feed and returns the rows acknowledged and the
// answers that were not 204.
func (f *archFeed) result() (uint64, []string) {
	f.halt()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acked, f.failed
}

func (f *archFeed) ackedSoFar() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acked
}

// waitAcked waits until the feed had rows acknowledged (and none refused).
func (f *archFeed) waitAcked(t *testing.T, rows uint64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for f.ackedSoFar() < rows {
		f.mu.Lock()
		failed := append([]string(nil), f.failed...)
		f.mu.Unlock()
		if len(failed) > 0 || time.Now().After(deadline) {
			t.Fatalf("feed: %d rows acknowledged, want %d; failed: %v", f.ackedSoFar(), rows, failed)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// apiArchive is GET /api/tables' archive object of table (nil before the
// table is there).
func apiArchive(t *testing.T, p *serveProc, table string) map[string]any {
	t.Helper()
	body := httpGetBody(t, "http://"+p.http+"/api/tables")
	var out struct {
		Tables []struct {
			Name    string         `json:"name"`
			Archive map[string]any `json:"archive"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("/api/tables: %v\n%s", err, body)
	}
	for _, tb := range out.Tables {
		if tb.Name == table {
			if tb.Archive == nil {
				t.Fatalf("/api/tables: %s has no archive object:\n%s", table, body)
			}
			return tb.Archive
		}
	}
	return nil
}

func httpGetBody(t *testing.T, url string) []byte {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
	}
	return b
}

// archMetric is the value of /metrics' tickdb_archive_NAME for table (-1
// when there is no such line).
func archMetric(t *testing.T, p *serveProc, name, table string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^tickdb_archive_` + name + `\{([^}]*)\} (\S+)$`)
	body := httpGetBody(t, "http://"+p.http+"/metrics")
	for _, m := range re.FindAllStringSubmatch(string(body), -1) {
		if strings.Contains(m[1], `table="`+table+`"`) && strings.Contains(m[1], `location="`+archLoc+`"`) {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatalf("/metrics: %s", m[0])
			}
			return v
		}
	}
	return -1
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// killServe kills p (SIGKILL) and waits for it.
func killServe(p *serveProc) {
	p.c.Kill()
	err := <-p.done
	p.done <- err // for the cleanup
}

// tableRows is the table's row count and first row.
func tableRows(t *testing.T, db, table string) (rows, first uint64) {
	t.Helper()
	r, err := reader.Open(db, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.Len(), r.FirstSeq()
}

// TestArchiveServeIngest: a serve --archive process under steady HTTP
// ingest with small segments. Within a bounded wait every compressed local
// segment is in the manifest, its object byte for byte the local .zdat,
// every listed object there; /metrics and /api/tables report the
// archive's rows, no lag and what was uploaded; tickdb stat (another
// process) prints the archive lines from the status file. tickdb archive
// to the same place is refused while serve runs, and runs once it is
// gone.
func TestArchiveServeIngest(t *testing.T) {
	t.Parallel()
	s := archServer(t, "")
	db, live := testutil.DB(t)
	p := startServeEnv(t, s.Env(), "--db", db, "--live-dir", live, "--segment-size", archSeg, "--archive", archLoc)
	f := startFeed(t, p, "trades", 200, 20*time.Millisecond)
	f.waitAcked(t, 20_000, time.Minute) // ~40 segments
	acked, failed := f.result()
	if len(failed) > 0 {
		t.Fatalf("writes not answered 204: %v", failed)
	}
	waitCount(t, p, db, "trades", acked)
	m := waitArchived(t, p, s, db, "trades", 30*time.Second)
	segs := localZSegs(t, db, "trades")
	if len(m.Segments) != len(segs) || m.FirstSeq != 0 || m.EndSeq != (segs[len(segs)-1]+1)<<m.SegShift {
		t.Fatalf("manifest: %d segments, rows [%d, %d); local: %d compressed segments", len(m.Segments), m.FirstSeq, m.EndSeq, len(segs))
	}
	late := uint64(0)
	for _, g := range m.Segments {
		late += g.LateCount
	}
	if late == 0 {
		t.Fatalf("no late entries archived; the feed sends one late row in 97")
	}
	t.Logf("%d rows, %d segments archived, %d late entries", acked, len(segs), late)

	// The account: /api/tables, /metrics, the status file, tickdb stat.
	// They follow the manifest by a pass (1 s).
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := apiArchive(t, p, "trades")
		if num(a["archived_rows"]) == float64(m.EndSeq) && num(a["pending_segments"]) == 0 && a["last_sync"] != "0001-01-01T00:00:00Z" {
			if a["location"] != archLoc || a["error"] != nil || num(a["uploaded_segments"]) != float64(len(segs)) || num(a["uploaded_bytes"]) <= 0 {
				t.Fatalf("/api/tables archive: %v", a)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/tables archive never caught up with the manifest (rows %d): %v", m.EndSeq, a)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for name, want := range map[string]float64{"rows": float64(m.EndSeq), "pending_segments": 0, "pending_bytes": 0,
		"uploaded_segments_total": float64(len(segs)), "failures": 0} {
		if v := archMetric(t, p, name, "trades"); v != want {
			t.Errorf("/metrics tickdb_archive_%s = %v, want %v", name, v, want)
		}
	}
	for _, name := range []string{"uploaded_bytes_total", "last_sync_timestamp_seconds", "last_ts_seconds"} {
		if v := archMetric(t, p, name, "trades"); v <= 0 {
			t.Errorf("/metrics tickdb_archive_%s = %v, want > 0", name, v)
		}
	}
	st, err := archive.ReadStatus(filepath.Join(db, archive.StatusName))
	if err != nil || st == nil || st.Location != archLoc || st.Pid != p.c.Pid || len(st.Tables) != 1 {
		t.Fatalf("status file: %+v, %v", st, err)
	}
	// tickdb archive beside it, to the same place: refused, naming it.
	code, out, errs := execCLIEnv(t, s.Env(), "archive", "--db", db, "--to", archLoc)
	if want := fmt.Sprintf("tickdb: archive: tickdb serve (pid %d) archives %s to %s already", p.c.Pid, db, archLoc); code != 1 || !strings.Contains(errs, want) {
		t.Fatalf("tickdb archive beside serve --archive: exit %d, want 1 and %q:\n%s%s", code, want, out, errs)
	}
	for {
		code, out, errs := execCLI(t, "stat", "--db", db)
		if code != 0 {
			t.Fatalf("stat: exit %d: %s", code, errs)
		}
		want := regexp.MustCompile(`(?m)^  archive +` + regexp.QuoteMeta(archLoc) + ` +rows below ` + regexp.QuoteMeta(commas(int64(m.EndSeq))) + `; as of \S+ \(serve pid ` + strconv.Itoa(p.c.Pid) + `\)$`)
		if want.MatchString(out) && regexp.MustCompile(`(?m)^    archive lag +none: every compressed segment is up$`).MatchString(out) &&
			regexp.MustCompile(`(?m)^    last caught up +\S+$`).MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stat has no archive lines for rows below %d:\n%s", m.EndSeq, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopServe(t, p)
	// Once serve is gone, tickdb archive runs (and has what serve's close
	// compressed, if anything, to upload).
	code, out, errs = execCLIEnv(t, s.Env(), "archive", "--db", db, "--to", archLoc)
	if code != 0 || !regexp.MustCompile(`^trades: [0-9]+ segments up `).MatchString(out) {
		t.Fatalf("tickdb archive after serve stopped: exit %d\n%s%s", code, out, errs)
	}
	if _, why := archiveCovers(t, s, db, "trades"); why != "" {
		t.Fatalf("after tickdb archive: %s", why)
	}
}

// TestArchiveServeKill9: serve starts with the S3 server down, so a
// backlog of compressed segments piles up; the server comes back and
// serve is SIGKILLed while it puts them (segment objects up that the
// manifest does not list yet). The manifest then lists only objects that
// are there, with their sizes, and not the whole backlog. A new serve completes the archive, uploading only
// what the manifest did not list (its uploaded-segments counter).
func TestArchiveServeKill9(t *testing.T) {
	t.Parallel()
	s := archServer(t, "")
	s.Stop()
	db, live := testutil.DB(t)
	args := []string{"--db", db, "--live-dir", live, "--segment-size", archSeg, "--archive", archLoc, "--archive-uploads", "4"}
	p := startServeEnv(t, s.Env(), args...)
	if !strings.Contains(p.logText(), "the archive's server does not answer") {
		t.Fatalf("no warning for the server being down:\n%s", p.logText())
	}
	f := startFeed(t, p, "trades", 500, 10*time.Millisecond)
	f.waitAcked(t, 60_000, time.Minute) // ~120 segments
	acked, failed := f.result()
	if len(failed) > 0 {
		t.Fatalf("writes not answered 204: %v", failed)
	}
	waitCount(t, p, db, "trades", acked)
	if m := archManifest(t, s, "trades"); m != nil {
		t.Fatalf("a manifest with the server down: %+v", m)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	// Kill while segment objects are up that the manifest does not list
	// yet (an upload cut short), after it listed some; or, failing that
	// moment, once it lists 20 (the archiver's backoff after the failures
	// is up to 30 s).
	manifest := archObj(s, "trades/"+archive.ManifestName)
	segDir := filepath.Dir(archObj(s, archive.SegKey("trades", 0, 1, "zdat")))
	deadline := time.Now().Add(90 * time.Second)
	for {
		var m archive.Manifest
		if b, err := os.ReadFile(manifest); err == nil && json.Unmarshal(b, &m) == nil && len(m.Segments) > 0 {
			up := 0
			ents, _ := os.ReadDir(segDir)
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".zdat") {
					up++
				}
			}
			if up > len(m.Segments) || len(m.Segments) >= 20 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no manifest within 90 s of the server's return:\n%s", p.logText())
		}
		time.Sleep(time.Millisecond)
	}
	killServe(p)
	local := localZSegs(t, db, "trades")
	m := archManifest(t, s, "trades")
	checkManifestObjects(t, s, m)
	atKill := len(m.Segments)
	if atKill >= len(local) {
		t.Fatalf("the kill came after the whole backlog was up (%d segments of %d): not mid-upload", atKill, len(local))
	}
	up := 0
	if ents, err := os.ReadDir(segDir); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".zdat") {
				up++
			}
		}
	}
	t.Logf("killed with %d of %d segments in the manifest, %d segment objects in the bucket", atKill, len(local), up)

	p2 := startServeEnv(t, s.Env(), args...)
	var seen []float64 // the uploaded-segments count as it moved
	deadline = time.Now().Add(time.Minute)
	for {
		a := apiArchive(t, p2, "trades")
		if up := num(a["uploaded_segments"]); len(seen) == 0 || up != seen[len(seen)-1] {
			seen = append(seen, up)
		}
		if a != nil && num(a["pending_segments"]) == 0 && a["last_sync"] != "0001-01-01T00:00:00Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted serve did not catch up in a minute: %v\n%s", a, p2.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("segments uploaded as the restarted serve caught up: %v", seen)
	m = waitArchived(t, p2, s, db, "trades", time.Minute)
	final := len(m.Segments)
	// The counters follow the manifest by a pass.
	deadline = time.Now().Add(30 * time.Second)
	for {
		a := apiArchive(t, p2, "trades")
		if num(a["pending_segments"]) == 0 && num(a["archived_rows"]) == float64(m.EndSeq) {
			if up := num(a["uploaded_segments"]); up != float64(final-atKill) {
				t.Fatalf("the restarted serve uploaded %v segments; the manifest listed %d of %d at the kill", up, atKill, final)
			}
			if up := archMetric(t, p2, "uploaded_segments_total", "trades"); up != float64(final-atKill) {
				t.Fatalf("/metrics: the restarted serve uploaded %v segments; the manifest listed %d of %d at the kill", up, atKill, final)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/tables archive never caught up with the manifest (rows %d): %v", m.EndSeq, a)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rows, _ := tableRows(t, db, "trades"); rows != acked {
		t.Fatalf("%d rows after the kill and restart, %d acknowledged", rows, acked)
	}
	stopServe(t, p2)
}

// TestArchiveServeS3Down: the S3 server is gone for 30 s while ingest
// goes on. Meanwhile serve answers every write 204, and /api/tables (and
// tickdb stat) report the lag growing, the failures and an error that
// names the location. Once the server is back, the archive catches up
// (within the backoff's 30 s and the upload), every compressed segment
// in it byte for byte, and no row is lost.
func TestArchiveServeS3Down(t *testing.T) {
	t.Parallel()
	s := archServer(t, "")
	db, live := testutil.DB(t)
	p := startServeEnv(t, s.Env(), "--db", db, "--live-dir", live, "--segment-size", archSeg, "--archive", archLoc)
	f := startFeed(t, p, "trades", 50, 20*time.Millisecond) // ~5 segments a second
	deadline := time.Now().Add(time.Minute)
	for num(apiArchive(t, p, "trades")["uploaded_segments"]) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("nothing archived in a minute:\n%s", p.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Stop()
	down := time.Now()
	var pending []float64 // as it changed
	var last map[string]any
	for time.Since(down) < 30*time.Second {
		time.Sleep(500 * time.Millisecond)
		a := apiArchive(t, p, "trades")
		if num(a["failures"]) > 0 {
			last = a
			if n := num(a["pending_segments"]); len(pending) == 0 || n != pending[len(pending)-1] {
				pending = append(pending, n)
			}
		}
	}
	if last == nil {
		t.Fatalf("no failure reported in 30 s without the server:\n%s", p.logText())
	}
	msg, _ := last["error"].(string)
	if !strings.Contains(msg, archLoc+"/") || len(pending) < 2 || pending[len(pending)-1] <= pending[0] {
		t.Fatalf("while the server was down: pending segments %v, last account %v", pending, last)
	}
	t.Logf("while the server was down: pending segments %v; error %q", pending, msg)
	code, out, errs := execCLI(t, "stat", "--db", db)
	if code != 0 || !regexp.MustCompile(`(?m)^    archive lag +[1-9][0-9]* compressed segment\(s\), .* not up yet$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^    archive error +[1-9][0-9]* attempt\(s\) failed +archive: .*`+regexp.QuoteMeta(archLoc)).MatchString(out) {
		t.Fatalf("stat while the server is down: exit %d\n%s%s", code, out, errs)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	f.waitAcked(t, f.ackedSoFar()+2000, time.Minute) // the feed goes on a little
	acked, failed := f.result()
	if len(failed) > 0 {
		t.Fatalf("writes not answered 204: %v", failed)
	}
	waitCount(t, p, db, "trades", acked)
	m := waitArchived(t, p, s, db, "trades", 90*time.Second)
	segs := localZSegs(t, db, "trades")
	if m.FirstSeq != 0 || len(m.Segments) != len(segs) {
		t.Fatalf("manifest: %d segments from row %d; %d local", len(m.Segments), m.FirstSeq, len(segs))
	}
	t.Logf("caught up %.1f s after the server came back: %d segments, %d rows acknowledged", time.Since(down.Add(30*time.Second)).Seconds(), len(segs), acked)
	deadline = time.Now().Add(30 * time.Second)
	for {
		a := apiArchive(t, p, "trades")
		if num(a["pending_segments"]) == 0 && a["error"] == nil && num(a["failures"]) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/tables after the catch-up: %v", a)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopServe(t, p)
	if rows, _ := tableRows(t, db, "trades"); rows != acked {
		t.Fatalf("%d rows, %d acknowledged", rows, acked)
	}
}

// dirFiles lists every file under dir with its size.
func dirFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() {
			out[path] = info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArchiveDenied: a wrong secret key (403). serve --archive exits at
// once with an error that names the location and the variables to check;
// tickdb archive exits 1 with it; nothing local is deleted, nothing goes
// up. A bucket the server does not have is the same.
func TestArchiveDenied(t *testing.T) {
	t.Parallel()
	s := archServer(t, "")
	db, _ := compactDB(t, 2*16384+100)
	if code, _, errs := execCLI(t, "compact", "--db", db); code != 0 {
		t.Fatalf("compact: %s", errs)
	}
	before := dirFiles(t, db)
	env := append(s.Env(), "AWS_SECRET_ACCESS_KEY=not-the-key") // the last one wins
	live := testutil.LiveDir(t)
	code, _, errs := execCLIEnv(t, env, "serve", "--db", db, "--live-dir", live, "--ilp", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--archive", archLoc, "--retain-bytes", "1K")
	for _, want := range []string{"--archive: archive: check bucket " + archLoc + ": access denied", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if code == 0 || !strings.Contains(errs, want) {
			t.Errorf("serve with a wrong key: exit %d, want an error with %q:\n%s", code, want, errs)
		}
	}
	if strings.Contains(errs, "tickdb serve: started") {
		t.Errorf("serve with a wrong key started:\n%s", errs)
	}
	t.Logf("serve with a wrong key: exit %d: %s", code, strings.TrimSpace(errs))
	code, out, errs := execCLIEnv(t, env, "archive", "--db", db, "--to", archLoc)
	for _, want := range []string{"archive: check bucket " + archLoc + ": access denied", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("tickdb archive with a wrong key: exit %d, want 1 and an error with %q:\n%s%s", code, want, out, errs)
		}
	}
	t.Logf("tickdb archive with a wrong key: exit %d: %s", code, strings.TrimSpace(errs))
	noBucket := "s3://nobucket/" + archPrefix
	code, _, errs = execCLIEnv(t, s.Env(), "serve", "--db", db, "--live-dir", live, "--ilp", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--archive", noBucket, "--retain-bytes", "1K")
	if want := `--archive: archive ` + noBucket + `: no bucket "nobucket" on the server (make it first)`; code == 0 || !strings.Contains(errs, want) {
		t.Errorf("serve with no bucket: exit %d, want an error with %q:\n%s", code, want, errs)
	}
	code, _, errs = execCLIEnv(t, s.Env(), "archive", "--db", db, "--to", noBucket)
	if want := `archive ` + noBucket + `: no bucket "nobucket" on the server (make it first)`; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("tickdb archive with no bucket: exit %d, want 1 and an error with %q:\n%s", code, want, errs)
	}
	after := dirFiles(t, db)
	for f, n := range before {
		if after[f] != n {
			t.Errorf("%s: %d bytes before, %d after", f, n, after[f])
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(s.Root, archBucket)); len(ents) != 0 {
		t.Errorf("something went up with a wrong key: %v", ents)
	}
}

// TestArchiveBucketFull: the S3 server's disk is full (versitygw over a
// small tmpfs, filled). Uploads fail with the server's error, naming the
// location, in /api/tables; serve goes on answering writes 204; with
// --retain-bytes far below the table and retention after the archive (the
// default) no local segment is deleted.
func TestArchiveBucketFull(t *testing.T) {
	t.Parallel()
	root := testutil.MountSmall(t, testutil.Tmpfs, 4<<20)
	s := archServer(t, root)
	if err := os.Mkdir(filepath.Join(root, "ballast"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := testutil.Fill(filepath.Join(root, "ballast", "fill")); err != nil {
		t.Fatal(err)
	}
	db, live := testutil.DB(t)
	p := startServeEnv(t, s.Env(), "--db", db, "--live-dir", live, "--segment-size", archSeg, "--archive", archLoc, "--retain-bytes", "32K")
	f := startFeed(t, p, "trades", 200, 20*time.Millisecond)
	var a map[string]any
	deadline := time.Now().Add(time.Minute)
	for {
		a = apiArchive(t, p, "trades")
		if num(a["failures"]) > 0 && num(a["pending_segments"]) >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/tables with the bucket full: %v\n%s", a, p.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	msg, _ := a["error"].(string)
	if !strings.Contains(msg, "archive: put "+archLoc+"/trades/") {
		t.Fatalf("the error with the bucket full: %q", msg)
	}
	t.Logf("with the bucket full: %q", msg)
	acked, failed := f.result()
	if len(failed) > 0 {
		t.Fatalf("writes not answered 204 with the bucket full: %v", failed)
	}
	waitCount(t, p, db, "trades", acked)
	rows, first := tableRows(t, db, "trades")
	segs := localZSegs(t, db, "trades")
	if first != 0 || rows != acked || len(segs) < 10 || segs[0] != 0 || segs[len(segs)-1] != uint64(len(segs)-1) {
		t.Fatalf("with the bucket full: rows [%d, %d), %d acknowledged; compressed segments %v", first, rows, acked, segs)
	}
	if m := archManifest(t, s, "trades"); m != nil && len(m.Segments) > 0 {
		t.Fatalf("a manifest with segments with the bucket full: %+v", m)
	}
	stopServe(t, p)
}

// TestArchiveRetainWaits: --retain-bytes (or --retain-age) far below the
// table with the S3 server down: retention deletes nothing the archive does not hold (the
// files stay, the first row stays 0); once the server is back and the
// archive caught up, retention deletes what is archived (the first row
// moves, never past the archive). With --retain-after-archive=false it
// deletes regardless: the gate is what held it.
func TestArchiveRetainWaits(t *testing.T) {
	t.Parallel()
	for _, retain := range [][]string{{"--retain-bytes", "32K"}, {"--retain-age", "2ms"}} { // the feed's rows are 1 µs apart
		t.Run("after-archive"+retain[0][len("--retain"):], func(t *testing.T) {
			t.Parallel()
			s := archServer(t, "")
			s.Stop()
			db, live := testutil.DB(t)
			p := startServeEnv(t, s.Env(), "--db", db, "--live-dir", live, "--segment-size", archSeg, "--archive", archLoc, retain[0], retain[1])
			f := startFeed(t, p, "trades", 200, 20*time.Millisecond)
			f.waitAcked(t, 10_000, time.Minute) // ~20 segments
			waitCount(t, p, db, "trades", f.ackedSoFar())
			rows, first := tableRows(t, db, "trades")
			segs := localZSegs(t, db, "trades")
			if first != 0 || len(segs) < 10 || segs[0] != 0 || segs[len(segs)-1] != uint64(len(segs)-1) {
				t.Fatalf("with the server down: rows [%d, %d); compressed segments %v", first, rows, segs)
			}
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
			// Retention runs at each segment roll: the feed goes on.
			deadline := time.Now().Add(90 * time.Second)
			for first == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("retention deleted nothing in 90 s after the server came back:\n%s", p.logText())
				}
				time.Sleep(100 * time.Millisecond)
				_, first = tableRows(t, db, "trades")
			}
			acked, failed := f.result()
			if len(failed) > 0 {
				t.Fatalf("writes not answered 204: %v", failed)
			}
			waitCount(t, p, db, "trades", acked)
			m := waitArchived(t, p, s, db, "trades", time.Minute)
			_, first = tableRows(t, db, "trades")
			if m.FirstSeq != 0 || m.EndSeq < first || first == 0 {
				t.Fatalf("first row %d; the archive holds rows [%d, %d)", first, m.FirstSeq, m.EndSeq)
			}
			t.Logf("retention moved the first row to %d; the archive holds rows [0, %d)", first, m.EndSeq)
			stopServe(t, p)
		})
	}
	t.Run("regardless", func(t *testing.T) {
		t.Parallel()
		s := archServer(t, "")
		s.Stop()
		db, live := testutil.DB(t)
		p := startServeEnv(t, s.Env(), "--db", db, "--live-dir", live, "--segment-size", archSeg, "--archive", archLoc, "--retain-bytes", "32K",
			"--retain-after-archive=false")
		f := startFeed(t, p, "trades", 200, 20*time.Millisecond)
		deadline := time.Now().Add(time.Minute)
		for {
			f.waitAcked(t, f.ackedSoFar()+200, time.Minute)
			if _, first := tableRows(t, db, "trades"); first > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("--retain-after-archive=false: retention deleted nothing in a minute")
			}
		}
		if _, failed := f.result(); len(failed) > 0 {
			t.Fatalf("writes not answered 204: %v", failed)
		}
		stopServe(t, p)
	})
}

// TestArchiveOneShot: tickdb archive on a closed database (after tickdb
// compact, its last segment partial) uploads every segment, byte for
// byte; a second run uploads none.
func TestArchiveOneShot(t *testing.T) {
	t.Parallel()
	s := archServer(t, "")
	const n = 3*16384 + 100
	db, _ := compactDB(t, n)
	if code, _, errs := execCLI(t, "compact", "--db", db); code != 0 {
		t.Fatalf("compact: %s", errs)
	}
	code, out, errs := execCLIEnv(t, s.Env(), "archive", "--db", db, "--to", archLoc)
	if code != 0 || !regexp.MustCompile(`^t: 4 segments up \(.* in [0-9.]+s\); the archive holds rows \[0, `+strconv.Itoa(n)+`\) in 4 segments\n$`).MatchString(out) {
		t.Fatalf("tickdb archive: exit %d\n%s%s", code, out, errs)
	}
	m, why := archiveCovers(t, s, db, "t")
	if why != "" {
		t.Fatal(why)
	}
	checkManifestObjects(t, s, m)
	if len(m.Segments) != 4 || m.EndSeq != n {
		t.Fatalf("manifest: %d segments, rows [%d, %d)", len(m.Segments), m.FirstSeq, m.EndSeq)
	}
	code, out, errs = execCLIEnv(t, s.Env(), "archive", "--db", db, "--to", archLoc)
	if code != 0 || !regexp.MustCompile(`^t: 0 segments up \(.*\); the archive holds rows \[0, `+strconv.Itoa(n)+`\) in 4 segments\n$`).MatchString(out) {
		t.Fatalf("tickdb archive again: exit %d\n%s%s", code, out, errs)
	}
}

// TestArchiveServeS3Hangs: the S3 server hangs (SIGSTOP: connections
// open, nothing answered) while ingest goes on. The archive does not hang
// with it: within the client's request timeout /api/tables reports the
// failure, naming the location, and the lag; writes are answered 204
// throughout; once the server goes on, the archive catches up.
func TestArchiveServeS3Hangs(t *testing.T) {
	t.Parallel()
	s := archServer(t, "")
	db, live := testutil.DB(t)
	p := startServeEnv(t, s.Env(), "--db", db, "--live-dir", live, "--segment-size", archSeg, "--archive", archLoc)
	f := startFeed(t, p, "trades", 50, 20*time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for num(apiArchive(t, p, "trades")["uploaded_segments"]) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("nothing archived in a minute:\n%s", p.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	var a map[string]any
	deadline = time.Now().Add(90 * time.Second)
	for {
		time.Sleep(500 * time.Millisecond)
		a = apiArchive(t, p, "trades")
		msg, _ := a["error"].(string)
		if num(a["failures"]) > 0 && num(a["pending_segments"]) > 0 && strings.Contains(msg, archLoc+"/") {
			break
		}
		if time.Now().After(deadline) {
			s.Resume()
			t.Fatalf("no failure reported in 90 s of a hung server: %v\n%s", a, p.logText())
		}
	}
	t.Logf("a hung server reported after %.1f s: %v", time.Since(paused).Seconds(), a["error"])
	acked, failed := f.result()
	if len(failed) > 0 {
		t.Fatalf("writes not answered 204: %v", failed)
	}
	waitCount(t, p, db, "trades", acked)
	// SIGTERM while the server hangs: serve stops (exit 0), not held by
	// an upload in flight.
	stopServe(t, p)
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	p = startServeEnv(t, s.Env(), "--db", db, "--live-dir", live, "--segment-size", archSeg, "--archive", archLoc)
	waitArchived(t, p, s, db, "trades", 90*time.Second)
	stopServe(t, p)
	if rows, _ := tableRows(t, db, "trades"); rows != acked {
		t.Fatalf("%d rows, %d acknowledged", rows, acked)
	}
}

// TestArchiveConsole: the console's Tables panel (a real headless
// Chromium against serve --archive) shows the archive column: "up to
// date" once every compressed segment is up, then, with the S3 server
// gone and ingest going on, the segments behind as an error whose title
// names the location and the failures.
func TestArchiveConsole(t *testing.T) {
	t.Parallel()
	exe := chromiumPath()
	if exe == "" {
		testutil.Need(t, "no chromium on PATH (apt-get install chromium, or set CHROMIUM; CI installs Debian's chromium: .ci/run)")
	}
	s := archServer(t, "")
	db, live := testutil.DB(t)
	p := startServeEnv(t, s.Env(), "--db", db, "--live-dir", live, "--segment-size", archSeg, "--archive", archLoc)
	f := startFeed(t, p, "trades", 500, 20*time.Millisecond)
	f.waitAcked(t, 5000, time.Minute)
	acked, failed := f.result()
	if len(failed) > 0 {
		t.Fatalf("writes not answered 204: %v", failed)
	}
	waitCount(t, p, db, "trades", acked)
	waitArchived(t, p, s, db, "trades", 30*time.Second)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+p.http+"/")); err != nil {
		t.Fatalf("load the console: %v", err)
	}
	// cell waits (the panel refreshes every 3 s) until the archive cell
	// of trades is what ok wants, and returns its text, class and title.
	cell := func(what string, ok func(text, class, title string) bool) (string, string, string) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
			v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => { const td = document.querySelector('#tables tr[data-table="trades"] td:nth-child(11)');
				return td ? [td.textContent, td.className, td.title] : ['', '', ''] })()`))
			cancel()
			if err == nil && ok(v[0], v[1], v[2]) {
				return v[0], v[1], v[2]
			}
			if time.Now().After(deadline) {
				t.Fatalf("the console's archive cell is not %s: %q, %v\n%s", what, v, err, p.logText())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	text, _, title := cell("up to date", func(text, class, title string) bool { return text == "up to date" && class == "" })
	if !strings.HasPrefix(title, archLoc+": rows below ") {
		t.Fatalf("the archive cell's title: %q", title)
	}
	t.Logf("archive cell: %q (%s)", text, title)

	s.Stop()
	f = startFeed(t, p, "trades", 500, 20*time.Millisecond)
	text, _, title = cell("failing", func(text, class, title string) bool {
		return strings.HasPrefix(text, "failing: ") && strings.Contains(text, " seg behind (") && class == "error"
	})
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(archLoc) + `: rows below [0-9,]+ archived; [1-9][0-9]* attempts failed: archive: .*` + regexp.QuoteMeta(archLoc) + `/`).MatchString(title) {
		t.Fatalf("the archive cell's title with the server gone: %q", title)
	}
	t.Logf("archive cell: %q (%s)", text, title)
	if _, failed := f.result(); len(failed) > 0 {
		t.Fatalf("writes not answered 204: %v", failed)
	}
	stopServe(t, p)
}

// TestArchiveBadFlags: serve's and tickdb archive's archive flags, wrong,
// stop them at once with an error that names the flag and what it wants;
// nothing is created.
func TestArchiveBadFlags(t *testing.T) {
	t.Parallel()
	db := t.TempDir()
	live := testutil.LiveDir(t)
	serve := func(more ...string) []string {
		return append([]string{"serve", "--db", db, "--live-dir", live, "--ilp", "127.0.0.1:0", "--http", "127.0.0.1:0"}, more...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{serve("--archive", "ticks/node1"), `--archive: archive location "ticks/node1": want s3://bucket/prefix`},
		{serve("--archive", "s3:///node1"), `--archive: archive location "s3:///node1": no bucket (want s3://bucket/prefix)`},
		{serve("--archive", archLoc, "--archive-endpoint", "ftp://127.0.0.1:1"), `--archive: archive: endpoint "ftp://127.0.0.1:1": want http://host:port or https://host`},
		{serve("--archive", archLoc, "--archive-uploads", "0"), `--archive-uploads 0: want 1 or more`},
		{serve("--archive-endpoint", "http://127.0.0.1:1"), `--archive-endpoint and --archive-parquet need --archive s3://bucket/prefix`},
		{serve("--archive", archLoc, "--compact=false"), `--archive uploads compressed segments: it needs --compact`},
		{[]string{"retain", "--db", db, "--max-bytes", "1", "--after-archive", "ticks"}, `--after-archive: archive location "ticks": want s3://bucket/prefix`},
		{[]string{"archive", "--db", db}, `archive: --to s3://bucket/prefix is required`},
		{[]string{"archive", "--db", db, "--to", "/tmp/x"}, `archive location "/tmp/x": want s3://bucket/prefix`},
		{[]string{"archive", "--db", db, "--to", archLoc, "--uploads", "0"}, `archive: --uploads 0: want 1 or more`},
	} {
		code, out, errs := execCLI(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("tickdb %s: exit %d, want an error with %q:\n%s%s", strings.Join(c.args, " "), code, c.want, out, errs)
		}
	}
	if ents, _ := os.ReadDir(db); len(ents) != 0 {
		t.Errorf("bad flags left files in the database: %v", ents)
	}
}
