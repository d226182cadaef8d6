// Package examples_test builds and runs the runnable examples: the Go writer
// and the Go tail reader as two real processes on one table, and the Python
// numpy reader (examples/python) on a table written here, live and closed.
package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/csegtest"
	"github.com/tickdb/tickdb/internal/harness/testutil"
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

// python returns an interpreter that has numpy and zstandard (for
// compressed segments): /usr/bin/python3 (where Debian's python3-numpy and
// python3-zstandard install) first, then python3 on PATH. Without one the
// test fails under CI and skips elsewhere.
func python(t *testing.T) string {
	t.Helper()
	var cands []string
	for _, c := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(c); err == nil {
			cands = append(cands, p)
			if exec.Command(p, "-c", "import numpy, zstandard").Run() == nil {
				return p
			}
		}
	}
	msg := fmt.Sprintf("no python3 with numpy and zstandard (tried %v); install python3-numpy and python3-zstandard", cands)
	testutil.Need(t, msg)
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
	out, stderr, err := pythonCLI(t, py, append([]string{db, table, "--format", "json", "--ts", "ns"}, args...)...)
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
// The writer compacts in the background (the default CompactAge), so the
// reads meet segments compressed before them and under them.
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

	// 3. Closed: everything comes from the durable files (compressed
	// below the compaction mark, raw above it).
	closed = true
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	vs, _ := zVersions(t, filepath.Join(db, table), uint64(n+63)/64)
	z := slices.Index(vs, 0) // the compressed segments are those below the compaction mark; the last is raw
	t.Logf("closed: %d rows, %d of %d segments compressed", n, z, len(vs))
	sum, rows = runPython(t, py, db, table)
	if sum.Count != uint64(n) || sum.Visible != uint64(n) || sum.Durable != uint64(n) || sum.State != 0 || sum.WriterPid != 0 {
		t.Fatalf("closed: python summary %+v, want %d rows, all durable, state 0", sum, n)
	}
	checkRows(t, rows, ticks)
	verify(t, db, table)

	// 4. A flipped bit in a durable row of a raw segment file is damage:
	// the reader fails and names the file and the row's offset. The last
	// row's segment is raw whatever background compaction did before
	// Close: it compresses neither the segment being written nor the
	// newest sealed one, and Close compresses a last segment only when
	// it holds a compressed block's rows (4,096; this one has 64 at
	// most).
	last := n - 1
	seg := filepath.Join(db, table, format.SegName(uint64(last/64)))
	rowOff := int64(4096 + last%64*pySchema.RowSize)
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
	wantMsg := fmt.Sprintf("corrupt %s at offset %d: row seq %d", seg, rowOff, last)
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
	w, ids := pyWriter(t, db, table, opts)
	var err error
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

// noSymSchema has no sym column: compaction writes it in compressed
// format version 1 (seq order, f64 and i64 deltas from the previous row).
var noSymSchema = store.MustSchema(
	store.Column{Name: "ts", Type: store.TypeTs},
	store.Column{Name: "price", Type: store.TypeF64},
	store.Column{Name: "size", Type: store.TypeI64},
	store.Column{Name: "flag", Type: store.TypeBool},
	store.Column{Name: "qty", Type: store.TypeI64},
)

// zTicks is genTicks skewed for compressed segments: a third of the rows
// are AAPL (so it fills several 4,096-row blocks of a clustered segment),
// and with late, every 50th row goes back up to 900 ns in ts (a late row,
// inside a 1,000 ns late window).
func zTicks(n int, ids map[string]uint32, late bool) []tick {
	ticks := genTicks(n, ids)
	for i := range ticks {
		k := &ticks[i]
		if i%3 == 1 {
			k.sym, k.symID = "AAPL", ids["AAPL"]
		}
		if late && i%50 == 7 {
			k.ts -= int64(100 + i%9*100)
		}
	}
	return ticks
}

