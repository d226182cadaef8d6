package examples_test

// Tests of the Python reader's columnar reads (examples/python): read(from_ts,
// to_ts, syms, columns), to_numpy and to_pandas against the Go reader on raw,
// compressed, late-row and grown-column tables; its check-word verification
// default and the on-request path; the command line's RFC 3339 timestamps.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/csegtest"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// pandasPython returns an interpreter with numpy, pandas and zstandard
// (Debian's python3-pandas installs for /usr/bin/python3).
func pandasPython(t *testing.T) string {
	t.Helper()
	py := python(t)
	if py != "" && exec.Command(py, "-c", "import pandas").Run() != nil {
		testutil.Need(t, py+" has no pandas; install python3-pandas")
		return ""
	}
	return py
}

// pyQuery is one read the differential test asks of both readers.
type pyQuery struct {
	From    *int64   `json:"from,omitempty"`
	To      *int64   `json:"to,omitempty"`
	Syms    []string `json:"syms,omitempty"`
	Columns []string `json:"columns,omitempty"`
}

// pyDigestProg reads each query (a JSON line on stdin) with Table.read,
// checks to_numpy against to_pandas (dtypes: ts datetime64[ns, UTC], sym
// Categorical whose codes are the ids) and prints the row count and a
// SHA-256 of the seqs and the DataFrame's columns: ts int64 ns, f64 bits,
// i64, bool bytes, and each sym value's name then a zero byte (a missing
// value, NaN in pandas, as 0xff).
const pyDigestProg = `
import json, hashlib
import numpy as np, pandas as pd
t = tr.open_table(sys.argv[2], sys.argv[3])
types = {c.name: c.type for c in t.columns}
for line in sys.stdin:
    q = json.loads(line)
    s = t.read(q.get("from"), q.get("to"), syms=q.get("syms"), columns=q.get("columns"))
    df, arrs = s.to_pandas(), s.to_numpy()
    assert list(df.columns) == s.columns == list(arrs), (list(df.columns), s.columns, list(arrs))
    assert len(df) == len(s), (len(df), len(s))
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(s.seqs(), "<u8").tobytes())
    for name in s.columns:
        col, arr, typ = df[name], arrs[name], types[name]
        if typ == tr.TYPE_TS:
            assert str(col.dtype) == "datetime64[ns, UTC]", col.dtype
            v = np.asarray(col.array.asi8, "<i8")
            assert arr.dtype == np.dtype("datetime64[ns]") and np.array_equal(arr.view("<i8"), v)
            h.update(v.tobytes())
        elif typ == tr.TYPE_SYM:
            assert isinstance(col.dtype, pd.CategoricalDtype), col.dtype
            codes = col.cat.codes.to_numpy().astype(np.int64)
            assert np.array_equal(arr.view(np.int32).astype(np.int64), codes)
            names = [c.encode("utf-8") for c in col.cat.categories] + [b"\xff"]
            h.update(b"".join(names[c] + b"\0" for c in codes.tolist()))
        elif typ == tr.TYPE_F64:
            v = col.to_numpy()
            assert v.dtype == np.float64 and np.array_equal(v.view("<u8"), arr.view("<u8"))
            h.update(v.view("<u8").tobytes())
        elif typ == tr.TYPE_I64:
            v = col.to_numpy()
            assert v.dtype == np.int64 and np.array_equal(v, arr)
            h.update(v.astype("<i8").tobytes())
        else:
            v = col.to_numpy()
            assert v.dtype == np.bool_ and np.array_equal(v, arr)
            h.update(v.astype(np.uint8).tobytes())
    print(len(s), h.hexdigest(), flush=True)
`

