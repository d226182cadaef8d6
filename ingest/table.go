package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// layout maps a table's column names to their place in the row. It is
// what a line is checked against; building one needs no writer, so an HTTP
// request can be checked whole against the schema its own first line
// would create before anything is stored.
type layout struct {
	name   string
	schema *store.Schema
	cols   map[string]int // column name → schema index
	at     []store.Col    // schema index → offset and type
	// The last line's keys and the columns they resolved to: lines from one
	// client repeat their key order, so most lines skip the map lookups.
	lastKeys [][]byte
	lastIdx  []int
	lastTags int // how many of lastKeys are tags
	// symTag is the place among lastKeys' tags of the one that fills
	// the postings column (Schema.SymCol), or -1: the symbol the
	// sink's look-ahead (writer.Ahead) pushes for a record.
	symTag int
}

func newLayout(name string, s *store.Schema) *layout {
	lo := &layout{name: name, schema: s, cols: make(map[string]int, len(s.Cols)), at: make([]store.Col, len(s.Cols)), symTag: -1}
	for i, c := range s.Cols {
		lo.cols[c.Name] = i
		lo.at[i] = s.ColAt(i)
	}
	return lo
}

// kindType is the column type a field of kind k makes: float fields make
// f64 columns; integer and unsigned fields i64 columns; booleans bool
// columns; strings sym columns, like tags.
func kindType(k lineproto.Kind) store.ColType {
	switch k {
	case lineproto.KindInt, lineproto.KindUint:
		return store.TypeI64
	case lineproto.KindBool:
		return store.TypeBool
	case lineproto.KindString:
		return store.TypeSym
	}
	return store.TypeF64
}

// schemaFor is the schema a table gets from its first line: ts, then the
// tags as sym columns, then the fields, each in the line's order. Float
// fields make f64 columns; integer and unsigned fields make i64 columns;
// booleans make bool columns; strings make sym columns, like tags.
func schemaFor(l *lineproto.Line) (*store.Schema, *lineproto.LineError) {
	cols := make([]store.Column, 0, 1+len(l.Tags)+len(l.Fields))
	cols = append(cols, store.Column{Name: "ts", Type: store.TypeTs})
	for _, t := range l.Tags {
		cols = append(cols, store.Column{Name: string(t.Key), Type: store.TypeSym})
	}
	for _, f := range l.Fields {
		cols = append(cols, store.Column{Name: string(f.Key), Type: kindType(f.Kind)})
	}
	for _, t := range l.Tags {
		if len(t.Value) > store.MaxSymLen {
			return nil, symTooLong("tag", t.Key, len(t.Value))
		}
	}
	for _, f := range l.Fields {
		if f.Kind == lineproto.KindString && len(f.S) > store.MaxSymLen {
			return nil, symTooLong("string field", f.Key, len(f.S))
		}
	}
	for _, c := range cols[1:] {
		if c.Name == "ts" {
			return nil, &lineproto.LineError{Reason: lineproto.ReasonName, Msg: `"ts" is the timestamp column; give the time as the line's last element`}
		}
	}
	s, err := store.NewSchema(cols...)
	if err != nil {
		return nil, &lineproto.LineError{Reason: lineproto.ReasonName, Msg: fmt.Sprintf("cannot create table %q from this line: %v", l.Measurement, err)}
	}
	return s, nil
}

// resolve maps every key of l to its column and checks the value's type,
// filling idx (one entry per tag, then per field). A key the table lacks
// gets -1 in idx and is counted in missing: the line adds it as a column
// (grow). It changes nothing but the layout's key cache, which it sets
// only for a line that adds no column.
func (lo *layout) resolve(l *lineproto.Line, idx []int) (missing int, err *lineproto.LineError) {
	n := len(l.Tags) + len(l.Fields)
	if n == len(lo.lastKeys) && len(l.Tags) == lo.lastTags {
		hit := true
		for i := range l.Tags {
			if !bytes.Equal(l.Tags[i].Key, lo.lastKeys[i]) {
				hit = false
				break
			}
		}
		if hit {
			for i := range l.Fields {
				if !bytes.Equal(l.Fields[i].Key, lo.lastKeys[len(l.Tags)+i]) {
					hit = false
					break
				}
			}
		}
		if hit {
			copy(idx, lo.lastIdx)
			return 0, lo.checkKinds(l, idx)
		}
	}
	for i := range l.Tags {
		c, ok := lo.cols[string(l.Tags[i].Key)]
		if !ok {
			c = -1
			missing++
		}
		idx[i] = c
	}
	for i := range l.Fields {
		c, ok := lo.cols[string(l.Fields[i].Key)]
		if !ok {
			c = -1
			missing++
		}
		idx[len(l.Tags)+i] = c
	}
	if err := lo.checkKinds(l, idx); err != nil {
		return 0, err
	}
	if missing == 0 {
		lo.remember(l, idx[:n])
	}
	return missing, nil
}

