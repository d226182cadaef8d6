package load

// CSV files for bulk loads: an RFC 4180 record scanner and the conversion
// of its records into Lines for one table, typed by the table's schema or,
// for a table the file creates, by the first values of each column
// (csv_time.go reads the ts cells). The Lines then go through
// ingest.Loader, so a CSV row meets the same table rules as a
// line-protocol line.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/store"
)

// csvInferRows is how many data rows Infer looks at, at most, for a column
// whose first cells are empty.
const csvInferRows = 1000

// csvParser turns the records of a CSV file with a header row into Lines
// for one table.
//
// The syntax is RFC 4180, as encoding/csv reads it: fields separated by
// commas; a field that starts with a double quote runs to the next lone
// double quote and may hold commas, line ends and doubled quotes ("" for
// one); lines end in LF or CRLF (a CRLF inside a quoted field reads as LF);
// blank lines are skipped; a UTF-8 byte order mark before the header is
// dropped. Unlike encoding/csv it works on the caller's bytes without
// copying them: unquoted cells are sub-slices of the input, and quoted cells
// with doubled quotes are rewritten in place.
//
// The header names the columns: "ts" exactly once (anywhere) and the
// table's other columns, each at most once. Every record must have as many
// fields as the header. An empty cell is an omitted value: the Loader stores
// a missing column's default (NaN, 0, false or ""), and a row with an empty
// ts cell gets the time it is stored, like a line without a timestamp.
// Cells are read by the column's type:
//
//   - ts: integer ns since the epoch (or the unit Options.TsUnit gives), or RFC 3339 and the other forms
//     query.ParseTime takes (a date alone, a space for the T, no offset
//     meaning UTC).
//   - sym: the cell's bytes, as they are.
//   - f64: a decimal number (1, -1.5, 2.5e-3) or NaN, Inf, Infinity.
//   - i64: a decimal integer.
//   - bool: true, false, t, f (any case), 1 or 0.
//
// Use: Header on the start of the file; then UseSchema for a table that
// exists, or Infer and Schema for a new one; then Parse on each record in
// turn. A csvParser is for one goroutine and one pass over one file.
type csvParser struct {
	table []byte
	names []string
	keys  [][]byte
	types []store.ColType // by header column; TypeTs for the ts column
	tsCol int
	unit  int64 // ns per unit of integer ts cells (Options.TsUnit); 0 or 1: ns
	line  int   // 1-based line number where the next record starts
	rec   int   // 1-based line number of the last record

	// The fields of the record split last: offsets into its bytes, and
	// the offsets of the line ends inside its quoted fields (for the
	// positions in error messages and for counting lines).
	spans []csvSpan
	nls   []int
}

// csvSpan is a field's bytes within its record, quotes excluded; esc says
// they hold doubled quotes or CRLFs that the value drops, quoted that the
// field was in quotes.
type csvSpan struct {
	start, end  int
	esc, quoted bool
}

// newCSVParser returns a parser of CSV rows for table.
func newCSVParser(table string) *csvParser {
	return &csvParser{table: []byte(table), tsCol: -1, line: 1}
}

// Header parses the header row at the start of data and returns the bytes
// it took (blank lines and a byte order mark before it included), or 0
// with no error when data does not yet hold the whole row and more is
// needed (never when atEOF). A header that cannot be used gives a
// *LineError.
func (p *csvParser) Header(data []byte, atEOF bool) (int, error) {
	off, line0 := 0, p.line
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		off = 3
	}
	for {
		n, blank, err := p.split(data[off:], atEOF)
		if n == 0 {
			if atEOF {
				return 0, &lineproto.LineError{Line: p.line, Reason: lineproto.ReasonSyntax, Msg: "no header row: the file is empty (want a header like ts,sym,price)"}
			}
			p.line = line0 // called again with more data, from the start
			return 0, nil
		}
		rec := data[off : off+n]
		off += n
		p.rec = p.line
		p.line += p.lineEnds(rec, err != nil)
		if err != nil {
			return 0, p.lineErr(err)
		}
		if blank {
			continue
		}
		return off, p.setHeader(rec)
	}
}

