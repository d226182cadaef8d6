package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/lineproto"
)

// writeFile writes a file under the test's temporary directory.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// What File reports, by Options.Report and Options.Progress, and gives
// back, for a file with a bad line: all or nothing, then SkipBad.
func TestFileReportsAndProgress(t *testing.T) {
	const text = "t,sym=A v=1 10\nt,sym=B v=oops 20\nt,sym=C v=3 30\n"
	path := writeFile(t, "f.ilp", text)
	for _, skip := range []bool{false, true} {
		name := map[bool]string{false: "all or nothing", true: "skip bad"}[skip]
		t.Run(name, func(t *testing.T) {
			db, live := testutil.DB(t)
			var bad []error
			var events []Progress
			ld := New(&Options{DB: db, LiveRoot: live, SkipBad: skip,
				Report:   func(file string, err error) { bad = append(bad, err) },
				Progress: func(p Progress) { events = append(events, p) },
			})
			err := ld.File(context.Background(), path, "f.ilp", ILP)
			if cerr := ld.Close(); cerr != nil {
				t.Fatal(cerr)
			}
			var le *lineproto.LineError
			if len(bad) != 1 || !errors.As(bad[0], &le) || le.Line != 2 || le.Col == 0 {
				t.Fatalf("reported %v; want line 2 with its byte", bad)
			}
			st := ld.Stats()
			var fe *FileError
			passes := []bool{true} // Store of each pass
			if skip {
				if err != nil || st.Files != 1 || st.Rows != 2 || st.Skipped != 1 || st.Tables["t"] != 2 {
					t.Fatalf("File = %v, stats %+v; want 2 rows stored, 1 skipped", err, st)
				}
			} else {
				passes = []bool{false}
				if !errors.As(err, &fe) || !errors.Is(err, ErrBadFile) || fe.Bad != 1 || fe.File != "f.ilp" ||
					err.Error() != "f.ilp: 1 bad line; nothing stored from it" || st.Files != 0 || st.Rows != 0 {
					t.Fatalf("File = %v, stats %+v; want a *FileError of 1 bad line and nothing stored", err, st)
				}
				if _, err := os.Stat(filepath.Join(db, "t")); !os.IsNotExist(err) {
					t.Fatalf("a file that stores nothing created its table: %v", err)
				}
			}
			// Each pass: a start at 0 bytes, chunks, then Done with every byte read.
			var got []bool
			for i, p := range events {
				if p.File != "f.ilp" || p.Size != int64(len(text)) || p.Read > p.Size {
					t.Fatalf("event %d: %+v", i, p)
				}
				if i == 0 || events[i-1].Done {
					if p.Read != 0 || p.Done {
						t.Fatalf("event %d starts a pass at %+v", i, p)
					}
					got = append(got, p.Store)
				}
				if p.Done && p.Read != p.Size {
					t.Fatalf("event %d ends a pass at %+v", i, p)
				}
			}
			if len(events) == 0 || !events[len(events)-1].Done || len(got) != len(passes) || got[0] != passes[0] {
				t.Fatalf("events %+v; want one pass, Store %v", events, passes[0])
			}
		})
	}
}

// A CSV header that cannot be used stores nothing, and the error is the
// header's bad line; a CSV file needs Options.Table; a done context stops
// the load, naming the rows stored so far.
func TestFileErrors(t *testing.T) {
	db, live := testutil.DB(t)
	ld := New(&Options{DB: db, LiveRoot: live, Table: "c"})
	defer ld.Close()
	err := ld.File(context.Background(), writeFile(t, "h.csv", "sym,price\nA,1\n"), "h.csv", CSV)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Header == nil || !errors.Is(err, lineproto.ErrBadLine) || !errors.Is(err, ErrBadFile) ||
		!strings.HasPrefix(err.Error(), `h.csv: line 1: header "sym,price" has no ts column`) {
		t.Fatalf("bad header: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = ld.File(ctx, writeFile(t, "g.ilp", "t v=1 1\n"), "g.ilp", ILP)
	if !errors.Is(err, context.Canceled) || err.Error() != "g.ilp: interrupted, with 0 rows stored: context canceled" {
		t.Fatalf("done context: %v", err)
	}
	noTable := New(&Options{DB: db, LiveRoot: live})
	defer noTable.Close()
	if err := noTable.File(context.Background(), writeFile(t, "x.csv", "ts,v\n1,2\n"), "x.csv", CSV); err == nil || !strings.Contains(err.Error(), "Options.Table") {
		t.Fatalf("CSV without a table: %v", err)
	}
}

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]Format{"a.csv": CSV, "B.CSV": CSV, "a.ilp": ILP, "a.lp": ILP, "dir/a.txt": ILP, "a.json": 0, "csv": 0} {
		if got, ok := FormatOf(path); got != want || ok != (want != 0) {
			t.Errorf("FormatOf(%q) = %v, %v; want %v", path, got, ok, want)
		}
	}
	if ILP.String() != "ilp" || CSV.String() != "csv" {
		t.Errorf("format names %q, %q", ILP, CSV)
	}
}
