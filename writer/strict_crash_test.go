package writer_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Strict crash tests: the tables' files go through a vfs.Strict, which
// keeps, beside the real files, only what was made durable (O_DSYNC
// writes, fsync, msync, directory fsync). While the writers run, images
// of that durable state are taken (Strict.Crash: the files a power cut
// at that instant would leave), from the writers' goroutine between
// calls and from another goroutine at random moments. Each image is then
// opened as a machine restart opens a table (an empty live directory:
// the cold recovery) and checked against a model of what was appended:
// every row acknowledged durable before the image was taken (Sync,
// WaitDurable, Close) is there, unchanged and in order, the rows past
// it are rows that were appended, reader.Verify finds no damage (every
// index entry checked), and the indexed reads (Range with the late rows
// merged, RangeSym of every symbol, SeekTime) agree with the model.
//
// A second phase takes one image, opens it under a Strict of its own
// (its recovery's writes and syncs are tracked too) and goes on, taking
// and checking images again: what recovery does must be durable as well.
//
// The workload: three tables (plain with hot copies; compaction by age;
// retention by age), segments of 128 rows, appends singly and in
// batches with recurring and new symbols and late rows, Publish,
// acknowledgements by Sync and WaitDurable, AddColumn, under each flush
// policy, with and without a writer.Group.
//
// strict_sites_test.go plants a missing sync in each place the writer
// syncs and requires these checks to catch it.
//
// The random choices come from one seed, logged; -seed=N or
// TICKDB_SEED=N replays them (the goroutines' timing is not replayed).
// TICKDB_STRICT_SOAK=N runs N seeds of a longer workload.

const (
	strictSeg     = 4096                   // 128 32-byte rows a segment
	strictLate    = 5 * time.Microsecond   // the late window
	strictCompact = 300 * time.Microsecond // table t1: about 300 rows of ts
	strictRetain  = time.Millisecond       // table t2: about 1,000 rows of ts
)

// strictConfig is one scenario.
type strictConfig struct {
	flush writer.FlushPolicy
	group bool
	seed  uint64
	steps int // workload steps in each phase
	// drop, when set, is the site whose syncs Strict leaves out of its
	// images (a planted missing sync).
	drop string
}

func (c strictConfig) String() string {
	return fmt.Sprintf("flush=%s/group=%v", []string{"interval", "sync", "none"}[c.flush], c.group)
}

// strictRun is one scenario's state.
type strictRun struct {
	t    testing.TB
	cfg  strictConfig
	rng  *rand.Rand
	root string // the Strict's root; the database is root/db
	live string // live directories (outside the root: lost at a crash)
	fs   *vfs.Strict
	g    *writer.Group
	tabs []*strictTable

	imgDir  string
	imgMu   sync.Mutex
	images  []strictImage
	nimages atomic.Int64
	opens   atomic.Int64 // tables opened: each gets a live directory of its own
	sites   map[string]bool
	// restartAcked and restartAdded are the rows and columns
	// acknowledged when the restart image was taken.
	restartAcked []uint64
	restartAdded []int32

	mu       sync.Mutex
	problems []string
}

// strictTable is a table and its model: every row appended, by seq.
type strictTable struct {
	name  string
	o     *writer.Options
	w     *writer.Writer
	rows  []strictRow
	acked atomic.Uint64 // rows acknowledged durable
	// created: Open made the table and returned (a table created must
	// be there after a power cut, even empty: a name left half made
	// could not be opened or made again).
	created atomic.Bool
	lastTs  int64
	added   int // columns added (a0, a1)
	// addedAcked: columns AddColumn returned for (each must be in the
	// schema after a power cut, rows or none).
	addedAcked atomic.Int32
	syms       []string
	fresh      int // new symbols made
}

// strictRow is a row of the model; its other columns follow from its
// seq (strictValues).
type strictRow struct {
	ts    int64
	sym   string
	added uint8 // columns added to the table when it was appended
}

// strictImage is a crash image and what was acknowledged when it was
// taken.
type strictImage struct {
	dir     string
	what    string
	acked   []uint64
	created []bool
	added   []int32 // columns acknowledged added to each table
	rows    []int   // model rows of each table at the time (an upper bound)
}

