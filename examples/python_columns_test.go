package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The columns TestPythonReaderAddedColumns adds, in order: one of each
// type, so every missing value (NaN, the empty symbol, false, 0) shows.
var addedCols = []store.Column{
	{Name: "x", Type: store.TypeF64},
	{Name: "note", Type: store.TypeSym},
	{Name: "ok", Type: store.TypeBool},
	{Name: "cnt", Type: store.TypeI64},
}

var noteNames = []string{"note-1", "note, 2", "ünï=3"}

// grownRow is one row as the test wrote it: a tick, and the added
// columns' values; added says how many of addedCols the table had when
// the row was appended (the others read as their missing values).
type grownRow struct {
	tick
	added  int
	x      float64
	note   string
	noteID uint32
	ok     bool
	cnt    int64
}

// grownModel returns n rows: genTicks' ticks, and values for the added
// columns (special f64 and i64 values, and every 5th note store.NoSym,
// which reads as "" in a row that has the column).
func grownModel(n int, ids map[string]uint32) []grownRow {
	ticks := genTicks(n, ids)
	out := make([]grownRow, n)
	for i := range out {
		g := grownRow{tick: ticks[i], x: float64(i)*0.5 - 7, ok: i%3 == 0, cnt: int64(i)*1_000_003 - 5}
		if i%4 == 1 {
			g.x = specialF64[(i/4)%len(specialF64)]
		}
		if i%6 == 2 {
			g.cnt = specialI64[(i/6)%len(specialI64)]
		}
		g.noteID, g.note = store.NoSym, ""
		if i%5 != 0 {
			g.note = noteNames[i%len(noteNames)]
			g.noteID = ids[g.note]
		}
		out[i] = g
	}
	return out
}

// want returns row g's value of column name as a reader must present it,
// an int64, float64, string or bool: an added column the row was written
// without is its missing value.
func (g *grownRow) want(name string) any {
	for j, c := range addedCols {
		if c.Name == name && j >= g.added {
			switch c.Type {
			case store.TypeF64:
				return math.NaN()
			case store.TypeSym:
				return ""
			case store.TypeBool:
				return false
			default:
				return int64(0)
			}
		}
	}
	switch name {
	case "ts":
		return g.ts
	case "sym":
		return g.sym
	case "venue":
		return g.venue
	case "price":
		return g.price
	case "size":
		return g.size
	case "qty":
		return g.qty
	case "flag":
		return g.flag
	case "x":
		return g.x
	case "note":
		return g.note
	case "ok":
		return g.ok
	case "cnt":
		return g.cnt
	}
	panic("no column " + name)
}

// appendGrown appends rows[from:to] with w in its current schema (a row
// buffer of the current layout), noting in each how many columns had been
// added.
func appendGrown(t *testing.T, w *writer.Writer, rows []grownRow, from, to int) {
	t.Helper()
	s, row := w.Schema(), w.NewRow()
	added := len(s.Cols) - s.Base()
	for i := from; i < to; i++ {
		g := &rows[i]
		g.added = added
		clear(row)
		row.SetTs(g.ts)
		for _, c := range s.Cols {
			col, _ := s.Col(c.Name)
			switch v := g.want(c.Name).(type) {
			case float64:
				row.SetF64(col, v)
			case bool:
				row.SetBool(col, v)
			case int64:
				if c.Type != store.TypeTs {
					row.SetI64(col, v)
				}
			case string:
				switch c.Name {
				case "sym":
					row.SetSym(col, g.symID)
				case "venue":
					row.SetSym(col, g.vnID)
				case "note":
					row.SetSym(col, g.noteID)
				}
			}
		}
		if seq, err := w.Append(row); err != nil || seq != uint64(i) {
			t.Fatalf("append row %d: seq %d, %v", i, seq, err)
		}
	}
}

// sameValue compares a value a reader gave with the model's (f64 bit for
// bit, NaN as NaN).
func sameValue(got, want any) bool {
	if w, ok := want.(float64); ok {
		g, ok := got.(float64)
		return ok && (math.Float64bits(g) == math.Float64bits(w) || math.IsNaN(g) && math.IsNaN(w))
	}
	return got == want
}

