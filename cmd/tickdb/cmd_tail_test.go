package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/child"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// tailBound is how long a row may take from Publish to the tail's stdout.
// The tail idles at most 5 ms between polls; the bound is generous for
// -race and a loaded machine, and the tests log what they saw.
const tailBound = 10 * time.Second

// cliProc is a long-running CLI command in its own process (this test
// binary re-executed as tickdb, see TestMain), with its stdout and stderr
// lines delivered on channels as they arrive.
type cliProc struct {
	c      *child.Child
	stdout chan string // closed at EOF
	stderr chan string // closed at EOF
	mu     sync.Mutex
	errLog strings.Builder
	done   chan error // the exit, once both streams hit EOF
}

func startCLI(t *testing.T, args ...string) *cliProc {
	t.Helper()
	p := &cliProc{stdout: make(chan string, 1<<16), stderr: make(chan string, 64), done: make(chan error, 1)}
	outPipe, outW := pipe(t)
	errPipe, errW := pipe(t)
	p.c = startCLIChild(t, args, strings.NewReader(""), outW, errW)
	outW.Close()
	errW.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(p.stdout)
		sc := bufio.NewScanner(outPipe)
		for sc.Scan() {
			p.stdout <- sc.Text()
		}
	}()
	go func() {
		defer wg.Done()
		defer close(p.stderr)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			p.mu.Lock()
			p.errLog.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.stderr <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		wg.Wait()
		<-p.c.Done()
		p.done <- p.c.ExitErr()
	}()
	t.Cleanup(func() {
		p.c.Kill()
		for range p.stdout { // unblock the reader if the buffer filled
		}
		err := <-p.done
		p.done <- err
	})
	return p
}

func (p *cliProc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errLog.String()
}

// line returns the next stdout line, failing t after d.
func (p *cliProc) line(t *testing.T, d time.Duration, what string) string {
	t.Helper()
	select {
	case l, ok := <-p.stdout:
		if !ok {
			t.Fatalf("%s: stdout closed; stderr:\n%s", what, p.stderrText())
		}
		return l
	case <-time.After(d):
		t.Fatalf("%s: no line within %v; stderr:\n%s", what, d, p.stderrText())
	}
	return ""
}

// waitStderr waits for a stderr line containing s.
func (p *cliProc) waitStderr(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case l, ok := <-p.stderr:
			if !ok {
				t.Fatalf("stderr closed before a line with %q:\n%s", s, p.stderrText())
			}
			if strings.Contains(l, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no stderr line with %q:\n%s", s, p.stderrText())
		}
	}
}

// stop sends sig and checks that the process exits 0 without printing
// anything more on stdout.
func (p *cliProc) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.c.Signal(sig); err != nil {
		t.Fatal(err)
	}
	for l := range p.stdout {
		t.Errorf("stdout after the last expected row: %q", l)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("exit after %v: %v; stderr:\n%s", sig, err, p.stderrText())
		}
	case <-time.After(time.Minute):
		t.Fatalf("no exit after %v; stderr:\n%s", sig, p.stderrText())
	}
}

// seqWriter appends testutil.SeqRows rows to a table: row seq's every
// column is a function of seq, so each printed line can be checked alone.
type seqWriter struct {
	t    *testing.T
	db   string
	name string
	opts writer.Options
	g    *testutil.SeqRows
	w    *writer.Writer
	syms *testutil.WriterSyms
	next uint64
}

// newSeqWriter opens table name with 128-row segments, the writer's
// other options the defaults (background compaction on) unless a set
// changes them.
func newSeqWriter(t *testing.T, db, live, name string, set ...func(*writer.Options)) *seqWriter {
	g := testutil.NewSeqRows()
	// 4 KiB segments: 128 rows of 32 bytes, so a few hundred rows roll
	// segments and recycle live slots.
	sw := &seqWriter{t: t, db: db, name: name, g: g, opts: writer.Options{Schema: g.Schema, LiveDir: live, SegmentSize: 4096}}
	for _, f := range set {
		f(&sw.opts)
	}
	sw.open()
	t.Cleanup(func() {
		if sw.w != nil {
			sw.w.Close()
		}
	})
	return sw
}