var strictAdded = []store.Column{{Name: "a0", Type: store.TypeI64}, {Name: "a1", Type: store.TypeF64}}

// strictValues are row seq's price, size and added columns.
func strictValues(seq uint64) (price float64, size int64, a0 int64, a1 float64) {
	return float64(seq)*0.25 + 1, int64(seq*7 + 3), int64(seq*13 + 1), float64(seq) / 8
}

func TestStrictCrash(t *testing.T) {
	seed := testutil.Seed(t, *crashSeedFlag)
	runs, steps := 1, 120
	if s := os.Getenv("TICKDB_STRICT_SOAK"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TICKDB_STRICT_SOAK=%q", s)
		}
		runs, steps = n, 600
	}
	for i := range runs {
		for _, group := range []bool{false, true} {
			for _, flush := range []writer.FlushPolicy{writer.FlushInterval, writer.FlushOnSync, writer.FlushNone} {
				cfg := strictConfig{flush: flush, group: group, seed: seed + uint64(i), steps: steps}
				t.Run(cfg.String(), func(t *testing.T) {
					r := runStrict(t, cfg)
					for _, p := range r.problems {
						t.Error(p)
					}
					if testing.Verbose() {
						t.Logf("%d images checked, %d sites", r.nimages.Load(), len(r.sites))
					}
				})
			}
		}
	}
}

// runStrict runs a scenario: phase 1 from an empty database, phase 2
// from an image of it. The problems found are in r.problems; anything
// else that goes wrong (the writer failing while it runs) fails t.
func runStrict(t testing.TB, cfg strictConfig) (r *strictRun) {
	root := t.TempDir()
	r = &strictRun{t: t, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 0x737472696374)), root: root,
		live: testutil.LiveDir(t), imgDir: t.TempDir(), sites: map[string]bool{}}
	if cfg.drop != "" {
		// A planted missing sync may break the tables under the
		// workload itself (a phase 2 opened from a damaged image): that
		// ends the run as a problem found (r, the named result, is
		// still returned).
		defer func() {
			if p := recover(); p != nil && p != errStrictStop {
				panic(p)
			}
			r.collectSites()
		}()
	}
	r.run()
	return r
}

// errStrictStop ends a run with a planted missing sync whose writer
// failed (strictRun.fatalf).
var errStrictStop = errors.New("strict run stopped")

// fatalf ends the run: a failure of the test, or, with a planted missing
// sync, a problem found.
func (r *strictRun) fatalf(format string, args ...any) {
	if r.cfg.drop != "" {
		r.problemf("the writer failed: "+format, args...)
		panic(errStrictStop)
	}
	r.t.Helper()
	r.t.Fatalf(format, args...)
}

func (r *strictRun) run() {
	t, cfg, root := r.t, r.cfg, r.root
	var err error
	if r.fs, err = vfs.NewStrict(root); err != nil {
		t.Fatal(err)
	}
	r.setDrop()
	if cfg.group {
		if r.g, err = writer.NewGroup(&writer.GroupOptions{FlushBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
		defer r.g.Close()
	}
	for i := range 3 {
		r.tabs = append(r.tabs, &strictTable{name: "t" + strconv.Itoa(i), lastTs: int64(1_700_000_000_000_000_000) + int64(i)*1e9})
	}
	restart := r.phase("phase 1", true)
	r.collectSites()
	r.checkImages()
	if restart == "" {
		return
	}
	// Phase 2: a machine restart from the image taken for it, under a
	// Strict of its own.
	if r.fs, err = vfs.NewStrict(restart); err != nil {
		t.Fatal(err)
	}
	r.setDrop()
	r.root = restart
	r.images = nil
	if !r.reopen(r.restartAcked, r.restartAdded) {
		for _, tb := range r.tabs { // those reopened before the one that failed
			if tb.w != nil {
				tb.w.Close()
				tb.w = nil
			}
		}
		return
	}
	r.phase("phase 2", false)
	r.collectSites()
	r.checkImages()
}

func (r *strictRun) setDrop() {
	if d := r.cfg.drop; d != "" {
		r.fs.Drop = func(site string) bool { return site == d }
	}
}

func (r *strictRun) collectSites() {
	for _, s := range r.fs.Sites() {
		r.sites[s] = true
	}
}

func (r *strictRun) nproblems() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.problems)
}

