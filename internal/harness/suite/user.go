package suite

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tickdb/tickdb/internal/harness/child"
	"github.com/tickdb/tickdb/writer"
)

// The user protocol: what a user of a store sees, rather than a query
// repeated over cached pages. In an ingesting process (this binary,
// re-executed, generating the data set again): ingest, Seal,
// then userWindows one-symbol windows at places not read before, with the
// store still open as the ingesting process has it; Close (with the
// maintenance a close runs); the disk bytes per tick; the store's files
// evicted from the page cache. Then in a fresh process (this binary,
// re-executed): open the store on the same directory, one window, one
// symbol scan, userWindows windows and userScans symbol scans, every one
// at a place that process has not read, timed, with the bytes the
// process read from the disk (/proc/self/io read_bytes, which counts page
// cache misses, mmap faults and read-ahead included).
const (
	userWindows = 50 // windows after ingest, and windows in the fresh process
	userScans   = 5  // symbol scans in the fresh process after its first
	// userChildTime bounds the fresh process's run.
	userChildTime = 30 * time.Minute
)

// The user protocol's metric ids.
const (
	MUserIngest   = "ingest (user)"                    // rows/s: the ingesting process's appends in batches of 1,000, to Seal
	MUserIngestCl = "ingest + close (user)"            // rows/s: the same with the Close after the windows, so that work left to Close counts
	MAfterIngest  = "window after ingest"              // ns: a window in the ingesting process right after Seal, at a place not read before
	MClose        = "close"                            // ns: the store's Close after ingest (with the maintenance it runs)
	MDiskBytes    = "disk bytes/tick"                  // B/tick: allocated bytes (st_blocks) of every file of the closed store over N
	MDiskBytesCmp = "disk bytes/tick (CloseCompacted)" // B/tick: the same after the store is reopened and closed with CloseCompacted(0) (tickdb, close mode plain)
	MOpenFresh    = "open (fresh process)"             // ns: opening the closed store in a fresh process, its files evicted
	MWindowFirst  = "window (reopen, first)"           // ns: that process's first query, a window
	MScanFirst    = "scan (reopen, first)"             // ns: its second, a symbol scan
	MWindowRandom = "window (reopen, random)"          // ns: then windows at places it has not read
	MScanRandom   = "scan (reopen, random)"            // ns: then scans of symbols it has not queried
	MBytesOpen    = "bytes read open"                  // B: read from the disk by the fresh process's open
	MBytesWindow  = "bytes read cold window"           // B: by its first window
	MBytesScan    = "bytes read cold scan"             // B: by its first symbol scan
	MBytesWindows = "bytes read random windows"        // B per query: by the random windows
	MBytesScans   = "bytes read random scans"          // B per query: by the random scans
)

// userPlan is the user protocol's queries with their expected answers.
// No window overlaps another window of the same process in time (so none
// can be served by pages another one read, whatever the store's layout),
// and no query overlaps an earlier query's rows: windows never ask for
// the scanned symbols.
type userPlan struct {
	After      []Query // in the ingesting process, after Seal
	ColdWindow Query   // the fresh process's first query
	ColdScan   Query   // its second
	Windows    []Query // then these
	Scans      []Query // then these
}

