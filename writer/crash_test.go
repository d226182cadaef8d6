package writer_test

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Crash tests: the writer is a child process (this test binary
// re-executed, see testutil.StartChild) that appends rows whose every
// column derives from the seq (testutil.SeqRows), publishes in small
// batches, calls Sync now and then and reports each acknowledged count.
// The parent SIGKILLs it at a random moment and starts the next writer,
// which recovers and appends on. Some rounds simulate a machine restart by
// removing the live directory before the next writer starts. A reader
// process tails the table across all the warm restarts.
//
// The random choices come from one seed, logged at the start; -seed=N or
// TICKDB_SEED=N replays them (the kill moments are replayed, the machine's
// timing is not).

var crashSeedFlag = flag.Uint64("seed", 0, "seed of the crash tests (0: $TICKDB_SEED, else random)")

const (
	crashTable  = "ticks"
	crashWriter = "crash-writer"
	crashTailer = "crash-tailer"
)

// crashOptions: 64 KiB segments (2048 rows) and two live slots, so that
// every run rolls segments and recycles slots; a late window for the late
// rows of crashRows.
func crashOptions(live string, flush writer.FlushPolicy) *writer.Options {
	return &writer.Options{Schema: store.TickSchema(), SegmentSize: 64 << 10, LiveSlots: 2, HotBytes: -1, LiveDir: live, Flush: flush,
		LateWindow: 2 * testutil.SeqLateBy}
}

// crashRows is the crash tests' rows: SeqRows with late rows, so that
// every recovery re-indexes some (late.idx) and every check reads them.
func crashRows() *testutil.SeqRows {
	g := testutil.NewSeqRows()
	g.Late = true
	return g
}

// crashHarness is the parent's view of the table across rounds.
type crashHarness struct {
	t    *testing.T
	rng  *rand.Rand
	db   string
	live string

	acked      uint64 // highest Sync-acknowledged row count
	published  uint64 // published count when the last writer died
	durable    uint64 // durable count when the last writer died
	seen       bool   // published/durable were observed
	restarted  bool   // the live dir was removed and no writer has recovered since
	rd         *reader.Reader
	tailer     *testutil.Child
	tailerSeen uint64

	openTime time.Duration // how long the last writer took from start to open
	// A round after a machine restart kills its writer early more often,
	// aiming at the cold recovery.
	afterRestart bool

	rounds, cold, early, openKills, acks int
}

// TestCrashRecovery runs the kill rounds: at least 50 SIGKILLs.
func TestCrashRecovery(t *testing.T) {
	seed := testutil.Seed(t, *crashSeedFlag)
	kills := 50
	if testing.Short() {
		kills = 12
	}
	if s := os.Getenv("TICKDB_CRASH_KILLS"); s != "" { // for soak runs
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TICKDB_CRASH_KILLS=%q", s)
		}
		kills = n
	}
	db, live := testutil.DB(t)
	h := &crashHarness{t: t, rng: rand.New(rand.NewPCG(seed, 0x7469636b)), db: db, live: live}
	defer func() {
		if h.rd != nil {
			h.rd.Close()
		}
	}()
	h.startTailer() // before the table exists: it waits for it
	start := time.Now()
	for i := 0; i < kills; i++ {
		h.round(i)
	}
	h.finish()
	t.Logf("%d kills in %v: %d while appending, %d while starting (%d of them after Open returned); %d machine restarts; %d rows, %d Sync acks",
		kills, time.Since(start).Round(time.Millisecond), kills-h.early, h.early, h.openKills, h.cold, h.acked, h.acks)
}

func (h *crashHarness) startWriter(round int) *testutil.Child {
	flush := []writer.FlushPolicy{writer.FlushInterval, writer.FlushOnSync, writer.FlushNone}[h.rng.IntN(3)]
	return testutil.StartChild(h.t, "TestChildCrashWriter", crashWriter, &testutil.ChildOptions{Env: []string{
		"TICKDB_DB=" + h.db, "TICKDB_LIVE=" + h.live,
		"TICKDB_FLUSH=" + strconv.Itoa(int(flush)),
		"TICKDB_CHILD_SEED=" + strconv.FormatUint(h.rng.Uint64(), 10),
		"TICKDB_ROUND=" + strconv.Itoa(round),
	}})
}

func (h *crashHarness) startTailer() {
	h.tailer = testutil.StartChild(h.t, "TestChildCrashTailer", crashTailer, &testutil.ChildOptions{Env: []string{"TICKDB_DB=" + h.db}})
	h.tailerSeen = 0
}