func (r *strictRun) problemf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) < 20 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

func (r *strictRun) db() string { return filepath.Join(r.root, "db") }

// options are table i's writer options in this run.
func (r *strictRun) options(i int, schema *store.Schema) *writer.Options {
	o := &writer.Options{Schema: schema, SegmentSize: strictSeg, TimeStride: 16, LiveSlots: 2, HotBytes: 4 * strictSeg,
		LiveDir: filepath.Join(r.live, fmt.Sprintf("%s-%d", r.tabs[i].name, r.opens.Add(1))), Flush: r.cfg.flush,
		LateWindow: strictLate, Group: r.g}
	// Table 1 compacts in the background (the default, here at an age
	// that lets some segments be read raw first); 0 and 2 keep their
	// segments raw, as the runs before compaction was the default did:
	// every compaction adds sync sites to each run.
	switch i {
	case 0:
		o.CompactAge = -1
	case 1:
		o.CompactAge = strictCompact
	case 2:
		o.RetainAge, o.HotBytes, o.CompactAge = strictRetain, -1, -1
	}
	writer.SetFS(o, r.fs)
	// Images at each step of AddColumn's and compaction's file swaps: a
	// crash between two of their renames and syncs.
	name := r.tabs[i].name
	writer.SetColumnHook(o, func(step int) { r.image(fmt.Sprintf("%s: add column, step %d", name, step)) })
	writer.SetCompactHook(o, func(seg uint64, step int) {
		r.image(fmt.Sprintf("%s: compact segment %d, step %d", name, seg, step))
	})
	return o
}

// phase opens the tables (creating them when create is set), runs the
// workload, taking images, and closes them. It returns the image taken
// for a restart ("" when none was).
func (r *strictRun) phase(what string, create bool) (restart string) {
	if create {
		for i, tb := range r.tabs {
			tb.o = r.options(i, store.TickSchema())
			w, err := writer.Open(r.db(), tb.name, tb.o)
			if err != nil {
				r.fatalf("%s: open %s: %v", what, tb.name, err)
			}
			tb.w = w
			tb.created.Store(true)
			r.image(what + ": created " + tb.name)
		}
	}
	defer func() {
		for _, tb := range r.tabs {
			if tb.w != nil {
				tb.w.Close()
				tb.w = nil
			}
		}
	}()
	// Images at random moments, from another goroutine.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopImages := func() { stopOnce.Do(func() { close(stop); wg.Wait() }) }
	defer stopImages()
	wg.Add(1)
	imgSeed := r.rng.Uint64() // drawn here: r.rng is the run goroutine's
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(imgSeed, 1))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.IntN(4000)) * time.Microsecond):
				r.image(what + ": a random moment")
			}
		}
	}()
	restartAt := r.cfg.steps/2 + r.rng.IntN(r.cfg.steps/2)
	for step := range r.cfg.steps {
		tb := r.tabs[r.rng.IntN(len(r.tabs))]
		r.step(tb, step)
		if r.rng.IntN(5) == 0 {
			r.image(fmt.Sprintf("%s: step %d", what, step))
		}
		if step == restartAt && create {
			r.image(fmt.Sprintf("%s: step %d, beside the restart's", what, step))
			restart, r.restartAcked, r.restartAdded = r.restartImage()
		}
	}
	stopImages()
	for _, tb := range r.tabs {
		n := tb.w.Len()
		if err := tb.w.Close(); err != nil {
			r.fatalf("%s: close %s: %v", what, tb.name, err)
		}
		tb.w = nil
		tb.acked.Store(n) // Close made every row durable
		r.image(fmt.Sprintf("%s: %s closed", what, tb.name))
	}
	return restart
}