// goDigest is pyDigestProg's digest of q computed from the Go reader's rows:
// every published row with From <= ts < To whose postings (first sym)
// column is one of Syms, in seq order.
func goDigest(t *testing.T, r *reader.Reader, q pyQuery) string {
	t.Helper()
	s := r.Schema()
	names := q.Columns
	if names == nil {
		for _, c := range s.Cols {
			names = append(names, c.Name)
		}
	}
	var symSet map[uint32]bool
	if q.Syms != nil {
		symSet = map[uint32]bool{}
		for id := uint32(0); ; id++ {
			name, err := r.SymbolName(id)
			if err != nil {
				break
			}
			if slices.Contains(q.Syms, name) {
				symSet[id] = true
			}
		}
	}
	symCol, _ := s.Col("sym")
	var seqs []uint64
	buf := make([]byte, s.RowSize)
	rows := map[uint64][]byte{}
	for seq := r.FirstSeq(); seq < r.Len(); seq++ {
		if err := r.ReadRow(seq, buf); err != nil {
			t.Fatalf("Go reader ReadRow(%d): %v", seq, err)
		}
		row := store.Row(buf)
		ts := row.Ts()
		if q.From != nil && ts < *q.From || q.To != nil && ts >= *q.To || symSet != nil && !symSet[row.Sym(symCol)] {
			continue
		}
		seqs = append(seqs, seq)
		rows[seq] = slices.Clone(buf)
	}
	h := sha256.New()
	for _, seq := range seqs {
		h.Write(binary.LittleEndian.AppendUint64(nil, seq))
	}
	for _, name := range names {
		c, ok := s.Col(name)
		if !ok {
			t.Fatalf("no column %q", name)
		}
		typ := s.Cols[slices.IndexFunc(s.Cols, func(x store.Column) bool { return x.Name == name })].Type
		for _, seq := range seqs {
			row := store.Row(rows[seq])
			switch typ {
			case store.TypeTs:
				h.Write(binary.LittleEndian.AppendUint64(nil, uint64(row.Ts())))
			case store.TypeI64:
				h.Write(binary.LittleEndian.AppendUint64(nil, uint64(row.I64(c))))
			case store.TypeF64:
				h.Write(binary.LittleEndian.AppendUint64(nil, math.Float64bits(row.F64(c))))
			case store.TypeBool:
				b := byte(0)
				if row.Bool(c) {
					b = 1
				}
				h.Write([]byte{b})
			case store.TypeSym:
				id := row.Sym(c)
				if id == store.NoSym {
					h.Write([]byte{0xff, 0})
					continue
				}
				name, err := r.SymbolName(id)
				if err != nil {
					t.Fatalf("symbol %d: %v", id, err)
				}
				h.Write(append([]byte(name), 0))
			}
		}
	}
	return fmt.Sprintf("%d %x", len(seqs), h.Sum(nil))
}

// pyQueries returns the full read and n random ones: windows inside (and
// around) [lo, hi], symbol sets of one to three names (an unknown one
// among them), column subsets in random order.
func pyQueries(rng *rand.Rand, n int, lo, hi int64, syms, cols []string) []pyQuery {
	qs := []pyQuery{{}}
	for i := range n {
		var q pyQuery
		a := lo - 5 + rng.Int64N(hi-lo+10)
		b := a + rng.Int64N(hi-lo+10)/4
		switch i % 4 {
		case 0:
			q.From, q.To = &a, &b
		case 1:
			q.From = &a
		case 2:
			q.To = &b
		}
		if i%3 != 2 && len(syms) > 0 {
			for range 1 + rng.IntN(3) {
				q.Syms = append(q.Syms, syms[rng.IntN(len(syms))])
			}
			if i%5 == 0 {
				q.Syms = append(q.Syms, "no such symbol")
			}
		}
		if i%2 == 1 {
			p := rng.Perm(len(cols))
			for _, j := range p[:1+rng.IntN(len(cols))] {
				q.Columns = append(q.Columns, cols[j])
			}
		}
		qs = append(qs, q)
	}
	return qs
}

