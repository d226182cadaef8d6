package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/writer"
)

// statJSON is what a script reads of stat --format json.
type statJSON struct {
	Tables []struct {
		Name         string `json:"name"`
		Rows         uint64 `json:"rows"`
		Bytes        int64  `json:"bytes"`
		LogicalBytes int64  `json:"logical_bytes"`
		Schema       []struct {
			Name, Type string
		} `json:"schema"`
		FirstSeq     uint64 `json:"first_seq"`
		DurableRows  uint64 `json:"durable_rows"`
		FirstTs      *int64 `json:"first_ts"`
		LastTs       *int64 `json:"last_ts"`
		FirstTime    string `json:"first_time"`
		LastTime     string `json:"last_time"`
		Segments     uint64 `json:"segments"`
		SealedSegs   uint64 `json:"sealed_segments"`
		SegmentRows  uint64 `json:"segment_rows"`
		SegmentBytes int64  `json:"segment_bytes"`
		Symbols      int    `json:"symbols"`
		Dictionary   int    `json:"dictionary"`
		OutOfOrder   uint64 `json:"out_of_order"`
		LateRows     uint64 `json:"late_rows"`
		LateWindowNs int64  `json:"late_window_ns"`
		Writer       *struct {
			Pid     int    `json:"pid"`
			State   string `json:"state"`
			Running bool   `json:"running"`
		} `json:"writer"`
		LiveDir      string `json:"live_dir"`
		LiveSlots    int    `json:"live_slots"`
		LiveBytes    int64  `json:"live_bytes"`
		LiveBytesMax int64  `json:"live_bytes_max"`
		HotBytes     int64  `json:"hot_bytes"`
		// Compressed is there when the table has compressed segments.
		Compressed *struct {
			Segments int     `json:"segments"`
			RawBytes int64   `json:"raw_bytes"`
			Bytes    int64   `json:"bytes"`
			Ratio    float64 `json:"ratio"`
			Columns  []struct {
				Name     string  `json:"name"`
				RawBytes int64   `json:"raw_bytes"`
				Bytes    int64   `json:"bytes"`
				Ratio    float64 `json:"ratio"`
			} `json:"columns"`
			Clustered int   `json:"clustered_segments"`
			SeqBytes  int64 `json:"seq_bytes"`
		} `json:"compressed"`
		Lifecycle struct {
			Live, Hot, Raw, Historical struct {
				Segments uint64 `json:"segments"`
				Rows     uint64 `json:"rows"`
			}
		} `json:"lifecycle"`
		Created string `json:"created"`
	} `json:"tables"`
}

func parseStat(t *testing.T, out string) statJSON {
	t.Helper()
	var s statJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("stat --format json: %v\n%s", err, out)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("stat --format json is not one line:\n%s", out)
	}
	return s
}