// round starts a writer, lets it work and SIGKILLs it. One round in eight
// (one in two after a machine restart) kills it at a random moment of its
// start: before, during or just after Open and its recovery; the moment is
// drawn from the time the last writer took to open. One round in five then
// removes the live dir, as a machine restart would.
func (h *crashHarness) round(i int) {
	t := h.t
	h.rounds++
	start := time.Now()
	c := h.startWriter(i)
	early := h.rng.IntN(8) == 0
	if h.afterRestart {
		early = h.rng.IntN(2) == 0
	}
	h.afterRestart = false
	opened := false
	if early && h.openTime > 0 {
		h.early++
		time.Sleep(time.Duration(h.rng.Int64N(int64(h.openTime) * 5 / 4)))
		c.Kill()
		if f := h.drain(c, i); f != nil {
			opened = true // recovery completed
			h.openKills++
			h.checkOpen(i, f, false)
		}
	} else {
		f := c.Expect(t, "open", 2*time.Minute, nil)
		h.openTime = time.Since(start)
		h.checkOpen(i, f, true)
		if err := c.Send("go"); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		time.Sleep(time.Duration(h.rng.IntN(300_000)) * time.Microsecond)
		c.Kill()
		h.drain(c, i)
	}
	h.observeDeath(i, !early || opened)
	h.checkTailer(i)
	restart := h.rng.IntN(5) == 0
	if testing.Verbose() {
		t.Logf("round %d: writer %d killed %s; published %d, durable %d, acked %d%s", i, c.Pid,
			map[bool]string{true: "while starting", false: "while appending"}[early && h.openTime > 0],
			h.published, h.durable, h.acked, map[bool]string{true: "; machine restart", false: ""}[restart])
	}
	if restart {
		h.machineRestart(i)
	}
}

// drain takes the lines of a dead writer: Sync acknowledgements, and the
// open report if there is one.
func (h *crashHarness) drain(c *testutil.Child, round int) (open []string) {
	for _, line := range c.Drain() {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "ack":
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				h.t.Fatalf("round %d: bad line %q", round, line)
			}
			h.acked = max(h.acked, n)
			h.acks++
		case len(f) > 0 && f[0] == "open":
			open = f[1:]
		case len(f) > 0 && f[0] == "error":
			h.t.Fatalf("round %d: writer %d: %s\n%s", round, c.Pid, line, c.Log())
		}
	}
	return open
}

// observeDeath records what a reader sees of the dead writer's table.
// opened says the writer had finished its recovery: its durable count then
// covers every acknowledged row (a cold recovery that is cut short may
// leave the durable count at the last checkpoint, the rows past it being
// found again by the next one).
func (h *crashHarness) observeDeath(round int, opened bool) {
	if !h.openReader(round) {
		return
	}
	h.published, h.durable, h.seen = h.rd.Len(), h.rd.Durable(), true
	if h.durable > h.published {
		h.t.Fatalf("round %d: durable %d past published %d", round, h.durable, h.published)
	}
	if opened && h.acked > h.durable {
		h.t.Fatalf("round %d: %d rows were acknowledged by Sync, only %d are durable", round, h.acked, h.durable)
	}
}

// openReader opens the parent's long-lived reader once the table exists.
func (h *crashHarness) openReader(round int) bool {
	if h.rd != nil {
		return true
	}
	r, err := reader.Open(h.db, crashTable, nil)
	if errors.Is(err, store.ErrNoTable) {
		return false
	}
	if err != nil {
		h.t.Fatalf("round %d: open reader: %v", round, err)
	}
	h.rd = r
	return true
}