// pyValue decodes a value the Python reader printed (--format json) for a
// column of type typ.
func pyValue(typ store.ColType, raw json.RawMessage) (any, error) {
	switch typ {
	case store.TypeTs, store.TypeI64:
		var v int64
		err := json.Unmarshal(raw, &v)
		return v, err
	case store.TypeSym:
		var v string
		err := json.Unmarshal(raw, &v)
		return v, err
	case store.TypeBool:
		var v bool
		err := json.Unmarshal(raw, &v)
		return v, err
	default:
		str := string(raw)
		if len(raw) > 0 && raw[0] == '"' { // "NaN", "+Inf", "-Inf"
			if err := json.Unmarshal(raw, &str); err != nil {
				return nil, err
			}
		}
		return strconv.ParseFloat(str, 64)
	}
}

// goValue is column c's value in row (of the schema's layout) as the Go
// reader presents it.
func goValue(t *testing.T, r *reader.Reader, row store.Row, c store.Col) any {
	switch c.Type {
	case store.TypeTs, store.TypeI64:
		return row.I64(c)
	case store.TypeSym:
		name, err := r.SymbolName(row.Sym(c))
		if err != nil {
			t.Fatalf("Go reader: symbol %d: %v", row.Sym(c), err)
		}
		return name
	case store.TypeBool:
		return row.Bool(c)
	default:
		return row.F64(c)
	}
}

// checkGrown checks that the Python reader (its CLI, --format json)
// prints every row of table in the table's current schema with the
// model's values, missing values included, that the Go reader agrees with
// the model, and that the rows the Python library returns are byte for
// byte the Go reader's rows relaid into the current schema (ReadRow).
// It returns that hash line ("first-seq count sha256").
func checkGrown(t *testing.T, py, db, live, table string, model []grownRow) string {
	t.Helper()
	r, err := reader.Open(db, table, &reader.Options{LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sum, rows := runPython(t, py, db, table)
	if sum.Unavailable != 0 || sum.FirstSeq != 0 || sum.Count != uint64(len(model)) || r.Len() != sum.Count {
		t.Fatalf("python summary %+v, Go reader count %d, want %d rows", sum, r.Len(), len(model))
	}
	s := r.Schema()
	if n := len(s.Cols) - s.Base(); n != model[len(model)-1].added {
		t.Fatalf("Go reader schema %s: %d added columns, want %d", s, n, model[len(model)-1].added)
	}
	h := sha256.New()
	buf := make(store.Row, s.RowSize)
	bad := 0
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
		if bad++; bad > 5 {
			t.Fatal("too many mismatches")
		}
	}
	for seq := range sum.Count {
		if err := r.ReadRow(seq, buf); err != nil {
			t.Fatalf("Go reader ReadRow(%d): %v", seq, err)
		}
		h.Write(buf)
		got, m := rows[seq], &model[seq]
		var gSeq uint64
		if err := json.Unmarshal(got["seq"], &gSeq); err != nil || gSeq != seq || len(got) != len(s.Cols)+1 {
			t.Fatalf("python row %d: %s; want the %d columns of %s", seq, mustJSON(got), len(s.Cols), s)
		}
		for _, c := range s.Cols {
			col, _ := s.Col(c.Name)
			want := m.want(c.Name)
			if g := goValue(t, r, buf, col); !sameValue(g, want) {
				fail("row %d (%d columns added) column %s: the Go reader has %v, want %v", seq, m.added, c.Name, g, want)
			}
			v, err := pyValue(c.Type, got[c.Name])
			if err != nil || !sameValue(v, want) {
				fail("row %d (%d columns added) column %s: python printed %s (%v), want %v", seq, m.added, c.Name, got[c.Name], err, want)
			}
		}
	}
	want := fmt.Sprintf("0 %d %x", sum.Count, h.Sum(nil))
	if got := pyRowsHash(t, py, db, table); got != want {
		t.Errorf("python rows: first seq, count, sha256 %s; the Go reader's (ReadRow) %s", got, want)
	}
	return want
}

// pyTable is a Python process holding one open tickdb_reader Table: each
// read reads it again and returns "first-seq count sha256" of its rows.
type pyTable struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr bytes.Buffer
}

