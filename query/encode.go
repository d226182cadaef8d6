package query

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/tickdb/tickdb/store"
)

// Output buffering: rows are appended to one buffer that is handed to the
// writer when it passes flushAt. Its capacity leaves room for a long row
// past that point, so that the buffer does not grow in steady state.
const (
	flushAt = 32 << 10
	bufCap  = flushAt + 16<<10
)

// Table-format column widths (in runes; longer values push the rest of
// their line right rather than being cut).
const (
	tableSep      = "  "
	tableTsWidth  = len(rfc3339Fixed) // 30
	tableNsWidth  = 19                // every ts from 2001-09-09 on
	tableSymWidth = 12
	tableF64Width = 14
	tableI64Width = 12
	tableBoolW    = 5
)

var errEncoderClosed = errors.New("query: encoder closed")

// Encoder writes the rows of one schema to an io.Writer in one Format. It
// buffers: nothing reaches the writer before Flush, Close or 32 KiB of
// output. The header (the csv header row, the table's header line, the
// json array's opening) goes out before the first row, or at Flush or
// Close if there is none, so that an empty result is still a well-formed
// csv, table or json document; Close writes the trailer (the json array's
// end). A write error is sticky: every later call returns it.
//
// Row allocates nothing in steady state. The one exception is a symbol
// seen for the first time: its name is looked up through symName and
// cached, already encoded for the format, by id.
//
// An Encoder is not safe for concurrent use.
type Encoder struct {
	w       io.Writer
	f       Format
	tsf     TsFormat
	schema  *store.Schema
	cols    []colEnc // the columns after ts, in schema order
	meas    []byte   // ilp: the escaped measurement (table name)
	symName func(id uint32) (string, error)
	times   timeCache
	syms    []symEnc // by id
	arena   []byte   // the encoded symbol names syms points into
	buf     []byte
	rows    int64
	written int64
	started bool
	closed  bool
	err     error // sticky write error
}

// colEnc is one output column after ts.
type colEnc struct {
	col store.Col
	// key is what goes before the value: csv nothing, json `,"name":`,
	// ilp `,name=` for a tag and `name=` for a field.
	key []byte
	// width is the table format's column width; negative is left-aligned.
	width int
}

// symEnc locates one symbol's name, encoded for the format, in the arena.
type symEnc struct {
	off, n uint32
	w      int32 // table format: width in runes
	ok     bool
}

// NewEncoder returns an Encoder that writes rows of schema s to w in
// format f, with ts printed as tsf (ilp always prints ns). table names the
// ilp measurement. symName resolves a sym column's id to its name (for
// example a reader's Symbol method); it may be nil when s has no sym
// column.
func NewEncoder(w io.Writer, f Format, tsf TsFormat, s *store.Schema, table string, symName func(id uint32) (string, error)) *Encoder {
	e := &Encoder{w: w, f: f, tsf: tsf, schema: s, symName: symName, buf: make([]byte, 0, bufCap)}
	e.cols = make([]colEnc, len(s.Cols)-1)
	for i, c := range s.Cols[1:] {
		ce := &e.cols[i]
		ce.col = s.ColAt(i + 1)
		switch f {
		case FormatJSON:
			ce.key = appendJSONString([]byte{','}, c.Name)
			ce.key = append(ce.key, ':')
		case FormatILP:
			if c.Type == store.TypeSym {
				ce.key = append(ce.key, ',')
			}
			ce.key = appendEscaped(ce.key, c.Name, ilpKeySpecial)
			ce.key = append(ce.key, '=')
		case FormatTable:
			_, nw := appendTableText(nil, c.Name)
			switch c.Type {
			case store.TypeSym:
				ce.width = -max(tableSymWidth, nw)
			case store.TypeF64:
				ce.width = max(tableF64Width, nw)
			case store.TypeI64:
				ce.width = max(tableI64Width, nw)
			default:
				ce.width = -max(tableBoolW, nw)
			}
		}
	}
	if f == FormatILP {
		e.meas = appendEscaped(nil, table, ilpMeasurementSpecial)
	}
	return e
}