// machineRestart simulates a machine restart: every process goes (the
// tailer too) and tmpfs is emptied. The next writer must recover from the
// durable files alone.
func (h *crashHarness) machineRestart(round int) {
	t := h.t
	h.cold++
	if h.tailer != nil {
		h.tailer.Kill()
		h.checkTailer(round)
		h.tailer = nil
	}
	if h.rd != nil {
		h.rd.Close()
		h.rd = nil
	}
	if err := os.RemoveAll(h.live); err != nil {
		t.Fatal(err)
	}
	h.restarted = true
	h.afterRestart = true
	// A reader of the restarted machine: what is durable checks out, the
	// rest is an unpublished tail, not damage.
	if rep, err := reader.Verify(h.db, crashTable, nil); err == nil {
		if rep.Rows+rep.Unpublished != h.published || rep.Rows < h.durable {
			t.Fatalf("round %d: verify after the restart: %+v; published %d, durable %d", round, rep, h.published, h.durable)
		}
	} else if errors.Is(err, index.ErrBusy) {
		// The writer died between the two halves of a publish: the seqlock
		// stays odd until the next writer resets it, and a reader says
		// busy rather than guess. Rare (a few instructions' window).
		t.Logf("round %d: verify after the restart: %v", round, err)
	} else if !errors.Is(err, store.ErrNoTable) {
		t.Fatalf("round %d: verify after the restart: %v", round, err)
	}
}

// checkOpen checks a recovered table, as the new writer reported it
// ("open <rows> <durable>"). idle says the writer is alive and waiting,
// so the table can be checked in full.
func (h *crashHarness) checkOpen(round int, f []string, idle bool) {
	t := h.t
	if len(f) != 2 {
		t.Fatalf("round %d: bad open line %q", round, f)
	}
	n, err1 := strconv.ParseUint(f[0], 10, 64)
	d, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || d > n {
		t.Fatalf("round %d: bad open line %q", round, f)
	}
	switch {
	case n < h.acked:
		t.Fatalf("round %d: recovered %d rows, %d were acknowledged by Sync", round, n, h.acked)
	case h.restarted && h.seen && n < h.durable:
		t.Fatalf("round %d: recovered %d rows after a restart, %d were durable", round, n, h.durable)
	case !h.restarted && h.seen && n != h.published:
		// Warm: the published words are the truth; a count a reader saw
		// never goes back, and the unpublished tail is dropped.
		t.Fatalf("round %d: warm recovery gave %d rows, %d were published", round, n, h.published)
	}
	h.restarted = false
	if !idle {
		return
	}
	if !h.openReader(round) {
		t.Fatalf("round %d: the table does not exist after the writer opened it", round)
	}
	// The long-lived reader (across warm restarts) sees every row as it was.
	if got := h.rd.Len(); got != n {
		t.Fatalf("round %d: reader sees %d rows, the writer %d", round, got, n)
	}
	if err := xpCheckRows(h.rd, crashRows(), 0, n); err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	rep, err := reader.Verify(h.db, crashTable, nil)
	if err != nil {
		t.Fatalf("round %d: verify: %v", round, err)
	}
	if rep.Rows != n || rep.Unpublished != 0 || rep.Postings+rep.Compacted != n {
		t.Fatalf("round %d: verify %+v, want %d rows", round, rep, n)
	}
	if h.tailer == nil {
		h.startTailer()
	}
}

