//go:build linux

package main

// tickdb ingest: bulk loads of line-protocol and CSV files through
// ingest.Loader, so that a file meets exactly the table rules of serve.
//
// A file is read by a producer goroutine, which parses whole records from
// chunks of the file into batches of Lines, while the command's goroutine
// checks or stores the batches in order: parsing and storing each get a
// core. Without --skip-bad a file is read twice, a check pass that stores
// nothing and then, only if every line passed, a store pass.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

const (
	ingestChunk      = 128 << 10 // bytes of a file one batch reads
	ingestMaxRecord  = 64 << 20  // a longer record (an unclosed quote?) stops the command
	ingestBatches    = 4         // batches in flight between the producer and the store
	ingestMaxReports = 10        // bad lines printed per file
)

type ingestOpts struct {
	table   string
	format  string
	skipBad bool
	liveDir string
	late    time.Duration
}

func newIngestCmd(g *globals) *cobra.Command {
	o := &ingestOpts{}
	cmd := &cobra.Command{
		Use:   "ingest [--table T] [--format ilp|csv] [--skip-bad] FILE...|-",
		Short: "Bulk load line-protocol or CSV files (or stdin) into the database",
		Long: `ingest stores the rows of line-protocol (ILP) and CSV files, or of stdin
("-"), by the table rules of serve: a table that does not exist is created
from its first row; an ILP line naming a tag or field the table lacks adds
the column (the rows before read it as missing; a CSV header names only
existing columns); a row may omit columns (stored as NaN, 0, false or "");
a row earlier than its table's newest row
is a bad line, unless it is within --late-window of it (then it is stored
as a late row, and queries return it in ts order; default 0: none). A row without a time gets the time its file's load began (one
time for the whole file), or its table's last row's time when that is
later.

Format: --format, else the file's extension (.ilp, .lp, .txt: ilp; .csv:
csv). Stdin is ilp unless --format says csv.

ILP: each line's measurement names its table; with --table T every line
goes to T whatever its measurement. Timestamps are in ns.

CSV (needs --table): RFC 4180 (quoted fields may hold commas, quotes as ""
and line ends), with a header row naming the columns: "ts" and columns of
the table, in any order. ts is RFC 3339 (2024-01-02T15:04:05.5Z) or integer
ns since the epoch. An empty cell is an omitted value. For a table that
exists, every header column must be one of its columns, and cells are read
by the column's type. A new table gets ts and the header's other columns in
header order, each typed by its non-empty cells in the first 1,000 rows:
i64 if they are all integers, f64 if all numbers, bool if all true/false,
sym otherwise (f64 for a column with no value there).

Bad lines: each file is all or nothing. Every line is parsed and checked
against its table before any is stored; a file with a bad line (malformed,
an unknown column, a wrong type, a time before its table's last row) stores
nothing, its first 10 bad lines are printed with file, line and byte, the
other files are still loaded, and ingest exits 1. With --skip-bad a file is
read once, bad lines are skipped (the first 10 printed) and counted, and the
good ones stored.

Stdin is copied to a temporary file first ($TMPDIR), so that it can be
checked before it is stored. A summary goes to stderr (stdout stays empty);
every stored row is durable when ingest exits. A write failure or an
interrupt stops at once, keeping the rows stored so far.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runIngest(cmd, g, o, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "table to store into (required for CSV; for ILP it replaces each line's measurement)")
	f.StringVar(&o.format, "format", "", "ilp or csv (default: from the file extension; ilp for stdin)")
	f.BoolVar(&o.skipBad, "skip-bad", false, "skip and count bad lines and store the good ones, instead of storing nothing from a file with a bad line")
	f.StringVar(&o.liveDir, "live-dir", "", "directory for the live segments, one sub-directory per table (default /dev/shm/tickdb)")
	f.DurationVar(&o.late, "late-window", 0, "store a row up to this far behind its table's newest row as a late row (queries return it in ts order); 0: a bad line")
	return cmd
}

// ingestSrc is one FILE argument.
type ingestSrc struct {
	path string // the file to read (stdin's temporary copy for "-")
	name string // as printed: the argument, or "stdin"
	csv  bool
}

func runIngest(cmd *cobra.Command, g *globals, o *ingestOpts, args []string) error {
	if o.table != "" {
		if err := store.ValidTableName(o.table); err != nil {
			return fmt.Errorf("--table: %w", err)
		}
	}
	if o.format != "" && o.format != "ilp" && o.format != "csv" {
		return fmt.Errorf("--format %q: want ilp or csv", o.format)
	}
	srcs := make([]ingestSrc, len(args))
	stdin := -1
	for i, a := range args {
		s := ingestSrc{path: a, name: a}
		switch {
		case a == "-":
			if stdin >= 0 {
				return errors.New(`stdin ("-") given twice`)
			}
			stdin, s.name, s.csv = i, "stdin", o.format == "csv"
		case o.format != "":
			s.csv = o.format == "csv"
		default:
			switch strings.ToLower(filepath.Ext(a)) {
			case ".csv":
				s.csv = true
			case ".ilp", ".lp", ".txt":
			default:
				return fmt.Errorf("%s: cannot tell the format from the extension (.ilp, .lp, .txt or .csv); give --format ilp or csv", a)
			}
		}
		if s.csv && o.table == "" {
			return fmt.Errorf("%s: CSV needs --table (the table to store the rows in)", s.name)
		}
		if a != "-" {
			if st, err := os.Stat(a); err != nil {
				return err
			} else if st.IsDir() {
				return fmt.Errorf("%s is a directory", a)
			}
		}
		srcs[i] = s
	}
	if stdin >= 0 {
		path, err := spoolStdin(cmd.InOrStdin())
		if err != nil {
			return err
		}
		defer os.Remove(path)
		srcs[stdin].path = path
	}

	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	in := &ingester{
		o: o, db: g.db, ctx: ctx, stderr: cmd.ErrOrStderr(),
		ld:       ingest.NewLoader(&ingest.Options{DB: g.db, LiveRoot: o.liveDir, Writer: writer.Options{LateWindow: o.late}}),
		perTable: map[string]int64{},
	}
	if o.table != "" {
		in.table = []byte(o.table)
	}
	var err error
	for _, s := range srcs {
		if err = in.file(s); err != nil {
			break
		}
	}
	if cerr := in.ld.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if in.stored > 0 || (err == nil && len(in.failed) == 0) {
		in.summary(time.Since(start))
	}
	switch {
	case err != nil:
		return err
	case len(in.failed) == 1 && len(srcs) == 1:
		return errors.New(in.failed[0])
	case len(in.failed) > 0:
		return fmt.Errorf("%d of %d files stored nothing: %s", len(in.failed), len(srcs), strings.Join(in.failed, "; "))
	}
	return nil
}

// spoolStdin copies stdin to a temporary file and returns its path.
func spoolStdin(r io.Reader) (string, error) {
	f, err := os.CreateTemp("", "tickdb-ingest-stdin-*")
	if err != nil {
		return "", fmt.Errorf("copy stdin: %w", err)
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("copy stdin to %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// ingester loads the files of one command through one Loader.
type ingester struct {
	o      *ingestOpts
	db     string
	ctx    context.Context
	stderr io.Writer
	ld     *ingest.Loader
	table  []byte // --table

	batches []*batch

	loaded   int              // files stored whole
	stored   int64            // rows stored
	skipped  int64            // bad lines skipped (--skip-bad)
	perTable map[string]int64 // rows stored by table
	failed   []string         // why each failed file stored nothing
	reported int              // bad lines printed for the current file
	now      int64            // the time of the current file's rows without one
}

// csvPrep is what the start of a CSV file gives: the header's bytes and
// the schema its cells are read by.
type csvPrep struct {
	header []byte
	schema *store.Schema
	create bool // the file creates the table
}

// file loads one file: a check pass and a store pass, or with --skip-bad
// a store pass alone. A file that stores nothing because of bad input is
// recorded in in.failed; the error is for what stops the command.
func (in *ingester) file(s ingestSrc) error {
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	in.reported, in.now = 0, time.Now().UnixNano()
	var prep *csvPrep
	if s.csv {
		if prep, err = in.prepareCSV(f, s); err != nil {
			if errors.Is(err, lineproto.ErrBadLine) { // a bad header: said once, at the end
				in.failed = append(in.failed, fmt.Sprintf("%s: %v", s.name, err))
				return nil
			}
			return err
		}
	}
	if !in.o.skipBad {
		bad, err := in.pass(f, s, prep, false)
		if err != nil {
			return err
		}
		if bad > 0 {
			in.failed = append(in.failed, fmt.Sprintf("%s: %s; nothing stored from it (--skip-bad stores the good lines)", s.name, badCount(bad)))
			return nil
		}
	}
	if _, err = in.pass(f, s, prep, true); err == nil {
		in.loaded++
	}
	return err
}

// badCount is "n bad lines", saying how many were printed when not all.
func badCount(n int64) string {
	s := commas(n) + " bad lines"
	if n == 1 {
		s = "1 bad line"
	}
	if n > ingestMaxReports {
		s += fmt.Sprintf(" (the first %d printed)", ingestMaxReports)
	}
	return s
}

// prepareCSV reads the header row and types its columns: by the schema of
// the table, or, for a table the file creates, from the first rows.
func (in *ingester) prepareCSV(f *os.File, s ingestSrc) (*csvPrep, error) {
	p := ingest.NewCSVParser(in.o.table)
	buf := make([]byte, 0, 64<<10)
	atEOF := false
	more := func() error {
		if len(buf) == cap(buf) {
			if cap(buf) >= ingestMaxRecord {
				return fmt.Errorf("%s: no whole header row and first rows in the first %s", s.name, fmtBytes(ingestMaxRecord))
			}
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := io.ReadFull(f, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			atEOF = true
			return nil
		}
		return err
	}
	if err := more(); err != nil {
		return nil, err
	}
	var h int
	for {
		var err error
		if h, err = p.Header(buf, atEOF); err != nil {
			return nil, err
		}
		if h > 0 {
			break
		}
		if err := more(); err != nil {
			return nil, err
		}
	}
	prep := &csvPrep{header: bytes.Clone(buf[:h])}
	if _, err := os.Stat(filepath.Join(in.db, in.o.table, store.CtlName)); err == nil {
		r, err := reader.Open(in.db, in.o.table, nil)
		if err != nil {
			return nil, err
		}
		prep.schema = r.Schema()
		r.Close()
		if err := p.UseSchema(prep.schema); err != nil {
			return nil, err
		}
		return prep, nil
	}
	for !p.Infer(buf[h:], atEOF) {
		if err := more(); err != nil {
			return nil, err
		}
	}
	var err error
	prep.schema, err = p.Schema()
	prep.create = true
	return prep, err
}

// records parses a file's records one at a time: ilpRecords or csvRecords.
type records interface {
	// parse parses the record at the start of data into l, as
	// ingest.CSVParser.Parse does, and returns its 1-based line number.
	// Slices of l that would not stay valid with data are copied to arena.
	parse(data []byte, atEOF bool, l *lineproto.Line, arena *[]byte) (n, line int, ok bool, err error)
}

// ilpRecords reads line protocol, a line at a time.
type ilpRecords struct {
	p     lineproto.Parser
	table []byte // --table: every line's measurement
	line  int
}

func (r *ilpRecords) parse(data []byte, atEOF bool, l *lineproto.Line, arena *[]byte) (int, int, bool, error) {
	end := bytes.IndexByte(data, '\n')
	n := end + 1
	if end < 0 {
		if !atEOF || len(data) == 0 {
			return 0, 0, false, nil
		}
		end, n = len(data), len(data)
	}
	r.line++
	text := data[:end]
	ok, err := r.p.Parse(text, l)
	if err != nil {
		var le *lineproto.LineError
		if errors.As(err, &le) {
			le.Line = r.line
		}
		return n, r.line, false, err
	}
	if !ok {
		return n, r.line, false, nil
	}
	if bytes.IndexByte(text, '\\') >= 0 {
		keep(l, arena) // unescaped names live in the parser's scratch
	}
	if r.table != nil {
		l.Measurement = r.table
	}
	return n, r.line, true, nil
}

// keep copies l's names and symbols (string values included) to arena.
func keep(l *lineproto.Line, arena *[]byte) {
	l.Measurement = save(arena, l.Measurement)
	for i := range l.Tags {
		l.Tags[i].Key = save(arena, l.Tags[i].Key)
		l.Tags[i].Value = save(arena, l.Tags[i].Value)
	}
	for i := range l.Fields {
		l.Fields[i].Key = save(arena, l.Fields[i].Key)
		if l.Fields[i].Kind == lineproto.KindString {
			l.Fields[i].S = save(arena, l.Fields[i].S)
		}
	}
}

func save(arena *[]byte, b []byte) []byte {
	start := len(*arena)
	*arena = append(*arena, b...)
	return (*arena)[start:len(*arena):len(*arena)]
}

// csvRecords reads CSV rows.
type csvRecords struct{ p *ingest.CSVParser }

func (r *csvRecords) parse(data []byte, atEOF bool, l *lineproto.Line, _ *[]byte) (int, int, bool, error) {
	n, ok, err := r.p.Parse(data, atEOF, l)
	return n, r.p.Line(), ok, err
}

// batch is a run of whole records read from a file, parsed: the producer
// fills it, the store side checks or stores its lines and hands it back.
type batch struct {
	buf   []byte           // the records; the lines point into it and into arena
	arena []byte           // unescaped ILP names and symbols
	lines []lineproto.Line // the good records, in file order
	nums  []int            // each line's 1-based line number
	bad   []badLine        // the bad records, in file order
	read  int64            // file bytes this batch read, for the progress bar
	err   error            // a read error or an over-long record: the file stops here
}

// badLine is a record that did not parse; it came before lines[at].
type badLine struct {
	at  int
	err error
}

func (b *batch) reset() {
	b.arena = b.arena[:0]
	b.lines = b.lines[:0]
	b.nums = b.nums[:0]
	b.bad = b.bad[:0]
	b.read, b.err = 0, nil
}

// next extends b.lines by one line, reusing its tags and fields.
func (b *batch) next() *lineproto.Line {
	if len(b.lines) == cap(b.lines) {
		b.lines = append(b.lines, lineproto.Line{})
	} else {
		b.lines = b.lines[:len(b.lines)+1]
	}
	return &b.lines[len(b.lines)-1]
}

// fill parses the whole records at the start of b.buf into b and returns
// the bytes they took.
func (b *batch) fill(rs records, atEOF bool) int {
	off := 0
	for off < len(b.buf) {
		l := b.next()
		n, line, ok, err := rs.parse(b.buf[off:], atEOF, l, &b.arena)
		if !ok {
			b.lines = b.lines[:len(b.lines)-1]
		}
		if n == 0 {
			break
		}
		off += n
		switch {
		case err != nil:
			b.bad = append(b.bad, badLine{at: len(b.lines), err: err})
		case ok:
			b.nums = append(b.nums, line)
		}
	}
	return off
}

// produce reads f from where it is and sends its records, parsed, in
// batches on full, which it closes at the end; it stops early when stop is
// closed.
func produce(f *os.File, rs records, free <-chan *batch, full chan<- *batch, stop <-chan struct{}) {
	defer close(full)
	var carry []byte // the start of a record the last batch did not hold whole
	atEOF := false
	line := 1
	for !atEOF || len(carry) > 0 {
		var b *batch
		select {
		case b = <-free:
		case <-stop:
			return
		}
		b.reset()
		b.buf = append(b.buf[:0], carry...)
		for {
			if !atEOF {
				n, err := io.ReadFull(f, b.buf[len(b.buf):cap(b.buf)])
				b.buf = b.buf[:len(b.buf)+n]
				b.read += int64(n)
				switch {
				case err == io.EOF || err == io.ErrUnexpectedEOF:
					atEOF = true
				case err != nil:
					b.err = err
				}
			}
			off := 0
			if b.err == nil {
				off = b.fill(rs, atEOF)
			}
			if off > 0 || atEOF || b.err != nil {
				carry = append(carry[:0], b.buf[off:]...)
				break
			}
			// Not one whole record in a full buffer: a longer one.
			if cap(b.buf) >= ingestMaxRecord {
				if len(b.nums) > 0 {
					line = b.nums[len(b.nums)-1]
				}
				b.err = fmt.Errorf("a record longer than %s after line %d (an unclosed quote?)", fmtBytes(ingestMaxRecord), line)
				break
			}
			b.buf = append(b.buf, make([]byte, cap(b.buf))...)[:len(b.buf)]
		}
		if n := len(b.nums); n > 0 {
			line = b.nums[n-1]
		}
		select {
		case full <- b:
		case <-stop:
			return
		}
		if b.err != nil {
			return
		}
	}
}

// pass reads the file from after its header, parsing it on a producer
// goroutine, and checks (commit false) or stores every line. It returns the
// number of bad lines, each printed up to the file's first
// ingestMaxReports; the error is for what stops the command. A bad line in
// the store pass is skipped and counted under --skip-bad, and stops the
// command otherwise (the check pass let it through, so the table changed).
func (in *ingester) pass(f *os.File, s ingestSrc, prep *csvPrep, commit bool) (int64, error) {
	var rs records
	var from int64
	if prep != nil {
		p := ingest.NewCSVParser(in.o.table)
		if _, err := p.Header(prep.header, true); err != nil {
			return 0, err
		}
		if err := p.UseSchema(prep.schema); err != nil {
			return 0, err
		}
		rs, from = &csvRecords{p: p}, int64(len(prep.header))
	} else {
		rs = &ilpRecords{table: in.table}
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0, err
	}
	size := int64(-1)
	if st, err := f.Stat(); err == nil {
		size = st.Size() - from
	}
	desc := "check " + s.name
	if commit {
		desc = "store " + s.name
	} else {
		in.ld.Reset()
		if prep != nil && prep.create {
			in.ld.Plan(in.o.table, prep.schema)
		}
	}
	bar := newProgress(in.stderr, size, desc, "bytes")
	defer bar.done()

	if in.batches == nil {
		for range ingestBatches {
			in.batches = append(in.batches, &batch{buf: make([]byte, 0, ingestChunk)})
		}
	}
	free := make(chan *batch, len(in.batches))
	for _, b := range in.batches {
		free <- b
	}
	full := make(chan *batch, len(in.batches))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); produce(f, rs, free, full, stop) }()
	defer func() { close(stop); wg.Wait() }()

	var bad int64
	created := prep == nil || !prep.create
	for b := range full {
		if err := in.ctx.Err(); err != nil {
			return bad, fmt.Errorf("%s: interrupted, with %s rows stored: %w", s.name, commas(in.stored), err)
		}
		if b.err != nil {
			return bad, fmt.Errorf("%s: %w", s.name, b.err)
		}
		if commit && !created && len(b.lines) > 0 {
			if err := in.ld.Create(in.o.table, prep.schema); err != nil {
				return bad, fmt.Errorf("%s: %w", s.name, err)
			}
			created = true
		}
		i := 0
		for k := 0; k <= len(b.bad); k++ {
			j := len(b.lines)
			if k < len(b.bad) {
				j = b.bad[k].at
			}
			var n int64
			var err error
			if commit {
				n, err = in.store(s, b, i, j)
			} else {
				n, err = in.check(s, b, i, j)
			}
			bad += n
			if err != nil {
				return bad, err
			}
			if k < len(b.bad) {
				bad++
				in.report(s, b.bad[k].err)
			}
			i = j
		}
		if commit {
			in.ld.Publish()
		}
		bar.add(b.read)
		free <- b
	}
	if commit {
		in.skipped += bad
	}
	return bad, nil
}

// check checks b.lines[i:j], reporting the bad ones.
func (in *ingester) check(s ingestSrc, b *batch, i, j int) (int64, error) {
	var bad int64
	for ; i < j; i++ {
		if err := in.ld.CheckAt(&b.lines[i], in.now); err != nil {
			if !errors.Is(err, lineproto.ErrBadLine) {
				return bad, fmt.Errorf("%s: line %d: %w", s.name, b.nums[i], err)
			}
			bad++
			in.reportAt(s, err, b.nums[i])
		}
	}
	return bad, nil
}

// store stores b.lines[i:j], skipping and reporting the bad ones under
// --skip-bad.
func (in *ingester) store(s ingestSrc, b *batch, i, j int) (int64, error) {
	var bad int64
	for i < j {
		n, err := in.ld.AppendLines(b.lines[i:j], in.now)
		in.count(b.lines[i : i+n])
		i += n
		if err == nil {
			break
		}
		if !errors.Is(err, lineproto.ErrBadLine) {
			return bad, fmt.Errorf("%s: line %d: %w", s.name, b.nums[i], err)
		}
		if !in.o.skipBad {
			return bad, fmt.Errorf("%s: line %d: %w (the table changed after the check; the rows before it are stored)", s.name, b.nums[i], err)
		}
		bad++
		in.reportAt(s, err, b.nums[i])
		i++
	}
	return bad, nil
}

// count adds stored lines to the totals.
func (in *ingester) count(ls []lineproto.Line) {
	in.stored += int64(len(ls))
	for len(ls) > 0 {
		name := ls[0].Measurement
		k := 1
		for k < len(ls) && bytes.Equal(ls[k].Measurement, name) {
			k++
		}
		in.perTable[string(name)] += int64(k)
		ls = ls[k:]
	}
}

// reportAt prints a bad line (err, a *LineError) found at line.
func (in *ingester) reportAt(s ingestSrc, err error, line int) {
	var le *lineproto.LineError
	if errors.As(err, &le) && le.Line == 0 {
		le.Line = line
	}
	in.report(s, err)
}

func (in *ingester) report(s ingestSrc, err error) {
	if in.reported < ingestMaxReports {
		fmt.Fprintf(in.stderr, "%s: %v\n", s.name, err)
	}
	in.reported++
}

// summary prints the one-line summary on stderr.
func (in *ingester) summary(d time.Duration) {
	files := in.loaded
	var b strings.Builder
	rows, fs := "rows", "files"
	if in.stored == 1 {
		rows = "row"
	}
	if files == 1 {
		fs = "file"
	}
	fmt.Fprintf(&b, "tickdb ingest: %s %s stored from %d %s", commas(in.stored), rows, files, fs)
	fmt.Fprintf(&b, " in %s (%s rows/s)", fmtNs(d.Nanoseconds()), strings.TrimSpace(fmtRate(float64(in.stored)/max(d.Seconds(), 1e-9))))
	if in.skipped == 1 {
		b.WriteString(", 1 bad line skipped")
	} else if in.skipped > 0 {
		fmt.Fprintf(&b, ", %s bad lines skipped", commas(in.skipped))
	}
	names := make([]string, 0, len(in.perTable))
	for n := range in.perTable {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s %s", sep, n, commas(in.perTable[n]))
	}
	fmt.Fprintln(in.stderr, b.String())
}