// userPlan draws the user protocol's queries from the fixed seed: symbols
// uniformly (every symbol, busy or not), windows over 1 % of the span
// like Windows.
func (d *Data) userPlan() (userPlan, error) {
	var p userPlan
	rng := rand.New(rand.NewPCG(Seed, 11))
	syms := rng.Perm(len(d.Symbols))
	if len(syms) < userScans+2 {
		return p, fmt.Errorf("user protocol: %d symbols, want at least %d", len(syms), userScans+2)
	}
	scan := syms[:userScans+1]
	rest := syms[userScans+1:]
	whole := func(sym int) Query {
		return Query{Sym: sym, From: math.MinInt64, To: math.MaxInt64, Want: d.Expect(sym, math.MinInt64, math.MaxInt64)}
	}
	first, last := d.First(), d.Last()
	width := max((last-first)/100, 1)
	var all []Query // every window drawn so far
	window := func(group []Query) (Query, error) {
		for range 1_000_000 {
			sym := rest[rng.IntN(len(rest))]
			from := first
			if span := last - first - width; span > 0 {
				from += rng.Int64N(span)
			}
			overlaps := func(q Query) bool { return from < q.To && q.From < from+width }
			if slices.ContainsFunc(group, overlaps) ||
				slices.ContainsFunc(all, func(q Query) bool { return q.Sym == sym && overlaps(q) }) {
				continue
			}
			q := Query{Sym: sym, From: from, To: from + width, Want: d.Expect(sym, from, from+width)}
			all = append(all, q)
			return q, nil
		}
		return Query{}, errors.New("user protocol: no room for another window")
	}
	for range userWindows {
		q, err := window(p.After)
		if err != nil {
			return p, err
		}
		p.After = append(p.After, q)
	}
	var err error
	if p.ColdWindow, err = window(nil); err != nil {
		return p, err
	}
	p.ColdScan = whole(scan[0])
	child := []Query{p.ColdWindow}
	for range userWindows {
		q, err := window(child)
		if err != nil {
			return p, err
		}
		child = append(child, q)
		p.Windows = append(p.Windows, q)
	}
	for _, s := range scan[1:] {
		p.Scans = append(p.Scans, whole(s))
	}
	return p, nil
}

// userJob is what the user protocol's child processes are given, as a
// JSON file.
type userJob struct {
	Phase string // "ingest" or "fresh"
	Peer  string
	Dir   string
	N     int // the ingesting process generates the data set again
	Shape Shape
	Plan  userPlan
	Close CloseMode // tickdb's
}

// userResult is what the child processes measured: ns, and bytes read
// from the disk (NoIO: /proc/self/io was not readable, the bytes are
// zero). The ingesting process fills the first line, the fresh one the
// rest.
type userResult struct {
	After, Disk []int64 // Disk: one value, allocated bytes of the closed store
	Close       int64
	Ingest      int64 // ns from the first append to the end of Seal

	NoIO                 bool
	Open, OpenBytes      int64
	ColdWindow, ColdWinB int64
	ColdScan, ColdScanB  int64
	Windows, WindowsB    []int64
	Scans, ScansB        []int64
}

