package writer_test

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// compactSegRows is the rows per segment of the compaction tests: 512 KiB
// of 32-byte rows, four compressed blocks a segment.
const compactSegRows = 16384

// compactTable writes n generated ticks (20 symbols) into table "t" with
// compactSegRows-row segments, closes the writer and returns every row as
// written (check words included), read back through a reader.
func compactTable(t *testing.T, db, live string, n int) []byte {
	t.Helper()
	s := store.TickSchema()
	// CompactAge -1, here and in the tests that reopen these tables: they
	// compact at points of their choosing (Compact, CloseCompacted), not
	// in the background.
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, SegmentSize: compactSegRows * 32, LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	g := gen.New(gen.Options{Symbols: 20, Seed: 7})
	for _, name := range g.Symbols() {
		if _, err := w.SymbolString(name); err != nil {
			t.Fatal(err)
		}
	}
	symc, _ := s.Col("sym")
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	row := w.NewRow()
	for i := 0; i < n; i++ {
		tk := g.Next()
		row.SetTs(tk.Ts)
		row.SetSym(symc, uint32(tk.Sym))
		row.SetF64(price, tk.Price)
		row.SetI64(size, tk.Size)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			w.Publish()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return allRows(t, db, live)
}

// allRows reads every row of table "t" by Get, copied.
func allRows(t *testing.T, db, live string) []byte {
	t.Helper()
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []byte
	for s := r.FirstSeq(); s < r.Len(); s++ {
		row, err := r.Get(s)
		if err != nil {
			t.Fatalf("Get(%d): %v", s, err)
		}
		out = append(out, row...)
	}
	return out
}

// checkTable checks that table "t" reads exactly want (all rows, by Get,
// by Range, by RangeSym of every symbol and by SeekTime) and verifies.
func checkTable(t *testing.T, db, live string, want []byte) {
	t.Helper()
	if got := allRows(t, db, live); !bytes.Equal(got, want) {
		t.Fatalf("rows by Get differ: %d bytes, want %d", len(got), len(want))
	}
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for it.Next() {
		got = append(got, it.Row()...)
	}
	if it.Err() != nil || !bytes.Equal(got, want) {
		t.Fatalf("Range: %d bytes (%v), want %d", len(got), it.Err(), len(want))
	}
	first := r.FirstSeq() // want starts at the first row
	symc, _ := r.Schema().Col("sym")
	for id := uint32(0); id < uint32(r.Symbols()); id++ {
		if err := r.RangeSym(math.MinInt64, math.MaxInt64, id, &it); err != nil {
			t.Fatal(err)
		}
		var rows int
		for it.Next() {
			o := int(it.Seq()-first) * 32
			if !bytes.Equal(it.Row(), want[o:o+32]) || it.Row().Sym(symc) != id {
				t.Fatalf("RangeSym(%d): row %d differs", id, it.Seq())
			}
			rows++
		}
		if it.Err() != nil || rows == 0 {
			t.Fatalf("RangeSym(%d): %d rows, %v", id, rows, it.Err())
		}
	}
	for i := 0; i < len(want)/32; i += 997 {
		ts := int64(le64(want[i*32:]))
		s, err := r.SeekTime(ts)
		seq := first + uint64(i)
		if err != nil || s > seq || s < first || (s < seq && int64(le64(want[(s-first)*32:])) != ts) {
			t.Fatalf("SeekTime(%d) = %d, %v; row %d has it", ts, s, err, seq)
		}
	}
	if _, err := reader.Verify(db, "t", nil); err != nil {
		t.Fatalf("verify: %v", err)
	}
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func TestCompactReadsTheSame(t *testing.T) {
	db, live := testutil.DB(t)
	const n = 6*compactSegRows + 1000
	want := compactTable(t, db, live, n)
	dir := filepath.Join(db, "t")
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Compact(0)
	if err != nil {
		t.Fatal(err)
	}
	// Segments 0-5 qualify: the rows after them, in segment 6, which is
	// being written, are durable and checkpointed.
	if res.Segments != 6 || res.Bytes <= 0 || res.RawBytes/res.Bytes < 4 {
		t.Fatalf("compact: %+v", res)
	}
	for s := uint64(0); s < 6; s++ {
		if _, err := os.Stat(format.SegPath(dir, s)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("raw segment %d still there: %v", s, err)
		}
		if _, err := os.Stat(format.ZSegPath(dir, s)); err != nil {
			t.Fatalf("compressed segment %d: %v", s, err)
		}
	}
	if again, err := w.Compact(0); err != nil || again.Segments != 0 {
		t.Fatalf("second pass: %+v %v", again, err)
	}
	checkTable(t, db, live, want)
	// The writer goes on appending; reopened, it recovers as before.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err = writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if w.Len() != n {
		t.Fatalf("reopened with %d rows, want %d", w.Len(), n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkTable(t, db, live, want)
	// Retention deletes compressed segments like raw ones.
	w, err = writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := w.Retain(0, 3*format.SegFileSize(32, compactSegRows))
	if err != nil || rr.FirstSeq != 4*compactSegRows || rr.Segments != 4 {
		t.Fatalf("retain: %+v %v", rr, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(format.ZSegPath(dir, 3)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("compressed segment 3 after retention: %v", err)
	}
	checkTable(t, db, live, want[4*compactSegRows*32:])
}

// TestCompactCrash kills a compacting process after each step of the swap
// and checks that the table reads the same after a writer reopens it.
func TestCompactCrash(t *testing.T) {
	db, live := testutil.DB(t)
	want := compactTable(t, db, live, 4*compactSegRows+10)
	for step := 1; step <= 4; step++ {
		killCompacting(t, db, live, step)
		// A writer settles what the crash left; the table reads the same.
		w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
		if err != nil {
			t.Fatalf("step %d: reopen: %v", step, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(db, "t")
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if filepath.Ext(e.Name()) == ".tmp" {
				t.Fatalf("step %d: %s left", step, e.Name())
			}
		}
		checkTable(t, db, live, want)
	}
}

// TestCompactCrashBackground kills a writer whose checkpointer is
// compacting in the background (the default, Options.CompactAge 0) after
// each step of the swap, while the writer goroutine appends: the rows
// made durable before the kill read the same after a reopen, and a writer
// with the defaults then compacts every segment it may.
func TestCompactCrashBackground(t *testing.T) {
	db, live := testutil.DB(t)
	want := compactTable(t, db, live, 4*compactSegRows+10)
	for step := 1; step <= 4; step++ {
		killCompacting(t, db, live, step, "background")
		w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
		if err != nil {
			t.Fatalf("step %d: reopen: %v", step, err)
		}
		if w.Len() < uint64(len(want)/32) {
			t.Fatalf("step %d: %d rows after the crash, want at least %d", step, w.Len(), len(want)/32)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// The rows the child added past want (up to the kill) read the
		// same by every path; want's are still there.
		checkTable(t, db, live, allRows(t, db, live))
		if got := allRows(t, db, live); !bytes.Equal(got[:len(want)], want) {
			t.Fatalf("step %d: the first %d rows differ after the crash", step, len(want)/32)
		}
	}
	// With the defaults, every sealed segment is compressed in the
	// background (the newest too once rows after it are durable).
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	rows := w.Len()
	limit := rows/compactSegRows - 1
	for deadline := time.Now().Add(30 * time.Second); w.Stats().CompactedSegs < limit; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d segments compacted in the background, want %d", w.Stats().CompactedSegs, limit)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkTable(t, db, live, allRows(t, db, live))
}

// TestCompactStats: a writer's Stats count the rows its background
// compaction compressed, and the time it took: a table of three sealed
// segments and a few rows after them, written without compaction, is
// compressed in full by the next writer with the defaults.
func TestCompactStats(t *testing.T) {
	db, live := testutil.DB(t)
	compactTable(t, db, live, 3*compactSegRows+10)
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if st := w.Stats(); st.CompactRows > st.CompactedSegs*compactSegRows {
		t.Fatalf("at open: %d rows compacted, %d segments below the mark", st.CompactRows, st.CompactedSegs)
	}
	// (The counts follow each segment's swap, which moves the mark.)
	for deadline := time.Now().Add(30 * time.Second); w.Stats().CompactRows < 3*compactSegRows; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows compacted in the background, want %d", w.Stats().CompactRows, 3*compactSegRows)
		}
	}
	if st := w.Stats(); st.CompactRows != 3*compactSegRows || st.CompactTime <= 0 || st.CompactedSegs != 3 || st.RawSegs != 0 {
		t.Fatalf("stats: %d rows compacted in %v, %d segments below the mark, %d raw; want %d rows, some time, 3, none",
			st.CompactRows, st.CompactTime, st.CompactedSegs, st.RawSegs, 3*compactSegRows)
	}
}

// TestRawBacklog: with the defaults, a feed faster than the background
// compaction is held at segment rolls (Options.RawBacklog) instead of
// leaving raw segments behind: after every roll at most the segment just
// sealed is raw (two under FlushOnSync), a plain Close leaves only the
// last one raw, every row reads back as written, and with the bound off
// nothing waits.
func TestRawBacklog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       writer.Options
		maxRaw  uint64 // -1: no bound to check
		stalled bool   // stalls may happen; false: none may
	}{
		{"default", writer.Options{}, 1, true},
		{"sync", writer.Options{Flush: writer.FlushOnSync}, 2, true},
		{"off", writer.Options{RawBacklog: -1}, math.MaxUint64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, live := testutil.DB(t)
			o := tc.o
			o.Schema, o.SegmentSize, o.LiveDir = store.TickSchema(), compactSegRows*32, live
			w, err := writer.Open(db, "t", &o)
			if err != nil {
				t.Fatal(err)
			}
			g := gen.New(gen.Options{Symbols: 20, Seed: 3})
			for _, name := range g.Symbols() {
				if _, err := w.SymbolString(name); err != nil {
					t.Fatal(err)
				}
			}
			const segs = 12
			batch := make([]byte, 0, 3000*32)
			var want []byte
			for len(want) < segs*compactSegRows*32+100*32 {
				batch = batch[:0]
				for range 3000 {
					tk := g.Next()
					var r [32]byte
					suiteEncode(r[:], &tk)
					batch = append(batch, r[:]...)
				}
				first, _, err := w.AppendBatch(batch)
				if err != nil {
					t.Fatal(err)
				}
				w.Publish()
				want = append(want, batch...)
				// (A batch that ends a segment leaves the roll to the
				// next append.)
				if st := w.Stats(); st.Appended%compactSegRows != 0 && st.RawSegs > tc.maxRaw {
					t.Fatalf("after row %d: %d raw sealed segments, want at most %d (%d compacted)", first, st.RawSegs, tc.maxRaw, st.CompactedSegs)
				}
			}
			st := w.Stats()
			if !tc.stalled && st.BacklogStalls != 0 {
				t.Fatalf("%d rolls waited for the compaction (%v), want none", st.BacklogStalls, st.BacklogWait)
			}
			if (st.BacklogStalls == 0) != (st.BacklogWait == 0) {
				t.Fatalf("%d stalls, %v waited", st.BacklogStalls, st.BacklogWait)
			}
			t.Logf("%d rolls waited for the compaction, %v in all; %d segments compacted", st.BacklogStalls, st.BacklogWait, st.CompactedSegs)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			// A plain Close compresses what the bound left: only the
			// last segment stays raw (and the next one's file, made
			// ahead, holds no rows).
			last := uint64(len(want)/32-1) / compactSegRows
			for n := range last {
				if _, err := os.Stat(format.SegPath(filepath.Join(db, "t"), n)); tc.maxRaw != math.MaxUint64 && err == nil {
					t.Fatalf("segment %d is raw after Close, want only the last one (%d)", n, last)
				}
			}
			got := allRows(t, db, live)
			if len(got) != len(want) {
				t.Fatalf("%d rows read, want %d", len(got)/32, len(want)/32)
			}
			for i := 0; i < len(want); i += 32 {
				if !bytes.Equal(got[i:i+28], want[i:i+28]) { // (the check word is the writer's)
					t.Fatalf("row %d differs", i/32)
				}
			}
			checkTable(t, db, live, got)
		})
	}
}

// suiteEncode writes tk as a row of store.TickSchema (check word 0: the
// writer's).
func suiteEncode(dst []byte, tk *gen.Tick) {
	le := func(b []byte, v uint64) {
		for i := range 8 {
			b[i] = byte(v >> (8 * i))
		}
	}
	le(dst[0:], uint64(tk.Ts))
	le(dst[8:], math.Float64bits(tk.Price))
	le(dst[16:], uint64(tk.Size))
	id := uint32(tk.Sym)
	dst[24], dst[25], dst[26], dst[27] = byte(id), byte(id>>8), byte(id>>16), byte(id>>24)
	dst[28], dst[29], dst[30], dst[31] = 0, 0, 0, 0
}

// killCompacting runs TestChildCompact, which dies by SIGKILL at step;
// mode "background" has it append while its checkpointer compacts.
func killCompacting(t *testing.T, db, live string, step int, mode ...string) {
	t.Helper()
	env := []string{"TICKDB_DB=" + db, "TICKDB_LIVE=" + live, "TICKDB_STEP=" + strconv.Itoa(step)}
	if len(mode) > 0 {
		env = append(env, "TICKDB_MODE="+mode[0])
	}
	c := testutil.StartChild(t, "TestChildCompact", "compact", &testutil.ChildOptions{Env: env})
	if err := c.Wait(time.Minute); err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("step %d: the child was not killed there: %v\n%s", step, err, c.Log())
	}
}

// TestChildCompact opens table "t" and compacts it, and is killed
// (SIGKILL) after step TICKDB_STEP of the first segment it compacts or
// (steps 11-14) decompresses while opening.
func TestChildCompact(t *testing.T) {
	testutil.ChildRole(t, "compact")
	step, _ := strconv.Atoi(os.Getenv("TICKDB_STEP"))
	first := true
	o := &writer.Options{LiveDir: os.Getenv("TICKDB_LIVE"), CompactAge: -1}
	writer.SetCompactHook(o, func(_ uint64, s int) {
		if first && s == step {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
	})
	if os.Getenv("TICKDB_MODE") == "background" {
		// The checkpointer compacts as segments qualify while this
		// goroutine appends rows stamped now: the hook kills the process
		// on the checkpointer.
		o.CompactAge = 0
		w, err := writer.Open(os.Getenv("TICKDB_DB"), "t", o)
		if err != nil {
			t.Fatal(err)
		}
		s := w.Schema()
		symc, _ := s.Col("sym")
		price, _ := s.Col("price")
		size, _ := s.Col("size")
		row := w.NewRow()
		for i := uint64(0); ; i++ {
			row.SetTs(time.Now().UnixNano())
			row.SetSym(symc, uint32(i%20))
			row.SetF64(price, float64(i))
			row.SetI64(size, int64(i))
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
			if i%256 == 0 {
				w.Publish()
				time.Sleep(time.Millisecond)
			}
			if i > 100*compactSegRows {
				t.Fatal("no background compaction reached the step")
			}
		}
	}
	// Steps 1-4 are compaction's, 11-14 the decompression at Open.
	w, err := writer.Open(os.Getenv("TICKDB_DB"), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Compact(0)
	first = false
	t.Fatal("compaction finished without reaching the step")
}

// A reader in another process keeps reading through a compaction: the raw
// rows it has mapped, and the compressed segments it opens afterwards.
func TestCompactReaderInOtherProcess(t *testing.T) {
	db, live := testutil.DB(t)
	want := compactTable(t, db, live, 3*compactSegRows+10)
	c := testutil.StartChild(t, "TestChildCompactReader", "compact-reader",
		&testutil.ChildOptions{Env: []string{"TICKDB_DB=" + db, "TICKDB_LIVE=" + live}})
	c.Expect(t, "READY", time.Minute, nil)
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Compact(0); err != nil || res.Segments != 3 {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Send("CHECK"); err != nil {
		t.Fatal(err)
	}
	c.Expect(t, "OK", time.Minute, nil)
	_ = c.CloseStdin()
	if err := c.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	checkTable(t, db, live, want)
}

// TestChildCompactReader is TestCompactReaderInOtherProcess's reader.
func TestChildCompactReader(t *testing.T) {
	testutil.ChildRole(t, "compact-reader")
	r, err := reader.Open(os.Getenv("TICKDB_DB"), "t", &reader.Options{LiveDir: os.Getenv("TICKDB_LIVE")})
	if err != nil {
		testutil.ChildFatalf(t, "%v", err)
	}
	defer r.Close()
	// Map segment 0 raw and keep a view of its first row.
	row0, err := r.Get(0)
	if err != nil {
		testutil.ChildFatalf(t, "Get(0): %v", err)
	}
	before := append([]byte(nil), row0...)
	testutil.Report("READY")
	<-testutil.Commands()
	if !bytes.Equal(row0, before) {
		testutil.ChildFatalf(t, "row 0 changed under its raw mapping")
	}
	// Every row, segment 0 from its raw mapping, segment 1 from its
	// compressed file (opened now), must check out.
	for s := uint64(0); s < r.Len(); s++ {
		row, err := r.Get(s)
		if err != nil || !format.Valid(s, row) {
			testutil.ChildFatalf(t, "row %d after compaction: %v", s, err)
		}
	}
	testutil.Report("OK")
	for range testutil.Commands() {
	}
}

// Options.CompactAge compresses old segments in the background while the
// writer appends.
func TestCompactAutomatic(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.TickSchema()
	// Rows 1 ms apart, 16,384 to a segment: CompactAge 30 s leaves the
	// last two segments or so raw.
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, SegmentSize: compactSegRows * 32, LiveDir: live, CompactAge: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.SymbolString("AAA")
	symc, _ := s.Col("sym")
	size, _ := s.Col("size")
	row := w.NewRow()
	const n = 8 * compactSegRows
	for i := 0; i < n; i++ {
		row.SetTs(int64(i) * 1_000_000)
		row.SetSym(symc, id)
		row.SetI64(size, int64(i))
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		w.Publish()
	}
	// Close stops the compaction where it is: wait for the first
	// segment (a loaded machine may not have got to it yet).
	for deadline := time.Now().Add(30 * time.Second); w.Stats().CompactedSegs == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no segment compacted in the background after 30 s")
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(db, "t")
	var z int
	for seg := uint64(0); seg < 8; seg++ {
		if _, err := os.Stat(format.ZSegPath(dir, seg)); err == nil {
			z++
		}
	}
	// The last segment's rows are within 30 s of the last ts (16.4 s a
	// segment): at most segments 0-5 can qualify.
	if z == 0 || z > 6 {
		t.Fatalf("%d compressed segments, want 1 to 6", z)
	}
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for it.Next() {
		if it.Row().I64(size) != want {
			t.Fatalf("row %d has size %d", it.Seq(), it.Row().I64(size))
		}
		want++
	}
	if it.Err() != nil || want != n {
		t.Fatalf("%d rows (%v), want %d", want, it.Err(), n)
	}
}

// verify reads compressed blocks through their checks: a flipped byte in
// one is damage, reported with the file's name.
func TestCompactVerifyFindsDamage(t *testing.T) {
	db, live := testutil.DB(t)
	compactTable(t, db, live, 3*compactSegRows+10)
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Compact(0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Verify(db, "t", nil); err != nil {
		t.Fatalf("verify before damage: %v", err)
	}
	path := format.ZSegPath(filepath.Join(db, "t"), 1)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[4096+1000] ^= 0x40 // inside block 0
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = reader.Verify(db, "t", nil)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), format.ZSegName(1)) {
		t.Fatalf("verify after damage: %v", err)
	}
}

// CloseCompacted compresses every segment of a closing table, the last
// (partial) one included; the next Open decompresses the ones its recovery
// reads, and a crash at any step of that leaves the table whole.
func TestCompactClosedTable(t *testing.T) {
	db, live := testutil.DB(t)
	const n = 3*compactSegRows + 10
	want := compactTable(t, db, live, n)
	dir := filepath.Join(db, "t")
	compactAll := func() {
		t.Helper()
		w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Compact(0); err != nil {
			t.Fatal(err)
		}
		if _, err := w.CloseCompacted(0); err != nil {
			t.Fatal(err)
		}
		for s := uint64(0); s <= 3; s++ {
			if _, err := os.Stat(format.ZSegPath(dir, s)); err != nil {
				t.Fatalf("segment %d not compressed: %v", s, err)
			}
		}
	}
	compactAll()
	checkTable(t, db, live, want)
	for step := 11; step <= 14; step++ {
		killCompacting(t, db, live, step)
		w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
		if err != nil {
			t.Fatalf("step %d: reopen: %v", step, err)
		}
		if w.Len() != n {
			t.Fatalf("step %d: %d rows, want %d", step, w.Len(), n)
		}
		if _, err := w.CloseCompacted(0); err != nil { // compress again for the next step
			t.Fatal(err)
		}
		checkTable(t, db, live, want)
	}
	// Reopened for good, the writer appends after the old rows.
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(format.SegPath(dir, 3)); err != nil {
		t.Fatalf("the last segment was not decompressed for the writer: %v", err)
	}
	row := w.NewRow()
	row.SetTs(int64(le64(want[len(want)-32:])) + 1)
	if _, err := w.Append(row); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := allRows(t, db, live)
	if len(got) != len(want)+32 || !bytes.Equal(got[:len(want)], want) {
		t.Fatalf("after appending: %d bytes, want %d + 32 with the old rows unchanged", len(got), len(want))
	}
	if _, err := reader.Verify(db, "t", nil); err != nil {
		t.Fatal(err)
	}
}

// TestCompactBackgroundDamage: a sealed segment whose rows fail their
// checks (damage on disk) stops the background compaction with an error
// in the log; the writer goes on taking rows, and the damaged segment
// stays raw for verify to name.
func TestCompactBackgroundDamage(t *testing.T) {
	db, live := testutil.DB(t)
	want := compactTable(t, db, live, 4*compactSegRows+10)
	// A flipped bit in a row of segment 1.
	path := format.SegPath(filepath.Join(db, "t"), 1)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(format.BlockSize + 100*32 + 9)
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 4
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	f.Close()

	logs := &testutil.LogBuffer{}
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: live, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	row := w.NewRow()
	copy(row, want[len(want)-32:])
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), "background compaction stopped"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no compaction error logged:\n%s", logs.String())
		}
	}
	// Segment 0 was compressed before it; 1 and on stay raw.
	if st := w.Stats(); st.CompactedSegs != 1 {
		t.Fatalf("%d segments compacted, want 1 (the one before the damage)", st.CompactedSegs)
	}
	for i := range compactSegRows {
		if _, err := w.Append(row); err != nil {
			t.Fatalf("append %d after the damage: %v", i, err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if c, err := w.Condition(); err != nil {
		t.Fatalf("condition %v: %v", c, err)
	}
	// The rolls past the raw backlog did not wait for a compaction
	// that stopped.
	if st := w.Stats(); st.BacklogStalls != 0 {
		t.Fatalf("%d rolls waited for the stopped compaction (%v)", st.BacklogStalls, st.BacklogWait)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the damaged segment: %v", err)
	}
	if _, err := reader.Verify(db, "t", nil); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("verify: %v, want the damage named", err)
	}
}

// TestCloseFinishesCompaction: a segment the background compaction is
// encoding when Close begins is finished by it once Close's checkpoint
// makes it qualify, not given up and encoded again by Close; one that
// cannot qualify (no row after it) is given up without holding Close.
func TestCloseFinishesCompaction(t *testing.T) {
	for _, c := range []struct {
		name  string
		after int // rows past segment 0
		runs  int // encodings of segment 0 that reached step 1
	}{
		{"rows_after", 100, 1},
		{"none_after", 0, 2}, // given up, then compressed by Close (compactTail)
	} {
		t.Run(c.name, func(t *testing.T) {
			db, live := testutil.DB(t)
			s := store.TickSchema()
			reached, release := make(chan struct{}), make(chan struct{})
			var mu sync.Mutex
			runs := 0
			// Rows become durable at Sync, and a sealed segment at once:
			// segment 0 is encoded while the rows after it are not
			// durable, so it cannot qualify before Close.
			o := &writer.Options{Schema: s, SegmentSize: compactSegRows * 32, LiveDir: live, Flush: writer.FlushOnSync}
			writer.SetCompactHook(o, func(seg uint64, step int) {
				if seg != 0 || step != 1 {
					return
				}
				mu.Lock()
				runs++
				first := runs == 1
				mu.Unlock()
				if first {
					close(reached)
					<-release
				}
			})
			w, err := writer.Open(db, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				if _, err := w.SymbolString("S" + strconv.Itoa(i)); err != nil {
					t.Fatal(err)
				}
			}
			symc, _ := s.Col("sym")
			row := w.NewRow()
			for i := range compactSegRows + c.after {
				row.SetTs(int64(1_000_000 + i))
				row.SetSym(symc, uint32(i%20))
				if _, err := w.Append(row); err != nil {
					t.Fatal(err)
				}
			}
			w.Publish()
			select {
			case <-reached:
			case <-time.After(30 * time.Second):
				t.Fatal("the background compaction never reached segment 0's step 1")
			}
			done := make(chan error, 1)
			go func() { done <- w.Close() }()
			time.Sleep(100 * time.Millisecond) // Close on its way
			close(release)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Close did not return")
			}
			mu.Lock()
			got := runs
			mu.Unlock()
			if got != c.runs {
				t.Fatalf("segment 0 encoded %d times, want %d", got, c.runs)
			}
			dir := filepath.Join(db, "t")
			if _, err := os.Stat(format.ZSegPath(dir, 0)); err != nil {
				t.Fatalf("segment 0 not compressed: %v", err)
			}
			if _, err := os.Stat(format.SegPath(dir, 0)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("segment 0's raw file left: %v", err)
			}
			rows := allRows(t, db, live)
			if n := len(rows) / s.RowSize; n != compactSegRows+c.after {
				t.Fatalf("%d rows read back, want %d", n, compactSegRows+c.after)
			}
			for i := range compactSegRows + c.after {
				if ts := store.Row(rows[i*s.RowSize:]).Ts(); ts != int64(1_000_000+i) {
					t.Fatalf("row %d: ts %d", i, ts)
				}
			}
		})
	}
}