// grow returns the columns l adds to the table, the keys resolve gave -1
// in idx (tags as sym columns, then fields by their kind, in the line's
// order, as schemaFor makes them), and the schema the table has once they
// are added. A line that would take the table past store.MaxColumns, or
// name a column the store cannot take, is a bad line. It changes nothing.
func (lo *layout) grow(l *lineproto.Line, idx []int) ([]store.Column, *store.Schema, *lineproto.LineError) {
	var add []store.Column
	for i := range l.Tags {
		if idx[i] < 0 {
			add = append(add, store.Column{Name: string(l.Tags[i].Key), Type: store.TypeSym})
		}
	}
	for i := range l.Fields {
		if idx[len(l.Tags)+i] < 0 {
			add = append(add, store.Column{Name: string(l.Fields[i].Key), Type: kindType(l.Fields[i].Kind)})
		}
	}
	if n := len(lo.schema.Cols) + len(add); n > store.MaxColumns {
		var names []string
		for i, c := range add {
			if i == 3 {
				names = append(names, "...")
				break
			}
			names = append(names, strconv.Quote(c.Name))
		}
		return nil, nil, &lineproto.LineError{Reason: lineproto.ReasonTableFull, Msg: fmt.Sprintf("adding %d columns (%s) would give table %s %d columns, more than the %d a table can have (ts included)", len(add), strings.Join(names, ", "), lo.name, n, store.MaxColumns)}
	}
	s := lo.schema
	for _, c := range add {
		g, err := s.AddColumn(c)
		if err != nil {
			return nil, nil, &lineproto.LineError{Reason: lineproto.ReasonName, Msg: fmt.Sprintf("cannot add column %q (%v) to table %s: %v", c.Name, c.Type, lo.name, err)}
		}
		s = g
	}
	return add, s, nil
}

// remember caches l's key order (allocates only when the order changes).
func (lo *layout) remember(l *lineproto.Line, idx []int) {
	lo.lastKeys = lo.lastKeys[:0]
	for i := range l.Tags {
		lo.lastKeys = append(lo.lastKeys, bytes.Clone(l.Tags[i].Key))
	}
	for i := range l.Fields {
		lo.lastKeys = append(lo.lastKeys, bytes.Clone(l.Fields[i].Key))
	}
	lo.lastIdx = append(lo.lastIdx[:0], idx...)
	lo.lastTags = len(l.Tags)
	lo.symTag = -1
	for i := range l.Tags {
		if idx[i] == lo.schema.SymCol {
			lo.symTag = i
			break
		}
	}
}

func (lo *layout) checkKinds(l *lineproto.Line, idx []int) *lineproto.LineError {
	for i := range l.Tags {
		if c := idx[i]; c >= 0 && lo.at[c].Type != store.TypeSym {
			return &lineproto.LineError{Reason: lineproto.ReasonType, Msg: fmt.Sprintf("tag %q: column %q of table %s is %v, not sym (send it as a field)", l.Tags[i].Key, lo.schema.Cols[c].Name, lo.name, lo.at[c].Type)}
		}
		if n := len(l.Tags[i].Value); n > store.MaxSymLen {
			return symTooLong("tag", l.Tags[i].Key, n)
		}
	}
	for i := range l.Fields {
		f := &l.Fields[i]
		c := idx[len(l.Tags)+i]
		if c >= 0 && !kindFits(f.Kind, lo.at[c].Type) {
			return lo.mismatch(f, c)
		}
		if f.Kind == lineproto.KindString && len(f.S) > store.MaxSymLen {
			return symTooLong("string field", f.Key, len(f.S))
		}
	}
	return nil
}

func symTooLong(what string, key []byte, n int) *lineproto.LineError {
	return &lineproto.LineError{Reason: lineproto.ReasonValue, Msg: fmt.Sprintf("%s %q: value is %d bytes, a symbol is at most %d", what, key, n, store.MaxSymLen)}
}

func (lo *layout) mismatch(f *lineproto.Field, c int) *lineproto.LineError {
	name, typ := lo.schema.Cols[c].Name, lo.at[c].Type
	var hint string
	switch {
	case typ == store.TypeTs:
		hint = "; give the time as the line's last element"
	case typ == store.TypeSym:
		hint = " (send it as a tag or a quoted string)"
	case typ == store.TypeI64 && f.Kind == lineproto.KindFloat:
		hint = " (write integers with an i suffix: 100i)"
	case typ == store.TypeF64:
		hint = " (write a number: 1.5)"
	case typ == store.TypeBool:
		hint = " (write t or f)"
	}
	return &lineproto.LineError{Reason: lineproto.ReasonType, Msg: fmt.Sprintf("field %q: column %q of table %s is %v, got a %v value%s", f.Key, name, lo.name, typ, f.Kind, hint)}
}