// user runs the user protocol on p in a fresh directory: the ingesting
// process and the fresh one are both this binary re-executed, so that
// nothing the ingesting one holds (a store that never unmaps its files,
// as tstorage, keeps their pages in the page cache) outlives it. A peer
// without OpenExisting is skipped.
func (x *run) user(p Peer) (err error) {
	if p.OpenExisting == nil {
		x.logf("%s cannot open an existing store: no user protocol", p.Name)
		return nil
	}
	base, err := x.tempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	dir := filepath.Join(base, "store") // the job file goes beside it
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	job := userJob{Phase: "ingest", Peer: p.Name, Dir: dir, N: len(x.d.Ticks), Shape: x.d.Shape(), Plan: x.plan, Close: x.cfg.TickDBClose}
	in, err := x.runUserChild(base, job)
	if err != nil {
		return fmt.Errorf("ingesting process: %w", err)
	}
	if len(in.Disk) != 1 {
		return fmt.Errorf("ingesting process: %d disk sizes, want 1", len(in.Disk))
	}
	if in.Ingest > 0 {
		n := float64(len(x.d.Ticks))
		x.add(MUserIngest, p.Name, "rows/s", false, n/time.Duration(in.Ingest).Seconds())
		x.add(MUserIngestCl, p.Name, "rows/s", false, n/time.Duration(in.Ingest+in.Close).Seconds())
	}
	x.sample(MAfterIngest, p.Name, "ns", in.After)
	x.note(MAfterIngest, p.Name, 0, fmt.Sprintf("%d windows, random symbols and places; figure: p50", len(in.After)))
	x.sample(MClose, p.Name, "ns", []int64{in.Close})
	if p.Name == TickDB {
		x.note(MClose, p.Name, 0, "close mode "+string(orPlain(x.cfg.TickDBClose)))
	}
	x.add(MDiskBytes, p.Name, "B/tick", true, float64(in.Disk[0])/float64(len(x.d.Ticks)))
	if err := Evict(dir); err != nil {
		return err
	}

	job.Phase = "fresh"
	res, err := x.runUserChild(base, job)
	if err != nil {
		return fmt.Errorf("fresh process: %w", err)
	}
	x.sample(MOpenFresh, p.Name, "ns", []int64{res.Open})
	x.sample(MWindowFirst, p.Name, "ns", []int64{res.ColdWindow})
	x.note(MWindowFirst, p.Name, x.plan.ColdWindow.Want.Rows, "")
	x.sample(MScanFirst, p.Name, "ns", []int64{res.ColdScan})
	x.note(MScanFirst, p.Name, x.plan.ColdScan.Want.Rows, "")
	x.sample(MWindowRandom, p.Name, "ns", res.Windows)
	x.note(MWindowRandom, p.Name, 0, fmt.Sprintf("%d windows; figure: p50", len(res.Windows)))
	x.sample(MScanRandom, p.Name, "ns", res.Scans)
	x.note(MScanRandom, p.Name, 0, fmt.Sprintf("%d symbol scans; figure: p50", len(res.Scans)))
	if res.NoIO {
		x.logf("%s: /proc/self/io unreadable in the fresh process: no bytes read figures", p.Name)
	} else {
		x.sample(MBytesOpen, p.Name, UnitBytes, []int64{res.OpenBytes})
		x.sample(MBytesWindow, p.Name, UnitBytes, []int64{res.ColdWinB})
		x.sample(MBytesScan, p.Name, UnitBytes, []int64{res.ColdScanB})
		x.sampleMean(MBytesWindows, p.Name, UnitBytes, res.WindowsB)
		x.sampleMean(MBytesScans, p.Name, UnitBytes, res.ScansB)
	}
	if p.Name == TickDB && orPlain(x.cfg.TickDBClose) == ClosePlain {
		return x.compactedBytes(dir)
	}
	return nil
}

// compactedBytes measures, after the fresh process, what the special
// option would have left on disk: the store reopened by a writer and
// closed with CloseCompacted(0) (every segment compressed), its bytes
// per tick (MDiskBytesCmp), beside the default Close's MDiskBytes.
func (x *run) compactedBytes(dir string) error {
	live, err := liveDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(live)
	w, err := writer.Open(dir, Table, &writer.Options{LiveDir: live})
	if err != nil {
		return fmt.Errorf("reopen for CloseCompacted: %w", err)
	}
	if _, err := w.CloseCompacted(0); err != nil {
		return fmt.Errorf("CloseCompacted: %w", err)
	}
	disk, err := diskBytes(dir)
	if err != nil {
		return err
	}
	x.add(MDiskBytesCmp, TickDB, "B/tick", true, float64(disk)/float64(len(x.d.Ticks)))
	x.note(MDiskBytesCmp, TickDB, 0, "the default Close's store reopened and closed with CloseCompacted(0)")
	return nil
}