// waitCompressed waits until background compaction has swapped segment n
// of table dir for its compressed file: seg-n.zdat there and seg-n.dat
// removed (the swap's last step, after the compaction mark moved).
func waitCompressed(t *testing.T, dir string, n uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, zerr := os.Stat(format.ZSegPath(dir, n))
		_, rerr := os.Stat(format.SegPath(dir, n))
		if zerr == nil && errors.Is(rerr, fs.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("segment %d of %s not compressed in the background after 30 s: %v, %v", n, dir, zerr, rerr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStatJSON checks every field of stat --format json for the known
// table, an empty table and a table whose writer is open, in process and
// as its own process.
func TestStatJSON(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	sw := newSeqWriter(t, db, live+"/ticks", "ticks") // open: this process writes it
	sw.write(300, 100)
	if err := sw.w.Sync(); err != nil {
		t.Fatal(err)
	}
	// Background compaction (the default CompactAge) compresses segment
	// 0 once segment 1 has durable, checkpointed rows, and segment 1 once
	// segment 2 has (Sync made its 44 rows durable and checkpointed them);
	// segment 2 is live.
	waitCompressed(t, filepath.Join(db, "ticks"), 0)
	waitCompressed(t, filepath.Join(db, "ticks"), 1)
	empty := newSeqWriter(t, db, live+"/empty", "empty")
	if err := empty.w.Close(); err != nil {
		t.Fatal(err)
	}
	empty.w = nil
	// A table being created sits in a hidden directory: not a table yet.
	if err := os.MkdirAll(filepath.Join(db, ".new.tmp-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(db, ".new.tmp-1", format.CtlName), nil, 0o644)

	code, out, errs := runCLI("stat", "--db", db, "--format", "json")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	s := parseStat(t, out)
	if len(s.Tables) != 3 || s.Tables[0].Name != "empty" || s.Tables[1].Name != "ticks" || s.Tables[2].Name != "trades" {
		t.Fatalf("tables: %+v", s.Tables)
	}
	segBytes := format.SegFileSize(32, 128)

	e := s.Tables[0]
	if alloc, logical := testutil.DiskUse(t, filepath.Join(db, "empty")); e.Rows != 0 || e.FirstTs != nil || e.LastTs != nil || e.FirstTime != "" || e.Segments != 0 || e.Writer != nil ||
		e.Bytes != alloc || e.LogicalBytes != logical {
		t.Errorf("empty table: %+v", e)
	}

	k := s.Tables[1]
	g := testutil.NewSeqRows()
	if k.Rows != 300 || k.DurableRows != 300 || *k.FirstTs != g.Ts(0) || *k.LastTs != g.Ts(299) || k.Segments != 3 || k.SealedSegs != 2 || k.SegmentRows != 128 {
		t.Errorf("ticks: %+v", k)
	}
	if k.Writer == nil || k.Writer.Pid != os.Getpid() || k.Writer.State != "open" || !k.Writer.Running {
		t.Errorf("ticks writer: %+v, want this process, open, running", k.Writer)
	}
	// 4 live slots (the default); the live segment has its hot copy
	// beside it (the flusher writes it as the rows become durable).
	slots := 4
	if k.LiveDir != sw.w.LiveDir() || k.LiveSlots != slots || k.LiveBytesMax != int64(slots)*segBytes || k.LiveBytes <= 0 || k.LiveBytes > k.LiveBytesMax || k.HotBytes <= 0 {
		t.Errorf("ticks live: dir %s slots %d bytes %d max %d hot %d; want %s, %d, (0, %d], > 0", k.LiveDir, k.LiveSlots, k.LiveBytes, k.LiveBytesMax, k.HotBytes, sw.w.LiveDir(), slots, int64(slots)*segBytes)
	}
	if l := k.Lifecycle; l.Live.Segments != 1 || l.Live.Rows != 44 || l.Hot.Segments != 0 || l.Raw.Rows != 0 ||
		l.Historical.Segments != 2 || l.Historical.Rows != 256 {
		t.Errorf("ticks lifecycle: %+v; want 44 rows live, none hot, 256 historical", l)
	}
	// Segments 0 and 1 compressed: 128 rows of 32 bytes each, clustered
	// by symbol (format version 2: a seq column beside the schema's).
	var zBytes int64
	for seg := range uint64(2) {
		zInfo, err := os.Stat(format.ZSegPath(filepath.Join(db, "ticks"), seg))
		if err != nil {
			t.Fatal(err)
		}
		zBytes += zInfo.Size()
	}
	if c := k.Compressed; c == nil || c.Segments != 2 || c.RawBytes != 2*128*32 || c.Bytes != zBytes ||
		c.Ratio != float64(c.RawBytes)/float64(c.Bytes) || c.Clustered != 2 || c.SeqBytes <= 0 || len(c.Columns) != 4 {
		t.Errorf("ticks compressed: %+v; want 2 segments, %d raw bytes, %d bytes (the files), clustered", c, 2*128*32, zBytes)
	} else {
		for i, want := range []struct {
			name string
			raw  int64
		}{{"ts", 2 * 128 * 8}, {"sym", 2 * 128 * 4}, {"price", 2 * 128 * 8}, {"size", 2 * 128 * 8}} {
			col := c.Columns[i]
			if col.Name != want.name || col.RawBytes != want.raw || col.Bytes <= 0 || col.Ratio != float64(col.RawBytes)/float64(col.Bytes) {
				t.Errorf("ticks compressed column %d: %+v; want %s, %d raw bytes", i, col, want.name, want.raw)
			}
		}
	}
	if e.Compressed != nil {
		t.Errorf("empty table compressed: %+v", e.Compressed)
	}

	tr := s.Tables[2]
	wantSchema := "ts:ts sym:sym price:f64 size:i64"
	var gotSchema []string
	for _, c := range tr.Schema {
		gotSchema = append(gotSchema, c.Name+":"+c.Type)
	}
	if strings.Join(gotSchema, " ") != wantSchema {
		t.Errorf("schema %v, want %s", gotSchema, wantSchema)
	}
	if tr.Rows != 5 || tr.DurableRows != 5 || tr.FirstSeq != 0 || tr.Symbols != 3 || tr.Dictionary != 3 || tr.OutOfOrder != 0 || tr.Segments != 1 || tr.SegmentBytes != segBytes {
		t.Errorf("trades: %+v", tr)
	}
	if tr.FirstTs == nil || *tr.FirstTs != knownT0 || *tr.LastTs != knownT0+3_500_000_000 ||
		tr.FirstTime != "2024-01-02T14:30:00.000000000Z" || tr.LastTime != "2024-01-02T14:30:03.500000000Z" {
		t.Errorf("trades time range: %v %v %s %s", tr.FirstTs, tr.LastTs, tr.FirstTime, tr.LastTime)
	}
	if alloc, logical := testutil.DiskUse(t, filepath.Join(db, "trades")); tr.Bytes != alloc || tr.Bytes <= 0 || tr.LogicalBytes != logical {
		t.Errorf("trades bytes %d (logical %d), the files take %d on disk, %d logical", tr.Bytes, tr.LogicalBytes, alloc, logical)
	}
	if tr.Writer != nil || tr.LiveBytes != 0 {
		t.Errorf("trades, closed: writer %+v, live bytes %d", tr.Writer, tr.LiveBytes)
	}
	// One segment, never compressed in the background (not below the
	// newest sealed one).
	if l := tr.Lifecycle; tr.Compressed != nil || l.Raw.Segments != 1 || l.Raw.Rows != 5 || l.Historical.Rows != 0 {
		t.Errorf("trades: compressed %+v, lifecycle %+v; want 5 raw rows", tr.Compressed, l)
	}

	// Another process sees the same (the open writer is this process).
	code, out2, errs := execCLI(t, "stat", "--db", db, "--format", "json", "--table", "ticks")
	if code != 0 || errs != "" {
		t.Fatalf("stat process: exit %d, stderr %q", code, errs)
	}
	if p := parseStat(t, out2); len(p.Tables) != 1 || p.Tables[0].Rows != 300 || p.Tables[0].Writer == nil || p.Tables[0].Writer.Pid != os.Getpid() {
		t.Errorf("stat process: %s", out2)
	}
}

// TestStatReport checks the human report's lines.
func TestStatReport(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	// No background compaction (CompactAge -1), which would compress
	// segment 0 once segment 1's rows are durable: the report shows each
	// state of the lifecycle but the historical one.
	sw := newSeqWriter(t, db, live+"/ticks", "ticks", func(o *writer.Options) { o.CompactAge = -1 })
	sw.write(200, 100)
	if err := sw.w.Sync(); err != nil { // segment 0 sealed and durable: hot
		t.Fatal(err)
	}
	code, out, errs := execCLI(t, "stat", "--db", db)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	t.Logf("report:\n%s", out)
	pid := strconv.Itoa(os.Getpid())
	for _, want := range []string{
		`^database \S+: 2 table\(s\)$`,
		`^table ticks$`,
		`^  writer +pid ` + pid + `  open$`,
		`^  rows +200  200 durable$`,
		`^table trades$`,
		`^  schema +ts:ts sym:sym price:f64 size:i64$`,
		`^  rows +5  5 durable$`,
		`^  time range +2024-01-02T14:30:00\.000000000Z \.\. 2024-01-02T14:30:03\.500000000Z$`,
		`^  segments +1  0 sealed; 128 rows per 8 KiB file$`,
		`^  bytes on disk +[0-9,]+  \S+ \S*B allocated; logical size \S+ \S*B(: sparse files, their holes take no disk)?$`,
		`^  symbols +3$`,
		`^  late rows +0 stored in ts order  window 0s$`,
		`^  out-of-order rows +0  later than the window: rejected or restamped$`,
		`^  writer +none$`,
		`^  live dir +` + regexp.QuoteMeta(live) + `/trades$`,
		`^  shared memory +0 B  live slots 0 B, at most 32 KiB \(4 × 8 KiB\); hot copies 0 B$`,
		`^    raw +5 rows  1 segment\(s\): raw segment files on disk$`,
		`^    hot +128 rows  1 segment\(s\): sealed and durable, kept in shared memory$`,
		`^    live +72 rows  1 segment\(s\): shared memory; not yet sealed and durable$`,
	} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(out) {
			t.Errorf("report has no line matching %s", want)
		}
	}
}

func TestStatErrors(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad format", []string{"--db", db, "--format", "csv"}, `--format "csv": want table or json`},
		{"no database", []string{"--db", filepath.Join(db, "nope")}, "no database directory " + filepath.Join(db, "nope")},
		{"missing table", []string{"--db", db, "--table", "trade"}, `no table "trade" in ` + db + "; tables: trades"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"stat"}, tc.args...)...)
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, one line with %q", code, out, errs, tc.want)
			}
		})
	}
	// An empty database is no error.
	code, out, _ := runCLI("stat", "--db", t.TempDir(), "--format", "json")
	if code != 0 || out != "{\"tables\":[]}\n" {
		t.Errorf("empty database: exit %d, %q", code, out)
	}
}

