package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// LatestFunction is the table function of a latest-row query through
// tickdb's per-symbol index:
//
//	tickdb_latest('trades', 'infinity')          -- each symbol's newest row
//	tickdb_latest('trades', '2024-01-02 15:00')  -- each symbol's last row at or before then
//
// like kdb+'s select last by sym and QuestDB's LATEST ON ts PARTITION BY sym,
// at the cost of a search of each symbol's postings (no scan of the table).
// The same rows as the CLI's tickdb latest, in symbol name order. In plain
// SQL the same question is a scan:
//
//	SELECT * FROM trades QUALIFY row_number() OVER (PARTITION BY sym ORDER BY ts DESC) = 1
const LatestFunction = "tickdb_latest"

// latestSource is one tickdb_latest call: the rows found at bind time
// (one per symbol), handed out in chunks on one thread.
type latestSource struct {
	cols []column
	rows []store.Row // copies
	// at is each column's place in a row (a row of an older layout reads
	// the columns added since as missing: store.Row's getters see to it).
	at []store.Col
	// symName resolves the ids of sym columns.
	symName func(uint32) (string, error)
	next    int
}

func (e *Engine) bindLatest(ctx context.Context, args []any) (duckdb.ParallelChunkTableSource, error) {
	table, _ := args[0].(string)
	if table == "" {
		return nil, fmt.Errorf("%s: the first argument is a table name", LatestFunction)
	}
	at, err := bound(args[1], "at")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", LatestFunction, err)
	}
	r, err := e.takeReader(table)
	if err != nil {
		return nil, err
	}
	defer e.putReader(table, r)
	s := r.Schema()
	src := &latestSource{}
	for i, c := range s.Cols {
		src.cols = append(src.cols, column{name: c.Name, typ: c.Type})
		src.at = append(src.at, s.ColAt(i))
	}
	q := query.LatestQuery{Table: table, At: at, HasAt: at != reader.ToEnd && at != math.MaxInt64}
	_, err = query.Latest(ctx, r, q, func(row store.Row) error {
		src.rows = append(src.rows, append(store.Row(nil), row...))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s(%q): %w", LatestFunction, table, err)
	}
	if src.symName, err = r.SymbolNamer(); err != nil {
		return nil, fmt.Errorf("%s(%q): %w", LatestFunction, table, err)
	}
	return src, nil
}

func (src *latestSource) ColumnInfos() []duckdb.ColumnInfo { return columnInfos(src.cols) }

func (src *latestSource) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: uint(len(src.rows)), Exact: true}
}

func (src *latestSource) Init() duckdb.ParallelTableSourceInfo {
	return duckdb.ParallelTableSourceInfo{MaxThreads: 1}
}

func (src *latestSource) NewLocalState() any { return src }

func (src *latestSource) FillChunk(_ any, ch duckdb.DataChunk) error {
	n := min(len(src.rows)-src.next, duckdb.GetDataChunkCapacity())
	for i := 0; i < n; i++ {
		row := src.rows[src.next+i]
		for c, col := range src.cols {
			at := src.at[c]
			var v any
			switch col.typ {
			case store.TypeTs:
				v = row.Ts()
			case store.TypeI64:
				v = row.I64(at)
			case store.TypeF64:
				if f := row.F64(at); f == f {
					v = f
				}
			case store.TypeBool:
				v = row.Bool(at)
			case store.TypeSym:
				if id := row.Sym(at); id != store.NoSym {
					name, err := src.symName(id)
					if err != nil {
						return err
					}
					v = name
				}
			}
			if ts, ok := v.(int64); ok && col.typ == store.TypeTs {
				v = time.Unix(0, ts).UTC()
			}
			if err := ch.SetValue(c, i, v); err != nil {
				return err
			}
		}
	}
	src.next += n
	return ch.SetSize(n)
}