// checkPyQueries runs the queries through pyDigestProg on table and
// compares each digest with the Go reader's.
func checkPyQueries(t *testing.T, py, db, live, table string, qs []pyQuery) {
	t.Helper()
	r, err := reader.Open(db, table, &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var in bytes.Buffer
	for _, q := range qs {
		b, _ := json.Marshal(q)
		in.Write(append(b, '\n'))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	prog := "import sys; sys.path.insert(0, sys.argv[1]); import tickdb_reader as tr\n" + pyDigestProg
	cmd := exec.CommandContext(ctx, py, "-c", prog, dir, db, table)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(qs) {
		t.Fatalf("python answered %d queries of %d:\n%s", len(lines), len(qs), out)
	}
	nonEmpty := 0
	for i, q := range qs {
		want := goDigest(t, r, q)
		if lines[i] != want {
			t.Errorf("query %d %s: python rows, sha256 %s; the Go reader's %s", i, mustJSON(q), lines[i], want)
		}
		if !strings.HasPrefix(want, "0 ") {
			nonEmpty++
		}
	}
	if nonEmpty < len(qs)/2 {
		t.Errorf("only %d of %d queries select rows: the test checks too little", nonEmpty, len(qs))
	}
}

// TestPythonPandasAgainstGo: Table.read with time windows, symbol sets and
// column subsets, and to_numpy/to_pandas, give the Go reader's rows on a
// raw table (its writer open: live rows too), a compacted one (clustered
// version 2 segments and a version 1 one), one with late rows, and one
// whose columns grew (missing values, NaN and the empty symbol).
func TestPythonPandasAgainstGo(t *testing.T) {
	py := pandasPython(t)
	const n, rps = 120_000, 16384
	cols := []string{"ts", "sym", "price", "size", "venue", "flag", "qty"}
	for _, tc := range []struct {
		name    string
		late    bool
		compact bool
		open    bool
		nosym   bool // noSymSchema: compressed segments of version 1 unkeyed
	}{
		{"raw-open", false, false, true, false},
		{"raw-closed", false, false, false, false},
		{"compacted", false, true, false, false},
		{"compacted-late", true, true, false, false},
		{"compacted-nosym", false, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, live := testutil.DB(t)
			const table = "ticks"
			schema, cols := pySchema, cols
			if tc.nosym {
				schema, cols = noSymSchema, []string{"ts", "price", "size", "flag", "qty"}
			}
			opts := &writer.Options{Schema: schema, SegmentSize: rps * int64(schema.RowSize), LiveDir: live, CompactAge: -1}
			if tc.late {
				opts.LateWindow = 1000
			}
			var w *writer.Writer
			ids := map[string]uint32{}
			var err error
			if tc.nosym {
				if w, err = writer.Open(db, table, opts); err != nil {
					t.Fatal(err)
				}
			} else {
				w, ids = pyWriter(t, db, table, opts)
			}
			defer func() { _ = w.Close() }()
			ticks := zTicks(n, ids, tc.late)
			if !tc.nosym {
				empty, err := w.SymbolString("")
				if err != nil {
					t.Fatal(err)
				}
				for i := 5; i < n; i += 97 { // the empty symbol, a name like any other
					ticks[i].sym, ticks[i].symID = "", empty
				}
			}
			appendAny(t, w, ticks, 0, n)
			switch {
			case tc.compact:
				if _, err := w.CloseCompacted(0); err != nil {
					t.Fatal(err)
				}
				want := []int{1, 1, 1}
				if !tc.nosym {
					csegtest.RewriteV1(t, filepath.Join(db, table), pySchema, 1, rps)
					want = []int{2, 1, 2}
				}
				got, _ := zVersions(t, filepath.Join(db, table), 3)
				if !slices.Equal(got, want) {
					t.Fatalf("compressed segment versions %v, want %v", got, want)
				}
			case tc.open:
				w.Publish()
				if err := w.Sync(); err != nil {
					t.Fatal(err)
				}
			default:
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(25, 17))
			syms := append(append([]string{""}, symNames...), venueNames[0])
			if tc.nosym {
				syms = nil
			}
			qs := pyQueries(rng, 14, ticks[0].ts, ticks[n-1].ts, syms, cols)
			checkPyQueries(t, py, db, live, table, qs)
		})
	}
	t.Run("grown", func(t *testing.T) {
		db, live := testutil.DB(t)
		const table = "grown"
		opts := &writer.Options{Schema: pySchema, SegmentSize: rps * int64(pySchema.RowSize), LiveDir: live, CompactAge: -1}
		w, ids := openGrown(t, db, table, opts)
		model := grownModel(n, ids)
		// Two added columns after a segment and a half, two more later;
		// the first two segments compacted at the close.
		appendGrown(t, w, model, 0, rps+rps/2)
		if err := w.AddColumns(addedCols[0], addedCols[1]); err != nil {
			t.Fatal(err)
		}
		appendGrown(t, w, model, rps+rps/2, 3*rps)
		if err := w.AddColumns(addedCols[2:]...); err != nil {
			t.Fatal(err)
		}
		appendGrown(t, w, model, 3*rps, n)
		if _, err := w.CloseCompacted(0); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(25, 18))
		all := append(slices.Clone(cols), "x", "note", "ok", "cnt")
		qs := pyQueries(rng, 10, model[0].ts, model[n-1].ts, symNames, all)
		// A raw segment of the grown table too: reopened, more rows.
		checkPyQueries(t, py, db, live, table, qs)
		reopen := *opts
		reopen.Schema = nil // the table's, grown
		if w, err := writer.Open(db, table, &reopen); err != nil {
			t.Fatal(err)
		} else {
			more := grownModel(n+3000, ids)[n:]
			for i := range more {
				more[i].ts += model[n-1].ts - more[0].ts
			}
			model = append(model, more...)
			appendGrown(t, w, model, n, n+3000)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		checkPyQueries(t, py, db, live, table, qs)
	})
}

// TestPythonVerifyOnRequest: by default Table.read does not check the
// check words of rows it maps from durable raw files (a damaged row reads
// as it is); read(verify=True), Table(verify=True) and snap.verify() find
// it, naming the file and the row's offset, and a read whose window or
// symbols leave the row out does not.
func TestPythonVerifyOnRequest(t *testing.T) {
	py := pandasPython(t)
	db, live := testutil.DB(t)
	const table, n, rps = "ticks", 50_000, 16384
	opts := &writer.Options{Schema: pySchema, SegmentSize: rps * int64(pySchema.RowSize), LiveDir: live, CompactAge: -1}
	w, ids := pyWriter(t, db, table, opts)
	ticks := genTicks(n, ids)
	appendAny(t, w, ticks, 0, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	const bad = rps + 1234 // in segment 1
	path := format.SegPath(filepath.Join(db, table), 1)
	off := int64(format.BlockSize) + int64(bad-rps)*int64(pySchema.RowSize)
	price, _ := pySchema.Col("price")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off+int64(price.Off)+3); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, off+int64(price.Off)+3); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	after := ticks[bad].ts + 1
	other := symNames[0]
	if ticks[bad].sym == other {
		other = symNames[1]
	}
	prog := `
def attempt(what, f):
    try:
        r = f()
        print(what, "ok", len(r))
    except tr.CorruptError as e:
        print(what, "corrupt", e.path, e.offset)
db, table, sym, other, after = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
attempt("default", lambda: tr.read_table(db, table))
attempt("verify", lambda: tr.read_table(db, table, verify=True))
attempt("table", lambda: tr.open_table(db, table, verify=True).read())
attempt("later", lambda: tr.read_table(db, table).verify())
attempt("sym", lambda: tr.read_table(db, table, syms=[sym], columns=["price"], verify=True))
attempt("other-sym", lambda: tr.read_table(db, table, syms=[other], verify=True))
attempt("after", lambda: tr.read_table(db, table, from_ts=after, verify=True))
`
	out := string(pyProg(t, py, prog, db, table, ticks[bad].sym, other, fmt.Sprint(after)))
	count := func(pred func(tick) bool) int {
		c := 0
		for i := range ticks {
			if pred(ticks[i]) {
				c++
			}
		}
		return c
	}
	corrupt := fmt.Sprintf("corrupt %s %d", path, off)
	want := strings.Join([]string{
		fmt.Sprintf("default ok %d", n),
		"verify " + corrupt,
		"table " + corrupt,
		"later " + corrupt,
		"sym " + corrupt,
		fmt.Sprintf("other-sym ok %d", count(func(k tick) bool { return k.sym == other })),
		fmt.Sprintf("after ok %d", count(func(k tick) bool { return k.ts >= after })),
	}, "\n")
	if got := strings.TrimSpace(out); got != want {
		t.Errorf("python:\n%s\nwant:\n%s", got, want)
	}
}

