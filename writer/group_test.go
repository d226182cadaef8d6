package writer_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Writers sharing a writer.Group (group.go): many tables served by a few
// workers, their rows durable on Sync, WaitDurable and by the flush
// interval, Close in either order, a process of many tables killed.

// groupTables opens n tables t0..t(n-1) of db in group g, tiny segments
// (128 rows) so that rows roll segments and recycle slots.
func groupTables(t *testing.T, db, live string, g *writer.Group, n int, mod func(*writer.Options)) []*writer.Writer {
	t.Helper()
	ws := make([]*writer.Writer, n)
	for i := range ws {
		o := &writer.Options{Schema: store.TickSchema(), SegmentSize: tinySeg, LiveSlots: 2, HotBytes: 8 * tinySeg,
			LiveDir: filepath.Join(live, strconv.Itoa(i)), Group: g}
		if mod != nil {
			mod(o)
		}
		w, err := writer.Open(db, "t"+strconv.Itoa(i), o)
		if err != nil {
			t.Fatalf("open t%d: %v", i, err)
		}
		t.Cleanup(func() { w.Close() })
		ws[i] = w
	}
	return ws
}

// seqAppend appends rows [w.Len(), w.Len()+n) of g to w, as the crash
// tests do (every column follows from the seq).
func seqAppend(t *testing.T, w *writer.Writer, g *testutil.SeqRows, syms *testutil.WriterSyms, n int) {
	t.Helper()
	row := make(store.Row, g.Schema.RowSize)
	for range n {
		seq := w.Len()
		id, err := syms.ID(seq)
		if err != nil {
			t.Fatal(err)
		}
		g.Fill(row, seq, id)
		if _, err := w.Append(row); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
	}
}

// TestGroupManyWriters writes 40 tables in turn from one goroutine, as
// ingest's writer goroutine does, with two flush workers, while other
// goroutines wait for rows to be durable (WaitDurable) and the writer
// Syncs now and then; every table's rows must then read back and verify,
// and the group must refuse to close before its writers.
func TestGroupManyWriters(t *testing.T) {
	for _, fp := range []writer.FlushPolicy{writer.FlushInterval, writer.FlushOnSync, writer.FlushNone} {
		t.Run("flush="+polName(fp), func(t *testing.T) {
			db, live := testutil.DB(t)
			g := testGroup(t, &writer.GroupOptions{Flushers: 2, FlushBytes: 64 << 10})
			ws := groupTables(t, db, live, g, 40, func(o *writer.Options) { o.Flush = fp })
			gens := make([]*testutil.SeqRows, len(ws))
			syms := make([]*testutil.WriterSyms, len(ws))
			for i, w := range ws {
				gens[i] = testutil.NewSeqRows()
				syms[i] = testutil.NewWriterSyms(gens[i], w.SymbolString)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var wg sync.WaitGroup
			errc := make(chan error, 1000)
			for round := range 30 {
				for i, w := range ws {
					seqAppend(t, w, gens[i], syms[i], 1+rng.IntN(40))
					w.Publish()
					n := w.Len()
					if round%3 == 0 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							if err := w.WaitDurable(n); err != nil {
								errc <- err
							}
						}()
					}
					if rng.IntN(10) == 0 {
						if err := w.Sync(); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatalf("WaitDurable: %v", err)
			}
			if err := g.Close(); !errors.Is(err, writer.ErrGroupBusy) {
				t.Fatalf("group close with %d writers open: %v, want ErrGroupBusy", len(ws), err)
			}
			if st := g.Stats(); st.Writers != len(ws) || st.Runs == 0 {
				t.Fatalf("group stats %+v", st)
			}
			lens := make([]uint64, len(ws))
			for i, w := range ws {
				lens[i] = w.Len()
				if err := w.Close(); err != nil {
					t.Fatalf("close t%d: %v", i, err)
				}
			}
			for i := range ws {
				name := "t" + strconv.Itoa(i)
				checkSeqTable(t, db, name, gens[i], lens[i])
				if _, err := os.Stat(filepath.Join(live, strconv.Itoa(i))); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("live dir of %s after close: %v", name, err)
				}
			}
			if err := g.Close(); err != nil {
				t.Fatalf("group close after its writers: %v", err)
			}
			if _, err := writer.Open(db, "t0", &writer.Options{Group: g, LiveDir: live}); err == nil {
				t.Fatal("open in a closed group succeeded")
			}
		})
	}
}