func (sw *seqWriter) open() {
	sw.t.Helper()
	o := sw.opts
	w, err := writer.Open(sw.db, sw.name, &o)
	if err != nil {
		sw.t.Fatal(err)
	}
	sw.w, sw.syms = w, testutil.NewWriterSyms(sw.g, w.SymbolString)
	if n := w.Len(); n != sw.next {
		sw.t.Fatalf("reopened with %d rows, want %d", n, sw.next)
	}
}

// restart closes the writer and opens a new one on the table.
func (sw *seqWriter) restart() {
	sw.t.Helper()
	if err := sw.w.Close(); err != nil {
		sw.t.Fatal(err)
	}
	sw.w = nil
	sw.open()
}

// write appends n rows, publishing every batch rows and at the end.
func (sw *seqWriter) write(n, batch int) {
	sw.t.Helper()
	if err := sw.tryWrite(n, batch); err != nil {
		sw.t.Fatal(err)
	}
}

// tryWrite is write for a goroutine other than the test's.
func (sw *seqWriter) tryWrite(n, batch int) error {
	row := sw.w.NewRow()
	for i := range n {
		id, err := sw.syms.ID(sw.next)
		if err != nil {
			return err
		}
		sw.g.Fill(row, sw.next, id)
		if _, err := sw.w.Append(row); err != nil {
			return fmt.Errorf("append row %d: %w", sw.next, err)
		}
		sw.next++
		if (i+1)%batch == 0 {
			sw.w.Publish()
		}
	}
	sw.w.Publish()
	return nil
}

// csvLine is row seq as tail --format csv --ts ns prints it.
func (sw *seqWriter) csvLine(seq uint64) string {
	return fmt.Sprintf("%d,%s,%s,%d", sw.g.Ts(seq), sw.g.SymName(seq), strconv.FormatFloat(sw.g.Price(seq), 'f', -1, 64), sw.g.Size(seq))
}

// ilpLine is row seq as tail --format ilp prints it.
func (sw *seqWriter) ilpLine(seq uint64) string {
	return fmt.Sprintf("%s,sym=%s price=%s,size=%di %d", sw.name, sw.g.SymName(seq), strconv.FormatFloat(sw.g.Price(seq), 'f', -1, 64), sw.g.Size(seq), sw.g.Ts(seq))
}

// expectRows reads one line per seq in [from, to) and checks each.
func expectRows(t *testing.T, p *cliProc, from, to uint64, line func(uint64) string) {
	t.Helper()
	for seq := from; seq < to; seq++ {
		if got, want := p.line(t, tailBound, fmt.Sprintf("row %d", seq)), line(seq); got != want {
			t.Fatalf("row %d: got %q, want %q", seq, got, want)
		}
	}
}

// TestTailProcess follows a table from another process: none of the rows
// published before the tail started, then every later row, in order,
// across segment rolls, live-slot recycling and a writer restart.
func TestTailProcess(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	sw := newSeqWriter(t, db, live, "ticks")
	sw.write(100, 10)
	p := startCLI(t, "tail", "--db", db, "--table", "ticks", "--format", "csv", "--ts", "ns")
	if h := p.line(t, time.Minute, "header"); h != "ts,sym,price,size" {
		t.Fatalf("header %q", h)
	}
	// The header is out: the tail has its start position.
	sw.write(700, 7) // five segment rolls, slots recycled
	expectRows(t, p, 100, 800, sw.csvLine)

	sw.restart()
	start := time.Now()
	sw.write(300, 50)
	expectRows(t, p, 800, 1100, sw.csvLine)
	t.Logf("300 rows after a writer restart seen in %v", time.Since(start))

	// One row at a time: each is out before the next is written.
	for range 5 {
		start := time.Now()
		sw.write(1, 1)
		expectRows(t, p, sw.next-1, sw.next, sw.csvLine)
		t.Logf("one row: %v from publish to the tail's stdout", time.Since(start))
	}
	p.stop(t, syscall.SIGTERM)
}

