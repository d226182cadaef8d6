// Package examples_test builds and runs the runnable examples: the Go writer
// and the Go tail reader as two real processes on one table, and the Python
// numpy reader (examples/python) on a table written here, live and closed.
package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tickdb/tickdb/internal/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// buildExamples builds examples/writer and examples/tail into a temporary
// directory (with -race when the test runs with it).
func buildExamples(t *testing.T) (writerBin, tailBin string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if testutil.Race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./writer", "./tail")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build examples: %v\n%s", err, out)
	}
	return filepath.Join(dir, "writer"), filepath.Join(dir, "tail")
}

var summaryRE = regexp.MustCompile(`(?m)^(writer|tail): (\d+) rows seq \[(\d+), (\d+)\) checksum ([0-9a-f]{16})`)

func summary(t *testing.T, who string, out []byte) string {
	t.Helper()
	m := summaryRE.FindSubmatch(out)
	if m == nil || string(m[1]) != who {
		t.Fatalf("no %s summary line in output:\n%s", who, out)
	}
	return string(m[2]) + " rows [" + string(m[3]) + ", " + string(m[4]) + ") checksum " + string(m[5])
}

// TestTailFollowsWriter starts examples/tail first, waiting for a table that
// does not exist yet, then runs examples/writer, and checks that the tail saw
// every row in order: same count, same seq range, same checksum.
func TestTailFollowsWriter(t *testing.T) {
	writerBin, tailBin := buildExamples(t)
	db, live := testutil.DB(t)
	const rows = 20000
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	tail := exec.CommandContext(ctx, tailBin, "-db", db, "-n", strconv.Itoa(rows), "-q", "-timeout", "45s")
	var tailOut, tailErr bytes.Buffer
	tail.Stdout = &tailOut
	stderr, err := tail.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	exited := make(chan struct{})
	var tailWaitErr error
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			tailErr.WriteString(sc.Text() + "\n")
			if !seen && strings.Contains(sc.Text(), "waiting for table") {
				seen = true
				close(waiting)
			}
		}
		tailWaitErr = tail.Wait()
	}()
	// On any failure the context kills the tail; never leave it running.
	t.Cleanup(func() { cancel(); <-exited })

	select {
	case <-waiting:
	case <-exited:
		t.Fatalf("tail exited before the table existed: %v\n%s", tailWaitErr, tailErr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("tail did not report waiting for the table")
	}

	w := exec.CommandContext(ctx, writerBin, "-db", db, "-live", live, "-rows", strconv.Itoa(rows),
		"-batch", "50", "-segment-size", "65536")
	wout, err := w.CombinedOutput()
	if err != nil {
		t.Fatalf("writer: %v\n%s", err, wout)
	}
	want := summary(t, "writer", wout)

	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("tail did not finish; stdout:\n%s\nstderr:\n%s", tailOut.String(), tailErr.String())
	}
	if tailWaitErr != nil {
		t.Fatalf("tail: %v\n%s", tailWaitErr, tailErr.String())
	}
	if got := summary(t, "tail", tailOut.Bytes()); got != want {
		t.Errorf("tail saw %s, writer wrote %s", got, want)
	}
	t.Logf("writer: %s", strings.TrimSpace(string(wout)))
	t.Logf("tail:   %s", strings.TrimSpace(tailOut.String()))
	verify(t, db, "trades")
}

func verify(t *testing.T, db, table string) {
	t.Helper()
	if _, err := reader.Verify(db, table, nil); err != nil {
		t.Errorf("verify %s: %v", table, err)
	}
}

// python returns an interpreter that has numpy: /usr/bin/python3 (where
// Debian's python3-numpy installs) first, then python3 on PATH. Without one
// the test fails under CI and skips elsewhere.
func python(t *testing.T) string {
	t.Helper()
	var cands []string
	for _, c := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(c); err == nil {
			cands = append(cands, p)
			if exec.Command(p, "-c", "import numpy").Run() == nil {
				return p
			}
		}
	}
	msg := fmt.Sprintf("no python3 with numpy (tried %v); install python3-numpy", cands)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// tick is one row as the test wrote it.