// checkTailer fails on an error reported by the tailer.
func (h *crashHarness) checkTailer(round int) {
	if h.tailer == nil {
		return
	}
	for _, line := range h.tailer.Drain() {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "error":
			h.t.Fatalf("round %d: tailer %d: %s\n%s", round, h.tailer.Pid, line, h.tailer.Log())
		case len(f) == 2 && f[0] == "seen":
			h.tailerSeen, _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	if h.tailer.Exited() && !h.tailerKilled() {
		h.t.Fatalf("round %d: tailer exited: %v\n%s", round, h.tailer.ExitErr(), h.tailer.Log())
	}
}

func (h *crashHarness) tailerKilled() bool {
	var ee interface{ ExitCode() int }
	return errors.As(h.tailer.ExitErr(), &ee) && ee.ExitCode() == -1
}

// finish runs a last writer that recovers, appends and closes cleanly,
// then checks the closed table and lets the tailer catch up with it.
func (h *crashHarness) finish() {
	t := h.t
	c := h.startWriter(h.rounds)
	f := c.Expect(t, "open", 2*time.Minute, nil)
	h.checkOpen(h.rounds, f, true)
	if err := c.Send("go"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := c.Send("stop"); err != nil {
		t.Fatal(err)
	}
	f = c.Expect(t, "closed", 2*time.Minute, func(line string) {
		if g := strings.Fields(line); len(g) == 2 && g[0] == "ack" {
			n, _ := strconv.ParseUint(g[1], 10, 64)
			h.acked = max(h.acked, n)
		}
	})
	c.CloseStdin()
	if err := c.Wait(time.Minute); err != nil {
		t.Fatalf("last writer: %v\n%s", err, c.Log())
	}
	n, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || n < h.acked {
		t.Fatalf("closed with %q rows, %d acknowledged", f[0], h.acked)
	}
	h.acked = n
	if _, err := os.Stat(h.live); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("live dir after a clean close: %v", err)
	}
	if err := xpCheckRows(h.rd, crashRows(), 0, n); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, h.db, crashTable, n)
	h.checkTimeOrder(n)
	// Every segment up to the last row has its file, raw or compressed
	// (background compaction); past it, at most the one the preparer made
	// ready ahead of the writer.
	segs := (n + 2047) / 2048
	for i := uint64(0); i < segs; i++ {
		_, err := os.Stat(format.SegPath(filepath.Join(h.db, crashTable), i))
		if _, zerr := os.Stat(format.ZSegPath(filepath.Join(h.db, crashTable), i)); err != nil && zerr != nil {
			t.Fatalf("segment %d of %d rows: %v", i, n, err)
		}
	}
	if _, err := os.Stat(format.SegPath(filepath.Join(h.db, crashTable), segs+1)); err == nil {
		t.Fatalf("segment file %d exists, past the %d rows", segs+1, n)
	}
	h.checkTailer(h.rounds)
	if err := h.tailer.Send("until " + strconv.FormatUint(n, 10)); err != nil {
		t.Fatal(err)
	}
	g := h.tailer.Expect(t, "done", 2*time.Minute, nil)
	h.tailer.CloseStdin()
	if err := h.tailer.Wait(time.Minute); err != nil {
		t.Fatalf("tailer: %v\n%s", err, h.tailer.Log())
	}
	if len(g) != 3 || g[0] != strconv.FormatUint(n, 10) {
		t.Fatalf("tailer: done %q, want %d rows", g, n)
	}
	late, _ := strconv.ParseUint(g[2], 10, 64)
	if late > n/1000+8 {
		t.Fatalf("tailer: %d of %d rows came from a recycled live slot", late, n)
	}
	t.Logf("tailer (pid %d) checked %d rows, %d views recycled before the copy", h.tailer.Pid, n, late)
}

// TestChildCrashWriter is the writer process: it opens (recovering),
// reports "open <rows> <durable>", waits for "go", then appends SeqRows in
// random batches, publishing each, and calls Sync one batch in six,
// reporting "ack <rows>" after each Sync returns, until it is killed or
// told "stop" (then it closes and reports "closed <rows>").
func TestChildCrashWriter(t *testing.T) {
	testutil.ChildRole(t, crashWriter)
	db := testutil.EnvString(t, "TICKDB_DB")
	live := testutil.EnvString(t, "TICKDB_LIVE")
	flush := writer.FlushPolicy(testutil.EnvUint(t, "TICKDB_FLUSH"))
	rng := rand.New(rand.NewPCG(testutil.EnvUint(t, "TICKDB_CHILD_SEED"), 1))
	w, err := writer.Open(db, crashTable, crashOptions(live, flush))
	if err != nil {
		testutil.ChildFatalf(t, "open: %v", err)
	}
	testutil.Report("open %d %d", w.Len(), w.Stats().Durable)
	cmds := testutil.Commands()
	if cmd := <-cmds; cmd != "go" {
		testutil.ChildFatalf(t, "command %q, want go", cmd)
	}
	g := crashRows()
	syms := testutil.NewWriterSyms(g, w.SymbolString)
	rs := g.Schema.RowSize
	batch := make([]byte, 64*rs)
	for {
		select {
		case cmd := <-cmds:
			if cmd != "stop" {
				testutil.ChildFatalf(t, "command %q, want stop", cmd)
			}
			if err := w.Close(); err != nil {
				testutil.ChildFatalf(t, "close: %v", err)
			}
			testutil.Report("closed %d", w.Len())
			for range cmds {
			}
			return
		default:
		}
		n := 1 + rng.IntN(64)
		first := w.Len()
		for i := 0; i < n; i++ {
			seq := first + uint64(i)
			id, err := syms.ID(seq) // a new symbol publishes the rows so far
			if err != nil {
				testutil.ChildFatalf(t, "symbol of row %d: %v", seq, err)
			}
			g.Fill(batch[i*rs:(i+1)*rs], seq, id)
		}
		if rng.IntN(2) == 0 {
			if _, k, err := w.AppendBatch(batch[:n*rs]); err != nil || k != n {
				testutil.ChildFatalf(t, "append batch at %d: %d of %d: %v", first, k, n, err)
			}
		} else {
			for i := 0; i < n; i++ {
				if _, err := w.Append(batch[i*rs : (i+1)*rs]); err != nil {
					testutil.ChildFatalf(t, "append %d: %v", first+uint64(i), err)
				}
			}
		}
		w.Publish()
		if rng.IntN(6) == 0 {
			at := w.Len()
			if err := w.Sync(); err != nil {
				testutil.ChildFatalf(t, "sync: %v", err)
			}
			testutil.Report("ack %d", at)
		}
		if rng.IntN(8) == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
		}
	}
}

