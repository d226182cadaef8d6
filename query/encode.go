package query

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/store"
)

// Output buffering: rows are appended to one buffer that is handed to the
// writer when it passes the encoder's flush point: flushFirst at first,
// then, each time a full buffer goes out, twice the last up to flushMax,
// so that a long output goes out in fewer, larger writes (fewer system
// calls, and over HTTP fewer chunks: 10-20 % less CPU a row for a
// whole-table GET /query in BenchmarkHTTPQuery) while a short one costs
// no more memory than before. The buffer's capacity leaves rowRoom past the
// flush point for a long row, so that it does not grow in steady state.
const (
	flushFirst = 32 << 10
	flushMax   = 256 << 10
	rowRoom    = 16 << 10
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

// Column is one column of computed rows (bars, as-of joins): what
// NewValuesEncoder takes instead of a table's schema. Type is any
// store.ColType; a TypeTs column prints as the encoder's TsFormat says
// (ilp: an integer field). Dict picks, for a TypeSym column, which of
// NewValuesEncoder's symbol lookups names its ids (rows joined from two
// tables carry ids of two dictionaries).
type Column struct {
	Name string
	Type store.ColType
	Dict int
}

// Encoder writes rows to an io.Writer in one Format: either the rows of a
// table's schema (NewEncoder, Row) or computed rows described by a column
// list (NewValuesEncoder, Values). It buffers: nothing reaches the writer
// before Flush, Close or 32 KiB of output; past that, a long output goes
// out in writes that grow to 256 KiB. The header (the csv header
// row, the table format's header line) goes out before the first row, or
// at Flush or Close if there is none, so that an empty result is still a
// well-formed csv or table document; json (one object per line) and ilp
// have neither header nor trailer. A write error is sticky: every later
// call returns it.
//
// Row and Values allocate nothing in steady state. The exceptions are a
// symbol seen for the first time, whose name is looked up and cached,
// already encoded for the format, by id, and the buffer's growth (three
// times at most, in the first 224 KiB of output).
//
// An Encoder is not safe for concurrent use.
type Encoder struct {
	w      io.Writer
	f      Format
	tsf    TsFormat
	schema *store.Schema // nil for computed rows
	tsName string        // column 0's name
	tsKey  []byte        // json: `{"ts":`
	cols   []colEnc      // the columns after column 0, in order
	meas   []byte        // ilp: the measurement (table name)
	lp     lineproto.Encoder[[]byte]
	// ilp: the column a row with no field of its own gets one from: the
	// first f64 column (written as NaN, a missing value), or else the last
	// sym column (written as a string field rather than a tag); -1 for
	// none. See ilpRow.
	ilpNaN, ilpStr int
	dicts          []dict
	times          timeCache // TsRFC3339
	nsTimes        nsCache   // TsNs
	arena          []byte    // the encoded symbol names dicts point into
	vrow           store.Row // Values: the row's words, 8 bytes per column, then 4 unused
	buf            []byte
	flushAt        int // the flush point: see flushFirst
	rows           int64
	// written counts the bytes handed to the writer.
	written int64
	started bool
	closed  bool
	err     error // sticky write error
}

// colEnc is one output column after column 0.
type colEnc struct {
	name string
	col  store.Col
	dict int // TypeSym: index into dicts
	// key is what goes before the value: csv nothing, json `,"name":`,
	// ilp the name (lineproto escapes it).
	key []byte
	// width is the table format's column width; negative is left-aligned.
	width int
}

// dict is one symbol lookup and its cache of encoded names by id.
type dict struct {
	name func(id uint32) (string, error)
	syms []symEnc
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
	cols := make([]Column, len(s.Cols))
	for i, c := range s.Cols {
		cols[i] = Column{Name: c.Name, Type: c.Type}
	}
	e := newEncoder(w, f, tsf, cols, table, []func(uint32) (string, error){symName})
	e.schema = s
	for i := range e.cols {
		e.cols[i].col = s.ColAt(i + 1)
	}
	return e
}

// NewValuesEncoder returns an Encoder for computed rows with columns cols,
// written by Values. cols[0] must be a TypeTs column: the row's time (the
// ilp timestamp; never missing). Names must be unique; dicts are the
// symbol lookups that sym columns' Dict fields index. table names the ilp
// measurement.
func NewValuesEncoder(w io.Writer, f Format, tsf TsFormat, cols []Column, table string, dicts ...func(id uint32) (string, error)) (*Encoder, error) {
	if len(cols) == 0 || cols[0].Type != store.TypeTs {
		return nil, fmt.Errorf("query: computed rows need a ts column first")
	}
	seen := make(map[string]bool, len(cols))
	for i, c := range cols {
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("query: column %d: name %q is empty or repeated", i, c.Name)
		}
		seen[c.Name] = true
		switch c.Type {
		case store.TypeTs, store.TypeF64, store.TypeI64, store.TypeBool:
		case store.TypeSym:
			if c.Dict < 0 || c.Dict >= len(dicts) {
				return nil, fmt.Errorf("query: column %q: symbol lookup %d of %d", c.Name, c.Dict, len(dicts))
			}
		default:
			return nil, fmt.Errorf("query: column %q: bad type %v", c.Name, c.Type)
		}
	}
	e := newEncoder(w, f, tsf, cols, table, dicts)
	e.vrow = make(store.Row, 8*len(cols)+store.CheckSize) // (room for a check word: the getters read only columns before it)
	for i := range e.cols {
		e.cols[i].col = store.Col{Off: 8 * (i + 1), Type: cols[i+1].Type}
	}
	return e, nil
}