// setHeader takes the column names from the record split last.
func (p *csvParser) setHeader(rec []byte) error {
	p.names = make([]string, len(p.spans))
	p.keys = make([][]byte, len(p.spans))
	p.types = make([]store.ColType, len(p.spans))
	seen := make(map[string]bool, len(p.spans))
	for k, sp := range p.spans {
		cell := bytes.Clone(rec[sp.start:sp.end])
		if sp.esc {
			cell = unescapeCSV(cell)
		}
		name := string(cell)
		switch {
		case name == "":
			return p.cellErr(sp, lineproto.ReasonName, fmt.Sprintf("header column %d has no name", k+1))
		case seen[name]:
			return p.cellErr(sp, lineproto.ReasonDuplicate, fmt.Sprintf("header names column %q twice", name))
		}
		seen[name] = true
		p.names[k], p.keys[k] = name, cell
		if name == "ts" {
			p.tsCol, p.types[k] = k, store.TypeTs
		}
	}
	if p.tsCol < 0 {
		return &lineproto.LineError{Line: p.rec, Reason: lineproto.ReasonName, Msg: fmt.Sprintf("header %s has no ts column (want ts plus columns, like ts,sym,price)", snippet(bytes.TrimRight(rec, "\r\n")))}
	}
	return nil
}

// Columns returns the header's column names, in order.
func (p *csvParser) Columns() []string { return p.names }

// UseSchema types the header's columns by the schema of the table they go
// into. A header column the table does not have is an error naming it and
// the table's columns.
func (p *csvParser) UseSchema(s *store.Schema) error {
	var unknown []string
	for k, name := range p.names {
		if k == p.tsCol {
			continue
		}
		i := s.Index(name)
		if i < 0 {
			unknown = append(unknown, strconv.Quote(name))
			continue
		}
		p.types[k] = s.Cols[i].Type
	}
	if len(unknown) == 0 {
		return nil
	}
	cols := make([]string, len(s.Cols))
	for i, c := range s.Cols {
		cols[i] = c.Name
	}
	what := "column " + unknown[0]
	if len(unknown) > 1 {
		what = "columns " + strings.Join(unknown, ", ")
	}
	return &lineproto.LineError{Line: p.rec, Reason: lineproto.ReasonUnknownColumn, Msg: fmt.Sprintf("header %s: table %s has no such column (its columns: %s)", what, p.table, strings.Join(cols, ", "))}
}

// Infer types the header's columns for a table the file creates, from
// data, the bytes after the header: each column takes the narrowest type
// that holds every non-empty cell it has in the first csvInferRows data
// rows: i64 when they are all integers, f64 when they are all numbers (NaN
// and Inf included), bool when they are all true or false (any case), and
// sym otherwise; a column with no value there is f64. It reports false,
// having set nothing, when data ends before the rows it needs and more of
// the file is needed (never when atEOF). Data is not changed.
func (p *csvParser) Infer(data []byte, atEOF bool) bool {
	types := make([]store.ColType, len(p.names))
	types[p.tsCol] = store.TypeTs
	for off, rows := 0, 0; rows < csvInferRows; {
		n, blank, err := p.split(data[off:], atEOF)
		if n == 0 {
			if !atEOF {
				return false
			}
			break
		}
		rec := data[off : off+n]
		off += n
		if blank || err != nil || len(p.spans) != len(types) {
			continue
		}
		rows++
		for k, sp := range p.spans {
			if k != p.tsCol && sp.end > sp.start {
				types[k] = widen(types[k], inferType(rec[sp.start:sp.end], sp.esc))
			}
		}
	}
	for k := range types {
		if types[k] == 0 {
			types[k] = store.TypeF64
		}
	}
	p.types = types
	return true
}

// widen is the narrowest type that holds values of types a (0: none yet)
// and b.
func widen(a, b store.ColType) store.ColType {
	switch {
	case a == 0 || a == b:
		return b
	case (a == store.TypeI64 || a == store.TypeF64) && (b == store.TypeI64 || b == store.TypeF64):
		return store.TypeF64
	}
	return store.TypeSym
}

// inferType is the column type a new table gets from a cell.
func inferType(cell []byte, esc bool) store.ColType {
	if esc { // doubled quotes or a line end: text
		return store.TypeSym
	}
	if _, err := lineproto.ParseInt(cell); err == nil {
		return store.TypeI64
	}
	if _, err := lineproto.ParseFloat(cell); err == nil {
		return store.TypeF64
	}
	if asciiEqualFold(cell, "true") || asciiEqualFold(cell, "false") {
		return store.TypeBool
	}
	return store.TypeSym
}