// table is a table the sink writes: its writer, its layout and a row
// buffer. Owned by the sink's goroutine.
type table struct {
	*layout
	w        *writer.Writer
	ahead    *writer.Ahead // w's look-ahead, used by applyBatch at many symbols
	log      *slog.Logger
	row      store.Row
	idx      []int
	emptySym uint32 // id of "" (a missing tag), valid when haveEmpty
	haveEmpt bool
	dirty    bool   // rows appended since the last publish (in sink.touched)
	accepted uint64 // rows appended since the last metrics update
	rejected uint64
	far      *farRow // the row that put the newest ts too far ahead, once looked up
	// waiters counts the HTTP handlers waiting in w.WaitDurable, from
	// their goroutines: writer.AddColumn rebuilds the writer in place,
	// so it waits for them (the flusher makes their rows durable
	// meanwhile, in a flush interval).
	waiters sync.WaitGroup

	// stale is set while the table is in sink.stale: its counters may
	// have moved since the sink last copied them; wrote is when a row
	// was last appended to it (the sink's clock, ns).
	stale bool
	wrote int64
}

func newTable(name string, w *writer.Writer, log *slog.Logger) *table {
	s := w.Schema()
	return &table{layout: newLayout(name, s), w: w, ahead: w.Ahead(), log: log, row: s.NewRow(), idx: make([]int, store.MaxColumns)}
}

// addColumns adds the columns l names that the table lacks (resolve gave
// them -1 in t.idx), each with the type its value implies, and rebuilds
// the layout, key cache and row buffer from the grown schema. The whole
// line has been checked by then (resolve), and grow checks the columns,
// so a line that is bad for any reason adds nothing. Adding a column
// publishes and syncs the rows appended before it (writer.AddColumn
// closes and reopens the table). A failure of the writer is a write
// failure and leaves the writer closed.
func (t *table) addColumns(l *lineproto.Line) error {
	add, _, lerr := t.grow(l, t.idx)
	if lerr != nil {
		return lerr
	}
	t.waiters.Wait()
	if err := t.w.AddColumns(add...); err != nil {
		return err // the writer is closed: the caller drops the table
	}
	for _, c := range add {
		t.log.Info("ingest: added column", "table", t.name, "column", c.Name, "type", c.Type.String())
	}
	t.rebuild()
	return nil
}

// rebuild makes the layout, key cache and row buffer those of the
// writer's schema.
func (t *table) rebuild() {
	s := t.w.Schema()
	t.layout = newLayout(t.name, s)
	t.row = s.NewRow()
	t.haveEmpt = false
}

// errAddColumns is what fill returns, having changed nothing, for a good
// line that names columns the table lacks: the caller checks what fill
// cannot (the line's time), calls addColumns and fills again.
var errAddColumns = errors.New("ingest: the line adds columns")

// fill resolves l and writes its values into t.row: missing f64 columns are
// NaN, missing i64 columns 0, missing bools false and missing tags the
// empty symbol "". The ts is left for the caller. Symbols are interned
// here, so fill runs only once the line is known to be good.
func (t *table) fill(l *lineproto.Line) error {
	if n := len(l.Tags) + len(l.Fields); n >= len(t.idx) {
		return tooManyKeys(n)
	}
	missing, lerr := t.resolve(l, t.idx)
	if lerr != nil {
		return lerr
	}
	if missing > 0 {
		return errAddColumns
	}
	var set uint64 // bit i: column i has a value
	for i := range l.Tags {
		c := t.idx[i]
		id, err := t.w.Symbol(l.Tags[i].Value)
		if err != nil {
			return err
		}
		t.row.SetSym(t.at[c], id)
		set |= 1 << c
	}
	for i := range l.Fields {
		f := &l.Fields[i]
		c := t.idx[len(l.Tags)+i]
		col := t.at[c]
		switch {
		case f.Kind == lineproto.KindString:
			id, err := t.w.Symbol(f.S)
			if err != nil {
				return err
			}
			t.row.SetSym(col, id)
		case f.Kind == lineproto.KindBool:
			t.row.SetBool(col, f.B)
		case f.Kind == lineproto.KindFloat:
			t.row.SetF64(col, f.F)
		case col.Type == store.TypeF64:
			t.row.SetF64(col, float64(f.I))
		default:
			t.row.SetI64(col, f.I)
		}
		set |= 1 << c
	}
	return t.fillMissing(set)
}