// TestTailFromStartAndSym: --from-start prints the rows already there
// first; --sym keeps one symbol's rows, also one that is not in the
// dictionary yet when the tail starts.
func TestTailFromStartAndSym(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	sw := newSeqWriter(t, db, live, "ticks")
	sw.write(300, 100)
	all := startCLI(t, "tail", "--db", db, "--table", "ticks", "--from-start", "--format", "csv", "--ts", "ns")
	fresh := startCLI(t, "tail", "--db", db, "--table", "ticks", "--sym", "N0", "--format", "csv", "--ts", "ns")
	s1 := startCLI(t, "tail", "--db", db, "--table", "ticks", "--sym", "S1", "--from-start", "--format", "csv", "--ts", "ns")
	for _, p := range []*cliProc{all, fresh, s1} {
		if h := p.line(t, time.Minute, "header"); h != "ts,sym,price,size" {
			t.Fatalf("header %q", h)
		}
	}
	sw.write(1000, 64) // row 999 names N0, the first new symbol
	expectRows(t, all, 0, 1300, sw.csvLine)
	if got, want := fresh.line(t, tailBound, "N0"), sw.csvLine(999); got != want {
		t.Fatalf("--sym N0: got %q, want %q", got, want)
	}
	for seq := range uint64(1300) {
		if sw.g.SymName(seq) == "S1" {
			if got, want := s1.line(t, tailBound, "S1"), sw.csvLine(seq); got != want {
				t.Fatalf("--sym S1: got %q, want row %d %q", got, seq, want)
			}
		}
	}
	all.stop(t, syscall.SIGINT)
	fresh.stop(t, syscall.SIGTERM)
	s1.stop(t, syscall.SIGTERM)
}

// TestTailWaitsForTable starts tail --format ilp (the live-replica path)
// before its table exists: it waits, then prints every row of the table
// once it is created, since all of them are new.
func TestTailWaitsForTable(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "other")
	p := startCLI(t, "tail", "--db", db, "--table", "late", "--format", "ilp")
	p.waitStderr(t, "waiting for table late to be created in "+db+" (tables now: other)")
	sw := newSeqWriter(t, db, live+"/late", "late")
	sw.write(40, 8)
	expectRows(t, p, 0, 40, sw.ilpLine)
	sw.write(200, 30)
	expectRows(t, p, 40, 240, sw.ilpLine)
	p.stop(t, syscall.SIGTERM)
}

// TestTailInterruptWhileWaiting: SIGINT while the table is missing is a
// clean stop too.
func TestTailInterruptWhileWaiting(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db := t.TempDir()
	p := startCLI(t, "tail", "--db", db, "--table", "never", "--format", "csv")
	p.waitStderr(t, "waiting for table never")
	p.stop(t, syscall.SIGINT)
}