// appendAny appends ticks[from:to] with w, setting the schema's columns
// that exist (appendTicks for any schema).
func appendAny(t *testing.T, w *writer.Writer, ticks []tick, from, to int) {
	t.Helper()
	s, row := w.Schema(), w.NewRow()
	for i := from; i < to; i++ {
		k := &ticks[i]
		clear(row)
		row.SetTs(k.ts)
		for _, c := range s.Cols {
			col, _ := s.Col(c.Name)
			switch c.Name {
			case "sym":
				row.SetSym(col, k.symID)
			case "venue":
				row.SetSym(col, k.vnID)
			case "price":
				row.SetF64(col, k.price)
			case "size":
				row.SetI64(col, k.size)
			case "qty":
				row.SetI64(col, k.qty)
			case "flag":
				row.SetBool(col, k.flag)
			}
		}
		if seq, err := w.Append(row); err != nil || seq != uint64(i) {
			t.Fatalf("append row %d: seq %d, %v", i, seq, err)
		}
	}
}

// zVersions returns the compressed format version of each segment of
// table dir below n (0: raw), and how many of the compressed ones have
// the header flag FlagLate (late rows, FORMAT §14).
func zVersions(t *testing.T, dir string, n uint64) (versions []int, late int) {
	t.Helper()
	for s := range n {
		b, err := os.ReadFile(format.ZSegPath(dir, s))
		switch {
		case errors.Is(err, os.ErrNotExist):
			versions = append(versions, 0)
		case err != nil:
			t.Fatal(err)
		default:
			versions = append(versions, int(binary.LittleEndian.Uint32(b[8:])))
			late += int(binary.LittleEndian.Uint32(b[12:]) & cseg.FlagLate)
		}
	}
	return versions, late
}