// TestSizesAreAllocated: stat and compact give a table's size as what
// its files take on disk (st_blocks), which for a table of two rows in
// 64 MiB segments is far below the files' preallocated, sparse sizes; the
// logical size is shown labelled as such.
func TestSizesAreAllocated(t *testing.T) {
	db, live := testutil.DB(t)
	sw := newSeqWriter(t, db, live+"/tiny", "tiny", func(o *writer.Options) { o.SegmentSize = 64 << 20; o.CompactAge = -1 })
	sw.write(2, 2)
	if err := sw.w.Close(); err != nil {
		t.Fatal(err)
	}
	sw.w = nil
	dir := filepath.Join(db, "tiny")
	alloc, logical := testutil.DiskUse(t, dir)

	code, out, errs := runCLI("stat", "--db", db, "--format", "json")
	if code != 0 || errs != "" {
		t.Fatalf("stat: exit %d, stderr %q", code, errs)
	}
	st := parseStat(t, out).Tables[0]
	if st.Bytes != alloc || st.LogicalBytes != logical {
		t.Errorf("stat: bytes %d, logical_bytes %d; the files take %d on disk (st_blocks), %d logical", st.Bytes, st.LogicalBytes, alloc, logical)
	}
	if st.Bytes*16 > st.SegmentBytes || st.Bytes*16 > st.LogicalBytes {
		t.Errorf("stat: %d bytes for 2 rows, not far below the %d-byte segment file (logical %d)", st.Bytes, st.SegmentBytes, st.LogicalBytes)
	}
	code, out, errs = runCLI("stat", "--db", db)
	want := fmt.Sprintf("%s  %s allocated; logical size %s", commas(alloc), fmtBytes(alloc), fmtBytes(logical))
	if code != 0 || errs != "" || !strings.Contains(out, want) {
		t.Errorf("stat report: exit %d, stderr %q, want a line with %q:\n%s", code, errs, want, out)
	}

	segInfo, err := os.Stat(format.SegPath(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	raw := segInfo.Sys().(*syscall.Stat_t).Blocks * 512
	code, out, errs = runCLI("compact", "--db", db)
	if code != 0 || errs != "" {
		t.Fatalf("compact: exit %d, stderr %q", code, errs)
	}
	zInfo, err := os.Stat(format.ZSegPath(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	z := zInfo.Sys().(*syscall.Stat_t).Blocks * 512
	want = fmt.Sprintf("tiny: compressed 1 segments, %s → %s on disk (%.1f×)", fmtBytes(raw), fmtBytes(z), float64(raw)/float64(z))
	if !strings.Contains(out, want) || raw*16 > segInfo.Size() {
		t.Errorf("compact said %q, want %q (the raw file takes %d of its %d bytes)", out, want, raw, segInfo.Size())
	}
}