// Rows is the number of rows encoded so far.
func (e *Encoder) Rows() int64 { return e.rows }

// Written is the number of bytes handed to the writer so far: while it is
// 0, a caller that has not flushed can still drop the output (an HTTP
// handler can still answer with an error status).
func (e *Encoder) Written() int64 { return e.written }

// Row encodes one row (RowSize bytes of the encoder's schema). The row is
// not kept: it may be a zero-copy view that changes after Row returns. A
// failed symbol lookup leaves nothing of the row in the output.
func (e *Encoder) Row(r store.Row) error {
	if e.err != nil {
		return e.err
	}
	if e.closed {
		return errEncoderClosed
	}
	if len(r) != e.schema.RowSize {
		return fmt.Errorf("query: row is %d bytes, the schema's rows are %d", len(r), e.schema.RowSize)
	}
	if !e.started {
		e.header()
	}
	mark := len(e.buf)
	var err error
	switch e.f {
	case FormatCSV:
		e.buf, err = e.csvRow(e.buf, r)
	case FormatJSON:
		e.buf, err = e.jsonRow(e.buf, r)
	case FormatILP:
		e.buf, err = e.ilpRow(e.buf, r)
	default:
		e.buf, err = e.tableRow(e.buf, r)
	}
	if err != nil {
		e.buf = e.buf[:mark]
		return err
	}
	e.rows++
	if len(e.buf) >= flushAt {
		return e.flush()
	}
	return nil
}

// Flush writes the header if it is not out yet, then hands everything
// buffered to the writer (it does not flush the writer itself: a caller
// streaming over HTTP calls its http.Flusher after). It writes no trailer.
func (e *Encoder) Flush() error {
	if e.err != nil {
		return e.err
	}
	if !e.started && !e.closed {
		e.header()
	}
	return e.flush()
}

// Close writes the header if no row did, then the trailer, and flushes.
// It does not close the writer. Later calls return the same result.
func (e *Encoder) Close() error {
	if e.closed || e.err != nil {
		return e.err
	}
	if e.f == FormatJSON {
		switch {
		case !e.started:
			e.buf = append(e.buf, "[]\n"...)
		case e.rows == 0:
			e.buf = append(e.buf, "]\n"...)
		default:
			e.buf = append(e.buf, "\n]\n"...)
		}
		e.started = true
	} else if !e.started {
		e.header()
	}
	e.closed = true
	return e.flush()
}

func (e *Encoder) flush() error {
	if e.err != nil || len(e.buf) == 0 {
		return e.err
	}
	n, err := e.w.Write(e.buf)
	e.written += int64(n)
	if err == nil && n < len(e.buf) {
		err = io.ErrShortWrite
	}
	e.buf = e.buf[:0]
	if err != nil {
		e.err = fmt.Errorf("query: write output: %w", err)
	}
	return e.err
}

// header appends what goes before the first row.
func (e *Encoder) header() {
	e.started = true
	b := e.buf
	switch e.f {
	case FormatCSV:
		b = append(b, "ts"...)
		for _, c := range e.schema.Cols[1:] {
			b = append(b, ',')
			b = appendCSV(b, c.Name)
		}
		b = append(b, '\n')
	case FormatJSON:
		b = append(b, "[\n"...)
	case FormatTable:
		start := len(b)
		b = append(b, "ts"...)
		if e.tsf == TsNs {
			b = alignRight(b, start, 2, tableNsWidth)
		} else {
			b = padRight(b, 2, tableTsWidth)
		}
		for i, c := range e.schema.Cols[1:] {
			b = append(b, tableSep...)
			n := len(b)
			var w int
			b, w = appendTableText(b, c.Name)
			b = align(b, n, w, e.cols[i].width)
		}
		b = endLine(b, start)
	}
	e.buf = b
}

// appendTs appends ts as the encoder's TsFormat prints it (rfc3339
// unquoted).
func (e *Encoder) appendTs(b []byte, ts int64) []byte {
	if e.tsf == TsNs {
		return strconv.AppendInt(b, ts, 10)
	}
	return e.times.append(b, ts)
}

