package testutil

import (
	"fmt"
	"math"
	"strconv"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// SeqRows makes and checks the rows of the cross-process and crash tests.
// Every column of row seq is a function of seq alone, so a process that
// sees a row can tell on its own whether it is the right one: a stale row
// of a recycled live slot, a row of another segment, a zero or torn row all
// fail Check. The schema is store.TickSchema (ts, sym, price, size).
//
// Symbols: seven rows in eight name "S0" (so that one symbol's postings
// grow past a directory chunk, 261,632 rows, in a long run), the others
// "S1".."S<SeqSyms-1>" in turn, except that every SeqFreshEvery-th row
// names a symbol of its own, "N<seq/SeqFreshEvery>", so new dictionary
// entries keep arriving for as long as rows do.
type SeqRows struct {
	Schema *store.Schema
	// Late makes every SeqLateEvery-th row a late row: its ts is
	// SeqLateBy before its place (the table needs a late window of at
	// least SeqLateBy).
	Late  bool
	sym   store.Col
	price store.Col
	size  store.Col
}

const (
	// SeqSyms is the number of recurring symbols.
	SeqSyms = 7
	// SeqFreshEvery is how often a row names a new symbol.
	SeqFreshEvery = 1000
	// SeqT0 is the ts of row 0.
	SeqT0 = int64(1_700_000_000_000_000_000)
)

// NewSeqRows returns the generator for store.TickSchema.
func NewSeqRows() *SeqRows {
	s := store.TickSchema()
	g := &SeqRows{Schema: s}
	g.sym, _ = s.Col("sym")
	g.price, _ = s.Col("price")
	g.size, _ = s.Col("size")
	return g
}

// SeqLateEvery and SeqLateBy shape the late rows of SeqRows.Late.
const (
	SeqLateEvery = 97
	SeqLateBy    = 1500 // ns
)

// Ts is row seq's timestamp: two rows per microsecond, so ts has ties;
// with Late, every SeqLateEvery-th row is SeqLateBy early.
func (g *SeqRows) Ts(seq uint64) int64 {
	ts := SeqT0 + int64(seq/2)*1000
	if g.Late && seq%SeqLateEvery == SeqLateEvery-1 {
		ts -= SeqLateBy
	}
	return ts
}

// Price is row seq's price.
func (g *SeqRows) Price(seq uint64) float64 { return float64(seq)*0.25 + 1 }

// Size is row seq's size.
func (g *SeqRows) Size(seq uint64) int64 { return int64(seq*7 + 3) }

// Fresh reports whether row seq names a symbol of its own.
func (g *SeqRows) Fresh(seq uint64) bool { return seq%SeqFreshEvery == SeqFreshEvery-1 }

// SymName is the name of row seq's symbol.
func (g *SeqRows) SymName(seq uint64) string {
	if g.Fresh(seq) {
		return "N" + strconv.FormatUint(seq/SeqFreshEvery, 10)
	}
	return "S" + strconv.FormatUint(g.recurring(seq), 10)
}

// recurring is the number of a row's recurring symbol.
func (g *SeqRows) recurring(seq uint64) uint64 {
	if seq%8 != 0 {
		return 0
	}
	return 1 + (seq/8)%(SeqSyms-1)
}

// Fill sets every column of row for seq, with id the dictionary id of
// SymName(seq).
func (g *SeqRows) Fill(row store.Row, seq uint64, id uint32) {
	row.SetTs(g.Ts(seq))
	row.SetSym(g.sym, id)
	row.SetF64(g.price, g.Price(seq))
	row.SetI64(g.size, g.Size(seq))
}

// SymID returns row's symbol id.
func (g *SeqRows) SymID(row store.Row) uint32 { return row.Sym(g.sym) }

// Check reports how row differs from row seq, or nil. name resolves a
// symbol id (nil: the symbol is not checked).
func (g *SeqRows) Check(row store.Row, seq uint64, name func(uint32) (string, error)) error {
	if len(row) != g.Schema.RowSize {
		return fmt.Errorf("row %d: %d bytes, want %d", seq, len(row), g.Schema.RowSize)
	}
	if !format.Valid(seq, row) {
		return fmt.Errorf("row %d fails its check word (ts %d size %d)", seq, row.Ts(), row.I64(g.size))
	}
	if ts := row.Ts(); ts != g.Ts(seq) {
		return fmt.Errorf("row %d: ts %d, want %d", seq, ts, g.Ts(seq))
	}
	if p := row.F64(g.price); p != g.Price(seq) || math.IsNaN(p) {
		return fmt.Errorf("row %d: price %v, want %v", seq, p, g.Price(seq))
	}
	if s := row.I64(g.size); s != g.Size(seq) {
		return fmt.Errorf("row %d: size %d, want %d", seq, s, g.Size(seq))
	}
	if name != nil {
		id := row.Sym(g.sym)
		got, err := name(id)
		if err != nil {
			return fmt.Errorf("row %d: symbol %d: %w", seq, id, err)
		}
		if want := g.SymName(seq); got != want {
			return fmt.Errorf("row %d: symbol %d is %q, want %q", seq, id, got, want)
		}
	}
	return nil
}

// SymCache resolves symbol ids through lookup once per id.
type SymCache struct {
	names  []string
	lookup func(uint32) (string, error)
}

// NewSymCache caches lookup (for example a reader's Symbol method).
func NewSymCache(lookup func(uint32) (string, error)) *SymCache {
	return &SymCache{lookup: lookup}
}

// Name returns symbol id's name.
func (c *SymCache) Name(id uint32) (string, error) {
	if int(id) < len(c.names) && c.names[id] != "" {
		return c.names[id], nil
	}
	s, err := c.lookup(id)
	if err != nil {
		return "", err
	}
	for int(id) >= len(c.names) {
		c.names = append(c.names, "")
	}
	c.names[id] = s
	return s, nil
}

// WriterSyms maps row seq to a writer's symbol id, adding symbols through
// add (for example a writer's SymbolString) the first time they are named.
type WriterSyms struct {
	rec [SeqSyms]uint32
	ok  [SeqSyms]bool
	add func(string) (uint32, error)
	g   *SeqRows
}

// NewWriterSyms caches the ids of g's symbols as add returns them.
func NewWriterSyms(g *SeqRows, add func(string) (uint32, error)) *WriterSyms {
	return &WriterSyms{add: add, g: g}
}

// ID returns the id of row seq's symbol.
func (w *WriterSyms) ID(seq uint64) (uint32, error) {
	if w.g.Fresh(seq) {
		return w.add(w.g.SymName(seq))
	}
	k := w.g.recurring(seq)
	if !w.ok[k] {
		id, err := w.add(w.g.SymName(seq))
		if err != nil {
			return 0, err
		}
		w.rec[k], w.ok[k] = id, true
	}
	return w.rec[k], nil
}

// CheckCopy checks a copy of row seq in buf, taken from a zero-copy view.
// A live-slot view may have been recycled between the reader's generation
// check and the copy (its documented lifetime): then readRow (the reader's
// ReadRow) must give a checked copy that is right, and late is true.
func (g *SeqRows) CheckCopy(buf store.Row, seq uint64, name func(uint32) (string, error), readRow func(uint64, []byte) error) (late bool, err error) {
	err = g.Check(buf, seq, name)
	if err == nil {
		return false, nil
	}
	if rerr := readRow(seq, buf); rerr != nil {
		return true, fmt.Errorf("%v; ReadRow: %v", err, rerr)
	}
	if err2 := g.Check(buf, seq, name); err2 != nil {
		return true, fmt.Errorf("%v; checked copy: %v", err, err2)
	}
	return true, nil
}