// step is one workload step on table tb.
func (r *strictRun) step(tb *strictTable, step int) {
	w := tb.w
	switch k := r.rng.IntN(100); {
	case k < 70:
		r.appendRows(tb, 1+r.rng.IntN(48))
		w.Publish()
	case k < 82:
		n := w.Len()
		if err := w.Sync(); err != nil {
			r.fatalf("step %d: sync %s: %v", step, tb.name, err)
		}
		tb.acked.Store(n)
	case k < 92:
		w.Publish()
		n := w.Len()
		if err := w.WaitDurable(n); err != nil {
			r.fatalf("step %d: wait durable %s: %v", step, tb.name, err)
		}
		tb.acked.Store(n)
	case k < 94 && tb.added < len(strictAdded):
		if err := w.AddColumn(strictAdded[tb.added]); err != nil {
			r.fatalf("step %d: add column to %s: %v", step, tb.name, err)
		}
		tb.added++
		tb.addedAcked.Store(int32(tb.added))
		tb.acked.Store(w.Len()) // AddColumn closes: every row durable
	default:
		r.appendRows(tb, 1+r.rng.IntN(4))
		w.Publish()
	}
}

// appendRows appends n rows to tb, one at a time or as a batch, and
// records them in the model.
func (r *strictRun) appendRows(tb *strictTable, n int) {
	w := tb.w
	s := w.Schema()
	rs := s.RowSize
	buf := make([]byte, n*rs)
	symCol, _ := s.Col("sym")
	priceCol, _ := s.Col("price")
	sizeCol, _ := s.Col("size")
	for i := range n {
		seq := w.Len() + uint64(i)
		var name string
		switch k := r.rng.IntN(100); {
		case k < 3 || len(tb.syms) == 0:
			tb.fresh++
			name = fmt.Sprintf("N%d", tb.fresh)
			if tb.fresh%7 == 0 {
				name += strings.Repeat("x", 60) // an entry of several lines
			}
		case k < 60:
			name = tb.syms[0]
		default:
			name = tb.syms[r.rng.IntN(len(tb.syms))]
		}
		if !slices.Contains(tb.syms, name) {
			tb.syms = append(tb.syms, name)
		}
		id, err := w.SymbolString(name)
		if err != nil {
			r.fatalf("symbol %q of %s: %v", name, tb.name, err)
		}
		ts := tb.lastTs + int64(r.rng.IntN(3))*1000
		if r.rng.IntN(40) == 0 {
			ts = tb.lastTs - 1 - r.rng.Int64N(int64(strictLate)) // late, within the window
		} else {
			tb.lastTs = ts
		}
		row := store.Row(buf[i*rs : (i+1)*rs])
		clear(row)
		price, size, a0, a1 := strictValues(seq)
		row.SetTs(ts)
		row.SetSym(symCol, id)
		row.SetF64(priceCol, price)
		row.SetI64(sizeCol, size)
		if c, ok := s.Col("a0"); ok {
			row.SetI64(c, a0)
		}
		if c, ok := s.Col("a1"); ok {
			row.SetF64(c, a1)
		}
		tb.rows = append(tb.rows, strictRow{ts: ts, sym: name, added: uint8(tb.added)})
	}
	if r.rng.IntN(2) == 0 {
		if _, k, err := w.AppendBatch(buf); err != nil || k != n {
			r.fatalf("append batch to %s: %d of %d: %v", tb.name, k, n, err)
		}
		return
	}
	for i := range n {
		if _, err := w.Append(buf[i*rs : (i+1)*rs]); err != nil {
			r.fatalf("append to %s: %v", tb.name, err)
		}
	}
}

// image takes a crash image of the durable state now, to be checked
// after the phase. Rows acknowledged before it (read first) must be in
// it.
func (r *strictRun) image(what string) {
	acked := r.acked()
	created := make([]bool, len(r.tabs))
	added := make([]int32, len(r.tabs))
	for i, tb := range r.tabs {
		created[i] = tb.created.Load()
		added[i] = tb.addedAcked.Load()
	}
	dir := filepath.Join(r.imgDir, strconv.FormatInt(r.nimages.Add(1), 10))
	if err := r.fs.Crash(dir); err != nil {
		r.problemf("harness: crash image: %v", err)
		return
	}
	r.imgMu.Lock()
	r.images = append(r.images, strictImage{dir: dir, what: what, acked: acked, created: created, added: added})
	r.imgMu.Unlock()
}