// csvRow: ts, then every column in schema order; NaN is an empty field.
func (e *Encoder) csvRow(b []byte, r store.Row) ([]byte, error) {
	b = e.appendTs(b, r.Ts())
	for i := range e.cols {
		c := &e.cols[i]
		b = append(b, ',')
		switch c.col.Type {
		case store.TypeSym:
			s, _, err := e.sym(r.Sym(c.col))
			if err != nil {
				return b, err
			}
			b = append(b, s...)
		case store.TypeF64:
			if v := r.F64(c.col); !math.IsNaN(v) {
				b = appendFloat(b, v)
			}
		case store.TypeI64:
			b = strconv.AppendInt(b, r.I64(c.col), 10)
		case store.TypeBool:
			b = appendBool(b, r.Bool(c.col))
		}
	}
	return append(b, '\n'), nil
}

// jsonRow: one object per row, rows separated by ",\n"; NaN and the
// infinities (which JSON cannot spell) are null.
func (e *Encoder) jsonRow(b []byte, r store.Row) ([]byte, error) {
	if e.rows > 0 {
		b = append(b, ",\n"...)
	}
	b = append(b, `{"ts":`...)
	if e.tsf == TsNs {
		b = strconv.AppendInt(b, r.Ts(), 10)
	} else {
		b = append(b, '"')
		b = e.times.append(b, r.Ts())
		b = append(b, '"')
	}
	for i := range e.cols {
		c := &e.cols[i]
		b = append(b, c.key...)
		switch c.col.Type {
		case store.TypeSym:
			s, _, err := e.sym(r.Sym(c.col))
			if err != nil {
				return b, err
			}
			b = append(b, s...)
		case store.TypeF64:
			if v := r.F64(c.col); math.IsNaN(v) || math.IsInf(v, 0) {
				b = append(b, "null"...)
			} else {
				b = appendFloat(b, v)
			}
		case store.TypeI64:
			b = strconv.AppendInt(b, r.I64(c.col), 10)
		case store.TypeBool:
			b = appendBool(b, r.Bool(c.col))
		}
	}
	return append(b, '}'), nil
}

// ilpRow: measurement, the sym columns as tags (an empty symbol, which a
// tag cannot carry, is left out), the other columns as fields (f64 as a
// float, i64 with "i", bool as t/f; NaN and the infinities, which the line
// protocol cannot carry, are left out), and ts in ns. A row whose fields
// are all left out still gets its line, with its tags and no field set;
// one with no tag either has no line ("m 123" would read as a field set
// "123"): it is skipped.
func (e *Encoder) ilpRow(b []byte, r store.Row) ([]byte, error) {
	start := len(b)
	b = append(b, e.meas...)
	tagged := false
	for i := range e.cols {
		c := &e.cols[i]
		if c.col.Type != store.TypeSym {
			continue
		}
		s, _, err := e.sym(r.Sym(c.col))
		if err != nil {
			return b, err
		}
		if len(s) > 0 {
			b = append(b, c.key...)
			b = append(b, s...)
			tagged = true
		}
	}
	b = append(b, ' ')
	nf := 0
	for i := range e.cols {
		c := &e.cols[i]
		switch c.col.Type {
		case store.TypeSym:
			continue
		case store.TypeF64:
			v := r.F64(c.col)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			b = e.ilpKey(b, c, nf)
			b = appendFloat(b, v)
		case store.TypeI64:
			b = e.ilpKey(b, c, nf)
			b = strconv.AppendInt(b, r.I64(c.col), 10)
			b = append(b, 'i')
		case store.TypeBool:
			b = e.ilpKey(b, c, nf)
			if r.Bool(c.col) {
				b = append(b, 't')
			} else {
				b = append(b, 'f')
			}
		}
		nf++
	}
	if nf > 0 {
		b = append(b, ' ')
	} else if !tagged {
		return b[:start], nil
	}
	b = strconv.AppendInt(b, r.Ts(), 10)
	return append(b, '\n'), nil
}

func (e *Encoder) ilpKey(b []byte, c *colEnc, nf int) []byte {
	if nf > 0 {
		b = append(b, ',')
	}
	return append(b, c.key...)
}

