package engine

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// The table functions. ScanFunction is the one behind every table's view;
// the others take a time window and symbols to tickdb's indexes:
//
//	tickdb_scan('trades')                                               -- every row
//	tickdb_range('trades', '2024-01-02 14:30', '2024-01-02 15:00')      -- from_ts <= ts < to_ts, through the time index
//	tickdb_sym('trades', 'AAPL', '-infinity', 'infinity')               -- one symbol, through its index
//	tickdb_syms('trades', 'AAPL,MSFT', '2024-01-02', '2024-01-03')     -- several, one after the other
//
// DuckDB does not push a WHERE clause into a table function of its C API,
// so a WHERE on a view filters a scan of the whole table; these functions
// are the form that reaches the indexes. Their arguments are positional
// and all required: duckdb-go fails a call that leaves out a named
// argument, cannot tell a NULL argument from a value and cannot read a
// LIST argument, and DuckDB keeps only the first of several overloads
// registered through the C API. An open end of the window is '-infinity'
// or 'infinity'; tickdb_syms takes its symbols comma-separated.
const (
	ScanFunction  = "tickdb_scan"
	RangeFunction = "tickdb_range"
	SymFunction   = "tickdb_sym"
	SymsFunction  = "tickdb_syms"
)

// scanFunctions returns the table functions by name.
func (e *Engine) scanFunctions() (map[string]duckdb.ParallelChunkTableFunction, error) {
	varchar, err := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	if err != nil {
		return nil, err
	}
	tsns, err := duckdb.NewTypeInfo(duckdb.TYPE_ANY) // a timestamp, a string, or ns
	if err != nil {
		return nil, err
	}
	fns := map[string]duckdb.ParallelChunkTableFunction{}
	for name, args := range map[string][]duckdb.TypeInfo{
		ScanFunction:  {varchar},
		RangeFunction: {varchar, tsns, tsns},
		SymFunction:   {varchar, varchar, tsns, tsns},
		SymsFunction:  {varchar, varchar, tsns, tsns},
	} {
		fns[name] = duckdb.ParallelChunkTableFunction{
			Config: duckdb.TableFunctionConfig{Arguments: args},
			BindArgumentsContext: func(ctx context.Context, _ map[string]any, args ...any) (duckdb.ParallelChunkTableSource, error) {
				return e.bindScan(ctx, name, args)
			},
		}
	}
	fns[LatestFunction] = duckdb.ParallelChunkTableFunction{
		Config: duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{varchar, tsns}},
		BindArgumentsContext: func(ctx context.Context, _ map[string]any, args ...any) (duckdb.ParallelChunkTableSource, error) {
			return e.bindLatest(ctx, args)
		},
	}
	return fns, nil
}

// bound reads a window's end: a timestamp of any precision, an integer
// count of ns since the epoch, or a string as the CLI's --from and --to take
// it (RFC 3339, a date, integer ns; a space for the T as DuckDB prints
// timestamps), or '-infinity' / 'infinity' for an open end.
func bound(v any, name string) (int64, error) {
	switch v := v.(type) {
	case time.Time:
		return v.UnixNano(), nil // DuckDB's ±infinity arrive as ±MaxInt64 ns: the open ends
	case int64:
		return v, nil
	case int32:
		return int64(v), nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "infinity", "+infinity":
			return reader.ToEnd, nil
		case "-infinity":
			return math.MinInt64, nil
		}
		if len(v) > 10 && v[10] == ' ' {
			v = v[:10] + "T" + v[11:]
		}
		ns, err := query.ParseTime(v)
		if err != nil {
			// DuckDB's and psql's shorter forms: minutes, no zone (UTC).
			for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05.999999999"} {
				if t, perr := time.Parse(layout, v); perr == nil {
					return t.UnixNano(), nil
				}
			}
			return 0, fmt.Errorf("tickdb: %s: %w", name, err)
		}
		return ns, nil
	}
	return 0, fmt.Errorf("tickdb: %s is a %T; give a timestamp, a string or integer ns ('-infinity' and 'infinity' for open ends)", name, v)
}

// column is one column of a table as SQL sees it.
type column struct {
	name string
	typ  store.ColType
}

// sqlType is the DuckDB type of a tickdb column type.
func sqlType(t store.ColType) duckdb.Type {
	switch t {
	case store.TypeTs:
		return duckdb.TYPE_TIMESTAMP_NS
	case store.TypeSym:
		return duckdb.TYPE_VARCHAR
	case store.TypeF64:
		return duckdb.TYPE_DOUBLE
	case store.TypeI64:
		return duckdb.TYPE_BIGINT
	case store.TypeBool:
		return duckdb.TYPE_BOOLEAN
	}
	return duckdb.TYPE_INVALID
}

