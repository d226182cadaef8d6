package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"math"

	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/store"
)

// An HTTP write request's lines are parsed as its body streams in and
// staged here, compactly, until the writer goroutine checks and stores
// them all or none (sink.apply). What a request holds follows the rows it
// would store, not its text:
//
//   - Per table, a request-local layout of slots: one per key and kind
//     class the request has used for that table (a tag, or a field of one
//     kind), in the order the lines brought them (each line's new tags,
//     then its new fields). A line that brings a new slot starts a new
//     run; a run's rows have the layout's slots as it was then.
//   - A row is its timestamp (8 bytes), one value per slot of its run
//     (8 for a float or integer, 4 for a symbol, 1 for a boolean), then
//     one presence bit per slot (bit 0: the line had a timestamp; bit
//     i+1: slot i has a value). A tick line (sym, price, size) is 29
//     bytes; the table stores it in 32.
//   - Symbol strings are interned once per request and table (a
//     request-local dictionary, about 12 bytes a symbol besides its
//     name); a row holds their local ids, which the
//     writer goroutine maps to the table's dictionary when it stores the
//     rows, so a rejected request adds no symbol.
//   - Rows sit in blocks that grow from 4 KiB to 1 MiB and are never
//     copied, so a table's rows waste at most the unused end of one block.
//     The 1 MiB blocks, where a large request's rows are, are anonymous
//     mappings, off the Go heap: they cost what they hold, not twice that
//     at the garbage collector's pace, and go back to the system as soon
//     as the request ends (free).
//   - Line numbers (for a 400 naming the line) are kept as marks where a
//     table's next row is not on the next line (blank lines, comments,
//     another table's lines between).
//
// A stage belongs to one request's goroutine until it is handed to the
// writer goroutine, which reads it and hands it back (txn).

// slotClass is what a slot holds: a tag, or a field of one kind. A key
// may be used with several classes in one request (1i on one line, 1.5 on
// another); each is its own slot, and the table's rules decide whether the
// column takes it.
type slotClass uint8

const (
	classTag slotClass = iota
	classFloat
	classInt
	classUint
	classBool
	classString
	numClasses
)

func fieldClass(k lineproto.Kind) slotClass {
	switch k {
	case lineproto.KindInt:
		return classInt
	case lineproto.KindUint:
		return classUint
	case lineproto.KindBool:
		return classBool
	case lineproto.KindString:
		return classString
	}
	return classFloat
}

func (c slotClass) width() int {
	switch c {
	case classTag, classString:
		return 4
	case classBool:
		return 1
	}
	return 8
}

// kind is the field kind of a non-tag class.
func (c slotClass) kind() lineproto.Kind {
	switch c {
	case classInt:
		return lineproto.KindInt
	case classUint:
		return lineproto.KindUint
	case classBool:
		return lineproto.KindBool
	case classString:
		return lineproto.KindString
	}
	return lineproto.KindFloat
}

// fits says whether a value of class c may be stored in a column of type t.
func (c slotClass) fits(t store.ColType) bool {
	if c == classTag {
		return t == store.TypeSym
	}
	return kindFits(c.kind(), t)
}

const (
	stageBlockMin = 4 << 10
	stageBlockMax = 1 << 20
	// Estimates of what the stage's bookkeeping costs, for the memory
	// bound: a map entry with its string, a table's structures.
	stageSlotCost  = 96
	stageTableCost = 1 << 10
	stageMarkCost  = 16
)

type stageSlot struct {
	key   []byte // the key, unescaped (owned)
	class slotClass
	off   int // the value's offset in a row
}

// stageRun is a stretch of a table's rows that share a layout: the first
// nslots slots.
type stageRun struct {
	nslots  int
	rowSize int
	presOff int // offset of the presence bits in a row
	rows    int
}

// lineMark says that the table's row number row came from line line; the
// rows after it, up to the next mark, from the lines after it.
type lineMark struct{ row, line uint64 }

// stagedTable is one table's staged rows.
type stagedTable struct {
	name   []byte
	slots  []stageSlot
	names  map[string]int      // key → index in slotOf
	slotOf [][numClasses]int16 // per key: slot per class, -1 none
	runs   []stageRun          // never empty once a row is staged
	// The request-local dictionary: symbol i is symBuf[symEnd[i-1]:
	// symEnd[i]], found through symTab, an open-addressing hash table of
	// ids+1 (0: empty) at most half full, hashed with seed. No allocation
	// per symbol, and about 12 bytes besides its name.
	symEnd []uint32
	symBuf []byte
	symTab []uint32
	seed   maphash.Seed
	blocks [][]byte   // len of each is what it holds
	mapped [][]byte   // the blocks that are anonymous mappings
	marks  []lineMark // line numbers counted from base
	base   uint64     // the lines before the stage's chunk (setBase)
	rows   uint64     //
	line   uint64     // the line of the last row
	// The last line's keys and their slots: lines from one client repeat
	// their keys, so most lines skip the map lookups.
	lastKeys  [][]byte
	lastClass []slotClass
	lastSlot  []int16
}

