package load

// How a file is read: a producer goroutine parses whole records from
// chunks of the file into batches of Lines, while the caller's goroutine
// checks or stores the batches in order, so that parsing and storing each
// get a core.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/tickdb/tickdb/internal/textfmt"
	"github.com/tickdb/tickdb/lineproto"
)

const (
	chunk     = 128 << 10 // bytes of a file one batch reads
	maxRecord = 64 << 20  // a longer record (an unclosed quote?) stops the load
	batches   = 4         // batches in flight between the producer and the store
)

// records parses a file's records one at a time: ilpRecords or csvRecords.
type records interface {
	// parse parses the record at the start of data into l, as
	// csvParser.Parse does, and returns its 1-based line number.
	// Slices of l that would not stay valid with data are copied to arena.
	parse(data []byte, atEOF bool, l *lineproto.Line, arena *[]byte) (n, line int, ok bool, err error)
}

// ilpRecords reads line protocol, a line at a time.
type ilpRecords struct {
	p     lineproto.Parser
	table []byte // Options.Table: every line's measurement
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
type csvRecords struct{ p *csvParser }

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
	read  int64            // file bytes this batch read, for progress
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
			if cap(b.buf) >= maxRecord {
				if len(b.nums) > 0 {
					line = b.nums[len(b.nums)-1]
				}
				b.err = fmt.Errorf("a record longer than %d MiB after line %d (an unclosed quote?)", maxRecord>>20, line)
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
// number of bad lines, each given to Options.Report; the error is for what
// stops the load. A bad line in the store pass is skipped and counted
// under SkipBad, and stops the load otherwise (the check pass let it
// through, so the table changed).
func (ld *Loader) pass(f *file, commit bool) (int64, error) {
	var rs records
	var from int64
	if prep := f.prep; prep != nil {
		p := newCSVParser(ld.o.Table)
		p.unit = int64(ld.o.TsUnit)
		if _, err := p.Header(prep.header, true); err != nil {
			return 0, err
		}
		if err := p.UseSchema(prep.schema); err != nil {
			return 0, err
		}
		rs, from = &csvRecords{p: p}, int64(len(prep.header))
	} else {
		rs = &ilpRecords{table: ld.table, p: lineproto.Parser{Precision: int64(max(ld.o.TsUnit, time.Nanosecond))}}
	}
	if _, err := f.f.Seek(from, io.SeekStart); err != nil {
		return 0, err
	}
	pr := Progress{File: f.name, Store: commit, Size: -1}
	if st, err := f.f.Stat(); err == nil {
		pr.Size = st.Size() - from
	}
	if !commit {
		ld.ld.Reset()
		if f.prep != nil && f.prep.create {
			ld.ld.Plan(ld.o.Table, f.prep.schema)
		}
	}
	ld.progress(pr)
	defer func() { pr.Done = true; ld.progress(pr) }()

	if ld.batches == nil {
		for range batches {
			ld.batches = append(ld.batches, &batch{buf: make([]byte, 0, chunk)})
		}
	}
	free := make(chan *batch, len(ld.batches))
	for _, b := range ld.batches {
		free <- b
	}
	full := make(chan *batch, len(ld.batches))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); produce(f.f, rs, free, full, stop) }()
	defer func() { close(stop); wg.Wait() }()

	var bad int64
	created := f.prep == nil || !f.prep.create
	for b := range full {
		if err := f.ctx.Err(); err != nil {
			return bad, fmt.Errorf("%s: interrupted, with %s rows stored: %w", f.name, textfmt.Commas(ld.st.Rows), err)
		}
		if b.err != nil {
			return bad, fmt.Errorf("%s: %w", f.name, b.err)
		}
		if commit && !created && len(b.lines) > 0 {
			if err := ld.ld.Create(ld.o.Table, f.prep.schema); err != nil {
				return bad, fmt.Errorf("%s: %w", f.name, err)
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
				n, err = ld.store(f, b, i, j)
			} else {
				n, err = ld.check(f, b, i, j)
			}
			bad += n
			if err != nil {
				return bad, err
			}
			if k < len(b.bad) {
				bad++
				ld.report(f, b.bad[k].err)
			}
			i = j
		}
		if commit {
			ld.ld.Publish()
		}
		pr.Read += b.read
		ld.progress(pr)
		free <- b
	}
	if commit {
		ld.st.Skipped += bad
	}
	return bad, nil
}

// check checks b.lines[i:j], reporting the bad ones.
func (ld *Loader) check(f *file, b *batch, i, j int) (int64, error) {
	var bad int64
	for ; i < j; i++ {
		if err := ld.ld.CheckAt(&b.lines[i], f.now); err != nil {
			if !errors.Is(err, lineproto.ErrBadLine) {
				return bad, fmt.Errorf("%s: line %d: %w", f.name, b.nums[i], err)
			}
			bad++
			ld.reportAt(f, err, b.nums[i])
		}
	}
	return bad, nil
}

// store stores b.lines[i:j], skipping and reporting the bad ones under
// SkipBad.
func (ld *Loader) store(f *file, b *batch, i, j int) (int64, error) {
	var bad int64
	for i < j {
		n, err := ld.ld.AppendLines(b.lines[i:j], f.now)
		ld.count(b.lines[i : i+n])
		i += n
		if err == nil {
			break
		}
		if !errors.Is(err, lineproto.ErrBadLine) {
			return bad, fmt.Errorf("%s: line %d: %w", f.name, b.nums[i], err)
		}
		if !ld.o.SkipBad {
			return bad, fmt.Errorf("%s: line %d: %w (the table changed after the check; the rows before it are stored)", f.name, b.nums[i], err)
		}
		bad++
		ld.reportAt(f, err, b.nums[i])
		i++
	}
	return bad, nil
}

// count adds stored lines to the totals.
func (ld *Loader) count(ls []lineproto.Line) {
	ld.st.Rows += int64(len(ls))
	for len(ls) > 0 {
		name := ls[0].Measurement
		k := 1
		for k < len(ls) && bytes.Equal(ls[k].Measurement, name) {
			k++
		}
		ld.st.Tables[string(name)] += int64(k)
		ls = ls[k:]
	}
}

// reportAt reports a bad line (err, a *LineError) found at line.
func (ld *Loader) reportAt(f *file, err error, line int) {
	var le *lineproto.LineError
	if errors.As(err, &le) && le.Line == 0 {
		le.Line = line
	}
	ld.report(f, err)
}

func (ld *Loader) report(f *file, err error) {
	if ld.o.Report != nil {
		ld.o.Report(f.name, err)
	}
}

func (ld *Loader) progress(p Progress) {
	if ld.o.Progress != nil {
		ld.o.Progress(p)
	}
}