// Schema returns the schema of a table created from the header: ts, then
// the other columns in the header's order, typed by UseSchema or Infer.
func (p *csvParser) Schema() (*store.Schema, error) {
	cols := make([]store.Column, 0, len(p.names))
	cols = append(cols, store.Column{Name: "ts", Type: store.TypeTs})
	for k, name := range p.names {
		if k != p.tsCol {
			cols = append(cols, store.Column{Name: name, Type: p.types[k]})
		}
	}
	s, err := store.NewSchema(cols...)
	if err != nil {
		return nil, &lineproto.LineError{Line: p.rec, Reason: lineproto.ReasonName, Msg: fmt.Sprintf("cannot create table %s from the header: %v", p.table, err)}
	}
	return s, nil
}

// Line returns the 1-based line number where the record Parse parsed last
// starts.
func (p *csvParser) Line() int { return p.rec }

// Parse parses the record at the start of data into l and returns the
// bytes it took, its line end included. It returns 0 when data does not
// hold the whole record and more is needed (never when atEOF, unless data
// is empty). ok says whether l holds a row: not for a blank line, nor for a
// bad record, which gives a *LineError with its position (Line and Col set)
// and n skips it: to the end of the line where the fault is, or of the
// field count's record.
//
// l's slices point into data (Parse rewrites quoted cells that hold
// doubled quotes in place) and into the parser's column names, so they
// stay valid as long as data is; l.Tags and l.Fields are reused.
func (p *csvParser) Parse(data []byte, atEOF bool, l *lineproto.Line) (n int, ok bool, err error) {
	n, blank, lerr := p.split(data, atEOF)
	if n == 0 {
		return 0, false, nil
	}
	rec := data[:n]
	p.rec = p.line
	p.line += p.lineEnds(rec, lerr != nil)
	switch {
	case lerr != nil:
		return n, false, p.lineErr(lerr)
	case blank:
		return n, false, nil
	case len(p.spans) != len(p.types):
		return n, false, &lineproto.LineError{Line: p.rec, Reason: lineproto.ReasonSyntax, Msg: fmt.Sprintf("%d fields, the header has %d", len(p.spans), len(p.types))}
	}
	l.Measurement = p.table
	l.Tags = l.Tags[:0]
	l.Fields = l.Fields[:0]
	l.Ts, l.HasTs = 0, false
	for k := range p.spans {
		sp := &p.spans[k]
		cell := rec[sp.start:sp.end]
		if sp.esc {
			cell = unescapeCSV(cell)
		}
		if len(cell) == 0 {
			continue
		}
		switch p.types[k] {
		case store.TypeSym:
			t := l.AddTag()
			t.Key, t.Value = p.keys[k], cell
		case store.TypeF64:
			x, err := lineproto.ParseFloat(cell)
			if err != nil {
				return n, false, p.cellErr(*sp, lineproto.ReasonNumber, fmt.Sprintf("column %q (f64): %s is not a number", p.names[k], snippet(cell)))
			}
			f := l.AddField()
			f.Key, f.Kind, f.F = p.keys[k], lineproto.KindFloat, x
		case store.TypeI64:
			x, err := lineproto.ParseInt(cell)
			if err != nil {
				msg := fmt.Sprintf("column %q (i64): %s is not an integer", p.names[k], snippet(cell))
				if err == strconv.ErrRange {
					msg = fmt.Sprintf("column %q (i64): %s overflows i64", p.names[k], snippet(cell))
				}
				return n, false, p.cellErr(*sp, lineproto.ReasonNumber, msg)
			}
			f := l.AddField()
			f.Key, f.Kind, f.I = p.keys[k], lineproto.KindInt, x
		case store.TypeBool:
			b, okb := parseCSVBool(cell)
			if !okb {
				return n, false, p.cellErr(*sp, lineproto.ReasonValue, fmt.Sprintf("column %q (bool): %s is not true, false, t, f, 1 or 0", p.names[k], snippet(cell)))
			}
			f := l.AddField()
			f.Key, f.Kind, f.B = p.keys[k], lineproto.KindBool, b
		case store.TypeTs:
			ts, msg := parseCSVTimeIn(cell, p.unit)
			if msg != "" {
				return n, false, p.cellErr(*sp, lineproto.ReasonTimestamp, `column "ts": `+msg)
			}
			l.Ts, l.HasTs = ts, true
		default:
			return n, false, p.cellErr(*sp, lineproto.ReasonType, fmt.Sprintf("column %q: no type (call UseSchema or Infer first)", p.names[k]))
		}
	}
	return n, true, nil
}