// ingestChild is the user protocol's ingesting process: it generates the
// data set again, stores it with p (tickdb keeps its writer open at Seal
// and closes it in mode job.Close), runs the windows after ingest, closes
// the store and measures its files.
func ingestChild(p Peer, job userJob) (res userResult, err error) {
	d := Generate(job.N)
	if sh := d.Shape(); sh.First != job.Shape.First || sh.Last != job.Shape.Last || !slices.Equal(sh.Symbols, job.Shape.Symbols) {
		return res, fmt.Errorf("the data set generated again differs: first/last ts %d/%d, want %d/%d", sh.First, sh.Last, job.Shape.First, job.Shape.Last)
	}
	s, err := p.Open(job.Dir, d)
	if err != nil {
		return res, err
	}
	open := true
	defer func() {
		if open {
			s.Close()
		}
	}()
	if t, ok := s.(*tickdbSystem); ok {
		t.keepWriter = true
		if t.closeWriter, err = closeWith(job.Close); err != nil {
			return res, err
		}
	}
	const batch = 1000
	ingest := time.Now()
	for i := 0; i < len(d.Ticks); i += batch {
		if err := s.Ingest(d.Ticks[i:min(i+batch, len(d.Ticks))]); err != nil {
			return res, fmt.Errorf("ingest at tick %d: %w", i, err)
		}
	}
	if err := s.Seal(); err != nil {
		return res, fmt.Errorf("seal: %w", err)
	}
	res.Ingest = time.Since(ingest).Nanoseconds()
	for _, q := range job.Plan.After {
		el, err := timed(s, MAfterIngest, q)
		if err != nil {
			return res, err
		}
		res.After = append(res.After, el)
	}
	t0 := time.Now()
	open = false
	if err := s.Close(); err != nil {
		return res, fmt.Errorf("close: %w", err)
	}
	res.Close = time.Since(t0).Nanoseconds()
	disk, err := diskBytes(job.Dir)
	res.Disk = []int64{disk}
	return res, err
}

func orPlain(m CloseMode) CloseMode {
	if m == "" {
		return ClosePlain
	}
	return m
}

// timed runs q on s, checks its answer and returns its latency in ns.
func timed(s System, what string, q Query) (int64, error) {
	t0 := time.Now()
	got, err := s.Query(q)
	el := time.Since(t0).Nanoseconds()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return el, checkAnswer(what, q, got)
}

// checkAnswer fails unless got is q's expected answer.
func checkAnswer(what string, q Query, got Answer) error {
	if got != q.Want {
		return fmt.Errorf("%s sym %d [%d, %d): %d rows, checksum %#x; the data holds %d rows, checksum %#x",
			what, q.Sym, q.From, q.To, got.Rows, got.Sum, q.Want.Rows, q.Want.Sum)
	}
	return nil
}

// sample records one repetition's values vs of system on metric (lower
// is better): each into the metric's distribution, and as the
// repetition's figure their p50 (the value itself when there is one).
func (x *run) sample(metric, system, unit string, vs []int64) {
	h := NewHist()
	for _, v := range vs {
		record(h, unit, v)
	}
	fig := float64(h.ValueAtQuantile(50))
	if len(vs) == 1 {
		fig = float64(vs[0])
	}
	x.hist(metric, system).Merge(h)
	x.add(metric, system, unit, true, fig)
}

// sampleMean is sample with the mean as the figure: for bytes, where the
// total over the group is what counts.
func (x *run) sampleMean(metric, system, unit string, vs []int64) {
	h := NewHist()
	var sum int64
	for _, v := range vs {
		record(h, unit, v)
		sum += v
	}
	x.hist(metric, system).Merge(h)
	x.add(metric, system, unit, true, float64(sum)/float64(max(len(vs), 1)))
	x.note(metric, system, 0, fmt.Sprintf("%d queries; figure: mean per query", len(vs)))
}

// record records v into h: Record, but bytes keep a 0.
func record(h *hdrhistogram.Histogram, unit string, v int64) {
	if unit != UnitBytes {
		Record(h, v)
		return
	}
	_ = h.RecordValue(min(max(v, 0), h.HighestTrackableValue()))
}

// diskBytes is the space allocated to the regular files under dir
// (st_blocks × 512).
func diskBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	return n, err
}

// runUserChild writes job to a file under base and runs this binary as
// the user protocol's child on it (job.Phase says which).
func (x *run) runUserChild(base string, job userJob) (userResult, error) {
	var res userResult
	b, err := json.Marshal(job)
	if err != nil {
		return res, err
	}
	path := filepath.Join(base, "job.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return res, err
	}
	c, err := child.Start(roleUser, &child.Options{Args: []string{"-job", path}})
	if err != nil {
		return res, err
	}
	defer c.Kill()
	l, err := expect(c, "result", userChildTime)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal([]byte(l), &res); err != nil {
		return res, fmt.Errorf("%s: result: %w", c.Name, err)
	}
	return res, c.Wait(time.Minute)
}

