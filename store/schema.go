package store

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// ColType is a column's type. Values are on-disk contract.
type ColType uint8

const (
	TypeTs   ColType = 1 // int64 ns since the Unix epoch, UTC; always column 0
	TypeSym  ColType = 2 // uint32 id into the table's symbol dictionary
	TypeF64  ColType = 3 // IEEE 754 float64
	TypeI64  ColType = 4 // int64
	TypeBool ColType = 5 // one byte, 0 or 1
)

func (t ColType) String() string {
	switch t {
	case TypeTs:
		return "ts"
	case TypeSym:
		return "sym"
	case TypeF64:
		return "f64"
	case TypeI64:
		return "i64"
	case TypeBool:
		return "bool"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// ParseColType parses "sym", "f64", "i64", "bool" or "ts".
func ParseColType(s string) (ColType, error) {
	for t := TypeTs; t <= TypeBool; t++ {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown column type %q (want sym, f64, i64 or bool)", ErrSchema, s)
}

// Width is the bytes a column of type t takes in a row.
func (t ColType) Width() int { return t.width() }

func (t ColType) width() int {
	switch t {
	case TypeTs, TypeF64, TypeI64:
		return 8
	case TypeSym:
		return 4
	case TypeBool:
		return 1
	}
	return 0
}

// Column names one column of a schema.
type Column struct {
	Name string
	Type ColType
}

// Col locates a column inside an encoded row: its byte offset and type.
type Col struct {
	Off  int
	Type ColType
}

// Limits of the schema encoding (on-disk contract).
const (
	MaxColumns    = 60
	MaxColNameLen = 55
	CheckSize     = 4    // the row check word at the end of every row
	MaxSymLen     = 4096 // the longest symbol, in bytes
)

// Schema is a table's column list and the row layout derived from it.
// Column 0 is always "ts". A Schema is immutable once built and safe for
// concurrent use.
type Schema struct {
	Cols    []Column
	offs    []int
	RowSize int // bytes per row, a multiple of 8, check word included
	SymCol  int // index of the first sym column of the base (the postings key), or -1
	// nbase is how many columns are laid out by width (NewSchema); the
	// columns after them were added to a table that had rows (AddColumn)
	// and are laid out in the order added, each after the bytes of all
	// before it.
	nbase int
}

// NewSchema builds a schema from its columns; cols[0] must be {"ts", TypeTs}.
// Row layout: ts at 0, then the 8-byte columns in schema order, then the sym
// columns, then the bool columns, zero padding, and the 4-byte check word in
// the row's last 4 bytes; the row size is rounded up to 8.
func NewSchema(cols ...Column) (*Schema, error) {
	if len(cols) == 0 || cols[0].Name != "ts" || cols[0].Type != TypeTs {
		return nil, fmt.Errorf("%w: the first column must be ts", ErrSchema)
	}
	if len(cols) > MaxColumns {
		return nil, fmt.Errorf("%w: %d columns, at most %d", ErrSchema, len(cols), MaxColumns)
	}
	s := &Schema{Cols: append([]Column(nil), cols...), offs: make([]int, len(cols)), SymCol: -1, nbase: len(cols)}
	seen := map[string]bool{}
	for i, c := range cols {
		if c.Name == "" || len(c.Name) > MaxColNameLen || strings.ContainsRune(c.Name, 0) {
			return nil, fmt.Errorf("%w: column %d: name %q must be 1..%d bytes", ErrSchema, i, c.Name, MaxColNameLen)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("%w: duplicate column %q", ErrSchema, c.Name)
		}
		seen[c.Name] = true
		if c.Type.width() == 0 || (i > 0 && c.Type == TypeTs) {
			return nil, fmt.Errorf("%w: column %q: bad type %v", ErrSchema, c.Name, c.Type)
		}
		if c.Type == TypeSym && s.SymCol < 0 {
			s.SymCol = i
		}
	}
	off := 0
	for _, w := range []int{8, 4, 1} {
		for i, c := range cols {
			if c.Type.width() == w {
				s.offs[i] = off
				off += w
			}
		}
	}
	s.RowSize = (off + CheckSize + 7) &^ 7
	return s, nil
}

// AddColumn returns the schema with c added as its last column. The new
// column goes after every byte of the old layout's rows but their check
// word (at the old row size minus 4), so every column keeps its offset and
// a row of the old layout is shorter than a row of the new one: Row's
// accessors read a column that lies past a row's data as its missing value
// (NaN, 0, false, NoSym: the empty symbol). The postings column stays the base
// schema's first sym column, if any: an added sym column is never the
// postings key.
func (s *Schema) AddColumn(c Column) (*Schema, error) {
	if len(s.Cols) >= MaxColumns {
		return nil, fmt.Errorf("%w: %d columns, at most %d", ErrSchema, len(s.Cols)+1, MaxColumns)
	}
	if c.Name == "" || len(c.Name) > MaxColNameLen || strings.ContainsRune(c.Name, 0) {
		return nil, fmt.Errorf("%w: column name %q must be 1..%d bytes", ErrSchema, c.Name, MaxColNameLen)
	}
	if s.Index(c.Name) >= 0 {
		return nil, fmt.Errorf("%w: duplicate column %q", ErrSchema, c.Name)
	}
	if c.Type.width() == 0 || c.Type == TypeTs {
		return nil, fmt.Errorf("%w: column %q: bad type %v", ErrSchema, c.Name, c.Type)
	}
	off := s.RowSize - CheckSize
	g := &Schema{
		Cols:    append(append([]Column(nil), s.Cols...), c),
		offs:    append(append([]int(nil), s.offs...), off),
		RowSize: (off + c.Type.width() + CheckSize + 7) &^ 7,
		SymCol:  s.SymCol,
		nbase:   s.nbase,
	}
	return g, nil
}

// Base is how many leading columns were laid out together when the table
// was created; the rest were added by AddColumn, one at a time.
func (s *Schema) Base() int { return s.nbase }

// Prefix returns the schema of the first n columns, Base() <= n <= len(Cols):
// the layout rows had before the later columns were added.
func (s *Schema) Prefix(n int) *Schema {
	if n < s.nbase || n > len(s.Cols) {
		panic(fmt.Sprintf("store: Prefix(%d) of a schema of %d columns, %d of them base", n, len(s.Cols), s.nbase))
	}
	if n == len(s.Cols) {
		return s
	}
	p := &Schema{Cols: s.Cols[:n:n], offs: s.offs[:n:n], SymCol: s.SymCol, nbase: s.nbase}
	if n == s.nbase {
		p.RowSize = (s.baseEnd() + CheckSize + 7) &^ 7
	} else {
		last := s.Cols[n-1]
		p.RowSize = (s.offs[n-1] + last.Type.width() + CheckSize + 7) &^ 7
	}
	return p
}

// baseEnd is the end of the base columns' bytes.
func (s *Schema) baseEnd() int {
	end := 0
	for i := range s.nbase {
		end = max(end, s.offs[i]+s.Cols[i].Type.width())
	}
	return end
}

// Layout returns the number of columns of the layout whose rows are
// rowSize bytes (one of the sizes the table's rows had as it grew), or -1.
// Row sizes grow strictly with every column added.
func (s *Schema) Layout(rowSize int) int {
	for n := len(s.Cols); n >= s.nbase; n-- {
		rs := s.Prefix(n).RowSize
		if rs == rowSize {
			return n
		}
		if rs < rowSize {
			break
		}
	}
	return -1
}

// Has reports whether row (of any of the table's layouts) holds column c;
// a row laid out before c was added does not.
func Has(row Row, c Col) bool { return c.Off+c.Type.width() <= len(row)-CheckSize }

// MustSchema is NewSchema for tests and fixed schemas; it panics on error.
func MustSchema(cols ...Column) *Schema {
	s, err := NewSchema(cols...)
	if err != nil {
		panic(err)
	}
	return s
}

// TickSchema is the schema the demo and benchmarks use: ts, sym, price, size
// (32-byte rows).
func TickSchema() *Schema {
	return MustSchema(Column{"ts", TypeTs}, Column{"sym", TypeSym}, Column{"price", TypeF64}, Column{"size", TypeI64})
}

// Col returns the column with the given name.
func (s *Schema) Col(name string) (Col, bool) {
	for i, c := range s.Cols {
		if c.Name == name {
			return Col{Off: s.offs[i], Type: c.Type}, true
		}
	}
	return Col{}, false
}

// ColAt returns column i's location.
func (s *Schema) ColAt(i int) Col { return Col{Off: s.offs[i], Type: s.Cols[i].Type} }

// Index returns the position of the named column, or -1.
func (s *Schema) Index(name string) int {
	for i, c := range s.Cols {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Equal reports whether two schemas have the same columns in the same order.
func (s *Schema) Equal(o *Schema) bool {
	if len(s.Cols) != len(o.Cols) {
		return false
	}
	for i := range s.Cols {
		if s.Cols[i] != o.Cols[i] {
			return false
		}
	}
	return true
}

// String renders the schema as "ts:ts,sym:sym,price:f64".
func (s *Schema) String() string {
	var b strings.Builder
	for i, c := range s.Cols {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c.Name)
		b.WriteByte(':')
		b.WriteString(c.Type.String())
	}
	return b.String()
}

// NewRow returns a zeroed row buffer of the schema's row size.
func (s *Schema) NewRow() Row { return make(Row, s.RowSize) }

// Column entries in a header: 64 bytes each (on-disk contract):
// name [56]byte zero padded, type u8 @56, added u8 @57 (1: laid out by
// AddColumn, after the base columns), offset u16 @58, pad [4].
const colEntrySize = 64

// SchemaBytes is the size MarshalSchema writes: u32 column count, u32 row
// size, then 64 bytes per column.
func (s *Schema) SchemaBytes() int { return 8 + colEntrySize*len(s.Cols) }

// MarshalSchema writes the schema into dst (at least SchemaBytes long).
func (s *Schema) MarshalSchema(dst []byte) {
	le := binary.LittleEndian
	le.PutUint32(dst[0:], uint32(len(s.Cols)))
	le.PutUint32(dst[4:], uint32(s.RowSize))
	for i, c := range s.Cols {
		e := dst[8+i*colEntrySize : 8+(i+1)*colEntrySize]
		clear(e)
		copy(e[:56], c.Name)
		e[56] = byte(c.Type)
		if i >= s.nbase {
			e[57] = 1
		}
		le.PutUint16(e[58:], uint16(s.offs[i]))
	}
}

// UnmarshalSchema decodes a schema written by MarshalSchema and checks that
// the stored layout is the one this version derives.
func UnmarshalSchema(b []byte) (*Schema, error) {
	le := binary.LittleEndian
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: schema area too short", ErrSchema)
	}
	n := int(le.Uint32(b[0:]))
	if n < 1 || n > MaxColumns || 8+n*colEntrySize > len(b) {
		return nil, fmt.Errorf("%w: column count %d out of range", ErrSchema, n)
	}
	cols := make([]Column, n)
	nbase := n
	for i := range cols {
		e := b[8+i*colEntrySize:]
		name := e[:56]
		if j := strings.IndexByte(string(name), 0); j >= 0 {
			name = name[:j]
		}
		cols[i] = Column{Name: string(name), Type: ColType(e[56])}
		switch {
		case e[57] > 1 || (e[57] == 0 && nbase < n):
			return nil, fmt.Errorf("%w: column %q: bad added mark %d", ErrSchema, cols[i].Name, e[57])
		case e[57] == 1 && nbase == n:
			nbase = i
		}
	}
	if nbase == 0 {
		return nil, fmt.Errorf("%w: column ts marked added", ErrSchema)
	}
	s, err := NewSchema(cols[:nbase]...)
	if err != nil {
		return nil, err
	}
	for _, c := range cols[nbase:] {
		if s, err = s.AddColumn(c); err != nil {
			return nil, err
		}
	}
	if int(le.Uint32(b[4:])) != s.RowSize {
		return nil, fmt.Errorf("%w: stored row size %d, layout gives %d", ErrSchema, le.Uint32(b[4:]), s.RowSize)
	}
	for i := range cols {
		if got := int(le.Uint16(b[8+i*colEntrySize+58:])); got != s.offs[i] {
			return nil, fmt.Errorf("%w: column %q stored at offset %d, layout gives %d", ErrSchema, cols[i].Name, got, s.offs[i])
		}
	}
	return s, nil
}