// TestChildCrashTailer is the reader process: it waits for the table,
// tails it from row 0 across writer crashes and restarts, checks every
// row and that the published count never goes back, reports "seen <rows>" now and then, and on "until N" stops after
// row N-1, reporting "done <rows> late <n>".
func TestChildCrashTailer(t *testing.T) {
	testutil.ChildRole(t, crashTailer)
	db := testutil.EnvString(t, "TICKDB_DB")
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	var r *reader.Reader
	for r == nil {
		var err error
		r, err = reader.Open(db, crashTable, nil)
		if errors.Is(err, store.ErrNoTable) && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			testutil.ChildFatalf(t, "open: %v", err)
		}
	}
	defer r.Close()
	g := crashRows()
	names := testutil.NewSymCache(r.SymbolName)
	buf := make(store.Row, g.Schema.RowSize)
	tail := r.Tail(0, nil)
	idle := &reader.Backoff{MaxSleep: 500 * time.Microsecond}
	cmds := testutil.Commands()
	until := ^uint64(0)
	var late, want, maxCount uint64
	for empty := 0; ; {
		row, seq, ok, err := tail.Poll()
		if err != nil {
			testutil.ChildFatalf(t, "tail at row %d: %v", tail.Next(), err)
		}
		if !ok {
			// A count once published never goes back (this process only
			// lives across warm restarts).
			if n := r.Len(); n < maxCount {
				testutil.ChildFatalf(t, "published count went back from %d to %d", maxCount, n)
			} else {
				maxCount = n
			}
			if tail.Next() >= until {
				break
			}
			select {
			case cmd := <-cmds:
				v, ok := strings.CutPrefix(cmd, "until ")
				n, err := strconv.ParseUint(v, 10, 64)
				if !ok || err != nil {
					testutil.ChildFatalf(t, "command %q", cmd)
				}
				until = n
			default:
			}
			if ctx.Err() != nil {
				testutil.ChildFatalf(t, "no row %d within the test's time", tail.Next())
			}
			idle.Idle(empty)
			empty++
			continue
		}
		if empty > 0 {
			empty = 0
			idle.Reset()
		}
		if seq != want {
			testutil.ChildFatalf(t, "tail returned row %d, want %d", seq, want)
		}
		want++
		copy(buf, row)
		if wasLate, err := g.CheckCopy(buf, seq, names.Name, r.ReadRow); err != nil {
			testutil.ChildFatalf(t, "%v", err)
		} else if wasLate {
			late++
		}
		if seq%50_000 == 0 {
			testutil.Report("seen %d", seq)
		}
	}
	if n := r.Len(); n != until {
		testutil.ChildFatalf(t, "table has %d rows, want %d", n, until)
	}
	testutil.Report("done %d late %d", tail.Next(), late)
	for range cmds {
	}
}

// checkTimeOrder reads the table after every kill and recovery in time
// order: every row once, by (ts, seq), the late rows of crashRows merged
// in where their ts puts them, as the model (the same rows sorted) says.
func (h *crashHarness) checkTimeOrder(n uint64) {
	t := h.t
	g := crashRows()
	want := make([]uint64, n)
	for i := range want {
		want[i] = uint64(i)
	}
	slices.SortStableFunc(want, func(a, b uint64) int { return cmp.Compare(g.Ts(a), g.Ts(b)) })
	var it reader.Iter
	if err := h.rd.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		t.Fatal(err)
	}
	k := 0
	for it.Next() {
		if k >= len(want) || it.Seq() != want[k] {
			t.Fatalf("time-ordered read, row %d: seq %d, want %d", k, it.Seq(), want[min(k, len(want)-1)])
		}
		k++
	}
	if it.Err() != nil || k != len(want) {
		t.Fatalf("time-ordered read: %d rows of %d: %v", k, len(want), it.Err())
	}
}