func (r *strictRun) acked() []uint64 {
	acked := make([]uint64, len(r.tabs))
	for i, tb := range r.tabs {
		acked[i] = tb.acked.Load()
	}
	return acked
}

// restartImage takes the image phase 2 starts from (not checked by
// itself: the reopen checks it).
func (r *strictRun) restartImage() (string, []uint64, []int32) {
	acked := r.acked()
	added := make([]int32, len(r.tabs))
	for i, tb := range r.tabs {
		added[i] = tb.addedAcked.Load()
	}
	dir := filepath.Join(r.imgDir, "restart")
	if err := r.fs.Crash(dir); err != nil {
		r.t.Fatalf("crash image: %v", err)
	}
	return dir, acked, added
}

// reopen opens the tables of the restart image (r.root) under r.fs, a
// machine restart that goes on writing: each keeps the rows it recovers
// (at least those acknowledged), and its model is cut there. A table
// whose creation was not durable yet is created again. It reports false,
// with a problem, when the image cannot be opened.
func (r *strictRun) reopen(acked []uint64, added []int32) bool {
	for i, tb := range r.tabs {
		tb.acked.Store(acked[i]) // what the restart image holds
		tb.addedAcked.Store(added[i])
	}
	for i, tb := range r.tabs {
		var schema *store.Schema
		if _, err := os.Stat(filepath.Join(r.db(), tb.name, "ctl")); err != nil {
			if acked[i] > 0 || tb.created.Load() {
				r.problemf("restart: table %s is missing, %d rows were acknowledged; it was created: %v", tb.name, acked[i], tb.created.Load())
				return false
			}
			schema = store.TickSchema()
			tb.rows, tb.added = nil, 0
		}
		tb.o = r.options(i, schema)
		w, err := writer.Open(r.db(), tb.name, tb.o)
		if err != nil {
			r.problemf("restart: open %s: %v", tb.name, err)
			return false
		}
		tb.w = w
		n := w.Len()
		if n < acked[i] || n > uint64(len(tb.rows)) {
			r.problemf("restart: %s recovered %d rows; %d were acknowledged, %d appended", tb.name, n, acked[i], len(tb.rows))
			return false
		}
		tb.rows = tb.rows[:n]
		tb.added = len(w.Schema().Cols) - len(store.TickSchema().Cols)
		if tb.added < int(added[i]) {
			r.problemf("restart: %s has %d added columns, AddColumn returned for %d", tb.name, tb.added, added[i])
			return false
		}
		tb.addedAcked.Store(int32(tb.added))
		tb.lastTs = max(w.LastTs(), tb.lastTs0())
		tb.acked.Store(n) // recovered rows are durable
		r.image("restart: reopened " + tb.name)
	}
	return true
}

// lastTs0 is the newest ts of the model's rows, or a start.
func (tb *strictTable) lastTs0() int64 {
	ts := int64(1_700_000_000_000_000_000)
	for _, m := range tb.rows {
		ts = max(ts, m.ts)
	}
	return ts
}

// checkImages checks every image taken, two at a time.
func (r *strictRun) checkImages() {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for k, img := range r.images {
		if r.cfg.drop != "" && r.nproblems() > 0 {
			os.RemoveAll(img.dir) // a planted missing sync is caught: enough
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			before := r.nproblems()
			// TICKDB_STRICT_KEEP=DIR keeps a copy of each image a check
			// fails on, as it was before the recovery ran on it.
			keep := os.Getenv("TICKDB_STRICT_KEEP")
			var dst string
			if keep != "" {
				dst = filepath.Join(keep, fmt.Sprintf("%d-%d", r.cfg.seed, r.nimages.Add(1)))
				if out, err := exec.Command("cp", "-a", "--sparse=always", img.dir, dst).CombinedOutput(); err != nil {
					r.problemf("keep %s: %v: %s", dst, err, out)
				}
			}
			r.checkImage(k, img)
			if dst != "" {
				if r.nproblems() > before {
					r.problemf("%s: image kept in %s", img.what, dst)
				} else {
					os.RemoveAll(dst)
				}
			}
			os.RemoveAll(img.dir)
		}()
	}
	wg.Wait()
	r.images = nil
}