// scanSource is one table function call in one query: what to read,
// shared by the DuckDB threads that read it, each with a scanState.
//
// A scan of a whole window (no symbol) is split into morsels, slices of
// the window by ts that the threads take one at a time, each read through
// the time index with a reader of the thread's own: rows come in no
// particular order (ORDER BY ts orders them), compressed segments decoding
// on every thread. A symbol's rows are read on one thread, in the order
// RangeSym gives them.
type scanSource struct {
	*scanPlan
	card uint64
	list *stateList
}

// scanPlan is what the threads of a scan share. It does not point to the
// scanSource, so that a source DuckDB drops can be collected (and its
// readers given back) while its states are still listed.
type scanPlan struct {
	e     *Engine
	fn    string
	table string
	cols  []column

	from, to int64
	syms     []uint32 // the symbols asked for, in order; none: every row
	empty    bool     // symbols were asked for and the table has none of them

	morsels []int64      // morsel i is [morsels[i], morsels[i+1])
	next    atomic.Int64 // the next morsel to take
	workers int          // reader.ScanSpec.Workers
}

// stateList is a scan's per-thread states, to release when the source is
// dropped.
type stateList struct {
	mu     sync.Mutex
	states []*scanState
}

func (e *Engine) bindScan(ctx context.Context, fn string, args []any) (duckdb.ParallelChunkTableSource, error) {
	table, _ := args[0].(string)
	if table == "" {
		return nil, fmt.Errorf("%s: the first argument is a table name", fn)
	}
	r, err := e.takeReader(table)
	if err != nil {
		return nil, err
	}
	defer e.putReader(table, r)
	src := &scanSource{list: &stateList{}, scanPlan: &scanPlan{e: e, fn: fn, table: table, from: math.MinInt64, to: reader.ToEnd}}
	var names []string
	if len(args) == 4 {
		v, _ := args[1].(string)
		if fn == SymsFunction {
			names = strings.Split(v, ",")
		} else {
			names = append(names, v)
		}
		args = append(args[:1], args[2:]...)
	}
	if len(args) == 3 {
		if src.from, err = bound(args[1], "from_ts"); err == nil {
			src.to, err = bound(args[2], "to_ts")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn, err)
		}
	}
	s := r.Schema()
	if len(names) > 0 {
		if s.SymCol < 0 {
			return nil, fmt.Errorf("%s: table %q has no sym column to select symbols by", fn, table)
		}
		seen := map[uint32]bool{}
		for _, n := range names {
			id, ok := r.SymbolID([]byte(strings.TrimSpace(n)))
			if ok && !seen[id] {
				seen[id] = true
				src.syms = append(src.syms, id)
			}
		}
		src.empty = len(src.syms) == 0 // every symbol unknown: no rows, not an error (like WHERE sym = 'X')
	}
	for _, c := range s.Cols {
		src.cols = append(src.cols, column{name: c.Name, typ: c.Type})
	}
	snap, err := r.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("%s(%q): %w", fn, table, err)
	}
	src.card = snap.Len - snap.FirstSeq
	src.workers = e.opts.ScanWorkers
	if len(names) == 0 && src.card > 0 {
		if err := src.split(r, snap); err != nil {
			return nil, err
		}
	}
	// A scan that DuckDB drops before its end (a LIMIT, an error, a
	// cancelled query) gives its readers back when the source is collected.
	runtime.AddCleanup(src, func(l *stateList) {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, st := range l.states {
			st.release()
		}
	}, src.list)
	return src, nil
}

// split cuts the window into morsels at segment boundaries: the ts of the
// first row of each segment that starts inside the window, so that a thread
// reads (decodes) a segment whole rather than every thread a part of each.
// The first morsel reaches down to from and the last ends after the newest
// row published at bind time: rows published later with newer ts are not
// read. (With late rows, a morsel's rows may lie in the next segment too.)
func (src *scanPlan) split(r *reader.Reader, snap reader.Snapshot) error {
	hi := src.to
	if snap.LastTs < reader.ToEnd && snap.LastTs+1 < hi {
		hi = snap.LastTs + 1
	}
	src.morsels = append(src.morsels[:0], src.from)
	if src.from >= hi {
		src.morsels = append(src.morsels, hi)
		return nil
	}
	lo, err := r.SeekTime(src.from)
	if err != nil {
		return fmt.Errorf("%s(%q): %w", src.fn, src.table, err)
	}
	end := snap.Len
	if hi < reader.ToEnd {
		if end, err = r.SeekTime(hi); err != nil {
			return fmt.Errorf("%s(%q): %w", src.fn, src.table, err)
		}
	}
	segRows := r.SegmentRows()
	for seq := (lo/segRows + 1) * segRows; seq < end; seq += segRows {
		row, err := r.Get(seq)
		if err != nil {
			return fmt.Errorf("%s(%q): row %d: %w", src.fn, src.table, seq, err)
		}
		if t := row.Ts(); t > src.morsels[len(src.morsels)-1] && t < hi {
			src.morsels = append(src.morsels, t)
		}
	}
	src.morsels = append(src.morsels, hi)
	return nil
}