// stage is one request's staged lines (see above).
type stage struct {
	tables []*stagedTable
	byName map[string]*stagedTable
	last   *stagedTable
	rows   uint64
	// truncLine, when not 0, is the line after which staging stopped: a
	// table had more keys than it can have columns, so the request fails
	// at that line or before (the checks name which).
	truncLine uint64
	slots     []int16 // the current line's slot per key
	// firstBlock, when not 0, is the size of the first table's first
	// block: a chunk's stage (http_chunks.go) knows about how much it
	// will hold, and starts there rather than doubling up to it.
	firstBlock int
	// mem is what the stage holds, in bytes (estimated for the maps);
	// charge is called before it grows (nil: no bound).
	mem    int64
	charge func(n int64) error
}

func newStage(charge func(int64) error) *stage {
	return &stage{byName: map[string]*stagedTable{}, charge: charge}
}

func (s *stage) grow(n int64) error {
	s.mem += n
	if s.charge != nil {
		return s.charge(n)
	}
	return nil
}

// errStageMemory wraps what charge returned: the stage could not grow.
type errStageMemory struct{ err error }

func (e *errStageMemory) Error() string { return e.err.Error() }
func (e *errStageMemory) Unwrap() error { return e.err }

// add stages one parsed line (its number lineNo). It returns a
// *lineproto.LineError for a line no table could take (too many keys, a
// symbol too long), an *errStageMemory when the memory bound refuses it,
// and stop = true when staging must end after this line (truncLine).
func (s *stage) add(l *lineproto.Line, lineNo uint64) (stop bool, err error) {
	n := len(l.Tags) + len(l.Fields)
	if n >= store.MaxColumns {
		return false, tooManyKeys(n)
	}
	for i := range l.Tags {
		if len(l.Tags[i].Value) > store.MaxSymLen {
			return false, symTooLong("tag", l.Tags[i].Key, len(l.Tags[i].Value))
		}
	}
	for i := range l.Fields {
		if f := &l.Fields[i]; f.Kind == lineproto.KindString && len(f.S) > store.MaxSymLen {
			return false, symTooLong("string field", f.Key, len(f.S))
		}
	}
	t := s.last
	if t == nil || !bytes.Equal(t.name, l.Measurement) {
		if t = s.byName[string(l.Measurement)]; t == nil {
			if err := s.grow(stageTableCost + int64(len(l.Measurement))); err != nil {
				return false, &errStageMemory{err}
			}
			t = &stagedTable{name: bytes.Clone(l.Measurement), names: map[string]int{}, seed: maphash.MakeSeed()}
			s.byName[string(t.name)] = t
			s.tables = append(s.tables, t)
		}
		s.last = t
	}
	grew, err := s.resolve(t, l)
	if err != nil {
		return false, err
	}
	if grew && len(t.names) >= store.MaxColumns {
		// More keys than a table has columns besides ts: this line, or
		// one before it, is a bad line.
		stop = true
		s.truncLine = lineNo
	}
	run := &t.runs[len(t.runs)-1]
	row, err := s.alloc(t, run.rowSize)
	if err != nil {
		return false, err
	}
	pres := row[run.presOff:run.rowSize]
	clear(pres)
	if l.HasTs {
		binary.LittleEndian.PutUint64(row, uint64(l.Ts))
		pres[0] = 1
	} else {
		binary.LittleEndian.PutUint64(row, 0)
	}
	for i := range l.Tags {
		k := s.slots[i]
		id, err := s.intern(t, l.Tags[i].Value)
		if err != nil {
			return false, err
		}
		binary.LittleEndian.PutUint32(row[t.slots[k].off:], id)
		pres[(k+1)>>3] |= 1 << ((k + 1) & 7)
	}
	for i := range l.Fields {
		f := &l.Fields[i]
		k := s.slots[len(l.Tags)+i]
		b := row[t.slots[k].off:]
		switch f.Kind {
		case lineproto.KindFloat:
			binary.LittleEndian.PutUint64(b, math.Float64bits(f.F))
		case lineproto.KindInt, lineproto.KindUint:
			binary.LittleEndian.PutUint64(b, uint64(f.I))
		case lineproto.KindBool:
			b[0] = 0
			if f.B {
				b[0] = 1
			}
		case lineproto.KindString:
			id, err := s.intern(t, f.S)
			if err != nil {
				return false, err
			}
			binary.LittleEndian.PutUint32(b, id)
		}
		pres[(k+1)>>3] |= 1 << ((k + 1) & 7)
	}
	if t.rows == 0 || lineNo != t.line+1 {
		if cap(t.marks) == len(t.marks) {
			if err := s.grow(int64(max(4, cap(t.marks))) * stageMarkCost); err != nil {
				return false, &errStageMemory{err}
			}
		}
		t.marks = append(t.marks, lineMark{row: t.rows, line: lineNo})
	}
	t.line = lineNo
	t.rows++
	run.rows++
	s.rows++
	return stop, nil
}