// checkImage opens each table of an image as after a machine restart
// and checks it against the model.
func (r *strictRun) checkImage(k int, img strictImage) {
	defer func() {
		if p := recover(); p != nil {
			r.problemf("%s: panic: %v\n%s", img.what, p, debug.Stack())
		}
	}()
	db := filepath.Join(img.dir, "db")
	for i, tb := range r.tabs {
		acked := img.acked[i]
		if _, err := os.Stat(filepath.Join(db, tb.name, "ctl")); err != nil {
			if acked > 0 || img.created[i] {
				r.problemf("%s: table %s is missing (%v), %d rows were acknowledged; it was created: %v", img.what, tb.name, err, acked, img.created[i])
			}
			continue
		}
		o := &writer.Options{LiveDir: filepath.Join(r.live, fmt.Sprintf("check-%d-%s", k, tb.name)), HotBytes: -1, CompactAge: -1}
		w, err := writer.Open(db, tb.name, o)
		if err != nil {
			r.problemf("%s: open %s: %v", img.what, tb.name, err)
			continue
		}
		n, first := w.Len(), w.FirstSeq()
		if got := len(w.Schema().Cols) - len(store.TickSchema().Cols); got < int(img.added[i]) {
			r.problemf("%s: %s has %d added columns, AddColumn returned for %d", img.what, tb.name, got, img.added[i])
		}
		if err := w.Close(); err != nil {
			r.problemf("%s: close %s: %v", img.what, tb.name, err)
			continue
		}
		switch {
		case n < acked:
			r.problemf("%s: %s recovered %d rows, %d were acknowledged durable", img.what, tb.name, n, acked)
		case n > uint64(len(tb.rows)):
			r.problemf("%s: %s recovered %d rows, %d were appended", img.what, tb.name, n, len(tb.rows))
		default:
			r.checkTable(img.what, db, tb, n, first)
		}
	}
}

// checkTable checks a recovered, closed table of n rows from first: the
// rows by seq, reader.Verify, the time-ordered and per-symbol reads and
// SeekTime, against the model.
func (r *strictRun) checkTable(what, db string, tb *strictTable, n, first uint64) {
	rep, err := reader.Verify(db, tb.name, nil)
	if err != nil {
		r.problemf("%s: verify %s: %v", what, tb.name, err)
		return
	}
	if rep.Rows+first != n || rep.Unpublished != 0 {
		r.problemf("%s: verify %s: %+v; %d rows from %d", what, tb.name, rep, n, first)
	}
	rd, err := reader.Open(db, tb.name, nil)
	if err != nil {
		r.problemf("%s: open a reader of %s: %v", what, tb.name, err)
		return
	}
	defer rd.Close()
	if got := rd.Len(); got != n {
		r.problemf("%s: %s: a reader sees %d rows, the writer recovered %d", what, tb.name, got, n)
		return
	}
	// Every row by seq.
	var it reader.Iter
	if err := rd.RangeSeq(first, n, &it); err != nil {
		r.problemf("%s: %s: %v", what, tb.name, err)
		return
	}
	seq := first
	for it.Next() {
		if it.Seq() != seq {
			r.problemf("%s: %s: row %d read as row %d", what, tb.name, seq, it.Seq())
			return
		}
		if p := r.rowProblem(rd, it.Row(), seq, tb.rows[seq]); p != "" {
			r.problemf("%s: %s: row %d: %s", what, tb.name, seq, p)
			return
		}
		seq++
	}
	if it.Err() != nil || seq != n {
		r.problemf("%s: %s: rows by seq stop at %d of %d: %v", what, tb.name, seq, n, it.Err())
		return
	}
	// In time order, late rows merged; and each symbol's.
	want := make([]uint64, 0, n-first)
	for s := first; s < n; s++ {
		want = append(want, s)
	}
	slices.SortStableFunc(want, func(a, b uint64) int { return cmp.Compare(tb.rows[a].ts, tb.rows[b].ts) })
	if err := rd.Range(math.MinInt64, reader.ToEnd, &it); err != nil {
		r.problemf("%s: %s: range: %v", what, tb.name, err)
		return
	}
	if p := seqsProblem(&it, want); p != "" {
		r.problemf("%s: %s: range: %s", what, tb.name, p)
	}
	bySym := map[string][]uint64{}
	for _, s := range want {
		name := tb.rows[s].sym
		bySym[name] = append(bySym[name], s)
	}
	for name, seqs := range bySym {
		id, ok := rd.SymbolID([]byte(name))
		if !ok {
			r.problemf("%s: %s: symbol %q of row %d is not in the dictionary", what, tb.name, name, seqs[0])
			continue
		}
		if err := rd.RangeSym(math.MinInt64, reader.ToEnd, id, &it); err != nil {
			r.problemf("%s: %s: range of %q: %v", what, tb.name, name, err)
			continue
		}
		if p := seqsProblem(&it, seqs); p != "" {
			r.problemf("%s: %s: range of %q: %s", what, tb.name, name, p)
		}
	}
	// SeekTime: the first row whose time key (the newest ts up to it) is
	// at least t.
	keys := make([]int64, n)
	for s := range n {
		keys[s] = tb.rows[s].ts
		if s > 0 {
			keys[s] = max(keys[s], keys[s-1])
		}
	}
	rng := r.rngFor(n)
	for range min(8, n-first) {
		t := tb.rows[first+uint64(rng.Int64N(int64(n-first)))].ts + int64(rng.IntN(3)) - 1
		s0 := first
		for s0 < n && keys[s0] < t {
			s0++
		}
		got, err := rd.SeekTime(t)
		if err != nil || got != s0 {
			r.problemf("%s: %s: seek %d: row %d, %v; want %d", what, tb.name, t, got, err, s0)
		}
	}
}