// TestPythonCLITimestamps: the command line prints ts as RFC 3339 in UTC
// with nine fractional digits by default (tickdb's --ts rfc3339), as
// integer ns with --ts ns; --from/--to select a window.
func TestPythonCLITimestamps(t *testing.T) {
	py := pandasPython(t)
	db, live := testutil.DB(t)
	const table, n = "ticks", 2000
	w, ids := pyWriter(t, db, table, &writer.Options{Schema: pySchema, LiveDir: live, CompactAge: -1})
	ticks := genTicks(n, ids)
	for i := range ticks {
		ticks[i].ts += int64(i) * 1_000_000_000 // apart enough that seconds and days show
	}
	appendAny(t, w, ticks, 0, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rfc := func(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z") }
	from, to := ticks[100].ts, ticks[110].ts
	for _, tc := range []struct {
		args []string
		want func(int64) string
	}{
		{[]string{"--format", "json"}, func(ns int64) string { return `"` + rfc(ns) + `"` }},
		{[]string{"--format", "json", "--ts", "ns"}, func(ns int64) string { return fmt.Sprint(ns) }},
		{[]string{"--format", "json", "--from", rfc(from), "--to", fmt.Sprint(to)}, func(ns int64) string { return `"` + rfc(ns) + `"` }},
		{nil, rfc},
	} {
		out, stderr, err := pythonCLI(t, py, append([]string{db, table}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, stderr)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		var got []string
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		var wantTs []int64
		for _, k := range ticks {
			if !slices.Contains(tc.args, "--from") || k.ts >= from && k.ts < to {
				wantTs = append(wantTs, k.ts)
			}
		}
		text := !slices.Contains(tc.args, "json")
		head := 1
		if text {
			head = 2 // the summary line and the column names
		}
		if len(got) != head+len(wantTs) {
			t.Fatalf("%v: %d lines, want %d + %d rows", tc.args, len(got), head, len(wantTs))
		}
		for i, ns := range wantTs {
			line := got[head+i]
			var ts string
			if text {
				ts = strings.Split(line, "\t")[1]
			} else {
				var obj map[string]json.RawMessage
				if err := json.Unmarshal([]byte(line), &obj); err != nil {
					t.Fatalf("%v: %q: %v", tc.args, line, err)
				}
				ts = string(obj["ts"])
			}
			if ts != tc.want(ns) {
				t.Fatalf("%v: row %d ts %s, want %s", tc.args, i, ts, tc.want(ns))
			}
		}
	}
}