// lineEnds is how many line ends rec, a record split last, holds.
func (p *csvParser) lineEnds(rec []byte, bad bool) int {
	if bad { // the split stopped part way: count them
		return bytes.Count(rec, []byte{'\n'})
	}
	n := len(p.nls)
	if len(rec) > 0 && rec[len(rec)-1] == '\n' {
		n++
	}
	return n
}

// csvFault is a syntax error found by split, at byte off of the record.
type csvFault struct {
	off int
	msg string
}

// split finds the record at the start of data and its fields: p.spans,
// and p.nls for the line ends inside quoted fields. It returns the
// record's length n, its line end included, or 0 when data holds no whole
// record and more is needed (or data is empty at EOF). blank says the
// record is an empty line. A malformed record gives a fault and an n that
// skips to the end of the line where the fault is. Data is not changed.
func (p *csvParser) split(data []byte, atEOF bool) (n int, blank bool, fault *csvFault) {
	p.spans = p.spans[:0]
	p.nls = p.nls[:0]
	// The common case in one scan for the next comma, line end or quote,
	// eight bytes at a time: a record with no quote on its first line ends
	// there, and each comma separates two fields. Every byte below '-'
	// (0x2d) is a candidate, confirmed by csvStop: one comparison per word
	// finds all three, and digits, '.', '-' and ':' (numbers and times)
	// are never candidates.
	s, i := 0, 0
	for {
		for i+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[i:])
			m := (x - lo8*0x2d) &^ x & hi8 // the lowest flag is exact
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
			if csvStop[data[i]] {
				break
			}
			i++
		}
		if i+8 > len(data) {
			for i < len(data) && !csvStop[data[i]] {
				i++
			}
		}
		if i == len(data) {
			if !atEOF || len(data) == 0 {
				return 0, false, nil
			}
			break
		}
		if data[i] != ',' {
			break
		}
		p.spans = append(p.spans, csvSpan{start: s, end: i})
		i++
		s = i
	}
	if i < len(data) && data[i] == '"' {
		return p.splitQuoted(data, atEOF)
	}
	// The line ends at data[i] ('\n', or the end of the data at EOF).
	end, n := i, i+1
	if i == len(data) {
		n = i
	}
	if end > s && data[end-1] == '\r' {
		end--
	}
	if end == 0 && len(p.spans) == 0 {
		return n, true, nil
	}
	p.spans = append(p.spans, csvSpan{start: s, end: end})
	return n, false, nil
}

// Word constants for the scan in split.
const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// csvStop marks the bytes that end an unquoted field or start a quoted one.
var csvStop = [256]bool{',': true, '\n': true, '"': true}

// splitQuoted is split for a record with a double quote on its first line:
// byte by byte, across the line ends inside quoted fields.
func (p *csvParser) splitQuoted(data []byte, atEOF bool) (int, bool, *csvFault) {
	p.spans = p.spans[:0]
	i := 0
	for { // one field per turn
		if i < len(data) && data[i] == '"' {
			start := i + 1
			i = start
			esc := false
			for {
				j := bytes.IndexByte(data[i:], '"')
				seg := data[i:]
				if j >= 0 {
					seg = seg[:j]
				}
				for k := 0; ; {
					e := bytes.IndexByte(seg[k:], '\n')
					if e < 0 {
						break
					}
					at := i + k + e
					p.nls = append(p.nls, at)
					if at > 0 && data[at-1] == '\r' {
						esc = true
					}
					k += e + 1
				}
				if j < 0 {
					if !atEOF {
						return 0, false, nil
					}
					return len(data), false, &csvFault{start - 1, `quoted field not closed: no closing " before the end of the file`}
				}
				i += j + 1
				if i < len(data) && data[i] == '"' {
					esc = true // a doubled quote
					i++
					continue
				}
				if i == len(data) && !atEOF {
					return 0, false, nil // a quote may follow
				}
				break
			}
			p.spans = append(p.spans, csvSpan{start: start, end: i - 1, esc: esc, quoted: true})
			if i == len(data) {
				return i, false, nil
			}
			switch data[i] {
			case ',':
				i++
				continue
			case '\n':
				return i + 1, false, nil
			case '\r':
				switch {
				case i+1 < len(data) && data[i+1] == '\n':
					return i + 2, false, nil
				case i+1 == len(data) && atEOF:
					return i + 1, false, nil
				case i+1 == len(data):
					return 0, false, nil
				}
			}
			return p.skipBad(data, atEOF, i, `text after a quoted field's closing quote (write a quote inside a quoted field as "")`)
		}
		start := i
		for i < len(data) && data[i] != ',' && data[i] != '\n' && data[i] != '"' {
			i++
		}
		if i < len(data) && data[i] == '"' {
			return p.skipBad(data, atEOF, i, `a " inside a field that does not start with one (quote the whole field and double the quote: "a""b")`)
		}
		if i < len(data) && data[i] == ',' {
			p.spans = append(p.spans, csvSpan{start: start, end: i})
			i++
			continue
		}
		if i == len(data) && !atEOF {
			return 0, false, nil
		}
		end := i
		if end > start && data[end-1] == '\r' {
			end--
		}
		p.spans = append(p.spans, csvSpan{start: start, end: end})
		if i < len(data) {
			i++ // the '\n'
		}
		return i, false, nil
	}
}

