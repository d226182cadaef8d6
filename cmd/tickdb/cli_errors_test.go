package main

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// TestFromAfterTo: a --from after --to is an error naming both times
// (exit 1, one line, no rows) in every command that takes a range, not
// an empty answer; equal bounds are an empty range.
func TestFromAfterTo(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	const from, to = "2024-01-02T14:30:02Z", "2024-01-02T14:30:01Z"
	const want = "from " + from + " is after to " + to
	for _, args := range [][]string{
		{"query", "--table", "trades", "--from", from, "--to", to},
		{"query", "--table", "trades", "--sym", "AAPL", "--from", "1704205802000000000", "--to", "1704205801000000000"},
		{"bars", "--table", "trades", "--sym", "AAPL", "--interval", "1s", "--from", from, "--to", to},
		{"asof", "--left", "trades", "--right", "trades", "--from", from, "--to", to},
		{"export", "--table", "trades", "--out", t.TempDir(), "--from", from, "--to", to},
	} {
		code, out, errs := runCLI(append(args, "--db", db, "--format", "csv")...)
		if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1, nothing and one line with %q", args, code, out, errs, want)
		}
	}
	code, out, errs := runCLI("query", "--db", db, "--table", "trades", "--from", to, "--to", to, "--format", "csv")
	if code != 0 || out != "ts,sym,price,size\n" || errs != "" {
		t.Errorf("from = to: exit %d, %q, %q; want 0 and the header alone", code, out, errs)
	}
}

// TestUnknownSymNote: an answer that is empty because the symbol is not
// in the table says so on stderr, with the nearest symbols, exit 0 and
// stdout rows only; a known symbol gets no note.
func TestUnknownSymNote(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades") // AAPL, MSFT, "BRK,B"
	for _, tc := range []struct {
		args      []string
		out, note string
	}{
		{[]string{"query", "--table", "trades", "--sym", "AAPX"}, "ts,sym,price,size\n",
			`tickdb: query: no symbol "AAPX" in table trades; nearest: AAPL` + "\n"},
		{[]string{"query", "--table", "trades", "--sym", "BRK.B"}, "ts,sym,price,size\n",
			`tickdb: query: no symbol "BRK.B" in table trades; nearest: "BRK,B"` + "\n"},
		{[]string{"query", "--table", "trades", "--sym", "QQQQQQQQQ"}, "ts,sym,price,size\n",
			`tickdb: query: no symbol "QQQQQQQQQ" in table trades; none of its 3 symbols is close` + "\n"},
		{[]string{"bars", "--table", "trades", "--sym", "msft", "--interval", "1s"}, "ts,open,high,low,close,volume,count\n",
			`tickdb: bars: no symbol "msft" in table trades; nearest: MSFT` + "\n"},
		{[]string{"latest", "--table", "trades", "--sym", "AAPL", "--sym", "MSFX"}, "ts,sym,price,size\n2024-01-02T14:30:02.000000000Z,AAPL,185.5,300\n",
			`tickdb: latest: no symbol "MSFX" in table trades; nearest: MSFT` + "\n"},
		{[]string{"query", "--table", "trades", "--sym", "MSFT", "--limit", "1"}, "ts,sym,price,size\n2024-01-02T14:30:01.000000000Z,MSFT,410.5,7\n", ""},
	} {
		code, out, errs := runCLI(append(tc.args, "--db", db, "--format", "csv")...)
		if code != 0 || out != tc.out || errs != tc.note {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0, %q, %q", tc.args, code, out, errs, tc.note, tc.out)
		}
	}
	// tail notes it and goes on following: the symbol may come.
	p := startCLI(t, "tail", "--db", db, "--table", "trades", "--sym", "AAPX", "--format", "csv")
	p.waitStderr(t, `tickdb: tail: no symbol "AAPX" in table trades; nearest: AAPL; following`)
	if h := p.line(t, time.Minute, "header"); h != "ts,sym,price,size" {
		t.Fatalf("tail header %q", h)
	}
	p.stop(t, syscall.SIGTERM)
	err := <-p.done
	p.done <- err // for startCLI's cleanup
	if err != nil {
		t.Fatalf("tail after SIGTERM: %v\n%s", err, p.stderrText())
	}
}