func newEncoder(w io.Writer, f Format, tsf TsFormat, cols []Column, table string, dicts []func(uint32) (string, error)) *Encoder {
	e := &Encoder{w: w, f: f, tsf: tsf, tsName: cols[0].Name, flushAt: flushFirst, buf: make([]byte, 0, flushFirst+rowRoom)}
	e.dicts = make([]dict, len(dicts))
	for i, d := range dicts {
		e.dicts[i].name = d
	}
	e.tsKey = append(appendJSONString([]byte{'{'}, e.tsName), ':')
	e.cols = make([]colEnc, len(cols)-1)
	for i, c := range cols[1:] {
		ce := &e.cols[i]
		ce.name, ce.dict = c.Name, c.Dict
		switch f {
		case FormatJSON:
			ce.key = appendJSONString([]byte{','}, c.Name)
			ce.key = append(ce.key, ':')
		case FormatILP:
			ce.key = []byte(c.Name)
		case FormatTable:
			_, nw := appendTableText(nil, c.Name)
			switch c.Type {
			case store.TypeSym:
				ce.width = -max(tableSymWidth, nw)
			case store.TypeF64:
				ce.width = max(tableF64Width, nw)
			case store.TypeI64:
				ce.width = max(tableI64Width, nw)
			case store.TypeTs:
				if tsf == TsNs {
					ce.width = max(tableNsWidth, nw)
				} else {
					ce.width = -max(tableTsWidth, nw)
				}
			default:
				ce.width = -max(tableBoolW, nw)
			}
		}
	}
	e.ilpNaN, e.ilpStr = -1, -1
	if f == FormatILP {
		e.meas = []byte(table)
		for i, c := range cols[1:] {
			switch {
			case c.Type == store.TypeF64 && e.ilpNaN < 0:
				e.ilpNaN = i
			case c.Type == store.TypeSym:
				e.ilpStr = i
			}
		}
	}
	return e
}

// Rows is the number of rows encoded so far.
func (e *Encoder) Rows() int64 { return e.rows }

// Written is the number of bytes handed to the writer so far: while it is
// 0, a caller that has not flushed can still drop the output (an HTTP
// handler can still answer with an error status).
func (e *Encoder) Written() int64 { return e.written }

// Row encodes one row (RowSize bytes of the encoder's schema, or of one of
// its earlier or later layouts: docs/FORMAT.md §15). The row is
// not kept: it may be a zero-copy view that changes after Row returns. A
// failed symbol lookup leaves nothing of the row in the output. An
// encoder of computed rows (NewValuesEncoder) takes Values, not Row.
func (e *Encoder) Row(r store.Row) error {
	if e.schema == nil {
		return errors.New("query: Row on an encoder of computed rows (use Values)")
	}
	if len(r) < e.schema.RowSize && e.schema.Layout(len(r)) < 0 {
		return fmt.Errorf("query: row is %d bytes, the schema's rows are %d", len(r), e.schema.RowSize)
	}
	// A row of another of the table's layouts (docs/FORMAT.md §15) reads
	// the columns it lacks as missing (store.Row's getters).
	return e.encode(r, nil)
}