// checkSeqTable reads table name's rows [0, n) back, checked against g,
// and verifies the table.
func checkSeqTable(t *testing.T, db, name string, g *testutil.SeqRows, n uint64) {
	t.Helper()
	r, err := reader.Open(db, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != n || r.Durable() != n {
		t.Fatalf("%s: %d rows, %d durable; want %d", name, r.Len(), r.Durable(), n)
	}
	if err := xpCheckRows(r, g, 0, n); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tablecheck.Verify(t, db, name, n)
}

// TestGroupFlushInterval: under FlushInterval rows become durable with no
// Sync and no WaitDurable, the group's flush job queued by Publish alone
// (no table has a ticker), in many tables at once.
func TestGroupFlushInterval(t *testing.T) {
	db, live := testutil.DB(t)
	g := testGroup(t, nil)
	ws := groupTables(t, db, live, g, 20, nil)
	gen := testutil.NewSeqRows()
	for _, w := range ws {
		seqAppend(t, w, gen, testutil.NewWriterSyms(gen, w.SymbolString), 300)
		w.Publish()
	}
	for i, w := range ws {
		n := w.Len()
		waitFor(t, fmt.Sprintf("t%d durable without a Sync", i), func() bool { return w.Stats().Durable == n })
	}
	// Idle now: once the checkpoints and preparer steps the rolls asked
	// for are done, nothing runs (no job of an idle table is polled): a
	// 100 ms window without a run comes, where a ticker per table would
	// run 20 flushes a millisecond.
	quiet := false
	for range 100 {
		st := g.Stats()
		time.Sleep(100 * time.Millisecond)
		if g.Stats().Runs == st.Runs {
			quiet = true
			break
		}
	}
	if !quiet {
		t.Error("the group ran jobs in every 100 ms window for 10 s with every table idle")
	}
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupCloseOrder: a writer's Close in a group drains its own rows
// and leaves the group serving the others; the group refuses to close
// while one is open, and a table reopened in the same group goes on.
func TestGroupCloseOrder(t *testing.T) {
	db, live := testutil.DB(t)
	g := testGroup(t, &writer.GroupOptions{Flushers: 1, Preparers: 1, Checkpointers: 1})
	ws := groupTables(t, db, live, g, 3, nil)
	gen := testutil.NewSeqRows()
	for _, w := range ws {
		seqAppend(t, w, gen, testutil.NewWriterSyms(gen, w.SymbolString), 500)
	}
	if err := ws[1].Close(); err != nil { // unpublished rows: Close publishes and drains them
		t.Fatal(err)
	}
	checkSeqTable(t, db, "t1", gen, 500)
	if err := g.Close(); !errors.Is(err, writer.ErrGroupBusy) {
		t.Fatalf("group close with 2 writers open: %v", err)
	}
	for _, i := range []int{0, 2} {
		seqAppend(t, ws[i], gen, testutil.NewWriterSyms(gen, ws[i].SymbolString), 300)
		if err := ws[i].Sync(); err != nil {
			t.Fatal(err)
		}
	}
	w1, err := writer.Open(db, "t1", &writer.Options{LiveDir: filepath.Join(live, "1"), Group: g, SegmentSize: tinySeg})
	if err != nil {
		t.Fatal(err)
	}
	seqAppend(t, w1, gen, testutil.NewWriterSyms(gen, w1.SymbolString), 300)
	for _, w := range []*writer.Writer{ws[0], w1, ws[2]} {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		checkSeqTable(t, db, "t"+strconv.Itoa(i), gen, 800)
	}
}

// TestGroupAddColumn: AddColumn's close and reopen keeps the writer in
// its group (the group does not let go of it, nor refuses to close after).
func TestGroupAddColumn(t *testing.T) {
	tb := newWtTable(t)
	g := testGroup(t, nil)
	w := tb.open(t, func(o *writer.Options) { o.Group = g })
	ids := tb.symbols(t, w, "A", "B")
	tb.appendN(t, w, 0, 300, ids)
	if err := w.AddColumn(store.Column{Name: "venue", Type: store.TypeSym}); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); !errors.Is(err, writer.ErrGroupBusy) {
		t.Fatalf("group close during the writer's life: %v", err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIndexRemap: a writer whose index files outgrow their address-space
// reservation maps them again, larger, at a roll or a new symbol (here
// with 256 KiB reservations and a time-index entry per row, so that
// 60,000 rows and 60 symbols grow ts.idx and post.idx through several),
// and every
// row, postings entry and late row reads back, with its own goroutines
// and in a group.
func TestIndexRemap(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		t.Run(fmt.Sprintf("group=%v", grouped), func(t *testing.T) {
			db, live := testutil.DB(t)
			o := &writer.Options{Schema: store.TickSchema(), SegmentSize: tinySeg, LiveSlots: 2, LiveDir: live,
				LateWindow: 2 * testutil.SeqLateBy, TimeStride: 1}
			if grouped {
				o.Group = testGroup(t, nil)
			}
			writer.SetIndexReserve(o, 256<<10)
			w, err := writer.Open(db, "ticks", o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			r0 := w.Stats().IndexReserved
			g := testutil.NewSeqRows()
			g.Late = true
			syms := testutil.NewWriterSyms(g, w.SymbolString)
			const n = 60_000 // a fresh symbol every SeqFreshEvery rows
			for w.Len() < n {
				seqAppend(t, w, g, syms, 97)
				w.Publish()
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			st := w.Stats()
			if st.Remaps < 2 || st.IndexReserved <= r0 {
				t.Fatalf("%d remaps, reservation %d bytes (from %d)", st.Remaps, st.IndexReserved, r0)
			}
			if st.Late == 0 {
				t.Fatal("no late rows")
			}
			t.Logf("%d rows, %d symbols, %d late: %d remaps, index reservations %d → %d bytes", w.Len(), st.Symbols, st.Late, st.Remaps, r0, st.IndexReserved)
			rd, err := reader.Open(db, "ticks", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			if err := xpCheckRows(rd, g, 0, w.Len()); err != nil {
				t.Fatal(err)
			}
			total := w.Len()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			tablecheck.Verify(t, db, "ticks", total)
		})
	}
}

// Crash: a process writing many tables through a group is SIGKILLed; the
// next one (in a group too) recovers every table, warm or, after a
// simulated machine restart (the live dirs removed), cold, with every
// Sync-acknowledged row of every table.

const (
	groupCrashWriter = "group-crash-writer"
	groupCrashTables = 6
)

// TestGroupCrash runs 8 kill rounds (2 with a machine restart), then a
// clean close, checking every acknowledged row of every table each time.
func TestGroupCrash(t *testing.T) {
	seed := testutil.Seed(t, *crashSeedFlag)
	rng := rand.New(rand.NewPCG(seed, 22))
	db, live := testutil.DB(t)
	acked := make([]uint64, groupCrashTables)
	start := func() *testutil.Child {
		return testutil.StartChild(t, "TestChildGroupCrashWriter", groupCrashWriter, &testutil.ChildOptions{Env: []string{
			"TICKDB_DB=" + db, "TICKDB_LIVE=" + live,
			"TICKDB_CHILD_SEED=" + strconv.FormatUint(rng.Uint64(), 10),
		}})
	}
	take := func(line string) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "ack" {
			i, _ := strconv.Atoi(f[1])
			n, _ := strconv.ParseUint(f[2], 10, 64)
			acked[i] = max(acked[i], n)
		}
	}
	checkOpen := func(round int, f []string) {
		if len(f) != groupCrashTables {
			t.Fatalf("round %d: open line %q", round, f)
		}
		for i, s := range f {
			n, _ := strconv.ParseUint(s, 10, 64)
			if n < acked[i] {
				t.Fatalf("round %d: table t%d recovered %d rows, %d were acknowledged", round, i, n, acked[i])
			}
		}
	}
	for round := range 8 {
		c := start()
		checkOpen(round, c.Expect(t, "open", 2*time.Minute, nil))
		if err := c.Send("go"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		c.Kill()
		for _, line := range c.Drain() {
			if strings.HasPrefix(line, "error") {
				t.Fatalf("round %d: %s\n%s", round, line, c.Log())
			}
			take(line)
		}
		if round%4 == 3 {
			if err := os.RemoveAll(live); err != nil { // a machine restart: tmpfs emptied
				t.Fatal(err)
			}
		}
	}
	c := start()
	checkOpen(8, c.Expect(t, "open", 2*time.Minute, nil))
	if err := c.Send("go"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := c.Send("stop"); err != nil {
		t.Fatal(err)
	}
	f := c.Expect(t, "closed", 2*time.Minute, take)
	c.CloseStdin()
	if err := c.Wait(time.Minute); err != nil {
		t.Fatalf("last writer: %v\n%s", err, c.Log())
	}
	g := testutil.NewSeqRows()
	for i, s := range f {
		n, _ := strconv.ParseUint(s, 10, 64)
		if n < acked[i] {
			t.Fatalf("t%d closed with %d rows, %d acknowledged", i, n, acked[i])
		}
		checkSeqTable(t, db, "t"+strconv.Itoa(i), g, n)
	}
	if _, err := os.Stat(live); err == nil {
		if ents, _ := os.ReadDir(live); len(ents) > 0 {
			t.Fatalf("live dir after a clean close holds %d entries", len(ents))
		}
	}
}

// TestChildGroupCrashWriter opens groupCrashTables tables in one group,
// reports "open <rows>...", and on "go" appends to them in turn, with a
// Sync now and then ("ack <table> <rows>"), until killed or told "stop"
// (then "closed <rows>...").
func TestChildGroupCrashWriter(t *testing.T) {
	testutil.ChildRole(t, groupCrashWriter)
	db := testutil.EnvString(t, "TICKDB_DB")
	live := testutil.EnvString(t, "TICKDB_LIVE")
	rng := rand.New(rand.NewPCG(testutil.EnvUint(t, "TICKDB_CHILD_SEED"), 3))
	grp, err := writer.NewGroup(&writer.GroupOptions{Flushers: 2, FlushBytes: 64 << 10})
	if err != nil {
		testutil.ChildFatalf(t, "group: %v", err)
	}
	ws := make([]*writer.Writer, groupCrashTables)
	syms := make([]*testutil.WriterSyms, len(ws))
	g := testutil.NewSeqRows()
	lens := make([]string, len(ws))
	for i := range ws {
		o := &writer.Options{Schema: g.Schema, SegmentSize: 64 << 10, LiveSlots: 2, HotBytes: -1,
			LiveDir: filepath.Join(live, strconv.Itoa(i)), Group: grp, Flush: writer.FlushPolicy(i % 3)}
		w, err := writer.Open(db, "t"+strconv.Itoa(i), o)
		if err != nil {
			testutil.ChildFatalf(t, "open t%d: %v", i, err)
		}
		ws[i] = w
		syms[i] = testutil.NewWriterSyms(g, w.SymbolString)
		lens[i] = strconv.FormatUint(w.Len(), 10)
	}
	testutil.Report("open %s", strings.Join(lens, " "))
	cmds := testutil.Commands()
	if cmd := <-cmds; cmd != "go" {
		testutil.ChildFatalf(t, "command %q, want go", cmd)
	}
	row := make(store.Row, g.Schema.RowSize)
	for {
		select {
		case cmd := <-cmds:
			if cmd != "stop" {
				testutil.ChildFatalf(t, "command %q, want stop", cmd)
			}
			for i, w := range ws {
				if err := w.Close(); err != nil {
					testutil.ChildFatalf(t, "close t%d: %v", i, err)
				}
				lens[i] = strconv.FormatUint(w.Len(), 10)
			}
			if err := grp.Close(); err != nil {
				testutil.ChildFatalf(t, "group close: %v", err)
			}
			testutil.Report("closed %s", strings.Join(lens, " "))
			for range cmds {
			}
			return
		default:
		}
		i := rng.IntN(len(ws))
		w := ws[i]
		for range 1 + rng.IntN(64) {
			seq := w.Len()
			id, err := syms[i].ID(seq)
			if err != nil {
				testutil.ChildFatalf(t, "symbol: %v", err)
			}
			g.Fill(row, seq, id)
			if _, err := w.Append(row); err != nil {
				testutil.ChildFatalf(t, "append t%d %d: %v", i, seq, err)
			}
		}
		w.Publish()
		if rng.IntN(5) == 0 {
			n := w.Len()
			if err := w.Sync(); err != nil {
				testutil.ChildFatalf(t, "sync t%d: %v", i, err)
			}
			testutil.Report("ack %d %d", i, n)
		}
	}
}