// resolve sets s.slots to the slot of each of l's keys (tags, then
// fields) in table t, adding the slots t lacks; when it adds any, it
// starts a new run and reports grew.
func (s *stage) resolve(t *stagedTable, l *lineproto.Line) (grew bool, err error) {
	n := len(l.Tags) + len(l.Fields)
	s.slots = s.slots[:0]
	if n == len(t.lastKeys) {
		hit := true
		for i := range l.Tags {
			if t.lastClass[i] != classTag || !bytes.Equal(l.Tags[i].Key, t.lastKeys[i]) {
				hit = false
				break
			}
		}
		for i := 0; hit && i < len(l.Fields); i++ {
			j := len(l.Tags) + i
			if t.lastClass[j] != fieldClass(l.Fields[i].Kind) || !bytes.Equal(l.Fields[i].Key, t.lastKeys[j]) {
				hit = false
			}
		}
		if hit {
			s.slots = append(s.slots, t.lastSlot...)
			return false, nil
		}
	}
	nslots := len(t.slots)
	for i := range l.Tags {
		k, err := s.slot(t, l.Tags[i].Key, classTag)
		if err != nil {
			return false, err
		}
		s.slots = append(s.slots, k)
	}
	for i := range l.Fields {
		k, err := s.slot(t, l.Fields[i].Key, fieldClass(l.Fields[i].Kind))
		if err != nil {
			return false, err
		}
		s.slots = append(s.slots, k)
	}
	grew = len(t.slots) > nslots || len(t.runs) == 0
	if grew {
		end := 8
		if len(t.slots) > 0 {
			last := t.slots[len(t.slots)-1]
			end = last.off + last.class.width()
		}
		t.runs = append(t.runs, stageRun{nslots: len(t.slots), presOff: end, rowSize: end + (len(t.slots)+8)/8})
	}
	// Remember this line's keys (views of the slots' own copies).
	t.lastKeys, t.lastClass, t.lastSlot = t.lastKeys[:0], t.lastClass[:0], t.lastSlot[:0]
	for _, k := range s.slots {
		t.lastKeys = append(t.lastKeys, t.slots[k].key)
		t.lastClass = append(t.lastClass, t.slots[k].class)
		t.lastSlot = append(t.lastSlot, k)
	}
	return grew, nil
}

// slot returns the slot of key in class c, adding it.
func (s *stage) slot(t *stagedTable, key []byte, c slotClass) (int16, error) {
	ni, ok := t.names[string(key)]
	if !ok {
		if err := s.grow(stageSlotCost + int64(len(key))); err != nil {
			return 0, &errStageMemory{err}
		}
		ni = len(t.slotOf)
		t.names[string(key)] = ni
		t.slotOf = append(t.slotOf, [numClasses]int16{-1, -1, -1, -1, -1, -1})
	}
	if k := t.slotOf[ni][c]; k >= 0 {
		return k, nil
	}
	off := 8
	if len(t.slots) > 0 {
		last := t.slots[len(t.slots)-1]
		off = last.off + last.class.width()
	}
	k := int16(len(t.slots))
	t.slots = append(t.slots, stageSlot{key: bytes.Clone(key), class: c, off: off})
	t.slotOf[ni][c] = k
	return k, nil
}

// intern returns the request-local id of symbol v in table t.
func (s *stage) intern(t *stagedTable, v []byte) (uint32, error) {
	mask := uint64(len(t.symTab) - 1)
	if len(t.symTab) > 0 {
		for i := maphash.Bytes(t.seed, v) & mask; ; i = (i + 1) & mask {
			e := t.symTab[i]
			if e == 0 {
				break
			}
			if bytes.Equal(t.sym(e-1), v) {
				return e - 1, nil
			}
		}
	}
	id := uint32(len(t.symEnd))
	if err := s.growSyms(t, len(v)); err != nil {
		return 0, err
	}
	t.symBuf = append(t.symBuf, v...)
	t.symEnd = append(t.symEnd, uint32(len(t.symBuf)))
	t.place(id)
	return id, nil
}

