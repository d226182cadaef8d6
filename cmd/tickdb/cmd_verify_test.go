package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/writer"
)

// TestVerifyClean: good tables verify with one OK line each, nothing on
// stderr (no progress bar off a terminal), in process and as a process.
func TestVerifyClean(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	// No background compaction (CompactAge -1): how many segments it
	// compresses before Close, and so how many postings entries it
	// drops, is a matter of timing, and verify prints only the postings
	// entries left (not the compacted rows), so the exact line below is
	// of raw segments. TestTailAcrossServeKill verifies a table
	// compacted in the background.
	sw := newSeqWriter(t, db, live+"/ticks", "ticks", func(o *writer.Options) { o.CompactAge = -1 })
	sw.write(1000, 100)
	if err := sw.w.Close(); err != nil {
		t.Fatal(err)
	}
	sw.w = nil
	want := "ticks: OK, 1,000 rows verified (8 segments, 8 symbols, 16 time-index entries, 1,000 postings entries)\n" +
		"trades: OK, 5 rows verified (1 segment, 3 symbols, 1 time-index entry, 5 postings entries)\n"
	code, out, errs := runCLI("verify", "--db", db)
	if code != 0 || errs != "" || out != want {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errs, out, want)
	}
	code, out, errs = execCLI(t, "verify", "--db", db, "--table", "trades")
	if code != 0 || errs != "" || out != "trades: OK, 5 rows verified (1 segment, 3 symbols, 1 time-index entry, 5 postings entries)\n" {
		t.Fatalf("process: exit %d, stderr %q, stdout %q", code, errs, out)
	}
}

// TestVerifyWhileWriting runs verify in another process while this one
// appends and publishes: it takes no lock, the writer never notices, and
// every snapshot it checks is clean.
func TestVerifyWhileWriting(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	sw := newSeqWriter(t, db, live, "ticks")
	sw.write(500, 50)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() { // the writer's only goroutine from here on
		defer wg.Done()
		for !stop.Load() && werr == nil {
			werr = sw.tryWrite(64, 16)
		}
	}()
	code, out, errs := execCLI(t, "verify", "--db", db, "--table", "ticks")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "ticks: OK, ") {
		stop.Store(true)
		wg.Wait()
		t.Fatalf("verify process while writing: exit %d, stderr %q, stdout %q", code, errs, out)
	}
	t.Logf("%s", strings.TrimSpace(out))
	code, out, errs = runCLI("verify", "--db", db)
	stop.Store(true)
	wg.Wait()
	if code != 0 || errs != "" || !strings.HasPrefix(out, "ticks: OK, ") {
		t.Fatalf("in process while writing: exit %d, stderr %q, stdout %q", code, errs, out)
	}
	if werr != nil {
		t.Fatal(werr)
	}
	if sw.next <= 500 {
		t.Fatalf("the writer appended nothing while verify ran")
	}
}

// TestVerifyFlippedByte flips one byte of a row in a sealed segment file:
// verify exits 1 with one line naming that file and the row's offset, and
// still passes the other, undamaged table.
func TestVerifyFlippedByte(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	// Raw segments (no compaction, in the background or at Close): the
	// damage is in a raw file.
	sw := newSeqWriter(t, db, live+"/ticks", "ticks", func(o *writer.Options) { o.CompactAge = -1 })
	sw.write(300, 100)
	if err := sw.w.Close(); err != nil {
		t.Fatal(err)
	}
	sw.w = nil
	// Row 133 is row 5 of segment 1; flip a bit of its price (byte 9).
	seg := format.SegPath(filepath.Join(db, "ticks"), 1)
	rowOff := int64(format.BlockSize + 5*32)
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0}
	if _, err := f.ReadAt(b, rowOff+9); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, rowOff+9); err != nil {
		t.Fatal(err)
	}
	f.Close()

	wantErr := fmt.Sprintf("tickdb: verify ticks: store: corrupt %s at offset %d: row 133 fails its check\n", seg, rowOff)
	code, out, errs := runCLI("verify", "--db", db)
	if code != 1 || errs != wantErr {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errs, wantErr)
	}
	if want := "ticks: DAMAGED\ntrades: OK, "; !strings.HasPrefix(out, want) {
		t.Errorf("stdout %q, want it to start %q", out, want)
	}
	code, out, errs = execCLI(t, "verify", "--db", db, "--table", "ticks")
	if code != 1 || errs != wantErr || out != "ticks: DAMAGED\n" {
		t.Errorf("process: exit %d, stdout %q, stderr %q; want 1, %q", code, out, errs, wantErr)
	}
	if code, _, errs := runCLI("verify", "--db", db, "--table", "trades"); code != 0 {
		t.Errorf("the undamaged table: exit %d, %s", code, errs)
	}
}

func TestVerifyErrors(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing table", []string{"--db", db, "--table", "trade"}, `tickdb: no table "trade" in ` + db + "; tables: trades\n"},
		{"no database", []string{"--db", filepath.Join(db, "nope")}, "no database directory " + filepath.Join(db, "nope")},
		{"no tables", []string{"--db", t.TempDir()}, "no tables in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"verify"}, tc.args...)...)
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, one line with %q", code, out, errs, tc.want)
			}
		})
	}
}

// TestVerifySymbolsAreTheKeyColumns: with a string field beside the tag,
// verify's symbols are the tag's values (what latest lists), and the
// other sym column and the shared dictionary are named apart; latest and
// stat agree.
func TestVerifySymbolsAreTheKeyColumns(t *testing.T) {
	db, live := testutil.DB(t)
	in := filepath.Join(t.TempDir(), "q.ilp")
	lines := "q,sym=AAPL px=1.5 1700000000000000000\n" +
		"q,sym=MSFT px=2.5,status=\"halted\" 1700000000000000001\n" +
		"q,sym=AAPL px=1.6 1700000000000000002\n"
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI("ingest", "--db", db, "--live-dir", live, "--format", "ilp", in); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errs)
	}
	code, out, errs := runCLI("verify", "--db", db)
	// status holds "halted" and, for the rows without it, "": the
	// dictionary has AAPL, MSFT, halted and "".
	want := "q: OK, 3 rows verified (1 segment, 2 symbols, 1 time-index entry, 3 postings entries); symbols are column sym's values; sym columns sym 2 values, status 2 values, sharing a dictionary of 4\n"
	if code != 0 || errs != "" || out != want {
		t.Fatalf("verify: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errs, out, want)
	}
	code, out, errs = runCLI("latest", "--db", db, "--table", "q", "--format", "csv")
	if code != 0 || strings.Count(out, "\n") != 1+2 {
		t.Fatalf("latest: exit %d, stderr %q, want 2 rows:\n%s", code, errs, out)
	}
	code, out, _ = runCLI("stat", "--db", db)
	if code != 0 || !regexp.MustCompile(`(?m)^  symbols +2  column sym's values\n  dictionary +4  values of the sym columns sym, status together`).MatchString(out) {
		t.Fatalf("stat: exit %d: want 2 symbols and the dictionary's 4 apart:\n%s", code, out)
	}
	code, out, _ = runCLI("stat", "--db", db, "--format", "json")
	if st := parseStat(t, out).Tables[0]; code != 0 || st.Symbols != 2 || st.Dictionary != 4 {
		t.Fatalf("stat --format json: exit %d: symbols %d, dictionary %d; want 2 and 4", code, st.Symbols, st.Dictionary)
	}
}
