package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// compactDB writes n generated ticks of 20 symbols into table "t" with
// 16,384-row segments and closes it; it returns the database and the
// symbols. The segments stay raw (CompactAge -1: no background
// compaction, which would compress some of them before Close, how many
// a matter of timing): the tests compact them with tickdb compact.
func compactDB(t *testing.T, n int) (db string, syms []string) {
	t.Helper()
	db, live := testutil.DB(t)
	s := store.TickSchema()
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, SegmentSize: 16384 * 32, LiveDir: live, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	g := gen.New(gen.Options{Symbols: 20, Seed: 5})
	for _, name := range g.Symbols() {
		if _, err := w.SymbolString(name); err != nil {
			t.Fatal(err)
		}
	}
	symc, _ := s.Col("sym")
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	row := w.NewRow()
	for i := 0; i < n; i++ {
		tk := g.Next()
		row.SetTs(tk.Ts)
		row.SetSym(symc, uint32(tk.Sym))
		row.SetF64(price, tk.Price)
		row.SetI64(size, tk.Size)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return db, g.Symbols()
}

// TestCompactQueriesUnchanged runs every query command before and after
// compaction and wants the same output, byte for byte.
func TestCompactQueriesUnchanged(t *testing.T) {
	const n = 4*16384 + 100
	db, syms := compactDB(t, n)
	first := gen.DefaultStart
	mid := strconv.FormatInt(first+int64(n/2)*1000, 10)
	end := strconv.FormatInt(first+int64(n/2)*1000+5_000_000, 10)
	queries := [][]string{
		{"query", "--db", db, "--table", "t", "--format", "csv", "--ts", "ns"},
		{"query", "--db", db, "--table", "t", "--sym", syms[3], "--from", mid, "--to", end, "--format", "json"},
		{"bars", "--db", db, "--table", "t", "--sym", syms[0], "--interval", "1ms", "--format", "csv"},
		{"asof", "--db", db, "--left", "t", "--right", "t", "--sym", syms[1], "--format", "csv"},
		{"asof", "--db", db, "--left", "t", "--right", "t", "--from", mid, "--to", end, "--format", "ilp"},
		{"latest", "--db", db, "--table", "t", "--format", "csv", "--ts", "ns"},
		{"latest", "--db", db, "--table", "t", "--at", mid, "--format", "json"},
	}
	run := func() []string {
		var outs []string
		for _, q := range queries {
			code, out, errs := runCLI(q...)
			if code != 0 || len(out) == 0 {
				t.Fatalf("%v: exit %d, %d bytes: %s", q, code, len(out), errs)
			}
			outs = append(outs, out)
		}
		return outs
	}
	export := func(dir string) string {
		if code, _, errs := runCLI("export", "--db", db, "--table", "t", "--format", "csv", "--out", dir); code != 0 {
			t.Fatalf("export: %s", errs)
		}
		var all strings.Builder
		err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				b, err := os.ReadFile(p)
				all.WriteString(strings.TrimPrefix(p, dir) + "\n")
				all.Write(b)
				return err
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return all.String()
	}
	before := run()
	exportBefore := export(filepath.Join(t.TempDir(), "a"))

	// The writer is closed, so every segment is sealed: all five go,
	// the last one (100 rows) included.
	code, out, errs := runCLI("compact", "--db", db)
	if code != 0 || !strings.Contains(out, "t: compressed 5 segments") {
		t.Fatalf("compact: exit %d\n%s\n%s", code, out, errs)
	}
	for seg := uint64(0); seg < 5; seg++ {
		if _, err := os.Stat(format.ZSegPath(filepath.Join(db, "t"), seg)); err != nil {
			t.Fatalf("segment %d not compressed: %v", seg, err)
		}
		if _, err := os.Stat(format.SegPath(filepath.Join(db, "t"), seg)); !os.IsNotExist(err) {
			t.Fatalf("raw segment %d still there: %v", seg, err)
		}
	}
	after := run()
	for i := range queries {
		if before[i] != after[i] {
			t.Errorf("%v: output changed by compaction (%d → %d bytes)", queries[i], len(before[i]), len(after[i]))
		}
	}
	if exportAfter := export(filepath.Join(t.TempDir(), "b")); exportAfter != exportBefore {
		t.Errorf("export changed by compaction (%d → %d bytes)", len(exportBefore), len(exportAfter))
	}
	if code, out, errs := runCLI("verify", "--db", db); code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, errs)
	}
	// stat reports raw and compressed bytes, per table and per column.
	code, out, errs = runCLI("stat", "--db", db, "--format", "json")
	if code != 0 {
		t.Fatalf("stat: %s", errs)
	}
	var st struct {
		Tables []struct {
			Compressed *struct {
				Segments int
				RawBytes int64   `json:"raw_bytes"`
				Bytes    int64   `json:"bytes"`
				Ratio    float64 `json:"ratio"`
				Columns  []struct {
					Name  string
					Bytes int64
					Ratio float64
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	c := st.Tables[0].Compressed
	if c == nil || c.Segments != 5 || c.RawBytes != n*32 || c.Ratio < 4 || len(c.Columns) != 4 {
		t.Fatalf("stat compressed: %+v", c)
	}
	var sum int64
	for _, col := range c.Columns {
		if col.Bytes <= 0 || col.Ratio <= 1 {
			t.Errorf("column %s: %+v", col.Name, col)
		}
		sum += col.Bytes
	}
	if sum > c.Bytes {
		t.Errorf("columns add up to %d bytes, more than the files' %d", sum, c.Bytes)
	}
	if code, out, _ := runCLI("stat", "--db", db); code != 0 || !strings.Contains(out, "compressed") || !strings.Contains(out, "column price") {
		t.Errorf("stat table:\n%s", out)
	}
	// A writer reopens the table (decompressing its last segment),
	// appends to it, and every query still sees the old rows unchanged.
	w, err := writer.Open(db, "t", &writer.Options{LiveDir: testutil.LiveDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if w.Len() != n {
		t.Fatalf("reopened with %d rows, want %d", w.Len(), n)
	}
	row := w.NewRow()
	symc, _ := w.Schema().Col("sym")
	row.SetTs(first + int64(n)*10_000)
	row.SetSym(symc, 0)
	if _, err := w.Append(row); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(queries[0]...)
	if code != 0 || !strings.HasPrefix(out, before[0]) || strings.Count(out, "\n") != strings.Count(before[0], "\n")+1 {
		t.Fatalf("query after reopening and appending: exit %d, %d bytes (was %d): %s", code, len(out), len(before[0]), errs)
	}
	if code, out, errs := runCLI("verify", "--db", db); code != 0 {
		t.Fatalf("verify after reopening: exit %d\n%s\n%s", code, out, errs)
	}
}

func TestCompactCommandHeldAndBadInput(t *testing.T) {
	db, live := testutil.DB(t)
	w, err := writer.Open(db, "t", &writer.Options{Schema: store.TickSchema(), LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	code, _, errs := execCLI(t, "compact", "--db", db)
	if code != 1 || !strings.Contains(errs, "locked by another writer") || !strings.Contains(errs, "--compact-after") {
		t.Fatalf("compact on a held table: exit %d: %s", code, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compact", "--db", db, "--older-than", "-1s"}, "negative"},
		{[]string{"compact", "--db", db, "--table", "nope"}, `no table "nope"`},
		{[]string{"compact", "--db", t.TempDir()}, "no tables"},
	} {
		code, _, errs := runCLI(c.args...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}
