package examples_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
)

var pyBenchRows = flag.Uint64("pyrows", 200_000,
	"rows of BenchmarkPythonRead's tables (docs/BENCHMARKS.md's figures: 5000000)")

// pyBenchProg serves BenchmarkPythonRead: for each mode read on stdin it
// reads the table once that way and prints the rows it got.
const pyBenchProg = `
t = tr.open_table(sys.argv[2], sys.argv[3])
sym, lo, hi = sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
modes = {
    "read": lambda: len(t.read()),
    "read+to_numpy": lambda: len(t.read().to_numpy()["price"]),
    "read+to_pandas": lambda: len(t.read().to_pandas()),
    "price": lambda: len(t.read(columns=["price"]).column("price")),
    "sym-window": lambda: len(t.read(lo, hi, syms=[sym]).to_numpy()["price"]),
    "verify": lambda: len(t.read(verify=True)),
}
for line in sys.stdin:
    print(modes[line.strip()](), flush=True)
`

// BenchmarkPythonRead times the Python reader (examples/python) against the
// Go reader's Scan on the same rows: the demo's ticks (100 symbols), raw
// and compacted (clustered, every segment), every row and column in seq
// order; one column; and one symbol's rows in a tenth of the time range.
// Python modes: read (Table.read: views of the mapped raw segments,
// compressed columns decoded), read+to_numpy (one array per column),
// read+to_pandas, price (columns=["price"]), sym-window (from_ts, to_ts,
// syms), verify (read(verify=True): check words, block CRC32Cs, the
// reference decoder). Go: Scan with one worker (Python uses one core) and
// with the default workers. rows/s is the rows returned per second.
//
// A plain go test runs none of it; the figures in docs/BENCHMARKS.md:
//
//	go test ./examples -run '^$' -bench PythonRead -benchtime 5x -count 3 -args -pyrows 5000000
func BenchmarkPythonRead(b *testing.B) {
	py := benchPython(b)
	for _, kind := range []string{"raw", "compacted"} {
		db, _ := testutil.DB(b)
		var tab *benchutil.Table
		var err error
		if kind == "raw" {
			tab, err = benchutil.BuildTable(b, db, "trades", *pyBenchRows, false)
		} else {
			tab, err = benchutil.BuildCompacted(b, db, "trades", *pyBenchRows)
		}
		if err != nil {
			b.Fatal(err)
		}
		r, err := reader.Open(db, tab.Name, nil)
		if err != nil {
			b.Fatal(err)
		}
		first, last := firstLastTs(b, r)
		lo := first + (last-first)*45/100
		hi := lo + (last-first)/10
		sym, err := r.SymbolName(0)
		if err != nil {
			b.Fatal(err)
		}
		specs := map[string]reader.ScanSpec{
			"all":        {Cols: []int{0, 1, 2, 3}, From: math.MinInt64, To: reader.ToEnd},
			"price":      {Cols: []int{2}, From: math.MinInt64, To: reader.ToEnd},
			"sym-window": {Cols: []int{0, 1, 2, 3}, From: lo, To: hi, OneSym: true, Sym: 0},
		}
		want := map[string]int{}
		for name, spec := range specs {
			want[name] = goScan(b, r, spec)
		}
		for _, q := range []string{"all", "price", "sym-window"} {
			for _, workers := range []int{1, 0} {
				b.Run(fmt.Sprintf("table=%s/reader=go/query=%s/workers=%d", kind, q, workers), func(b *testing.B) {
					spec := specs[q]
					spec.Workers = workers
					for b.Loop() {
						if n := goScan(b, r, spec); n != want[q] {
							b.Fatalf("scan: %d rows, want %d", n, want[q])
						}
					}
					b.ReportMetric(float64(want[q])*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				})
			}
		}
		srv := startPyBench(b, py, db, tab.Name, sym, lo, hi)
		for _, mode := range []string{"read", "read+to_numpy", "read+to_pandas", "price", "sym-window", "verify"} {
			q := map[string]string{"price": "price", "sym-window": "sym-window"}[mode]
			if q == "" {
				q = "all"
			}
			b.Run(fmt.Sprintf("table=%s/reader=python/query=%s", kind, mode), func(b *testing.B) {
				srv.do(b, mode) // warm: imports (pandas), the first mapping
				for b.Loop() {
					if n := srv.do(b, mode); n != want[q] {
						b.Fatalf("python %s: %d rows, the Go reader's scan %d", mode, n, want[q])
					}
				}
				b.ReportMetric(float64(want[q])*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
		srv.close(b)
		r.Close()
	}
}

// benchPython is python's choice for a benchmark: an interpreter with
// numpy, zstandard and pandas, or a skip.
func benchPython(b *testing.B) string {
	for _, c := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(c); err == nil && exec.Command(p, "-c", "import numpy, zstandard, pandas").Run() == nil {
			return p
		}
	}
	b.Skip("no python3 with numpy, zstandard and pandas")
	return ""
}

func firstLastTs(b *testing.B, r *reader.Reader) (first, last int64) {
	var sc reader.Scan
	defer sc.Close()
	if err := r.Scan(reader.ScanSpec{Cols: []int{0}, From: math.MinInt64, To: reader.ToEnd, Workers: 1}, &sc); err != nil {
		b.Fatal(err)
	}
	first = math.MaxInt64
	for sc.Next() {
		ts := sc.Block().I64(0)
		first, last = min(first, ts[0]), max(last, ts[len(ts)-1])
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return first, last
}

// goScan runs spec and returns the rows it handed out (touching every
// value of its columns, as a program would).
func goScan(b *testing.B, r *reader.Reader, spec reader.ScanSpec) int {
	var sc reader.Scan
	defer sc.Close()
	if err := r.Scan(spec, &sc); err != nil {
		b.Fatal(err)
	}
	n := 0
	var sink float64
	for sc.Next() {
		blk := sc.Block()
		n += blk.Len()
		for i, c := range spec.Cols {
			if c == 2 {
				for _, v := range blk.F64(i) {
					sink += v
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	_ = sink
	return n
}

// pyBench is a running pyBenchProg.
type pyBench struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	cancel context.CancelFunc
}

func startPyBench(b *testing.B, py, db, table, sym string, lo, hi int64) *pyBench {
	dir, err := filepath.Abs("python")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	prog := "import sys; sys.path.insert(0, sys.argv[1]); import tickdb_reader as tr\n" + pyBenchProg
	cmd := exec.CommandContext(ctx, py, "-c", prog, dir, db, table, sym, strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10))
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		b.Fatal(err)
	}
	return &pyBench{cmd: cmd, in: in, out: bufio.NewReader(out), cancel: cancel}
}

func (p *pyBench) do(b *testing.B, mode string) int {
	if _, err := io.WriteString(p.in, mode+"\n"); err != nil {
		b.Fatalf("python %s: %v (%s)", mode, err, p.cmd.Stderr)
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		b.Fatalf("python %s: %v\n%s", mode, err, p.cmd.Stderr)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		b.Fatalf("python %s: %q", mode, line)
	}
	return n
}

func (p *pyBench) close(b *testing.B) {
	_ = p.in.Close()
	err := p.cmd.Wait()
	p.cancel()
	if err != nil {
		b.Fatalf("python: %v\n%s", err, p.cmd.Stderr)
	}
}