func (src *scanSource) ColumnInfos() []duckdb.ColumnInfo { return columnInfos(src.cols) }

// columnInfos are the DuckDB columns of a table's columns.
func columnInfos(cols []column) []duckdb.ColumnInfo {
	infos := make([]duckdb.ColumnInfo, len(cols))
	for i, c := range cols {
		t, err := duckdb.NewTypeInfo(sqlType(c.typ))
		if err != nil {
			panic(err) // the five types are all DuckDB primitives
		}
		infos[i] = duckdb.ColumnInfo{Name: c.name, T: t}
	}
	return infos
}

func (src *scanSource) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: uint(src.card)}
}

// Init lets DuckDB read a split window on all its threads, symbols on one.
func (src *scanSource) Init() duckdb.ParallelTableSourceInfo {
	if len(src.morsels) > 2 {
		return duckdb.ParallelTableSourceInfo{MaxThreads: len(src.morsels) - 1}
	}
	return duckdb.ParallelTableSourceInfo{MaxThreads: 1}
}

func (src *scanSource) NewLocalState() any {
	st := &scanState{src: src.scanPlan}
	src.list.mu.Lock()
	src.list.states = append(src.list.states, st)
	src.list.mu.Unlock()
	return st
}

// scanState is one thread's part of a scan: its reader (lent by the
// engine's pool) and the reader's scan.
type scanState struct {
	src     *scanPlan
	r       *reader.Reader
	sc      reader.Scan
	spec    reader.ScanSpec
	types   []store.ColType // of spec.Cols
	out     []int           // the chunk's vector of each column read (spec.Cols[j]'s is out[j])
	nextSym int             // the next of src.syms to scan
	started bool
	scanned bool // sc is positioned
	done    bool
	mu      sync.Mutex // release

	blk *reader.Block
	off int

	// Symbol names, DuckDB-encoded, by id (lazily; long[id] for names over
	// 12 bytes, which DuckDB copies into the vector's heap).
	namer func(uint32) (string, error)
	enc   []duckString
	have  []bool
	long  map[uint32]string
}

// FillChunk copies the next rows, up to a chunk's capacity, column by
// column into the chunk's vectors; a chunk of 0 rows ends the thread's part.
func (src *scanSource) FillChunk(ls any, ch duckdb.DataChunk) error {
	st := ls.(*scanState)
	raw, proj := rawChunk(&ch)
	if !st.started {
		if err := st.start(proj); err != nil {
			st.release()
			return err
		}
	}
	capacity := duckdb.GetDataChunkCapacity()
	n := 0
	for n < capacity {
		if st.blk == nil || st.off >= st.blk.Len() {
			ok, err := st.next()
			if err != nil {
				st.release()
				return err
			}
			if !ok {
				break
			}
			continue
		}
		k := min(capacity-n, st.blk.Len()-st.off)
		if err := st.copy(raw, n, k); err != nil {
			st.release()
			return err
		}
		n += k
		st.off += k
	}
	if n == 0 {
		st.release()
	}
	return ch.SetSize(n)
}

// start takes a reader and notes the columns the query reads.
func (st *scanState) start(proj []int) error {
	st.started = true
	src := st.src

	if src.empty {
		st.done = true
		return nil
	}
	r, err := src.e.takeReader(src.table)
	if err != nil {
		return err
	}
	st.r = r
	cols := r.Schema().Cols
	for c := range src.cols {
		o := c
		if proj != nil {
			o = proj[c]
		}
		if o >= 0 {
			st.spec.Cols = append(st.spec.Cols, c)
			st.types = append(st.types, cols[c].Type)
			st.out = append(st.out, o)
		}
	}
	st.spec.From, st.spec.To, st.spec.Workers = src.from, src.to, src.workers
	if len(src.syms) == 0 {
		st.spec.Order = reader.OrderAny
		if len(src.morsels) > 2 {
			st.spec.Workers = 1 // every DuckDB thread decodes a segment of its own
		}
	}
	return nil
}