func openPyTable(t *testing.T, py, db, table string) *pyTable {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	prog := "import sys, hashlib; sys.path.insert(0, sys.argv[1]); import tickdb_reader as tr\n" +
		"t = tr.open_table(sys.argv[2], sys.argv[3])\n" +
		"for _ in sys.stdin:\n" +
		"    s = t.read(); print(s.first_seq, len(s.rows), hashlib.sha256(s.rows.tobytes()).hexdigest(), flush=True)\n"
	p := &pyTable{cmd: exec.CommandContext(ctx, py, "-c", prog, dir, db, table)}
	p.cmd.Stderr = &p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.lines = bufio.NewScanner(stdout)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stdin.Close()
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("python: %v\n%s", err, p.stderr.String())
		}
		cancel()
	})
	return p
}

func (p *pyTable) read(t *testing.T) string {
	t.Helper()
	if _, err := io.WriteString(p.stdin, "\n"); err != nil {
		t.Fatal(err)
	}
	if !p.lines.Scan() {
		t.Fatalf("python stopped: %v\n%s", p.lines.Err(), p.stderr.String())
	}
	return p.lines.Text()
}

// zNcols returns the ncols of each compressed segment of table dir below n
// (0: not compressed).
func zNcols(t *testing.T, dir string, n uint64) []int {
	t.Helper()
	var out []int
	for s := range n {
		b, err := os.ReadFile(format.ZSegPath(dir, s))
		switch {
		case errors.Is(err, os.ErrNotExist):
			out = append(out, 0)
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, int(binary.LittleEndian.Uint32(b[68:])))
		}
	}
	return out
}

// TestPythonReaderAddedColumns: the numpy reader reads a table whose
// columns grew (docs/FORMAT.md §15): Writer.AddColumn adds an f64, a sym,
// a bool and an i64 column, each in the middle of a segment (64 rows a
// segment), with rows appended after each. The Python reader must present
// every row in the current schema, the columns a row was written without
// as their missing values (NaN, "", false, 0), with the writer open (live
// slots, segments of several row sizes), after Close, after compaction
// (compressed segments of several layouts) and with a writer open again on
// the compacted table. One Python Table kept open throughout must follow
// the schema as it grows. Base schemas with a sym column (clustered, format
// version 2 compressed segments) and without (version 1, and the added sym
// column is not the postings key).
func TestPythonReaderAddedColumns(t *testing.T) {
	py := python(t)
	for _, tc := range []struct {
		name   string
		schema *store.Schema
	}{
		{"sym", pySchema},
		{"nosym", noSymSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, live := testutil.DB(t)
			const table, rps = "ticks", 64
			opts := &writer.Options{Schema: tc.schema, SegmentSize: rps * int64(tc.schema.RowSize), LiveDir: live, Flush: writer.FlushOnSync}
			w, ids := openGrown(t, db, table, opts)
			model := grownModel(700, ids)
			dir := filepath.Join(db, table)

			appendGrown(t, w, model, 0, 100)
			w.Publish()
			pt := openPyTable(t, py, db, table)
			if got, want := pt.read(t), checkGrown(t, py, db, live, table, model[:100]); got != want {
				t.Errorf("open Table, base schema: %s, want %s", got, want)
			}
			// Each add in the middle of a segment (100, 230, 330, 380 are
			// not multiples of 64); after the last, 70 rows stay in live
			// slots only (FlushOnSync, no Sync).
			ends := []int{230, 330, 380, 450}
			for j, c := range addedCols {
				if err := w.AddColumn(c); err != nil {
					t.Fatalf("add column %s: %v", c.Name, err)
				}
				if len(w.Schema().Cols) != len(tc.schema.Cols)+j+1 || len(w.NewRow()) != w.Schema().RowSize {
					t.Fatalf("after adding %s: schema %s, row of %d bytes", c.Name, w.Schema(), len(w.NewRow()))
				}
				from := 100
				if j > 0 {
					from = ends[j-1]
				}
				appendGrown(t, w, model, from, ends[j])
				if j == len(addedCols)-1 {
					if err := w.Sync(); err != nil {
						t.Fatal(err)
					}
					appendGrown(t, w, model, ends[j], 520)
					ends[j] = 520
				}
				w.Publish()
				want := checkGrown(t, py, db, live, table, model[:ends[j]])
				if got := pt.read(t); got != want {
					t.Errorf("open Table, %d columns added: %s, want %s", j+1, got, want)
				}
			}
			grown := w.Schema()

			// Closed: every segment durable, of four row sizes.
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			want := checkGrown(t, py, db, live, table, model[:520])
			if got := pt.read(t); got != want {
				t.Errorf("open Table, closed: %s, want %s", got, want)
			}

			// Compacted at close: segments of every layout compressed,
			// each with its own ncols.
			o2 := *opts
			o2.Schema = grown
			w, err := writer.Open(db, table, &o2)
			if err != nil {
				t.Fatal(err)
			}
			appendGrown(t, w, model, 520, 600)
			if _, err := w.CloseCompacted(0); err != nil {
				t.Fatal(err)
			}
			base := len(tc.schema.Cols)
			ncols := zNcols(t, dir, 10)
			wantNcols := []int{base, base + 1, base + 1, base + 2, base + 2, base + 4, base + 4, base + 4, base + 4, base + 4}
			if fmt.Sprint(ncols[:len(wantNcols)]) != fmt.Sprint(wantNcols) {
				t.Errorf("compressed segments' ncols %v, want %v", ncols, wantNcols)
			}
			want = checkGrown(t, py, db, live, table, model[:600])
			if got := pt.read(t); got != want {
				t.Errorf("open Table, compacted: %s, want %s", got, want)
			}

			// A writer open on the compacted table (it decompresses the
			// last segment), more rows in live slots only.
			w, err = writer.Open(db, table, &o2)
			if err != nil {
				t.Fatal(err)
			}
			appendGrown(t, w, model, 600, 700)
			w.Publish()
			want = checkGrown(t, py, db, live, table, model[:700])
			if got := pt.read(t); got != want {
				t.Errorf("open Table, reopened writer: %s, want %s", got, want)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			verify(t, db, table)
		})
	}
}