// skipBad returns a fault at data[at] and the length to skip: to the end
// of that line, or 0 when more data is needed to find it.
func (p *csvParser) skipBad(data []byte, atEOF bool, at int, msg string) (int, bool, *csvFault) {
	e := bytes.IndexByte(data[at:], '\n')
	if e < 0 {
		if !atEOF {
			return 0, false, nil
		}
		return len(data), false, &csvFault{at, msg}
	}
	return at + e + 1, false, &csvFault{at, msg}
}

// pos returns the line number and 1-based byte column of byte off of the
// record split last.
func (p *csvParser) pos(off int) (line, col int) {
	line, lineStart := p.rec, 0
	for _, nl := range p.nls {
		if nl >= off {
			break
		}
		line, lineStart = line+1, nl+1
	}
	return line, off - lineStart + 1
}

func (p *csvParser) lineErr(f *csvFault) *lineproto.LineError {
	line, col := p.pos(f.off)
	return &lineproto.LineError{Line: line, Col: col, Reason: lineproto.ReasonSyntax, Msg: f.msg}
}

// cellErr is a *LineError at the cell sp (at its opening quote, if any).
func (p *csvParser) cellErr(sp csvSpan, r lineproto.Reason, msg string) *lineproto.LineError {
	off := sp.start
	if sp.quoted {
		off--
	}
	line, col := p.pos(off)
	return &lineproto.LineError{Line: line, Col: col, Reason: r, Msg: msg}
}

// unescapeCSV rewrites a quoted field's content in place: "" becomes ",
// CRLF becomes LF.
func unescapeCSV(b []byte) []byte {
	w := 0
	for r := 0; r < len(b); r++ {
		switch {
		case b[r] == '"':
			r++ // the first of a doubled quote; keep the second
		case b[r] == '\r' && r+1 < len(b) && b[r+1] == '\n':
			continue
		}
		b[w] = b[r]
		w++
	}
	return b[:w]
}

// parseCSVBool reads true, false, t, f (any case), 1 or 0.
func parseCSVBool(b []byte) (v, ok bool) {
	switch len(b) {
	case 1:
		switch b[0] {
		case 't', 'T', '1':
			return true, true
		case 'f', 'F', '0':
			return false, true
		}
	case 4:
		return true, asciiEqualFold(b, "true")
	case 5:
		return false, asciiEqualFold(b, "false")
	}
	return false, false
}

// asciiEqualFold reports whether b equals the lower-case ASCII word s,
// ignoring ASCII case (bytes.EqualFold would also take, say, "falſe").
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}

// snippetMax bounds the bytes of input that one message quotes, so that a
// hostile cell cannot make its error as long as itself; the line-protocol
// parser's messages quote the same way.
const snippetMax = 40

// snippet quotes b for a message, cut to snippetMax bytes.
func snippet(b []byte) string {
	if len(b) > snippetMax {
		return strconv.Quote(string(b[:snippetMax])) + "..."
	}
	return strconv.Quote(string(b))
}