type tick struct {
	ts          int64
	sym, venue  string
	price       float64
	size, qty   int64
	flag        bool
	symID, vnID uint32
}

var (
	symNames = []string{
		"AAPL", "BRK.B", "with space", "comma,sym", "key=value", "a=1,b=2 c",
		`quote"and\backslash`, "ünïcødé €", "trailing ", "12345678", "1234567",
		strings.Repeat("long", 40),
	}
	venueNames = []string{"XNAS", "venue=1", "ARCA, inc"}
	specialF64 = []float64{
		math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1),
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
		-math.SmallestNonzeroFloat64, 0.1, 1e-300, 123456789.125,
	}
	specialI64 = []int64{math.MinInt64, math.MaxInt64, 0, -1, 1, math.MinInt64 + 1}
)

var pySchema = store.MustSchema(
	store.Column{Name: "ts", Type: store.TypeTs},
	store.Column{Name: "sym", Type: store.TypeSym},
	store.Column{Name: "price", Type: store.TypeF64},
	store.Column{Name: "size", Type: store.TypeI64},
	store.Column{Name: "venue", Type: store.TypeSym},
	store.Column{Name: "flag", Type: store.TypeBool},
	store.Column{Name: "qty", Type: store.TypeI64},
)

func genTicks(n int, ids map[string]uint32) []tick {
	rng := rand.New(rand.NewPCG(7, 11))
	ts := int64(1_700_000_000_000_000_000)
	out := make([]tick, n)
	for i := range out {
		ts += rng.Int64N(3) // 0: equal timestamps are allowed
		k := tick{ts: ts, price: rng.NormFloat64() * 100, size: int64(rng.Uint64()),
			qty: int64(rng.Uint64()), flag: rng.IntN(2) == 1,
			sym: symNames[rng.IntN(len(symNames))], venue: venueNames[rng.IntN(len(venueNames))]}
		if i%3 == 0 {
			k.price = specialF64[(i/3)%len(specialF64)]
		}
		if i%4 == 0 {
			k.size = specialI64[(i/4)%len(specialI64)]
		}
		k.symID, k.vnID = ids[k.sym], ids[k.venue]
		out[i] = k
	}
	return out
}

// appendTicks appends ticks[from:to] with w.
func appendTicks(t *testing.T, w *writer.Writer, row store.Row, ticks []tick, from, to int) {
	s := w.Schema()
	sym, _ := s.Col("sym")
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	venue, _ := s.Col("venue")
	flag, _ := s.Col("flag")
	qty, _ := s.Col("qty")
	for i := from; i < to; i++ {
		k := &ticks[i]
		row.SetTs(k.ts)
		row.SetSym(sym, k.symID)
		row.SetF64(price, k.price)
		row.SetI64(size, k.size)
		row.SetSym(venue, k.vnID)
		row.SetBool(flag, k.flag)
		row.SetI64(qty, k.qty)
		if seq, err := w.Append(row); err != nil || seq != uint64(i) {
			t.Errorf("append row %d: seq %d, %v", i, seq, err)
			return
		}
	}
}

// pySummary is the first line of tickdb_reader.py --format json.
type pySummary struct {
	Count       uint64 `json:"count"`
	Matched     uint64 `json:"matched"`
	Unavailable uint64 `json:"unavailable"`
	Symbols     int    `json:"symbols"`
	FirstSeq    uint64 `json:"first_seq"`
	Visible     uint64 `json:"visible"`
	LastTs      int64  `json:"last_ts"`
	Durable     uint64 `json:"durable"`
	DurableSegs uint64 `json:"durable_segs"`
	State       uint64 `json:"state"`
	WriterPid   int    `json:"writer_pid"`
}