// userChild is the user protocol's child process (role roleUser), on the
// job in the file its -job argument names: the ingesting process
// (ingestChild), or the fresh one, which opens the store with the named
// peer's OpenExisting, runs the plan's queries in order, checking every
// answer. It reports "result <json>".
func userChild(peers []Peer) error {
	fs := flag.NewFlagSet(roleUser, flag.ContinueOnError)
	path := fs.String("job", "", "the job file")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	b, err := os.ReadFile(*path)
	if err != nil {
		return err
	}
	var job userJob
	if err := json.Unmarshal(b, &job); err != nil {
		return fmt.Errorf("job %s: %w", *path, err)
	}
	all := append([]Peer{TickDBPeer}, peers...)
	i := slices.IndexFunc(all, func(p Peer) bool { return p.Name == job.Peer })
	if i < 0 || all[i].OpenExisting == nil {
		return fmt.Errorf("no peer %q that opens an existing store in this binary (MaybeChild's peers)", job.Peer)
	}
	var res userResult
	switch job.Phase {
	case "ingest":
		res, err = ingestChild(all[i], job)
	case "fresh":
		res, err = freshChild(all[i], job)
	default:
		err = fmt.Errorf("phase %q", job.Phase)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", job.Peer, err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	child.Report("result %s", out)
	return nil
}

// freshChild is the user protocol's fresh process: open, then the
// queries, each with the bytes read from the disk.
func freshChild(p Peer, job userJob) (userResult, error) {
	var res userResult
	io0, err := readBytes()
	if err != nil {
		res.NoIO = true
	}
	// mark returns the bytes read since the last mark.
	mark := func() int64 {
		if res.NoIO {
			return 0
		}
		n, _ := readBytes()
		d := n - io0
		io0 = n
		return d
	}
	t0 := time.Now()
	s, err := p.OpenExisting(job.Dir, job.Shape)
	res.Open = time.Since(t0).Nanoseconds()
	res.OpenBytes = mark()
	if err != nil {
		return res, fmt.Errorf("open existing: %w", err)
	}
	if err := userQueries(s, job, &res, mark); err != nil {
		s.Close()
		return res, err
	}
	if err := s.Close(); err != nil {
		return res, fmt.Errorf("close: %w", err)
	}
	return res, nil
}

// userQueries runs the fresh process's queries in order into res; mark
// is the bytes read since its last call.
func userQueries(s System, job userJob, res *userResult, mark func() int64) error {
	one := func(what string, q Query, ns, bytes *int64) error {
		el, err := timed(s, what, q)
		if err != nil {
			return err
		}
		*ns, *bytes = el, mark()
		return nil
	}
	if err := one(MWindowFirst, job.Plan.ColdWindow, &res.ColdWindow, &res.ColdWinB); err != nil {
		return err
	}
	if err := one(MScanFirst, job.Plan.ColdScan, &res.ColdScan, &res.ColdScanB); err != nil {
		return err
	}
	res.Windows, res.WindowsB = make([]int64, len(job.Plan.Windows)), make([]int64, len(job.Plan.Windows))
	for i, q := range job.Plan.Windows {
		if err := one(MWindowRandom, q, &res.Windows[i], &res.WindowsB[i]); err != nil {
			return err
		}
	}
	res.Scans, res.ScansB = make([]int64, len(job.Plan.Scans)), make([]int64, len(job.Plan.Scans))
	for i, q := range job.Plan.Scans {
		if err := one(MScanRandom, q, &res.Scans[i], &res.ScansB[i]); err != nil {
			return err
		}
	}
	return nil
}

// readBytes is this process's read_bytes from /proc/self/io: the bytes
// it caused to be read from storage (page cache misses, mmap faults and
// read-ahead included; not reads the page cache served).
func readBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, err
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "read_bytes: "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("/proc/self/io: no read_bytes")
}