// tableRow: fixed-width columns two spaces apart, numbers right-aligned,
// trailing blanks trimmed.
func (e *Encoder) tableRow(b []byte, r store.Row) ([]byte, error) {
	start := len(b)
	if e.tsf == TsNs {
		b = strconv.AppendInt(b, r.Ts(), 10)
		b = alignRight(b, start, len(b)-start, tableNsWidth)
	} else {
		b = e.times.append(b, r.Ts())
	}
	for i := range e.cols {
		c := &e.cols[i]
		b = append(b, tableSep...)
		n := len(b)
		switch c.col.Type {
		case store.TypeSym:
			s, w, err := e.sym(r.Sym(c.col))
			if err != nil {
				return b, err
			}
			b = append(b, s...)
			b = align(b, n, w, c.width)
			continue
		case store.TypeF64:
			b = appendFloat(b, r.F64(c.col))
		case store.TypeI64:
			b = strconv.AppendInt(b, r.I64(c.col), 10)
		case store.TypeBool:
			b = appendBool(b, r.Bool(c.col))
		}
		b = align(b, n, len(b)-n, c.width)
	}
	return endLine(b, start), nil
}

// align pads the value b[n:], w runes wide, to width (negative:
// left-aligned).
func align(b []byte, n, w, width int) []byte {
	if width < 0 {
		return padRight(b, w, -width)
	}
	return alignRight(b, n, w, width)
}

// padRight appends blanks after a value w runes wide up to width.
func padRight(b []byte, w, width int) []byte {
	for ; w < width; w++ {
		b = append(b, ' ')
	}
	return b
}

// alignRight moves the value b[n:], w runes wide, right so that it ends
// at width, blanks before it.
func alignRight(b []byte, n, w, width int) []byte {
	pad := width - w
	if pad <= 0 {
		return b
	}
	l := len(b)
	b = padRight(b, 0, pad)
	copy(b[n+pad:], b[n:l])
	for i := n; i < n+pad; i++ {
		b[i] = ' '
	}
	return b
}

// endLine trims the blanks at the end of the line that began at start and
// ends it.
func endLine(b []byte, start int) []byte {
	for len(b) > start && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return append(b, '\n')
}

// sym returns symbol id's name encoded for the format, and for the table
// format its width in runes.
func (e *Encoder) sym(id uint32) ([]byte, int, error) {
	if int(id) < len(e.syms) {
		if s := e.syms[id]; s.ok {
			return e.arena[s.off : s.off+s.n : s.off+s.n], int(s.w), nil
		}
	}
	return e.addSym(id)
}

// addSym looks symbol id up, encodes it and caches it.
func (e *Encoder) addSym(id uint32) ([]byte, int, error) {
	if e.symName == nil {
		return nil, 0, fmt.Errorf("query: symbol %d: the encoder has no symbol lookup", id)
	}
	name, err := e.symName(id)
	if err != nil {
		return nil, 0, fmt.Errorf("query: symbol %d: %w", id, err)
	}
	off := len(e.arena)
	w := 0
	switch e.f {
	case FormatCSV:
		e.arena = appendCSV(e.arena, name)
	case FormatJSON:
		e.arena = appendJSONString(e.arena, name)
	case FormatILP:
		for i := 0; i < len(name); i++ {
			if name[i] == '\n' || name[i] == '\r' {
				return nil, 0, fmt.Errorf("query: symbol %q cannot be a line-protocol tag value: it holds a line break", name)
			}
		}
		e.arena = appendEscaped(e.arena, name, ilpKeySpecial)
	default:
		e.arena, w = appendTableText(e.arena, name)
	}
	if len(e.arena) > math.MaxUint32 {
		return nil, 0, fmt.Errorf("query: symbol %d: more than 4 GiB of symbol names", id)
	}
	if int(id) >= len(e.syms) {
		e.syms = append(e.syms, make([]symEnc, int(id)+1-len(e.syms))...)
	}
	e.syms[id] = symEnc{off: uint32(off), n: uint32(len(e.arena) - off), w: int32(w), ok: true}
	return e.arena[off:], w, nil
}