// rngFor is a generator for a check's own choices (checks run two at a
// time: not the run's generator).
func (r *strictRun) rngFor(n uint64) *rand.Rand { return rand.New(rand.NewPCG(r.cfg.seed, n)) }

// seqsProblem reads it to the end and says how its rows differ from want.
func seqsProblem(it *reader.Iter, want []uint64) string {
	k := 0
	for it.Next() {
		if k >= len(want) || it.Seq() != want[k] {
			return fmt.Sprintf("row %d of the read is row %d, want %d", k, it.Seq(), want[min(k, len(want)-1)])
		}
		k++
	}
	if it.Err() != nil || k != len(want) {
		return fmt.Sprintf("%d rows of %d: %v", k, len(want), it.Err())
	}
	return ""
}

// rowProblem compares row seq as read with the model's m.
func (r *strictRun) rowProblem(rd *reader.Reader, row store.Row, seq uint64, m strictRow) string {
	s := rd.Schema()
	if row.Ts() != m.ts {
		return fmt.Sprintf("ts %d, want %d", row.Ts(), m.ts)
	}
	c, _ := s.Col("sym")
	if name, err := rd.SymbolName(row.Sym(c)); err != nil || name != m.sym {
		return fmt.Sprintf("symbol %q (%v), want %q", name, err, m.sym)
	}
	price, size, a0, a1 := strictValues(seq)
	c, _ = s.Col("price")
	d, _ := s.Col("size")
	if row.F64(c) != price || row.I64(d) != size {
		return fmt.Sprintf("price %v size %d, want %v %d", row.F64(c), row.I64(d), price, size)
	}
	if added := len(s.Cols) - len(store.TickSchema().Cols); int(m.added) > added {
		return fmt.Sprintf("the row has %d added columns, the table %d", m.added, added)
	}
	if c, ok := s.Col("a0"); ok && row.I64(c) != map[bool]int64{true: a0, false: 0}[m.added > 0] {
		return fmt.Sprintf("a0 %d, want %d", row.I64(c), a0)
	}
	if c, ok := s.Col("a1"); ok {
		v := row.F64(c)
		if m.added > 1 && v != a1 || m.added <= 1 && !math.IsNaN(v) {
			return fmt.Sprintf("a1 %v (the row has %d added columns)", v, m.added)
		}
	}
	return ""
}