// TestPythonReaderCompressedNewerLayout: an open Python Table meets a
// compressed segment of a layout newer than the schema it loaded (a
// column added after its last read, and the segment compressed before
// its next one, as background compaction does while a table grows). It
// must read the schema again and start over, as it does for a raw
// segment of an unknown row size, not report the segment as corrupt.
func TestPythonReaderCompressedNewerLayout(t *testing.T) {
	py := python(t)
	db, live := testutil.DB(t)
	const table, rps = "ticks", 64
	// CompactAge -1: the segments are compressed at a known point, by
	// CloseCompacted after the Table's first read.
	opts := &writer.Options{Schema: pySchema, SegmentSize: rps * int64(pySchema.RowSize), LiveDir: live, CompactAge: -1}
	w, ids := openGrown(t, db, table, opts)
	model := grownModel(200, ids)
	appendGrown(t, w, model, 0, 100)
	if err := w.AddColumn(addedCols[0]); err != nil {
		t.Fatal(err)
	}
	appendGrown(t, w, model, 100, 130)
	w.Publish()
	pt := openPyTable(t, py, db, table)
	if got, want := pt.read(t), checkGrown(t, py, db, live, table, model[:130]); got != want {
		t.Fatalf("open Table, 1 column added: %s, want %s", got, want)
	}
	// The Table knows the base and x; note is added, and segments 2 and
	// 3 (rows 130 on have note) are compressed in its layout.
	if err := w.AddColumn(addedCols[1]); err != nil {
		t.Fatal(err)
	}
	appendGrown(t, w, model, 130, 200)
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	base := len(pySchema.Cols)
	if got, want := zNcols(t, filepath.Join(db, table), 4), []int{base, base + 1, base + 2, base + 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("compressed segments' ncols %v, want %v", got, want)
	}
	want := checkGrown(t, py, db, live, table, model[:200])
	if got := pt.read(t); got != want {
		t.Errorf("open Table, compressed segments of a newer layout: %s, want %s", got, want)
	}
	verify(t, db, table)
}

// openGrown opens table with opts (closed at the test's end) and adds
// the symbols the grown model names, returning their ids by name.
func openGrown(t *testing.T, db, table string, opts *writer.Options) (*writer.Writer, map[string]uint32) {
	t.Helper()
	w, err := writer.Open(db, table, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	ids := map[string]uint32{}
	for _, name := range append(append(append([]string{}, symNames...), venueNames...), noteNames...) {
		if ids[name], err = w.SymbolString(name); err != nil {
			t.Fatal(err)
		}
	}
	return w, ids
}
