package reader_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Clustered hot copies (seg-N.clu in the live directory): RangeSym over
// hot segments read through them answers as the raw table does.

const cluHot = 4 // hot segments of the tables below

// cluOptions: no background compaction, which would compress the
// segments the copies are of (and with its default, builds none).
func cluOptions(live string, rps int) *writer.Options {
	return &writer.Options{Schema: store.TickSchema(), SegmentSize: int64(rps) * 32, LiveSlots: 2, LiveDir: live,
		HotBytes: cluHot * format.SegFileSize(32, uint64(rps)), CompactAge: -1}
}

// cluFiles lists the segments with a clustered copy in live, and the
// temporary files.
func cluFiles(t *testing.T, live string) (segs []uint64, tmps int) {
	t.Helper()
	ents, err := os.ReadDir(live)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if n, tmp, ok := format.ParseCluName(e.Name()); ok && tmp {
			tmps++
		} else if ok {
			segs = append(segs, n)
		}
	}
	return segs, tmps
}

// waitClus waits until every hot segment of table name has its copy.
func waitClus(t *testing.T, db, name, live string) []uint64 {
	t.Helper()
	r, err := reader.Open(db, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := r.Stat()
		if err != nil {
			t.Fatal(err)
		}
		segs, _ := cluFiles(t, live)
		if st.Hot.Segments > 0 && uint64(len(segs)) == st.Hot.Segments {
			return segs
		}
		if time.Now().After(deadline) {
			ents, _ := os.ReadDir(live)
			t.Logf("%+v %v", st, ents)
			t.Fatalf("clustered copies of segments %v, want one per hot segment (%d)", segs, st.Hot.Segments)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cluAppend appends n random rows to w (nsym symbols that come and go,
// runs of equal timestamps) from ts on and returns the next ts.
func cluAppend(t *testing.T, w *writer.Writer, rng *rand.Rand, n, nsym int, ts int64) int64 {
	t.Helper()
	s := w.Schema()
	symc, _ := s.Col("sym")
	price, _ := s.Col("price")
	row := w.NewRow()
	var active []uint32
	for i := range n {
		if i%500 == 0 || len(active) == 0 {
			active = active[:0]
			for id := range nsym {
				if rng.IntN(3) > 0 || id == i/500%nsym {
					active = append(active, uint32(id))
				}
			}
		}
		switch rng.IntN(4) {
		case 0:
		case 1:
			ts++
		default:
			ts += int64(rng.IntN(2000))
		}
		row.SetTs(ts)
		row.SetSym(symc, active[rng.IntN(len(active))])
		row.SetF64(price, float64(rng.IntN(50000))/100)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	w.Publish()
	return ts
}

// cluModel reads table "t" row by row (Get, which never reads a
// clustered copy) into a model.
func cluModel(t *testing.T, db, live string, nsym int) *clModel {
	t.Helper()
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := &clModel{nsym: nsym + 1}
	symc, _ := r.Schema().Col("sym")
	for q := r.FirstSeq(); q < r.Len(); q++ {
		row, err := r.Get(q)
		if err != nil {
			t.Fatal(err)
		}
		m.rows = append(m.rows, row...)
		m.ts = append(m.ts, row.Ts())
		m.sym = append(m.sym, row.Sym(symc))
	}
	return m
}

// TestCluMatchesRaw: a table with compressed segments (versions 1 and 2),
// raw ones past the hot budget, hot ones with clustered copies and one
// without, and the live segment answers every question as it does raw,
// with the writer open.
func TestCluMatchesRaw(t *testing.T) {
	seed := testutil.Seed(t, 0)
	for i, rps := range []int{256, 1 << 12} {
		t.Run(fmt.Sprintf("rps=%d", rps), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			db, live := testutil.DB(t)
			// Raw segments: the test compresses the first three itself,
			// and the rest stay raw or hot with their copies.
			o := cluOptions(live, rps)
			o.CompactAge = -1
			w, err := writer.Open(db, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			nsym := 2 + rng.IntN(8)
			for k := range nsym + 1 {
				if _, err := w.SymbolString(fmt.Sprintf("S%02d", k)); err != nil {
					t.Fatal(err)
				}
			}
			ts0 := int64(1_700_000_000_000_000_000)
			ts := cluAppend(t, w, rng, 3*rps, nsym, ts0)
			mid := ts
			ts = cluAppend(t, w, rng, 9*rps+rng.IntN(rps), nsym, ts)
			// The first three segments compressed (ts before mid), the
			// second rewritten in format version 1; then a writer appends
			// five more segments, hot with their copies. The compaction
			// is a writer's that appends nothing and keeps no hot copies:
			// its checkpointer runs no pass before its close (the second
			// pass after a compaction drops the postings of the version 2
			// segments from the first row on, FORMAT §7, which a version
			// 1 one, never a writer's, would need).
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			cold := *o
			cold.HotBytes = -1
			if w, err = writer.Open(db, "t", &cold); err != nil {
				t.Fatal(err)
			}
			if res, err := w.Compact(time.Duration(ts - mid + 1)); err != nil || res.Segments < 2 {
				t.Fatalf("compact: %+v %v", res, err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			toV1(t, db, 1, rps)
			if w, err = writer.Open(db, "t", o); err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			ts = cluAppend(t, w, rng, 5*rps, nsym, ts)
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			segs := waitClus(t, db, "t", live)
			// One hot segment without its copy (the newest: the preparer
			// may be recycling the oldest's slot meanwhile).
			last := segs[len(segs)-1]
			if err := os.Remove(format.CluPath(live, last)); err != nil {
				t.Fatal(err)
			}
			t.Logf("segments %v compressed, copies of %v (not %d)", zVersions(t, db, 4), segs[:len(segs)-1], last)
			m := cluModel(t, db, live, nsym)
			clCheckSym(t, db, live, m, rng)
			rep, err := reader.Verify(db, "t", nil)
			if err != nil || rep.Clustered == 0 {
				t.Fatalf("verify: %+v, %v; want clustered copies checked", rep, err)
			}
		})
	}
}

// clCheckSym compares RangeSym of every symbol over random windows with
// the model.
func clCheckSym(t *testing.T, db, live string, m *clModel, rng *rand.Rand) {
	t.Helper()
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := len(m.ts)
	lo, hi := m.ts[0], m.ts[n-1]
	windows := [][2]int64{{lo, hi + 1}, {lo - 1, hi}, {hi, lo}}
	for range 40 {
		a, b := m.ts[rng.IntN(n)], m.ts[rng.IntN(n)]
		windows = append(windows, [2]int64{min(a, b), max(a, b)}, [2]int64{a, a + 1 + rng.Int64N(50000)})
	}
	var it reader.Iter
	for _, w := range windows {
		for id := range uint32(m.nsym) {
			if err := r.RangeSym(w[0], w[1], id, &it); err != nil {
				t.Fatal(err)
			}
			k := 0
			for q := range n {
				if m.sym[q] != id || m.ts[q] < w[0] || m.ts[q] >= w[1] {
					continue
				}
				if !it.Next() {
					t.Fatalf("RangeSym(%d, %d, %d): ends after %d rows (%v), want row %d next", w[0], w[1], id, k, it.Err(), q)
				}
				if it.Seq() != uint64(q) || string(it.Row()) != string(m.rows[q*32:(q+1)*32]) {
					t.Fatalf("RangeSym(%d, %d, %d): row %d is seq %d, want %d", w[0], w[1], id, k, it.Seq(), q)
				}
				k++
			}
			if it.Next() || it.Err() != nil {
				t.Fatalf("RangeSym(%d, %d, %d): more than %d rows (%v)", w[0], w[1], id, k, it.Err())
			}
		}
	}
}

// TestCluDamaged: a flipped byte in a clustered copy's directory, index
// or rows is reported with the file and the offset, never read as rows.
func TestCluDamaged(t *testing.T) {
	rps := 1024
	for _, c := range []struct {
		name string
		off  func(size int64) int64
	}{
		{"header", func(int64) int64 { return 40 }},
		{"directory", func(int64) int64 { return format.BlockSize + 9 }},
		{"index", func(int64) int64 { return 2*format.BlockSize + 4*100 + 1 }},
		{"row", func(size int64) int64 { return size - 32*int64(rps)/2 + 3 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, live := testutil.DB(t)
			// Hot copies: the test damages a segment's .clu copy, which a
			// compressed segment does not keep.
			o := cluOptions(live, rps)
			o.CompactAge = -1
			w, err := writer.Open(db, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			rng := rand.New(rand.NewPCG(3, 3))
			for k := range 3 {
				w.SymbolString(fmt.Sprintf("S%d", k))
			}
			cluAppend(t, w, rng, 4*rps+10, 3, 1_700_000_000_000_000_000)
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			segs := waitClus(t, db, "t", live)
			path := format.CluPath(live, segs[0])
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			off := c.off(int64(len(b)))
			b[off] ^= 0x10
			// A new file in its place: the writer's copy is immutable.
			if err := os.WriteFile(path+".x", b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".x", path); err != nil {
				t.Fatal(err)
			}
			r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var it reader.Iter
			var got error
			for id := range uint32(3) {
				if err := r.RangeSym(-1<<62, 1<<62, id, &it); err != nil {
					got = err
					break
				}
				prev := uint64(0)
				for it.Next() {
					if it.Seq() < prev || !format.Valid(it.Seq(), it.Row()) {
						t.Fatalf("symbol %d: row %d handed out damaged", id, it.Seq())
					}
					prev = it.Seq()
				}
				if it.Err() != nil {
					got = it.Err()
					break
				}
			}
			var ce *store.CorruptError
			if !errors.As(got, &ce) || ce.Path != path {
				t.Fatalf("flip at %d: %v; want a corruption error naming %s", off, got, path)
			}
			t.Logf("flip at %d: %v", off, got)
			if _, err := reader.Verify(db, "t", nil); !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("verify, flip at %d: %v; want a corruption error naming %s", off, err, path)
			}
		})
	}
}

// TestCluLeftovers: a writer killed mid-build leaves a temporary file,
// and copies of segments no longer hot; the next writer removes them and
// keeps (or rebuilds) the copies of the hot segments.
func TestCluLeftovers(t *testing.T) {
	db, live := testutil.DB(t)
	rps := 256
	rows := uint64(10*rps + 7)
	c := testutil.StartChild(t, "TestChildCluWriter", cluWriterChild, &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + db, "TICKDB_LIVE=" + live, "TICKDB_ROWS=" + fmt.Sprint(rows), "TICKDB_RPS=" + fmt.Sprint(rps),
	}})
	c.Expect(t, "synced", time.Minute, nil)
	segs := waitClus(t, db, "t", live)
	c.Kill()
	// What a kill mid-build leaves, and a copy of a segment long recycled.
	for _, name := range []string{format.CluName(segs[len(segs)-1]+1) + format.CluTmpSuffix, format.CluName(1)} {
		if err := os.WriteFile(filepath.Join(live, name), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := writer.Open(db, "t", cluOptions(live, rps))
	if err != nil {
		t.Fatal(err)
	}
	after, tmps := cluFiles(t, live)
	if tmps != 0 || len(after) > len(segs) || (len(after) > 0 && after[0] < segs[0]) {
		t.Fatalf("after reopen: copies of %v and %d temporary files; before: %v", after, tmps, segs)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	cluAppend(t, w, rng, 3*rps, 3, 1_800_000_000_000_000_000)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	waitClus(t, db, "t", live)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(live); len(ents) != 0 {
		t.Fatalf("live dir after a clean close holds %d files", len(ents))
	}
}

// TestCluKillMidBuild kills the writer (SIGKILL) while its checkpointer
// writes a clustered copy (a .tmp file is there); the next writer's open
// removes the temporary file and every copy of a segment not hot, and the
// table answers RangeSym as it answers Get.
func TestCluKillMidBuild(t *testing.T) {
	db, live := testutil.DB(t)
	rps := 1 << 16 // 2 MiB segments: a copy takes a while to write
	c := testutil.StartChild(t, "TestChildCluWriter", cluWriterChild, &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + db, "TICKDB_LIVE=" + live, "TICKDB_ROWS=" + fmt.Sprint(rps/2), "TICKDB_RPS=" + fmt.Sprint(rps),
	}})
	c.Expect(t, "synced", time.Minute, nil)
	if err := c.Send("forever"); err != nil {
		t.Fatal(err)
	}
	caught := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !caught; {
		if _, tmps := cluFiles(t, live); tmps > 0 {
			caught = true
		}
	}
	c.Kill()
	segs, tmps := cluFiles(t, live)
	t.Logf("killed with a copy being written: %v; left copies of %v and %d temporary files", caught, segs, tmps)
	w, err := writer.Open(db, "t", cluOptions(live, rps))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	after, tmps := cluFiles(t, live)
	if tmps != 0 {
		t.Fatalf("after reopen: %d temporary files", tmps)
	}
	if len(after) == 0 {
		after = waitClus(t, db, "t", live) // the new writer makes them
	}
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(after)) > st.Hot.Segments {
		t.Fatalf("after reopen: copies of %v, %d hot segments", after, st.Hot.Segments)
	}
	// The hot copies a killed flusher left half written are gone; the new
	// writer made those of the segments the old one sealed from their
	// slots (its flusher took the last one up in its middle).
	t.Logf("hot copies of %v", sameAsDurable(t, db+"/t", live))
	m := cluModel(t, db, live, 3)
	m.nsym = 3 // the child's symbols, all used
	clCheckSym(t, db, live, m, rand.New(rand.NewPCG(11, 11)))
}

const cluWriterChild = "clu-writer"

// TestChildCluWriter is the writer of TestCluLeftovers,
// TestCluCrossProcess and TestCluKillMidBuild: it appends TICKDB_ROWS rows
// (more on each "more N" command, without end after "forever"), syncs,
// says so and waits to be killed.
func TestChildCluWriter(t *testing.T) {
	testutil.ChildRole(t, cluWriterChild)
	db, live := testutil.EnvString(t, "TICKDB_DB"), testutil.EnvString(t, "TICKDB_LIVE")
	rps := int(testutil.EnvUint(t, "TICKDB_RPS"))
	w, err := writer.Open(db, "t", cluOptions(live, rps))
	if err != nil {
		testutil.ChildFatalf(t, "open: %v", err)
	}
	for k := range 3 {
		w.SymbolString(fmt.Sprintf("S%d", k))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	ts := cluAppend(t, w, rng, int(testutil.EnvUint(t, "TICKDB_ROWS")), 3, 1_700_000_000_000_000_000)
	if err := w.Sync(); err != nil {
		testutil.ChildFatalf(t, "sync: %v", err)
	}
	testutil.Report("synced")
	for cmd := range testutil.Commands() {
		if cmd == "forever" {
			for {
				ts = cluAppend(t, w, rng, rps/4, 3, ts)
			}
		}
		var n int
		if _, err := fmt.Sscanf(cmd, "more %d", &n); err == nil {
			ts = cluAppend(t, w, rng, n, 3, ts)
			if err := w.Sync(); err != nil {
				testutil.ChildFatalf(t, "sync: %v", err)
			}
			testutil.Report("synced")
		}
	}
	time.Sleep(time.Minute)
}

// TestCluRangeSymAllocs holds RangeSym and Next over clustered hot copies
// to zero allocations once warm.
func TestCluRangeSymAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	db, live := testutil.DB(t)
	rps := 1024
	w, err := writer.Open(db, "t", cluOptions(live, rps))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for k := range 3 {
		w.SymbolString(fmt.Sprintf("S%d", k))
	}
	cluAppend(t, w, rand.New(rand.NewPCG(9, 9)), 5*rps+10, 3, 1_700_000_000_000_000_000)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	waitClus(t, db, "t", live)
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var it reader.Iter
	rows := 0
	scan := func() {
		rows = 0
		for id := range uint32(3) {
			if err := r.RangeSym(-1<<62, 1<<62, id, &it); err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				rows++
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		}
	}
	scan()
	// Steady state: the writer's checkpointer may still bump the copies'
	// change counter for the last copy it made (after waitClus saw the
	// file), and the scan after that opens it again (allocating).
	// On a loaded machine that can come late: wait up to 5 s for ten
	// scans in a row without an allocation.
	n := testing.AllocsPerRun(10, scan)
	for i := 0; i < 500 && n != 0; i++ {
		time.Sleep(10 * time.Millisecond)
		n = testing.AllocsPerRun(10, scan)
	}
	if n != 0 {
		t.Errorf("RangeSym over clustered copies allocates %v times a scan", n)
	}
	if rows != int(r.Len()) {
		t.Fatalf("scans read %d rows, the table holds %d", rows, r.Len())
	}
}

// TestCluCrossProcess: a reader in this process queries every symbol,
// through the clustered copies, while the writer in another process
// writes on and recycles the hot slots (removing their copies): every
// answer matches the rows read one by one, before and after the copies
// are gone.
func TestCluCrossProcess(t *testing.T) {
	db, live := testutil.DB(t)
	rps := 256
	c := testutil.StartChild(t, "TestChildCluWriter", cluWriterChild, &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + db, "TICKDB_LIVE=" + live, "TICKDB_ROWS=" + fmt.Sprint(8*rps), "TICKDB_RPS=" + fmt.Sprint(rps),
	}})
	c.Expect(t, "synced", time.Minute, nil)
	waitClus(t, db, "t", live)
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type held struct {
		seq uint64
		row store.Row
	}
	var keep []held
	var it reader.Iter
	symc, _ := r.Schema().Col("sym")
	// Views of live slots may be recycled under the test while the writer
	// appends: each is copied at once and compared only when the copy is
	// row seq's (its check word holds for seq), else read again, checked.
	got, want := r.Schema().NewRow(), r.Schema().NewRow()
	readRow := func(seq uint64, view store.Row, dst store.Row) {
		t.Helper()
		if copy(dst, view); len(view) == len(dst) && format.Valid(seq, dst) {
			return
		}
		if err := r.ReadRow(seq, dst); err != nil {
			t.Fatal(err)
		}
	}
	queries := 0
	for round := range 12 {
		if err := c.Send(fmt.Sprintf("more %d", rps+rps/3)); err != nil {
			t.Fatal(err)
		}
		for done := false; !done; {
			// Until the writer says it is done, query away.
			if line, err := c.Next(0); err == nil && strings.HasPrefix(line, "synced") {
				done = true
			}
			first, n := r.FirstSeq(), r.Len()
			for id := range uint32(3) {
				if err := r.RangeSym(-1<<62, 1<<62, id, &it); err != nil {
					t.Fatal(err)
				}
				q := first
				for it.Next() {
					readRow(it.Seq(), it.Row(), got)
					for ; q < n; q++ {
						row, err := r.Get(q)
						if err != nil {
							t.Fatal(err)
						}
						if readRow(q, row, want); want.Sym(symc) == id {
							break
						}
					}
					if it.Seq() >= n {
						break // published after n was read
					}
					if it.Seq() != q {
						t.Fatalf("round %d symbol %d: row %d, want %d", round, id, it.Seq(), q)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("round %d symbol %d: row %d differs", round, id, q)
					}
					if len(keep) < 1000 && q%37 == 0 {
						keep = append(keep, held{q, slices.Clone(got)})
					}
					q++
				}
				if it.Err() != nil {
					t.Fatalf("round %d symbol %d: %v", round, id, it.Err())
				}
			}
			queries++
		}
	}
	// The rows read through copies since removed are the durable ones.
	for _, h := range keep {
		if row, err := r.Get(h.seq); err != nil || string(row) != string(h.row) {
			t.Fatalf("row %d read through a clustered copy: %v, differs from the table's", h.seq, err)
		}
	}
	segs, _ := cluFiles(t, live)
	t.Logf("%d query rounds, %d rows kept, copies now of %v", queries, len(keep), segs)
	c.Kill()
}

// TestCluSweep: a reader closes the copies of segments no longer hot once
// the writer's change counter moves; an iterator reading one of them
// goes on through the postings, with the same rows.
func TestCluSweep(t *testing.T) {
	db, live := testutil.DB(t)
	rps := 1 << 13 // a symbol's run longer than an iterator reads at a time
	w, err := writer.Open(db, "t", cluOptions(live, rps))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for k := range 3 {
		w.SymbolString(fmt.Sprintf("S%d", k))
	}
	rng := rand.New(rand.NewPCG(13, 13))
	ts := cluAppend(t, w, rng, 5*rps+10, 3, 1_700_000_000_000_000_000)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	segs := waitClus(t, db, "t", live)
	m := cluModel(t, db, live, 3)
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// it1 reads the first rows of symbol 1 in the oldest hot segment.
	from := m.ts[int(segs[0])*rps-int(r.FirstSeq())]
	var it1, it2 reader.Iter
	if err := r.RangeSym(from, m.ts[len(m.ts)-1]+1, 1, &it1); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for range 10 {
		if !it1.Next() {
			t.Fatal(it1.Err())
		}
		got = append(got, it1.Seq())
	}
	// The writer moves on past every hot slot; a new query sweeps.
	cluAppend(t, w, rng, 8*rps, 3, ts)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if after := waitClus(t, db, "t", live); after[0] <= segs[len(segs)-1] {
		t.Fatalf("copies of %v after the writer moved on from %v", after, segs)
	}
	if err := r.RangeSym(from, from+1, 0, &it2); err != nil {
		t.Fatal(err)
	}
	for it1.Next() {
		got = append(got, it1.Seq())
	}
	if it1.Err() != nil {
		t.Fatal(it1.Err())
	}
	var want []uint64
	for q := range m.ts {
		if m.sym[q] == 1 && m.ts[q] >= from {
			want = append(want, r.FirstSeq()+uint64(q))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows of symbol 1 across the sweep: %d, want %d", len(got), len(want))
	}
}

// TestCluUnevenRuns: symbol windows over clustered copies whose runs are
// far from evenly spread over their segments: symbol 0 takes most rows of
// a segment's first tenth and few after it, symbol 1 the rest. With a time
// index entry per row the seeks' seq bounds are exact, so the searches in
// a run's index words decide every row at a window's edges.
func TestCluUnevenRuns(t *testing.T) {
	const rps = 4096
	db, live := testutil.DB(t)
	o := cluOptions(live, rps)
	o.TimeStride = 1 // a seek's seq bounds exact: the run searches decide every row
	w, err := writer.Open(db, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for k := range 3 {
		if _, err := w.SymbolString(fmt.Sprintf("S%02d", k)); err != nil {
			t.Fatal(err)
		}
	}
	s := w.Schema()
	symc, _ := s.Col("sym")
	row := w.NewRow()
	rng := rand.New(rand.NewPCG(11, 12))
	ts := int64(1_700_000_000_000_000_000)
	for i := range 3 * rps {
		ts += int64(rng.IntN(3))
		id := uint32(1)
		if i%rps < rps/10 && rng.IntN(10) > 0 || rng.IntN(50) == 0 {
			id = 0
		}
		row.SetTs(ts)
		row.SetSym(symc, id)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	w.Publish()
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	waitClus(t, db, "t", live)
	m := cluModel(t, db, live, 2)
	clCheckSym(t, db, live, m, rng)
	// A window from each of many rows' ts: the searches land on every
	// kind of place in the runs (a guess's edges among them).
	r, err := reader.Open(db, "t", &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var it reader.Iter
	for q := 0; q < len(m.ts); q += 3 {
		from, to, id := m.ts[q], m.ts[q]+1+rng.Int64N(400), m.sym[q]
		if err := r.RangeSym(from, to, id, &it); err != nil {
			t.Fatal(err)
		}
		for k := range m.ts {
			if m.sym[k] != id || m.ts[k] < from || m.ts[k] >= to {
				continue
			}
			if !it.Next() || it.Seq() != uint64(k) {
				t.Fatalf("RangeSym(%d, %d, %d): row %d missing or out of place (%v)", from, to, id, k, it.Err())
			}
		}
		if it.Next() || it.Err() != nil {
			t.Fatalf("RangeSym(%d, %d, %d): a row too many (%v)", from, to, id, it.Err())
		}
	}
}