// place puts id in t.symTab.
func (t *stagedTable) place(id uint32) {
	mask := uint64(len(t.symTab) - 1)
	i := maphash.Bytes(t.seed, t.sym(id)) & mask
	for t.symTab[i] != 0 {
		i = (i + 1) & mask
	}
	t.symTab[i] = id + 1
}

// growSyms makes room for one more symbol of n bytes, charging what the
// dictionary's slices grow by.
func (s *stage) growSyms(t *stagedTable, n int) error {
	var more int64
	if len(t.symBuf)+n > cap(t.symBuf) {
		more += int64(max(2*cap(t.symBuf), len(t.symBuf)+n, 1<<10))
	}
	if len(t.symEnd) == cap(t.symEnd) {
		more += 4 * int64(max(2*cap(t.symEnd), 64))
	}
	grow := 2*(len(t.symEnd)+1) > len(t.symTab)
	if grow {
		more += 4 * int64(max(2*len(t.symTab), 128))
	}
	if more > 0 {
		if err := s.grow(more); err != nil {
			return &errStageMemory{err}
		}
	}
	if len(t.symBuf)+n > cap(t.symBuf) {
		t.symBuf = append(make([]byte, 0, max(2*cap(t.symBuf), len(t.symBuf)+n, 1<<10)), t.symBuf...)
	}
	if len(t.symEnd) == cap(t.symEnd) {
		t.symEnd = append(make([]uint32, 0, max(2*cap(t.symEnd), 64)), t.symEnd...)
	}
	if grow {
		t.symTab = make([]uint32, max(2*len(t.symTab), 128))
		for id := range uint32(len(t.symEnd)) {
			t.place(id)
		}
	}
	return nil
}

// sym is the name of t's request-local symbol id.
func (t *stagedTable) sym(id uint32) []byte {
	start := uint32(0)
	if id > 0 {
		start = t.symEnd[id-1]
	}
	end := t.symEnd[id]
	return t.symBuf[start:end:end]
}

// alloc returns n bytes for a row at the end of t's last block, starting
// a new block (charged first) when they do not fit.
func (s *stage) alloc(t *stagedTable, n int) ([]byte, error) {
	if k := len(t.blocks); k > 0 {
		b := t.blocks[k-1]
		if len(b)+n <= cap(b) {
			t.blocks[k-1] = b[:len(b)+n]
			return b[len(b) : len(b)+n], nil
		}
	}
	size := stageBlockMin
	if k := len(t.blocks); k > 0 {
		size = min(2*cap(t.blocks[k-1]), stageBlockMax)
	} else if s.firstBlock > 0 && t == s.tables[0] {
		if size = max(s.firstBlock, stageBlockMin); size > stageBlockMax/2 {
			size = stageBlockMax // mapped, as a large request's blocks are
		}
	}
	size = max(size, n)
	if err := s.grow(int64(size)); err != nil {
		return nil, &errStageMemory{err}
	}
	var b []byte
	if size == stageBlockMax {
		if m, err := mmap.MapAnon(size); err == nil {
			// Fault the block in with one call rather than a trap per
			// page (measured: most of the staging time otherwise).
			_ = mmap.PopulateWrite(m)
			t.mapped = append(t.mapped, m)
			b = m[:n]
		}
	}
	if b == nil {
		b = make([]byte, n, size)
	}
	t.blocks = append(t.blocks, b)
	return b, nil
}

// trim gives back the unused end of each table's last block, whole pages
// of it, when the block is a mapping: a chunk's stage (http_chunks.go)
// starts with a 1 MiB block, which its rows may fill in part. No row may
// be added after.
func (s *stage) trim() {
	for _, t := range s.tables {
		if len(t.blocks) == 0 || len(t.mapped) == 0 {
			continue
		}
		b, m := t.blocks[len(t.blocks)-1], t.mapped[len(t.mapped)-1]
		if &b[:1][0] != &m[0] {
			continue // the last block is on the heap
		}
		keep := (len(b) + pageSize - 1) &^ (pageSize - 1)
		if keep >= len(m) || mmap.Release(m[keep:]) != nil {
			continue
		}
		t.blocks[len(t.blocks)-1] = b[:len(b):keep]
		s.mem -= int64(len(m) - keep)
		if s.charge != nil {
			_ = s.charge(-int64(len(m) - keep)) // never refused
		}
	}
}