// runPython runs the reader's CLI with --format json and returns its summary
// and rows (one map per row, raw JSON values by column name).
func runPython(t *testing.T, py, db, table string, args ...string) (pySummary, []map[string]json.RawMessage) {
	t.Helper()
	out, stderr, err := pythonCLI(t, py, append([]string{db, table, "--format", "json"}, args...)...)
	if err != nil {
		t.Fatalf("python reader %v: %v\n%s", args, err, stderr)
	}
	lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	var sum pySummary
	if err := json.Unmarshal(lines[0], &sum); err != nil {
		t.Fatalf("python summary %q: %v", lines[0], err)
	}
	rows := make([]map[string]json.RawMessage, 0, len(lines)-1)
	for _, l := range lines[1:] {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("python row %q: %v", l, err)
		}
		rows = append(rows, m)
	}
	if uint64(len(rows)) != sum.Matched {
		t.Fatalf("python printed %d rows, its summary says %d", len(rows), sum.Matched)
	}
	return sum, rows
}

// pythonCLI runs examples/python/tickdb_reader.py with args.
func pythonCLI(t *testing.T, py string, args ...string) (stdout []byte, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("python", "tickdb_reader.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, py, append([]string{script}, args...)...)
	var eb bytes.Buffer
	cmd.Stderr = &eb
	stdout, err = cmd.Output()
	return stdout, eb.String(), err
}

// checkRow compares every value of one row the Python reader printed with
// what was written. f64 compares bit for bit (NaN as NaN), so -0.0 and the
// extremes must survive the trip.
func checkRow(t *testing.T, seq uint64, got map[string]json.RawMessage, want *tick) bool {
	t.Helper()
	var (
		gSeq                uint64
		gTs, gSize, gQty    int64
		gSym, gVenue, gPStr string
		gFlag               bool
	)
	errs := []error{
		json.Unmarshal(got["seq"], &gSeq), json.Unmarshal(got["ts"], &gTs),
		json.Unmarshal(got["size"], &gSize), json.Unmarshal(got["qty"], &gQty),
		json.Unmarshal(got["sym"], &gSym), json.Unmarshal(got["venue"], &gVenue),
		json.Unmarshal(got["flag"], &gFlag),
	}
	p := got["price"]
	gPStr = string(p)
	if len(p) > 0 && p[0] == '"' {
		errs = append(errs, json.Unmarshal(p, &gPStr)) // "NaN", "+Inf", "-Inf"
	}
	gPrice, err := strconv.ParseFloat(gPStr, 64)
	errs = append(errs, err)
	for _, err := range errs {
		if err != nil {
			t.Errorf("row %d: %v in %v", seq, err, got)
			return false
		}
	}
	priceOK := math.Float64bits(gPrice) == math.Float64bits(want.price) ||
		(math.IsNaN(gPrice) && math.IsNaN(want.price))
	if len(got) != len(pySchema.Cols)+1 || gSeq != seq || gTs != want.ts || gSym != want.sym ||
		!priceOK || gSize != want.size || gVenue != want.venue || gFlag != want.flag || gQty != want.qty {
		t.Errorf("row %d: python printed %s\nwant seq=%d ts=%d sym=%q price=%v size=%d venue=%q flag=%v qty=%d",
			seq, mustJSON(got), seq, want.ts, want.sym, want.price, want.size, want.venue, want.flag, want.qty)
		return false
	}
	return true
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func checkRows(t *testing.T, rows []map[string]json.RawMessage, ticks []tick) {
	t.Helper()
	bad := 0
	for i, r := range rows {
		if !checkRow(t, uint64(i), r, &ticks[i]) {
			if bad++; bad > 5 {
				t.Fatal("too many mismatches")
			}
		}
	}
}

// TestPythonReader writes a table in tiny segments (64 rows) with awkward
// values and symbol names, and checks that the Python reader prints every
// value as written: while the writer is open with an unsynced tail that is
// only in the live slots, while the writer is appending, and after Close.
func TestPythonReader(t *testing.T) {
	py := python(t)
	db, live := testutil.DB(t)
	const table = "ticks"
	w, err := writer.Open(db, table, &writer.Options{
		Schema: pySchema, SegmentSize: 4096, LiveDir: live, Flush: writer.FlushOnSync,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			w.Close()
		}
	}()
	ids := map[string]uint32{}
	for _, name := range append(append([]string{}, symNames...), venueNames...) {
		if ids[name], err = w.SymbolString(name); err != nil {
			t.Fatal(err)
		}
	}
	ticks := genTicks(30000, ids)
	row := w.NewRow()

	// 1. Writer open and idle: rows below the last Sync are durable, the
	// 100 after it only in live slots (FlushOnSync writes sealed segments
	// only, so durable stays below visible).
	appendTicks(t, w, row, ticks, 0, 600)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	appendTicks(t, w, row, ticks, 600, 700)
	w.Publish()
	sum, rows := runPython(t, py, db, table)
	if sum.Count != 700 || sum.Visible != 700 || sum.FirstSeq != 0 || sum.Unavailable != 0 {
		t.Fatalf("live: python summary %+v, want 700 rows", sum)
	}
	if sum.Durable < 600 || sum.Durable >= 700 || sum.State != 1 || sum.WriterPid != os.Getpid() {
		t.Errorf("live: python summary %+v, want 600 <= durable < 700, state 1, writer pid %d", sum, os.Getpid())
	}
	if sum.Symbols != len(symNames)+len(venueNames) || sum.LastTs != ticks[699].ts {
		t.Errorf("live: python summary %+v, want %d symbols, last ts %d", sum, len(symNames)+len(venueNames), ticks[699].ts)
	}
	checkRows(t, rows, ticks)

	// --sym filters on the first sym column, by a name with ',', '=' and ' '.
	name := "a=1,b=2 c"
	sum, rows = runPython(t, py, db, table, "--sym", name, "--head", "1000")
	var want []int
	for i := range 700 {
		if ticks[i].sym == name {
			want = append(want, i)
		}
	}
	if int(sum.Matched) != len(want) || len(want) == 0 {
		t.Fatalf("--sym %q: python matched %d rows, want %d", name, sum.Matched, len(want))
	}
	for j, r := range rows {
		checkRow(t, uint64(want[j]), r, &ticks[want[j]])
	}

	// 2. Writer appending while Python reads: segments roll, live slots
	// are recycled and sealed segments flushed under the reader. Whatever
	// prefix Python saw must be exact.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	n := 700
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n < len(ticks) {
			select {
			case <-stop:
				return
			default:
			}
			to := min(n+8, len(ticks))
			appendTicks(t, w, row, ticks, n, to)
			n = to
			w.Publish()
			if n%64 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	sum, rows = runPython(t, py, db, table)
	close(stop)
	wg.Wait()
	if sum.Count < 700 || sum.Count > uint64(n) || sum.Unavailable != 0 {
		t.Fatalf("appending: python summary %+v, want 700..%d rows", sum, n)
	}
	t.Logf("python read %d rows (durable %d) while the writer appended %d", sum.Count, sum.Durable, n)
	checkRows(t, rows, ticks)

	// 3. Closed: everything comes from the durable files.
	closed = true
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sum, rows = runPython(t, py, db, table)
	if sum.Count != uint64(n) || sum.Visible != uint64(n) || sum.Durable != uint64(n) || sum.State != 0 || sum.WriterPid != 0 {
		t.Fatalf("closed: python summary %+v, want %d rows, all durable, state 0", sum, n)
	}
	checkRows(t, rows, ticks)
	verify(t, db, table)

	// 4. A flipped bit in a durable row is damage: the reader fails and
	// names the file and the row's offset.
	seg := filepath.Join(db, table, store.SegName(2))
	rowOff := int64(4096 + 5*pySchema.RowSize) // row 133 = 2*64 + 5
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, rowOff+9); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	_, err = f.WriteAt(b, rowOff+9)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, err := pythonCLI(t, py, db, table)
	wantMsg := fmt.Sprintf("corrupt %s at offset %d: row seq 133", seg, rowOff)
	if err == nil || !strings.Contains(stderr, wantMsg) {
		t.Errorf("python on a damaged row: %v, stderr %q; want an error containing %q", err, stderr, wantMsg)
	}
}

// TestPythonReaderAfterReopen: a writer that reopens a closed table puts
// only the block it appends to in its new live slot (the slot header's
// liveFrom); the rows of that segment before it must come from the durable
// file. Python must read every row right while the reopened writer is open.
func TestPythonReaderAfterReopen(t *testing.T) {
	py := python(t)
	db, live := testutil.DB(t)
	const table = "ticks"
	opts := &writer.Options{Schema: pySchema, SegmentSize: 64 << 10, LiveDir: live}
	w, err := writer.Open(db, table, opts)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint32{}
	for _, name := range append(append([]string{}, symNames...), venueNames...) {
		if ids[name], err = w.SymbolString(name); err != nil {
			t.Fatal(err)
		}
	}
	ticks := genTicks(3000, ids)
	row := w.NewRow()
	appendTicks(t, w, row, ticks, 0, 1500)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w, err = writer.Open(db, table, opts); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	appendTicks(t, w, row, ticks, 1500, 1600)
	w.Publish()
	sum, rows := runPython(t, py, db, table)
	if sum.Count != 1600 || sum.Unavailable != 0 {
		t.Fatalf("python summary %+v, want 1600 rows", sum)
	}
	checkRows(t, rows, ticks)
}

// TestPythonReaderRefusesCompressed: the numpy reader reads raw segments
// only; on a compacted table it must say so (the compressed file's format
// version and what to do), never read other rows.
func TestPythonReaderRefusesCompressed(t *testing.T) {
	py := python(t)
	db, live := testutil.DB(t)
	const table = "ticks"
	opts := &writer.Options{Schema: pySchema, SegmentSize: 64 << 10, LiveDir: live}
	w, err := writer.Open(db, table, opts)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint32{}
	for _, name := range append(append([]string{}, symNames...), venueNames...) {
		if ids[name], err = w.SymbolString(name); err != nil {
			t.Fatal(err)
		}
	}
	ticks := genTicks(3000, ids)
	appendTicks(t, w, w.NewRow(), ticks, 0, 3000)
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := pythonCLI(t, py, db, table, "--format", "json")
	if err == nil || !strings.Contains(stderr, "compressed segment, format version 2") || !strings.Contains(stderr, "tickdb export") {
		t.Fatalf("python reader on a compacted table: %v\n%s", err, stderr)
	}
}

// TestPythonReaderRefusesUnknownFeature: a table whose ctl declares a
// format feature the Python reader does not know is refused, as
// tickdb's own readers refuse it, rather than read wrong.
func TestPythonReaderRefusesUnknownFeature(t *testing.T) {
	py := python(t)
	db, live := testutil.DB(t)
	const table = "ticks"
	w, err := writer.Open(db, table, &writer.Options{Schema: pySchema, LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// docs/FORMAT.md §4: the features word at 4312.
	f, err := os.OpenFile(filepath.Join(db, table, "ctl"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var word [8]byte
	binary.LittleEndian.PutUint64(word[:], 1<<40)
	if _, err := f.WriteAt(word[:], 4312); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := pythonCLI(t, py, db, table, "--format", "json")
	if err == nil || !strings.Contains(stderr, "format features 0x10000000000") || !strings.Contains(stderr, "newer tickdb") {
		t.Fatalf("python reader on an unknown feature: %v\n%s", err, stderr)
	}
	if _, err := reader.Open(db, table, nil); err == nil || !strings.Contains(err.Error(), "newer tickdb") {
		t.Fatalf("reader.Open on an unknown feature: %v", err)
	}
}