// Values encodes one computed row of an encoder made by NewValuesEncoder:
// v holds one 64-bit word per column, in column order: an int64 for ts
// and i64 columns, math.Float64bits for f64, the symbol id for sym, 0 or
// 1 for bool. null, if not nil, has one entry per column, true where the
// value is missing (csv: an empty field, json: null, table: blank, ilp:
// the tag or field left out); column 0 cannot be missing. f64 NaN prints
// as in Row. Neither slice is kept.
func (e *Encoder) Values(v []uint64, null []bool) error {
	if e.vrow == nil {
		return errors.New("query: Values on an encoder of table rows (use Row)")
	}
	n := len(e.cols) + 1
	if len(v) != n || (null != nil && len(null) != n) {
		return fmt.Errorf("query: %d values and %d null marks for %d columns", len(v), len(null), n)
	}
	if null != nil && null[0] {
		return fmt.Errorf("query: column %q (the row's time) cannot be missing", e.tsName)
	}
	for i, w := range v {
		binary.LittleEndian.PutUint64(e.vrow[8*i:], w)
	}
	return e.encode(e.vrow, null)
}

// encode appends one row, with column i+1 missing where null[i+1].
func (e *Encoder) encode(r store.Row, null []bool) error {
	if err := e.begin(); err != nil {
		return err
	}
	var err error
	if e.buf, err = e.appendRow(e.buf, r, null); err != nil {
		return err
	}
	e.rows++
	if len(e.buf) >= e.flushAt {
		return e.flushFull()
	}
	return nil
}

// begin readies e for a row: its sticky error or closed state, else the
// header if it is not out yet.
func (e *Encoder) begin() error {
	if e.err != nil {
		return e.err
	}
	if e.closed {
		return errEncoderClosed
	}
	if !e.started {
		e.header()
	}
	return nil
}

// appendRow appends one row in the encoder's format to b; on an error it
// returns b as it was.
func (e *Encoder) appendRow(b []byte, r store.Row, null []bool) ([]byte, error) {
	mark := len(b)
	var err error
	switch e.f {
	case FormatCSV:
		b, err = e.csvRow(b, r, null)
	case FormatJSON:
		b, err = e.jsonRow(b, r, null)
	case FormatILP:
		b, err = e.ilpRow(b, r, null)
	default:
		b, err = e.tableRow(b, r, null)
	}
	if err != nil {
		return b[:mark], err
	}
	return b, nil
}

// flushFull is flush for a buffer past its flush point: after it, the
// next buffer's flush point is twice this one's, up to flushMax (made
// once per size: at most three times in an encoder's life).
func (e *Encoder) flushFull() error {
	if err := e.flush(); err != nil {
		return err
	}
	if e.flushAt < flushMax {
		e.flushAt = min(2*e.flushAt, flushMax)
		e.buf = make([]byte, 0, e.flushAt+rowRoom)
	}
	return nil
}

// missing reports whether column i+1 (cols[i]) is missing.
func missing(null []bool, i int) bool { return null != nil && null[i+1] }

// Flush writes the header if it is not out yet, then hands everything
// buffered to the writer (it does not flush the writer itself: a caller
// streaming over HTTP calls its http.Flusher after).
func (e *Encoder) Flush() error {
	if e.err != nil {
		return e.err
	}
	if !e.started && !e.closed {
		e.header()
	}
	return e.flush()
}