const pageSize = 4 << 10

// setBase says that the stage's lines come after base lines of the
// request: the line numbers it has counted from its first are offset.
func (s *stage) setBase(base uint64) {
	for _, t := range s.tables {
		t.base = base
	}
	if s.truncLine != 0 {
		s.truncLine += base
	}
}

// free gives the stage's mapped blocks back to the system. Nothing may
// read the stage after.
func (s *stage) free() {
	for _, t := range s.tables {
		for _, m := range t.mapped {
			_ = mmap.Unmap(m)
		}
		t.mapped, t.blocks = nil, nil
	}
	s.tables, s.byName, s.last = nil, nil, nil
}

// stageIter walks a staged table's rows in order.
type stageIter struct {
	t     *stagedTable
	run   int // index of the current row's run
	inRun int // rows of the run before the current one
	blk   int
	off   int // offset of the next row in blocks[blk]
	row   uint64
	mark  int
	// The current row, its run, its line, and whether it is its run's
	// first row.
	cur   []byte
	r     *stageRun
	line  uint64
	first bool
}

func (it *stageIter) init(t *stagedTable) {
	*it = stageIter{t: t, run: -1}
}

// next moves to the next row and reports false after the last.
func (it *stageIter) next() bool {
	t := it.t
	if it.row >= t.rows {
		return false
	}
	it.first = false
	if it.run < 0 || it.inRun == t.runs[it.run].rows {
		it.run++
		it.inRun = 0
		it.first = true
		it.r = &t.runs[it.run]
	}
	n := it.r.rowSize
	if it.off+n > len(t.blocks[it.blk]) {
		it.blk++
		it.off = 0
	}
	it.cur = t.blocks[it.blk][it.off : it.off+n]
	it.off += n
	if it.mark+1 < len(t.marks) && t.marks[it.mark+1].row == it.row {
		it.mark++
	}
	m := t.marks[it.mark]
	it.line = t.base + m.line + (it.row - m.row)
	it.inRun++
	it.row++
	return true
}

// ts is the current row's timestamp and whether its line had one.
func (it *stageIter) ts() (int64, bool) {
	return int64(binary.LittleEndian.Uint64(it.cur)), it.cur[it.r.presOff]&1 != 0
}

// has reports whether slot k has a value in the current row.
func (it *stageIter) has(k int) bool {
	return it.cur[it.r.presOff+(k+1)>>3]&(1<<((k+1)&7)) != 0
}

// any reports whether the current row has a value in any slot of mask
// (presence bits, as in a row).
func (it *stageIter) any(mask []byte) bool {
	p := it.cur[it.r.presOff:]
	for i, m := range mask {
		if p[i]&m != 0 {
			return true
		}
	}
	return false
}

// line rebuilds the current row as the line it came from, as far as the
// table's rules can tell: the tags, then the fields, each in slot order
// (which is the line's own order for the keys it brought first). The
// slices point into the stage.
func (it *stageIter) asLine(l *lineproto.Line) {
	t := it.t
	l.Measurement = t.name
	l.Tags, l.Fields = l.Tags[:0], l.Fields[:0]
	l.Ts, l.HasTs = it.ts()
	for k := 0; k < it.r.nslots; k++ {
		if sl := &t.slots[k]; sl.class == classTag && it.has(k) {
			tag := l.AddTag()
			tag.Key, tag.Value = sl.key, t.sym(binary.LittleEndian.Uint32(it.cur[sl.off:]))
		}
	}
	for k := 0; k < it.r.nslots; k++ {
		sl := &t.slots[k]
		if sl.class == classTag || !it.has(k) {
			continue
		}
		f := l.AddField()
		*f = lineproto.Field{Key: sl.key, Kind: sl.class.kind()}
		v := it.cur[sl.off:]
		switch sl.class {
		case classFloat:
			f.F = math.Float64frombits(binary.LittleEndian.Uint64(v))
		case classInt, classUint:
			f.I = int64(binary.LittleEndian.Uint64(v))
		case classBool:
			f.B = v[0] != 0
		case classString:
			f.S = t.sym(binary.LittleEndian.Uint32(v))
		}
	}
}

// errStageTruncated is the error of a request whose staging stopped
// (truncLine) when the checks found no bad line: it cannot happen, since
// a table cannot take the keys that stopped it.
var errStageTruncated = errors.New("ingest: more keys for one table than it can have columns")