// fillMissing stores the defaults in every column set does not have: NaN
// for f64, 0 for i64, false for bool and the empty symbol "" for sym.
func (t *table) fillMissing(set uint64) error {
	if set|1 == 1<<len(t.at)-1 {
		return nil
	}
	for c := 1; c < len(t.at); c++ {
		if set&(1<<c) != 0 {
			continue
		}
		col := t.at[c]
		switch col.Type {
		case store.TypeF64:
			t.row.SetF64(col, math.NaN())
		case store.TypeI64:
			t.row.SetI64(col, 0)
		case store.TypeBool:
			t.row.SetBool(col, false)
		case store.TypeSym:
			if !t.haveEmpt {
				id, err := t.w.Symbol(nil)
				if err != nil {
					return err
				}
				t.emptySym, t.haveEmpt = id, true
			}
			t.row.SetSym(col, t.emptySym)
		}
	}
	return nil
}

// tooManyKeys is the bad line of n tags and fields, more than a table can
// have columns besides ts.
func tooManyKeys(n int) *lineproto.LineError {
	return &lineproto.LineError{Reason: lineproto.ReasonTableFull, Msg: fmt.Sprintf("line has %d tags and fields; a table has at most %d columns besides ts", n, store.MaxColumns-1)}
}

// asLineErr reports whether err is a bad line (rather than a write failure).
func asLineErr(err error) (*lineproto.LineError, bool) {
	var le *lineproto.LineError
	ok := errors.As(err, &le)
	return le, ok
}

// fillRecord is fill for the common case, straight from an encoded record
// (record.go) without decoding it into a Line: the record's keys are the
// table's cached key order, so each key costs one comparison. It reports
// false, having changed nothing, when the record needs the general path
// (another key order, or a value whose type the column does not take).
func (t *table) fillRecord(rec []byte) (bool, error) {
	le := binary.LittleEndian
	ntags, nfields := int(le.Uint16(rec[26:])), int(le.Uint16(rec[28:]))
	if ntags != t.lastTags || ntags+nfields != len(t.lastKeys) {
		return false, nil
	}
	p0 := recHeader + 4 + int(le.Uint32(rec[recHeader:]))
	// First pass: keys and value types; nothing is changed yet.
	p := p0
	for i := range ntags {
		var k []byte
		k, p = take32(rec, p)
		if !bytes.Equal(k, t.lastKeys[i]) {
			return false, nil
		}
		n := int(le.Uint32(rec[p:]))
		if n > store.MaxSymLen {
			return false, nil // the general path says why
		}
		p += 4 + n
	}
	for i := ntags; i < ntags+nfields; i++ {
		var k []byte
		k, p = take32(rec, p)
		kind := lineproto.Kind(rec[p])
		if !bytes.Equal(k, t.lastKeys[i]) || !kindFits(kind, t.at[t.lastIdx[i]].Type) {
			return false, nil
		}
		p += 9
		if kind == lineproto.KindString {
			n := int(le.Uint64(rec[p-8:]))
			if n > store.MaxSymLen {
				return false, nil // the general path says why
			}
			p += n
		}
	}
	// Second pass: the values.
	var set uint64
	p = p0
	for i := range ntags {
		p += 4 + int(le.Uint32(rec[p:]))
		var v []byte
		v, p = take32(rec, p)
		id, err := t.w.Symbol(v)
		if err != nil {
			return true, err
		}
		c := t.lastIdx[i]
		t.row.SetSym(t.at[c], id)
		set |= 1 << c
	}
	for i := ntags; i < ntags+nfields; i++ {
		p += 4 + int(le.Uint32(rec[p:]))
		kind, v := lineproto.Kind(rec[p]), le.Uint64(rec[p+1:])
		p += 9
		c := t.lastIdx[i]
		col := t.at[c]
		switch {
		case kind == lineproto.KindString:
			id, err := t.w.Symbol(rec[p : p+int(v)])
			if err != nil {
				return true, err
			}
			p += int(v)
			t.row.SetSym(col, id)
		case kind == lineproto.KindBool:
			t.row.SetBool(col, v != 0)
		case kind == lineproto.KindFloat || col.Type == store.TypeI64:
			le.PutUint64(t.row[col.Off:], v) // float bits into f64, int into i64
		default:
			t.row.SetF64(col, float64(int64(v))) // an integer into an f64 column
		}
		set |= 1 << c
	}
	return true, t.fillMissing(set)
}

// kindFits says whether a field of kind k may be stored in a column of type c.
func kindFits(k lineproto.Kind, c store.ColType) bool {
	switch k {
	case lineproto.KindFloat:
		return c == store.TypeF64
	case lineproto.KindInt, lineproto.KindUint:
		return c == store.TypeI64 || c == store.TypeF64
	case lineproto.KindBool:
		return c == store.TypeBool
	case lineproto.KindString:
		return c == store.TypeSym
	}
	return false
}