// next moves to the scan's next block, or to the next morsel's or symbol's
// scan; false at the end.
func (st *scanState) next() (bool, error) {
	src := st.src
	for !st.done {
		if st.scanned {
			if st.sc.Next() {
				st.blk, st.off = st.sc.Block(), 0
				return true, nil
			}
			st.blk = nil
			if err := st.sc.Err(); err != nil {
				return false, fmt.Errorf("%s(%q): %w", src.fn, src.table, err)
			}
		}
		if len(src.syms) > 0 {
			if st.nextSym == len(src.syms) {
				break
			}
			st.spec.OneSym, st.spec.Sym = true, src.syms[st.nextSym]
			st.nextSym++
		} else {
			i := int(src.next.Add(1)) - 1
			if i+1 >= len(src.morsels) {
				break
			}
			st.spec.From, st.spec.To = src.morsels[i], src.morsels[i+1]
		}
		if err := st.r.Scan(st.spec, &st.sc); err != nil {
			return false, fmt.Errorf("%s(%q): %w", src.fn, src.table, err)
		}
		st.scanned = true
	}
	st.done = true
	return false, nil
}

// copy copies rows [off, off+k) of the block into rows [n, n+k) of the
// chunk's vectors.
func (st *scanState) copy(raw mappingChunk, n, k int) error {
	b, off := st.blk, st.off
	capacity := duckdb.GetDataChunkCapacity()
	for j := range st.spec.Cols {
		o := st.out[j]
		switch st.types[j] {
		case store.TypeTs, store.TypeI64:
			copy(vectorData[int64](raw, o, capacity)[n:n+k], b.I64(j)[off:off+k])
		case store.TypeF64:
			src := b.F64(j)[off : off+k]
			copy(vectorData[float64](raw, o, capacity)[n:n+k], src)
			for i, v := range src {
				if v != v { // NaN: tickdb's missing value is SQL's NULL
					setNull(raw, o, n+i)
				}
			}
		case store.TypeBool:
			copy(vectorData[bool](raw, o, capacity)[n:n+k], b.Bool(j)[off:off+k])
		case store.TypeSym:
			dst := vectorData[duckString](raw, o, capacity)[n : n+k]
			for i, id := range b.Sym(j)[off : off+k] {
				if id == store.NoSym {
					setNull(raw, o, n+i)
					continue
				}
				if err := st.symbol(id); err != nil {
					return err
				}
				if st.long != nil {
					if name, ok := st.long[id]; ok {
						assignString(raw, o, n+i, name)
						continue
					}
				}
				dst[i] = st.enc[id]
			}
		}
	}
	return nil
}

// symbol makes sure symbol id's name is encoded.
func (st *scanState) symbol(id uint32) error {
	if int(id) < len(st.have) && st.have[id] {
		return nil
	}
	name, err := st.symbolName(id)
	if err != nil {
		return err
	}
	for int(id) >= len(st.have) {
		st.have = append(st.have, false)
		st.enc = append(st.enc, duckString{})
	}
	if d, ok := inlineString(name); ok {
		st.enc[id] = d
	} else {
		if st.long == nil {
			st.long = map[uint32]string{}
		}
		st.long[id] = name
	}
	st.have[id] = true
	return nil
}

func (st *scanState) symbolName(id uint32) (string, error) {
	if st.namer != nil {
		if name, err := st.namer(id); err == nil {
			return name, nil
		}
	}
	// A symbol published after the lookup was taken: take it again.
	namer, err := st.r.SymbolNamer()
	if err != nil {
		return "", fmt.Errorf("%s(%q): symbol names: %w", st.src.fn, st.src.table, err)
	}
	st.namer = namer
	name, err := namer(id)
	if err != nil {
		return "", fmt.Errorf("%s(%q): symbol %d: %w", st.src.fn, st.src.table, id, err)
	}
	return name, nil
}

// release closes the scan and gives the reader back to the engine's pool,
// once.
func (st *scanState) release() {
	st.mu.Lock() // the thread's end, or the collected source's cleanup
	defer st.mu.Unlock()
	st.done = true
	st.blk = nil // the scan's: its buffers go back to the reader
	if st.r == nil {
		return
	}
	st.sc.Close()
	st.src.e.putReader(st.src.table, st.r)
	st.r = nil
}