// TestTailErrors: errors that need no waiting come at once, one line.
func TestTailErrors(t *testing.T) {
	db, live := testutil.DB(t)
	writeKnown(t, db, live, "trades")
	w, err := writer.Open(db, "nosym", &writer.Options{Schema: mustNoSymSchema(), LiveDir: live + "/nosym", SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no table", nil, "tickdb: no table given (--table); tables in " + db + ": nosym, trades\n"},
		{"bad name", []string{"--table", "a/b"}, `table name "a/b"`},
		{"sym without sym column", []string{"--table", "nosym", "--sym", "X"}, "table nosym has no sym column"},
		{"bad format", []string{"--table", "trades", "--format", "yaml"}, `unknown format "yaml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"tail", "--db", db}, tc.args...)...)
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, one line with %q", code, out, errs, tc.want)
			}
		})
	}
}

// TestTailAcrossServeKill is the live-replica path end to end: lines sent
// to "tickdb serve" come out of "tickdb tail --format ilp" in another
// process byte for byte, across a SIGKILL of the server and its restart.
// The server compacts in the background (its default --compact).
func TestTailAcrossServeKill(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	line := func(k int) string { return fmt.Sprintf("k,sym=S%d n=%di %d", k%3, k, 1_000+k) }
	send := func(p *serveProc, from, to int) {
		t.Helper()
		c, err := net.DialTimeout("tcp", p.ilp, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(c)
		for k := from; k < to; k++ {
			fmt.Fprintln(w, line(k))
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		c.Close()
		waitCount(t, p, db, "k", uint64(to))
	}
	srv := startServe(t, "--db", db, "--live-dir", live, "--segment-size", "4K")
	send(srv, 0, 1)
	tail := startCLI(t, "tail", "--db", db, "--table", "k", "--from-start", "--format", "ilp")
	send(srv, 1, 500) // three segments of 128 rows
	for k := range 500 {
		if got := tail.line(t, tailBound, fmt.Sprintf("line %d", k)); got != line(k) {
			t.Fatalf("line %d: got %q, want %q", k, got, line(k))
		}
	}
	// Segments 0-2 are compressed in the background and their postings
	// dropped (each once the next one's first rows are durable and
	// checkpointed; segment 3 is live): the kill comes once that is done,
	// so that what stat and verify see after it is known.
	waitPostingsFloor(t, srv, db, "k", 384)
	srv.c.Kill()
	<-srv.done
	srv.done <- nil // for its cleanup
	// Meanwhile stat names the dead writer, and verify finds no damage.
	code, out, errs := runCLI("stat", "--db", db, "--table", "k", "--format", "json")
	if st := parseStat(t, out); code != 0 || st.Tables[0].Writer == nil || st.Tables[0].Writer.Pid != srv.c.Pid ||
		st.Tables[0].Writer.State != "open" || st.Tables[0].Writer.Running || st.Tables[0].Rows != 500 ||
		st.Tables[0].Lifecycle.Historical.Segments != 3 || st.Tables[0].Lifecycle.Historical.Rows != 384 ||
		st.Tables[0].Compressed == nil || st.Tables[0].Compressed.Segments != 3 || st.Tables[0].Compressed.RawBytes != 384*24 {
		t.Errorf("stat after the kill: exit %d, %s %s", code, out, errs)
	}
	// 116 postings entries: the 384 rows of the compressed segments have
	// none (verify checks them by their segments' directories).
	if code, out, errs := runCLI("verify", "--db", db); code != 0 || out != "k: OK, 500 rows verified (4 segments, 3 symbols, 8 time-index entries, 116 postings entries)\n" {
		t.Errorf("verify after the kill: exit %d, %q %q", code, out, errs)
	}
	srv = startServe(t, "--db", db, "--live-dir", live, "--segment-size", "4K")
	send(srv, 500, 1000)
	for k := 500; k < 1000; k++ {
		if got := tail.line(t, tailBound, fmt.Sprintf("line %d", k)); got != line(k) {
			t.Fatalf("line %d after the restart: got %q, want %q", k, got, line(k))
		}
	}
	tail.stop(t, syscall.SIGTERM)
}

// waitPostingsFloor waits until the first rows rows of table have no
// postings entries left (reader.Verify's Compacted: background compaction
// compressed their segments, and a later checkpointer pass dropped their
// postings) while p serves it.
func waitPostingsFloor(t *testing.T, p *serveProc, db, table string, rows uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep, err := reader.Verify(db, table, nil)
		if err != nil {
			t.Fatalf("verify while serving: %v", err)
		}
		if rep.Postings+rep.Compacted != rep.Rows || rep.Compacted > rows {
			t.Fatalf("verify while serving: %+v; want postings and compacted rows adding up to the rows, at most %d compacted", rep, rows)
		}
		if rep.Compacted == rows {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows without postings after 30 s (verify %+v), want %d:\n%s", rep.Compacted, rep, rows, p.logText())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// replicaSym is a symbol as a client writes it on the wire and the value
// it stands for.
type replicaSym struct{ wire, value string }

// TestTailILPReplica is the live replica end to end: lines sent to one
// "tickdb serve", read back by "tickdb tail --format ilp" in another
// process, and sent on as they are to a second "tickdb serve", give the
// second table the same rows, value for value, for symbols and string
// fields holding spaces, commas, equals signs, quotes, backslashes, tabs
// and line breaks (written by the clients both ways: \n, and a backslash
// before the raw break), and for missing values.
func TestTailILPReplica(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	syms := []replicaSym{
		{`plain`, "plain"},
		{`New\ York\,\ NY`, "New York, NY"},
		{`a\=b\ c`, "a=b c"},
		{`say"hi"`, `say"hi"`},
		{`back\\slash`, `back\slash`},
		{`ends\\`, `ends\`},
		{"two\\\nlines", "two\nlines"}, // a QuestDB client's escaped raw LF
		{`cr\rlf\n`, "cr\rlf\n"},
		{`C:\\new`, `C:\new`},
		{"tab\there", "tab\there"},
		{`Zürich\ €`, "Zürich €"},
		{`a\,b\=c\ d\\e"f\n`, "a,b=c d\\e\"f\n"},
	}
	notes := []replicaSym{
		{`"halted"`, "halted"},
		{`"say \"hi\", x=1 y"`, `say "hi", x=1 y`},
		{`"multi\nline\r"`, "multi\nline\r"},
		{`""`, ""},
		{"\"raw\\\nbreak\"", "raw\nbreak"},
		{`"back\\slash\\"`, `back\slash\`},
	}
	db1, live1 := testutil.DB(t)
	db2, live2 := testutil.DB(t)
	src := startServe(t, "--db", db1, "--live-dir", live1)
	dst := startServe(t, "--db", db2, "--live-dir", live2)
	tail := startCLI(t, "tail", "--db", db1, "--table", "rep", "--from-start", "--format", "ilp")

	const n = 300
	base := time.Now().Add(-24 * time.Hour).UnixNano() // a historical feed
	var in strings.Builder
	for k := range n {
		fmt.Fprintf(&in, "rep,sym=%s", syms[k%len(syms)].wire)
		if k%4 != 1 || k == 0 {
			fmt.Fprintf(&in, ",venue=%s", syms[(k*5+3)%len(syms)].wire)
		}
		sep := " "
		if k%7 != 2 || k == 0 {
			fmt.Fprintf(&in, " price=%d.%d", k, k%10)
			sep = ","
		}
		fmt.Fprintf(&in, "%ssize=%di,ok=%t", sep, k-n/2, k%3 == 0)
		if k%5 != 4 || k == 0 {
			fmt.Fprintf(&in, ",note=%s", notes[k%len(notes)].wire)
		}
		fmt.Fprintf(&in, " %d\n", base+int64(k)*1000)
	}
	c, err := net.DialTimeout("tcp", src.ilp, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, in.String()); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitCount(t, src, db1, "rep", n)

	// The tail's lines go to the second server as they are.
	fwd, err := net.DialTimeout("tcp", dst.ilp, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(fwd)
	for k := range n {
		line := tail.line(t, tailBound, fmt.Sprintf("line %d", k))
		if strings.ContainsAny(line, "\r") {
			t.Fatalf("line %d holds a raw CR: %q", k, line)
		}
		if syms[k%len(syms)].value == "two\nlines" && !strings.HasPrefix(line, `rep,sym=two\nlines`) {
			t.Errorf("line %d: %q; want the line break written as \\n", k, line)
		}
		if k < len(syms) {
			t.Logf("tail: %s", line)
		}
		fmt.Fprintln(w, line)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fwd.Close()
	waitCount(t, dst, db2, "rep", n)
	tail.stop(t, syscall.SIGTERM)

	want, got := replicaRows(t, db1, "rep"), replicaRows(t, db2, "rep")
	if len(want) != n || len(got) != n {
		t.Fatalf("%d rows in the source, %d in the replica; want %d each", len(want), len(got), n)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("row %d:\nreplica %s\n source %s", k, got[k], want[k])
		}
	}
	// The source rows are what was sent (so the check above is not of two
	// equally wrong tables).
	if s := syms[1%len(syms)].value; !strings.Contains(want[1], fmt.Sprintf("sym:sym=%q", s)) || !strings.Contains(want[2], fmt.Sprintf("note:sym=%q", notes[2].value)) ||
		!strings.Contains(want[2], "price:f64=NaN") || !strings.Contains(want[1], `venue:sym=""`) {
		t.Errorf("source rows do not hold what was sent:\n%s\n%s", want[1], want[2])
	}
	for _, p := range []*serveProc{src, dst} {
		if log := p.logText(); strings.Contains(log, "line rejected") {
			t.Errorf("a server rejected a line:\n%s", log)
		}
	}
}

// replicaRows reads a table's rows as "ts name:type=value ..." with the
// columns in name order (a replica made from line protocol puts the tags
// first, so its column order may differ from the source's) and symbols Go
// quoted.
func replicaRows(t *testing.T, db, table string) []string {
	t.Helper()
	r, err := reader.Open(db, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := r.Schema()
	order := make([]int, 0, len(s.Cols)-1)
	for i := 1; i < len(s.Cols); i++ {
		order = append(order, i)
	}
	sort.Slice(order, func(a, b int) bool { return s.Cols[order[a]].Name < s.Cols[order[b]].Name })
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for it.Next() {
		row := it.Row()
		var b strings.Builder
		fmt.Fprint(&b, row.Ts())
		for _, i := range order {
			c := s.ColAt(i)
			fmt.Fprintf(&b, " %s:%v=", s.Cols[i].Name, c.Type)
			switch c.Type {
			case store.TypeSym:
				name, err := r.SymbolName(row.Sym(c))
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "%q", name)
			case store.TypeF64:
				fmt.Fprint(&b, row.F64(c))
			case store.TypeI64:
				fmt.Fprint(&b, row.I64(c))
			case store.TypeBool:
				fmt.Fprint(&b, row.Bool(c))
			}
		}
		rows = append(rows, b.String())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestTailAddedColumn: a column added to the table while tail follows it
// (writer.AddColumn) shows from the first row that has it: csv prints the
// grown header, then the rows with the new column.
func TestTailAddedColumn(t *testing.T) {
	t.Parallel() // its time goes to starting processes
	db, live := testutil.DB(t)
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: store.TickSchema(), LiveDir: live, SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	add := func(ts int64, x float64) {
		t.Helper()
		s := w.Schema()
		row := w.NewRow()
		row.SetTs(ts)
		id, _ := w.SymbolString("A B")
		row.SetSym(s.ColAt(1), id)
		row.SetF64(s.ColAt(2), 1.25)
		row.SetI64(s.ColAt(3), 7)
		if c, ok := s.Col("x"); ok {
			row.SetF64(c, x)
		}
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		w.Publish()
	}
	add(100, 0)
	p := startCLI(t, "tail", "--db", db, "--table", "ticks", "--from-start", "--format", "csv", "--ts", "ns")
	if h := p.line(t, time.Minute, "header"); h != "ts,sym,price,size" {
		t.Fatalf("header %q", h)
	}
	if got := p.line(t, tailBound, "row 0"); got != "100,A B,1.25,7" {
		t.Fatalf("row 0: %q", got)
	}
	if err := w.AddColumn(store.Column{Name: "x", Type: store.TypeF64}); err != nil {
		t.Fatal(err)
	}
	add(200, 2.5)
	for _, want := range []string{"ts,sym,price,size,x", "200,A B,1.25,7,2.5"} {
		if got := p.line(t, tailBound, want); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	p.stop(t, syscall.SIGTERM)
}
