package store

import (
	"encoding/binary"
	"math"
)

// Row is one encoded row: RowSize bytes, little-endian, laid out as the
// schema says, the check word in the last 4 bytes. A Row handed out by a
// reader points into a read-only mapping; see the reader's doc for how long
// it stays valid.
type Row []byte

// NoSym is the symbol id a row reads for a sym column added to its table
// after the row was written (Schema.AddColumn); readers name it "", the
// empty symbol. A dictionary never gives it out.
const NoSym = ^uint32(0)

var le = binary.LittleEndian

// Ts returns the row's timestamp (ns since the Unix epoch).
func (r Row) Ts() int64 { return int64(le.Uint64(r)) }

// The getters read a column the row does not hold (a row written before
// the column was added to the table: Schema.AddColumn, Has) as its missing
// value: NaN, 0, NoSym (read as the empty symbol "") or false.

// F64 returns a float64 column.
func (r Row) F64(c Col) float64 {
	if c.Off+8 > len(r)-CheckSize {
		return math.NaN()
	}
	return math.Float64frombits(le.Uint64(r[c.Off:]))
}

// I64 returns an int64 column.
func (r Row) I64(c Col) int64 {
	if c.Off+8 > len(r)-CheckSize {
		return 0
	}
	return int64(le.Uint64(r[c.Off:]))
}

// Sym returns a sym column's dictionary id.
func (r Row) Sym(c Col) uint32 {
	if c.Off+4 > len(r)-CheckSize {
		return NoSym
	}
	return le.Uint32(r[c.Off:])
}

// Bool returns a bool column.
func (r Row) Bool(c Col) bool { return c.Off < len(r)-CheckSize && r[c.Off] != 0 }

// SetMissing stores column c's missing value: NaN, 0, NoSym or false (what
// the getters read for a row without the column).
func (r Row) SetMissing(c Col) {
	switch c.Type {
	case TypeF64:
		r.SetF64(c, math.NaN())
	case TypeSym:
		r.SetSym(c, NoSym)
	case TypeI64:
		r.SetI64(c, 0)
	case TypeBool:
		r.SetBool(c, false)
	}
}

// SetTs sets the timestamp.
func (r Row) SetTs(ts int64) { le.PutUint64(r, uint64(ts)) }

// SetF64 sets a float64 column.
func (r Row) SetF64(c Col, v float64) { le.PutUint64(r[c.Off:], math.Float64bits(v)) }

// SetI64 sets an int64 column.
func (r Row) SetI64(c Col, v int64) { le.PutUint64(r[c.Off:], uint64(v)) }

// SetSym sets a sym column to a dictionary id.
func (r Row) SetSym(c Col, id uint32) { le.PutUint32(r[c.Off:], id) }

// SetBool sets a bool column.
func (r Row) SetBool(c Col, v bool) {
	if v {
		r[c.Off] = 1
	} else {
		r[c.Off] = 0
	}
}