// Close writes the header if no row did, and flushes. It does not close
// the writer. Later calls return the same result.
func (e *Encoder) Close() error {
	if e.closed || e.err != nil {
		return e.err
	}
	if !e.started {
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

// header appends what goes before the first row: the csv header row or
// the table format's header line (json and ilp have none).
func (e *Encoder) header() {
	e.started = true
	b := e.buf
	switch e.f {
	case FormatCSV:
		b = appendCSV(b, e.tsName)
		for i := range e.cols {
			b = append(b, ',')
			b = appendCSV(b, e.cols[i].name)
		}
		b = append(b, '\n')
	case FormatTable:
		start := len(b)
		var w int
		b, w = appendTableText(b, e.tsName)
		if e.tsf == TsNs {
			b = alignRight(b, start, w, tableNsWidth)
		} else {
			b = padRight(b, w, tableTsWidth)
		}
		for i := range e.cols {
			b = append(b, tableSep...)
			n := len(b)
			b, w = appendTableText(b, e.cols[i].name)
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
		return e.nsTimes.append(b, ts)
	}
	return e.times.append(b, ts)
}

// csvRow: ts, then every column in order; NaN and a missing value are an
// empty field.
func (e *Encoder) csvRow(b []byte, r store.Row, null []bool) ([]byte, error) {
	b = e.appendTs(b, r.Ts())
	for i := range e.cols {
		c := &e.cols[i]
		b = append(b, ',')
		if missing(null, i) {
			continue
		}
		switch c.col.Type {
		case store.TypeSym:
			s, _, err := e.sym(c.dict, r.Sym(c.col))
			if err != nil {
				return b, err
			}
			b = append(b, s...)
		case store.TypeF64:
			if v := r.F64(c.col); !math.IsNaN(v) {
				b = appendFloat(b, v)
			}
		case store.TypeI64:
			b = appendInt(b, r.I64(c.col))
		case store.TypeBool:
			b = appendBool(b, r.Bool(c.col))
		case store.TypeTs:
			b = e.appendTs(b, r.I64(c.col))
		}
	}
	return append(b, '\n'), nil
}

// jsonRow: one object per line (NDJSON); NaN, the infinities (which JSON
// cannot spell) and a missing value are null.
func (e *Encoder) jsonRow(b []byte, r store.Row, null []bool) ([]byte, error) {
	b = append(b, e.tsKey...)
	b = e.jsonTs(b, r.Ts())
	for i := range e.cols {
		c := &e.cols[i]
		b = append(b, c.key...)
		if missing(null, i) {
			b = append(b, "null"...)
			continue
		}
		switch c.col.Type {
		case store.TypeSym:
			s, _, err := e.sym(c.dict, r.Sym(c.col))
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
			b = appendInt(b, r.I64(c.col))
		case store.TypeBool:
			b = appendBool(b, r.Bool(c.col))
		case store.TypeTs:
			b = e.jsonTs(b, r.I64(c.col))
		}
	}
	return append(b, '}', '\n'), nil
}

// jsonTs appends ts as a JSON number (TsNs) or string (TsRFC3339).
func (e *Encoder) jsonTs(b []byte, ts int64) []byte {
	if e.tsf == TsNs {
		return e.nsTimes.append(b, ts)
	}
	b = append(b, '"')
	b = e.times.append(b, ts)
	return append(b, '"')
}

// ilpRow: one line by lineproto.Encoder, the one writer of line
// protocol: the measurement, the sym columns as tags (an empty symbol,
// which a tag cannot carry, is left out), the other columns as fields
// (f64 as a float, i64 and ts columns after the first with "i", bool as
// t/f; NaN and the infinities, which InfluxDB cannot take, and missing
// values are left out), and ts in ns.
//
// The line protocol needs a field, and tickdb rejects a line of tags
// alone, so a row with no field of its own (every f64 NaN or missing,
// no other value) gets one: its first f64 column as NaN, which tickdb and
// QuestDB read as the missing value it is (InfluxDB, which has no row
// without a field, rejects the line), or, in a table of sym columns
// alone, its last sym column as a string field instead of a tag, which
// tickdb stores in that same sym column. A row with neither (only a time
// and missing values) has no line and is skipped.
func (e *Encoder) ilpRow(b []byte, r store.Row, null []bool) ([]byte, error) {
	nanCol, strCol := -1, -1
	if !e.ilpHasField(r, null) {
		switch {
		case e.ilpNaN >= 0:
			nanCol = e.ilpNaN
		case e.ilpStr >= 0:
			strCol = e.ilpStr
		default:
			return b, nil
		}
	}
	lp := &e.lp
	lp.Begin(b, e.meas)
	for i := range e.cols {
		c := &e.cols[i]
		if c.col.Type != store.TypeSym || i == strCol || missing(null, i) {
			continue
		}
		s, _, err := e.sym(c.dict, r.Sym(c.col))
		if err != nil {
			return b, err
		}
		if len(s) > 0 {
			lp.Tag(c.key, s)
		}
	}
	for i := range e.cols {
		c := &e.cols[i]
		if missing(null, i) {
			continue
		}
		switch c.col.Type {
		case store.TypeF64:
			if v := r.F64(c.col); !math.IsNaN(v) && !math.IsInf(v, 0) {
				lp.Float(c.key, v)
			}
		case store.TypeI64, store.TypeTs:
			lp.Int(c.key, r.I64(c.col))
		case store.TypeBool:
			lp.Bool(c.key, r.Bool(c.col))
		}
	}
	switch {
	case nanCol >= 0:
		lp.Float(e.cols[nanCol].key, math.NaN())
	case strCol >= 0:
		c := &e.cols[strCol]
		var s []byte
		if !missing(null, strCol) {
			var err error
			if s, _, err = e.sym(c.dict, r.Sym(c.col)); err != nil {
				return b, err
			}
		}
		lp.Str(c.key, s)
	}
	return lp.End(r.Ts())
}

// ilpHasField reports whether ilpRow writes a field of row r's own: a
// value in a column other than sym, and other than a NaN or infinite f64.
func (e *Encoder) ilpHasField(r store.Row, null []bool) bool {
	for i := range e.cols {
		c := &e.cols[i]
		if missing(null, i) {
			continue
		}
		switch c.col.Type {
		case store.TypeSym:
		case store.TypeF64:
			if v := r.F64(c.col); !math.IsNaN(v) && !math.IsInf(v, 0) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// tableRow: fixed-width columns two spaces apart, numbers right-aligned,
// a missing value blank, trailing blanks trimmed.
func (e *Encoder) tableRow(b []byte, r store.Row, null []bool) ([]byte, error) {
	start := len(b)
	if e.tsf == TsNs {
		b = e.nsTimes.append(b, r.Ts())
		b = alignRight(b, start, len(b)-start, tableNsWidth)
	} else {
		b = e.times.append(b, r.Ts())
	}
	for i := range e.cols {
		c := &e.cols[i]
		b = append(b, tableSep...)
		n := len(b)
		if missing(null, i) {
			b = align(b, n, 0, c.width)
			continue
		}
		switch c.col.Type {
		case store.TypeSym:
			s, w, err := e.sym(c.dict, r.Sym(c.col))
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
		case store.TypeTs:
			b = e.appendTs(b, r.I64(c.col))
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

// sym returns the name of symbol id of dictionary d encoded for the
// format, and for the table format its width in runes.
func (e *Encoder) sym(d int, id uint32) ([]byte, int, error) {
	if syms := e.dicts[d].syms; int(id) < len(syms) {
		if s := syms[id]; s.ok {
			return e.arena[s.off : s.off+s.n : s.off+s.n], int(s.w), nil
		}
	}
	return e.addSym(d, id)
}

// addSym looks symbol id of dictionary d up, encodes it and caches it.
func (e *Encoder) addSym(d int, id uint32) ([]byte, int, error) {
	dc := &e.dicts[d]
	if dc.name == nil {
		return nil, 0, fmt.Errorf("query: symbol %d: the encoder has no symbol lookup", id)
	}
	var name string
	if id != store.NoSym { // NoSym: "" (a sym column added after the row was written)
		var err error
		if name, err = dc.name(id); err != nil {
			return nil, 0, fmt.Errorf("query: symbol %d: %w", id, err)
		}
	}
	off := len(e.arena)
	w := 0
	switch e.f {
	case FormatCSV:
		e.arena = appendCSV(e.arena, name)
	case FormatJSON:
		e.arena = appendJSONString(e.arena, name)
	case FormatILP:
		e.arena = append(e.arena, name...) // lineproto escapes it per line
	default:
		e.arena, w = appendTableText(e.arena, name)
	}
	if len(e.arena) > math.MaxUint32 {
		return nil, 0, fmt.Errorf("query: symbol %d: more than 4 GiB of symbol names", id)
	}
	if id == store.NoSym {
		return e.arena[off:], w, nil // "" (a sym column added after the row), not cached by id
	}
	if int(id) >= len(dc.syms) {
		dc.syms = append(dc.syms, make([]symEnc, int(id)+1-len(dc.syms))...)
	}
	dc.syms[id] = symEnc{off: uint32(off), n: uint32(len(e.arena) - off), w: int32(w), ok: true}
	return e.arena[off:], w, nil
}