// TestUnknownCommandSuggestion: a mistyped command prints cobra's
// suggestion as cobra lays it out, a line each, not joined into one.
func TestUnknownCommandSuggestion(t *testing.T) {
	code, out, errs := runCLI("qurey")
	want := "tickdb: unknown command \"qurey\" for \"tickdb\"\n\nDid you mean this?\n\tquery\n"
	if code != 1 || out != "" || errs != want {
		t.Errorf("tickdb qurey: exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, out, errs, want)
	}
	// Other errors stay one line.
	code, _, errs = runCLI("query", "--table", "")
	if code != 1 || strings.Count(errs, "\n") != 1 {
		t.Errorf("query --table '': exit %d, stderr %q; want 1 and one line", code, errs)
	}
}

// TestFormatFlagHelp: the --format of the commands that print rows states
// its default once (it depends on stdout), with no "(default table)".
func TestFormatFlagHelp(t *testing.T) {
	line := regexp.MustCompile(`(?m)^\s*--format .*$`)
	for _, c := range []string{"query", "bars", "asof", "latest", "tail"} {
		code, out, _ := runCLI(c, "--help")
		f := line.FindString(out)
		if code != 0 || f == "" {
			t.Fatalf("%s --help: exit %d, no --format line:\n%s", c, code, out)
		}
		if strings.Count(f, "default") != 1 || !strings.Contains(f, "(default: table on a terminal, csv otherwise)") {
			t.Errorf("%s --help: %q, want one default: table on a terminal, csv otherwise", c, strings.TrimSpace(f))
		}
	}
}

// TestCompactSaysWhyNothing: compact --older-than that compresses nothing
// says why (the oldest raw segment's rows are too young; the last segment
// never qualifies with --older-than) and what would, and what it says
// would does.
func TestCompactSaysWhyNothing(t *testing.T) {
	const n = 3*16384 + 100 // 1 µs apart: three full segments and a last one
	db, _ := compactDB(t, n)
	code, out, errs := runCLI("compact", "--db", db, "--older-than", "24h")
	m := regexp.MustCompile(`^t: compressed 0 segments: nothing is older than 24h0m0s before the table's last ts \S+: ` +
		`its oldest raw segment \(of 4; the last is never compressed with --older-than\) holds rows up to \S+, (\S+) before it; ` +
		`--older-than under (\S+), or none, would compress it\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("compact --older-than 24h: exit %d, stdout %q, stderr %q; want why nothing was compressed", code, out, errs)
	}
	under, err := time.ParseDuration(m[2])
	if err != nil {
		t.Fatal(err)
	}
	// Just under it: the oldest segment goes, the others stay too young.
	code, out, errs = runCLI("compact", "--db", db, "--older-than", (under - 1).String())
	if code != 0 || !strings.HasPrefix(out, "t: compressed 1 segments") {
		t.Fatalf("compact --older-than %v: exit %d, %q %q; want one segment compressed", under-1, code, out, errs)
	}
	// Once every segment but the last is compressed (each run compresses
	// what its writer's checkpoints let it; bounded), the last is the
	// reason.
	for range 4 {
		if code, out, errs = runCLI("compact", "--db", db, "--older-than", "1ns"); code != 0 || strings.HasPrefix(out, "t: compressed 0 segments") {
			break
		}
	}
	if want := "t: compressed 0 segments: its one raw segment is its last"; code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "compact without --older-than compresses it") {
		t.Fatalf("compact --older-than 1ns: exit %d, %q %q; want %q and what would", code, out, errs, want)
	}
	if code, out, _ = runCLI("compact", "--db", db); code != 0 || !strings.HasPrefix(out, "t: compressed 1 segments") {
		t.Fatalf("compact: exit %d, %q; want the last segment compressed", code, out)
	}
}