// pyRowsHash has the Python reader's library read the table and print
// its first seq, row count and the SHA-256 of the rows' bytes (check words
// and padding included).
func pyRowsHash(t *testing.T, py, db, table string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	prog := "import sys, hashlib; sys.path.insert(0, sys.argv[1]); import tickdb_reader as tr; " +
		"s = tr.read_table(sys.argv[2], sys.argv[3]); " +
		"print(s.first_seq, len(s.rows), hashlib.sha256(s.rows.tobytes()).hexdigest())"
	out, err := exec.CommandContext(ctx, py, "-c", prog, dir, db, table).CombinedOutput()
	if err != nil {
		t.Fatalf("python read_table: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// checkPyAgainstGo compares what the Python reader prints (--format json)
// for table with the Go reader's Get of every seq, value by value, and
// the raw rows the Python library returns with Get's bytes.
func checkPyAgainstGo(t *testing.T, py, db, live, table string) {
	t.Helper()
	r, err := reader.Open(db, table, &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sum, rows := runPython(t, py, db, table)
	if sum.Unavailable != 0 || sum.FirstSeq != 0 || sum.Count != uint64(len(rows)) || r.Len() != sum.Count {
		t.Fatalf("python summary %+v, Go reader count %d", sum, r.Len())
	}
	s := r.Schema()
	h := sha256.New()
	bad := 0
	for seq := range sum.Count {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatalf("Go reader Get(%d): %v", seq, err)
		}
		if len(row) != s.RowSize {
			// A row of an earlier layout (FORMAT §15): the Python reader
			// relays it into the current schema, as ReadRow does.
			buf := make([]byte, s.RowSize)
			if err := r.ReadRow(seq, buf); err != nil {
				t.Fatalf("Go reader ReadRow(%d): %v", seq, err)
			}
			h.Write(buf)
		} else {
			h.Write(row)
		}
		got := rows[seq]
		var gSeq uint64
		if err := json.Unmarshal(got["seq"], &gSeq); err != nil || gSeq != seq || len(got) != len(s.Cols)+1 {
			t.Fatalf("python row %d: %s", seq, mustJSON(got))
		}
		for _, c := range s.Cols {
			col, _ := s.Col(c.Name)
			raw := got[c.Name]
			ok := false
			switch c.Type {
			case store.TypeTs, store.TypeI64:
				var v int64
				want := row.I64(col)
				ok = json.Unmarshal(raw, &v) == nil && v == want
			case store.TypeSym:
				var v string
				name, err := r.SymbolName(row.Sym(col))
				ok = err == nil && json.Unmarshal(raw, &v) == nil && v == name
			case store.TypeBool:
				var v bool
				ok = json.Unmarshal(raw, &v) == nil && v == row.Bool(col)
			case store.TypeF64:
				str := string(raw)
				if len(raw) > 0 && raw[0] == '"' {
					_ = json.Unmarshal(raw, &str)
				}
				v, err := strconv.ParseFloat(str, 64)
				want := row.F64(col)
				ok = err == nil && (math.Float64bits(v) == math.Float64bits(want) || math.IsNaN(v) && math.IsNaN(want))
			}
			if !ok {
				t.Errorf("row %d column %s: python printed %s, the Go reader has %x", seq, c.Name, raw, []byte(row))
				if bad++; bad > 5 {
					t.Fatal("too many mismatches")
				}
			}
		}
	}
	want := fmt.Sprintf("0 %d %x", sum.Count, h.Sum(nil))
	if got := pyRowsHash(t, py, db, table); got != want {
		t.Errorf("python rows: first seq, count, sha256 %s; the Go reader's %s", got, want)
	}
}

// TestPythonReaderCompressed: the numpy reader reads compacted tables
// (docs/FORMAT.md §10), format version 2 (clustered by symbol, a schema
// with a sym column), version 1 (seq order: a schema without one, and a
// segment rewritten as an older tickdb wrote it), with late rows (the
// FlagLate header flag) and without, closed and with a writer open (some
// segments compressed, the next raw, the last live), and returns exactly
// the rows the Go reader returns.
func TestPythonReaderCompressed(t *testing.T) {
	py := python(t)
	const n = 40000
	for _, tc := range []struct {
		name   string
		schema *store.Schema
		late   bool
		open   bool // compact with Compact(0) and read with the writer open
	}{
		{"v2", pySchema, false, false},
		{"v2-late", pySchema, true, false},
		{"v1", noSymSchema, false, false},
		{"v1-late", noSymSchema, true, false},
		{"v2-open-late", pySchema, true, true},
		{"v1-open-late", noSymSchema, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, live := testutil.DB(t)
			const table = "ticks"
			opts := &writer.Options{Schema: tc.schema, SegmentSize: 16384 * int64(tc.schema.RowSize), LiveDir: live}
			if tc.late {
				opts.LateWindow = 1000
			}
			if tc.open {
				// No background compaction (CompactAge -1): the test
				// compresses segment 0 itself with Compact(0) and checks
				// that it did; the checkpointer's pass at the reopen (or a
				// pass the first writer's Close waits for) could compress
				// it first.
				opts.CompactAge = -1
			}
			w, err := writer.Open(db, table, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Close() }()
			ids := map[string]uint32{}
			if tc.schema.SymCol >= 0 {
				for _, name := range append(append([]string{}, symNames...), venueNames...) {
					if ids[name], err = w.SymbolString(name); err != nil {
						t.Fatal(err)
					}
				}
			}
			ticks := zTicks(n, ids, tc.late)
			dir := filepath.Join(db, table)
			const rps = 16384
			if !tc.open {
				appendAny(t, w, ticks, 0, n)
				if _, err := w.CloseCompacted(0); err != nil {
					t.Fatal(err)
				}
				want := []int{2, 2, 2}
				if tc.schema.SymCol < 0 {
					want = []int{1, 1, 1}
				} else {
					// A table compacted by an older tickdb holds version 1
					// segments next to version 2 ones.
					csegtest.RewriteV1(t, dir, tc.schema, 1, rps)
					want[1] = 1
				}
				got, late := zVersions(t, dir, 3)
				if !slices.Equal(got, want) || (late == 3) != tc.late || (late == 0) == tc.late {
					t.Fatalf("compressed segment versions %v (%d with late rows), want %v (late rows: %v)", got, late, want, tc.late)
				}
				checkPyAgainstGo(t, py, db, live, table)
				return
			}
			// Written, closed (a checkpoint), reopened and compacted:
			// segment 0, the one sealed segment, is compressed (the rows
			// after it are durable and checkpointed); then more rows:
			// sealed raw segments, and the last one live.
			appendAny(t, w, ticks, 0, rps+100)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if w, err = writer.Open(db, table, opts); err != nil {
				t.Fatal(err)
			}
			if res, err := w.Compact(0); err != nil || res.Segments != 1 {
				t.Fatalf("compact: %+v, %v", res, err)
			}
			appendAny(t, w, ticks, rps+100, n)
			w.Publish()
			v := 2
			if tc.schema.SymCol < 0 {
				v = 1
			}
			if got, late := zVersions(t, dir, 3); !slices.Equal(got, []int{v, 0, 0}) || late != 1 {
				t.Fatalf("compressed segment versions %v (%d with late rows), want [%d 0 0] (1)", got, late, v)
			}
			checkPyAgainstGo(t, py, db, live, table)
		})
	}
}

// TestPythonReaderManySymbols: a clustered segment of more than 256
// symbols lists its rank blocks' slots as u16 (FORMAT §10.2).
func TestPythonReaderManySymbols(t *testing.T) {
	py := python(t)
	db, live := testutil.DB(t)
	const table = "ticks"
	w, ids := pyWriter(t, db, table, &writer.Options{Schema: pySchema, SegmentSize: 16384 * int64(pySchema.RowSize), LiveDir: live})
	var err error
	ticks := zTicks(9000, ids, false)
	for i := range ticks {
		name := fmt.Sprintf("S%03d", i%300)
		if _, ok := ids[name]; !ok {
			if ids[name], err = w.SymbolString(name); err != nil {
				t.Fatal(err)
			}
		}
		ticks[i].sym, ticks[i].symID = name, ids[name]
	}
	appendAny(t, w, ticks, 0, len(ticks))
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(format.ZSegPath(filepath.Join(db, table), 0))
	if err != nil {
		t.Fatal(err)
	}
	if v, nsyms := binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[156:]); v != 2 || nsyms != 300 {
		t.Fatalf("compressed segment version %d with %d symbols, want 2 with 300", v, nsyms)
	}
	checkPyAgainstGo(t, py, db, live, table)
}

// TestPythonReaderCompressedDamage: a compressed segment with a header
// flag the reader does not know is refused as a newer format, and a
// damaged block is reported as corruption naming the file and the block's
// offset, never read as other rows.
func TestPythonReaderCompressedDamage(t *testing.T) {
	py := python(t)
	db, live := testutil.DB(t)
	const table = "ticks"
	w, ids := pyWriter(t, db, table, &writer.Options{Schema: pySchema, SegmentSize: 16384 * int64(pySchema.RowSize), LiveDir: live})
	var err error
	appendAny(t, w, zTicks(5000, ids, false), 0, 5000)
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	path := format.ZSegPath(filepath.Join(db, table), 0)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A flag bit besides FlagLate, with the header's CRC32C (at 200 in
	// format version 2) recomputed.
	b := slices.Clone(orig)
	binary.LittleEndian.PutUint32(b[12:], 2)
	binary.LittleEndian.PutUint32(b[200:], crc32.Checksum(b[:200], crc32.MakeTable(crc32.Castagnoli)))
	write(b)
	_, stderr, err := pythonCLI(t, py, db, table, "--format", "json")
	if err == nil || !strings.Contains(stderr, path+": compressed segment flags 0x2") || !strings.Contains(stderr, "newer tickdb") {
		t.Errorf("python reader on an unknown flag: %v\n%s", err, stderr)
	}

	// A flipped byte in the first data block.
	b = slices.Clone(orig)
	b[4096+20] ^= 0x40
	write(b)
	_, stderr, err = pythonCLI(t, py, db, table, "--format", "json")
	if want := fmt.Sprintf("corrupt %s at offset 4096: block 0 check", path); err == nil || !strings.Contains(stderr, want) {
		t.Errorf("python reader on a damaged block: %v\n%s\nwant %q", err, stderr, want)
	}
	write(orig)
	sum, rows := runPython(t, py, db, table)
	if sum.Count != 5000 || len(rows) != 5000 {
		t.Errorf("python summary %+v after the repair", sum)
	}
}

// TestPythonReaderRecompacted: one open Table reads a compacted table,
// then a writer reopens it (decompressing the last segment), appends and
// compacts it again at close; the same Table's next read must see the new
// file's rows, not the compressed segment it decoded before.
func TestPythonReaderRecompacted(t *testing.T) {
	py := python(t)
	db, live := testutil.DB(t)
	const table = "ticks"
	opts := &writer.Options{Schema: pySchema, SegmentSize: 16384 * int64(pySchema.RowSize), LiveDir: live}
	w, ids := pyWriter(t, db, table, opts)
	var err error
	ticks := zTicks(3000, ids, false)
	appendAny(t, w, ticks, 0, 2000)
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	prog := "import sys, hashlib; sys.path.insert(0, sys.argv[1]); import tickdb_reader as tr\n" +
		"t = tr.open_table(sys.argv[2], sys.argv[3])\n" +
		"for _ in range(2):\n" +
		"    s = t.read(); print(len(s.rows), hashlib.sha256(s.rows.tobytes()).hexdigest(), flush=True)\n" +
		"    sys.stdin.readline()\n"
	cmd := exec.CommandContext(ctx, py, "-c", prog, dir, db, table)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	hashRows := func(n int) string {
		t.Helper()
		r, err := reader.Open(db, table, &reader.Options{LiveDir: live})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		h := sha256.New()
		for seq := range uint64(n) {
			row, err := r.Get(seq)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(row)
		}
		return fmt.Sprintf("%d %x", n, h.Sum(nil))
	}
	for i, n := range []int{2000, 3000} {
		if i == 1 {
			if w, err = writer.Open(db, table, opts); err != nil {
				t.Fatal(err)
			}
			appendAny(t, w, ticks, 2000, 3000)
			if _, err := w.CloseCompacted(0); err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(stdin, "\n"); err != nil {
				t.Fatal(err)
			}
		}
		if !lines.Scan() {
			t.Fatalf("python stopped: %v\n%s", lines.Err(), stderr.String())
		}
		if got, want := lines.Text(), hashRows(n); got != want {
			t.Errorf("read %d: python rows, sha256 %s; the Go reader's %s", i, got, want)
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
}

// TestPythonReaderDuringCompaction: Python reads a table over and over
// while the writer compacts its old segments under it (the raw files are
// renamed away and unlinked, the mark moves): every read must return the
// same rows, byte for byte, as the Go reader.
func TestPythonReaderDuringCompaction(t *testing.T) {
	py := python(t)
	db, live := testutil.DB(t)
	const table, rps = "ticks", 16384
	// No background compaction (CompactAge -1): the test compacts the three
	// segments itself with Compact(0) between Python's first and second
	// reads, so that the reads straddle it; the checkpointer's pass at the
	// reopen would otherwise compress them before Python starts.
	opts := &writer.Options{Schema: pySchema, SegmentSize: rps * int64(pySchema.RowSize), LiveDir: live, LateWindow: 1000, CompactAge: -1}
	w, ids := pyWriter(t, db, table, opts)
	var err error
	const n = 3*rps + 100
	appendAny(t, w, zTicks(n, ids, true), 0, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w, err = writer.Open(db, table, opts); err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	r, err := reader.Open(db, table, &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for seq := range uint64(n) {
		row, err := r.Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(row)
	}
	r.Close()
	want := fmt.Sprintf("%d %x", n, h.Sum(nil))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	const reads = 12
	prog := "import sys, hashlib; sys.path.insert(0, sys.argv[1]); import tickdb_reader as tr\n" +
		"t = tr.open_table(sys.argv[2], sys.argv[3])\n" +
		"for i in range(" + strconv.Itoa(reads) + "):\n" +
		"    s = (t if i % 2 else tr.open_table(sys.argv[2], sys.argv[3])).read()\n" +
		"    print(len(s.rows), hashlib.sha256(s.rows.tobytes()).hexdigest(), flush=True)\n"
	cmd := exec.CommandContext(ctx, py, "-c", prog, dir, db, table)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for i := range reads {
		if !lines.Scan() {
			t.Fatalf("python stopped after %d reads: %v\n%s", i, lines.Err(), stderr.String())
		}
		if got := lines.Text(); got != want {
			t.Errorf("read %d: python rows, sha256 %s; the Go reader's %s", i, got, want)
		}
		if i == 0 {
			if res, err := w.Compact(0); err != nil || res.Segments != 3 {
				t.Fatalf("compact: %+v, %v", res, err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	if got, _ := zVersions(t, filepath.Join(db, table), 4); !slices.Equal(got, []int{2, 2, 2, 0}) {
		t.Errorf("compressed segment versions %v, want [2 2 2 0]", got)
	}
}

// pyProg runs a Python program with the reader's directory as sys.argv[1]
// (then args) and returns its output.
func pyProg(t *testing.T, py, prog string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	prog = "import sys; sys.path.insert(0, sys.argv[1]); import tickdb_reader as tr\n" + prog
	out, err := exec.CommandContext(ctx, py, append([]string{"-c", prog, dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return out
}

// TestPythonGolden decodes the golden compressed segments
// (cseg/testdata, format versions 1 and 2) and the golden codec blocks of
// every codec and mode (codec/golden_test.go) with the Python reader's
// decoders, and compares them with Go's decoding of the same bytes.
func TestPythonGolden(t *testing.T) {
	py := python(t)
	s := store.TickSchema()
	for _, name := range []string{"v1-tick.zdat", "v2-tick.zdat"} {
		path, err := filepath.Abs(filepath.Join("..", "internal", "cseg", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		head, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h := cseg.Header{SegNo: 9, RowSize: s.RowSize, RowsPerSeg: 1 << 13}
		copy(h.TableID[:], head[16:32])
		z, err := cseg.Open(path, s, h)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.New()
		var dst []byte
		for b := range z.Blocks() {
			if dst, err = z.Block(b, dst); err != nil {
				t.Fatal(err)
			}
			sum.Write(dst)
		}
		want := fmt.Sprintf("%d %x", z.Rows(), sum.Sum(nil))
		z.Close()
		var cols []string
		for i, c := range s.Cols {
			col := s.ColAt(i)
			cols = append(cols, fmt.Sprintf("(%q, %d, %d)", c.Name, c.Type, col.Off))
		}
		prog := "import hashlib\n" +
			"r = tr.read_compressed(sys.argv[2], [" + strings.Join(cols, ", ") + "], 32, 8192, 9)\n" +
			"print(len(r), hashlib.sha256(r.tobytes()).hexdigest())"
		if got := strings.TrimSpace(string(pyProg(t, py, prog, path))); got != want {
			t.Errorf("%s: python decodes rows, sha256 %s; Go %s", name, got, want)
		}
	}

	// CRC32C, vectorised over many buffers (compressed blocks), against
	// Go's: buffer i of length L holds bytes (7i + j) mod 251.
	lens := []int{4, 5, 7, 63, 64, 65, 100, 1000, 4099}
	var want []string
	for i, l := range lens {
		b := make([]byte, l)
		for j := range b {
			b[j] = byte((7*i + j) % 251)
		}
		want = append(want, strconv.FormatUint(uint64(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))), 10))
	}
	lensPy := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(lens)), ", "), "[]")
	crcs := pyProg(t, py, "bufs = [bytes((7 * i + j) % 251 for j in range(n)) for i, n in enumerate(["+lensPy+"])]\n"+
		"print(*tr.crc32c_many(bufs)); print(*[tr.crc32c(b) for b in bufs])")
	if got := strings.TrimSpace(string(crcs)); got != strings.Join(want, " ")+"\n"+strings.Join(want, " ") {
		t.Errorf("python CRC32C (vectorised, then plain):\n%s\nGo's: %s", got, strings.Join(want, " "))
	}

	// The codec golden blocks: Python prints each block's values (f64 as
	// their bits), Go decodes the same bytes.
	key := []uint32{0, 1, 0, 1, 2}
	blocks := []struct {
		kind, hex string
		n         int
		key       bool
	}{
		{"ts", "020400102955258ea617d00f00c413", 4, false},
		{"ts", "01060000000000000000d00f000002ecb1ffffffffffffff01", 6, false},
		{"u32", "1005078131003800", 5, false},
		{"bool", "18098d01", 9, false},
		{"i64", "200564021206020a", 5, true},
		{"i64", "2105059003a006282802", 5, true},
		{"f64", "31050201b2de05eca1020201e012", 5, true},
		{"f64", "300501010212041004", 5, false},
		{"f64", "320526f83f80010000000000f87f26f8bf70010000000000081001", 5, true},
	}
	var prog strings.Builder
	prog.WriteString("import json, numpy as np\nkey = np.array([0, 1, 0, 1, 2], np.uint32)\n")
	for _, b := range blocks {
		k := "None"
		if b.key {
			k = "key"
		}
		args := ""
		if b.kind == "i64" || b.kind == "f64" {
			args = ", " + k
		}
		fmt.Fprintf(&prog, "v, used = tr.decode_%s(np.frombuffer(bytes.fromhex(%q), np.uint8), %d%s)\n", b.kind, b.hex, b.n, args)
		prog.WriteString("v = v.view(np.uint64) if v.dtype == np.float64 else v\n")
		prog.WriteString("print(json.dumps([used] + [int(x) for x in v]))\n")
	}
	lines := strings.Split(strings.TrimSpace(string(pyProg(t, py, prog.String()))), "\n")
	if len(lines) != len(blocks) {
		t.Fatalf("python printed %d lines for %d blocks", len(lines), len(blocks))
	}
	for i, b := range blocks {
		src, _ := hex.DecodeString(b.hex)
		var k []uint32
		if b.key {
			k = key
		}
		var vals []any
		var used int
		var err error
		switch b.kind {
		case "ts":
			var v []int64
			v, used, err = codec.DecodeTs(nil, src, b.n)
			for _, x := range v {
				vals = append(vals, x)
			}
		case "u32":
			var v []uint32
			v, used, err = codec.DecodeU32(nil, src, b.n)
			for _, x := range v {
				vals = append(vals, x)
			}
		case "bool":
			var v []bool
			v, used, err = codec.DecodeBool(nil, src, b.n)
			for _, x := range v {
				vals = append(vals, map[bool]int{false: 0, true: 1}[x])
			}
		case "i64":
			var v []int64
			v, used, err = codec.DecodeI64(nil, src, b.n, k, nil)
			for _, x := range v {
				vals = append(vals, x)
			}
		case "f64":
			var v []float64
			v, used, err = codec.DecodeF64(nil, src, b.n, k, nil)
			for _, x := range v {
				vals = append(vals, math.Float64bits(x))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		want := mustJSON(append([]any{used}, vals...))
		if got := strings.ReplaceAll(lines[i], " ", ""); got != want {
			t.Errorf("%s block %s: python %s, Go %s", b.kind, b.hex, got, want)
		}
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

// pyWriter opens table in db with o and adds the symbols and venues of
// the Python reader tests (ids by name).
func pyWriter(t *testing.T, db, table string, o *writer.Options) (*writer.Writer, map[string]uint32) {
	t.Helper()
	w, err := writer.Open(db, table, o)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint32{}
	for _, name := range append(append([]string{}, symNames...), venueNames...) {
		if ids[name], err = w.SymbolString(name); err != nil {
			t.Fatal(err)
		}
	}
	return w, ids
}

// TestPythonGoldenFormats: the Python reader reads the golden table of
// every format version (reader/testdata/formats, docs/FORMAT.md §12) as
// the Go reader does, row by row.
func TestPythonGoldenFormats(t *testing.T) {
	py := python(t)
	root, err := filepath.Abs(filepath.Join("..", "reader", "testdata", "formats"))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(root, e.Name(), "trades", format.CtlName)); err != nil {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			checkPyAgainstGo(t, py, filepath.Join(root, e.Name()), "", "trades")
		})
	}
	if n < 5 {
		t.Fatalf("%d golden tables under %s", n, root)
	}
}
