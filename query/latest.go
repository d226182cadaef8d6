package query

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// LatestQuery asks for the last row of every symbol, or of the symbols
// Syms names, with ts <= At (only when HasAt is set; otherwise each
// symbol's newest row: every row published when Latest starts counts),
// like kdb+'s `select last by sym from t where ts<=at` and QuestDB's
// `LATEST ON ts PARTITION BY sym`. Table names the table for error
// messages; Latest reads the reader it is given.
type LatestQuery struct {
	Table string
	Syms  []string
	At    int64
	HasAt bool
}

// Latest runs q over the open reader r: for each symbol (the table's
// first sym column, store.Schema.SymCol) that has a row with ts <= the
// time, in order of symbol name (byte order, so the empty symbol first),
// it passes that symbol's last such row to fn (among rows with equal ts,
// the one with the larger sequence number), and returns how many rows it
// passed. A symbol Syms names that the table's dictionary does not hold
// selects nothing (no error), a symbol named twice is passed once; a
// table without a sym column is an ErrBadQuery error.
//
// Each symbol's row is found through the symbol's own index (see
// reader.Latest): its cost is O(log n) and a row read per symbol, not a
// scan, and every answer is as of one snapshot of the published rows.
// The row passed to fn is a copy checked against its check word, valid
// only during the call.
func Latest(ctx context.Context, r *reader.Reader, q LatestQuery, fn func(row store.Row) error) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s := r.Schema()
	if s.SymCol < 0 {
		return 0, fmt.Errorf("%w: table %s has no sym column (latest is the last row of each symbol)", ErrBadQuery, q.Table)
	}
	at := int64(math.MaxInt64)
	if q.HasAt {
		at = q.At
	}
	// The snapshot first: a symbol added after it has no row in it.
	var l reader.Latest
	if err := r.Latest(at, &l); err != nil {
		return 0, q.wrap(err)
	}
	var ids []uint32
	if len(q.Syms) == 0 {
		// Every symbol, in the order the reader keeps (sorted once).
		order, err := r.SymbolOrder()
		if err != nil {
			return 0, q.wrap(err)
		}
		ids = order
	} else {
		seen := make(map[uint32]bool, len(q.Syms))
		for _, name := range q.Syms {
			if id, ok := r.SymbolID([]byte(name)); ok && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		names := make([]string, len(ids))
		for i, id := range ids {
			name, err := r.SymbolName(id)
			if err != nil {
				return 0, q.wrap(err)
			}
			names[i] = name
		}
		order := make([]int, len(ids))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
		sorted := make([]uint32, len(ids))
		for i, k := range order {
			sorted[i] = ids[k]
		}
		ids = sorted
	}
	row := s.NewRow()
	var n int64
	for k, id := range ids {
		if k%ctxEvery == ctxEvery-1 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		_, ok, err := l.Sym(id, row)
		if err != nil {
			return n, q.wrap(err)
		}
		if !ok {
			continue
		}
		if err := fn(row); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// RunLatest runs Latest and writes each row to enc, which NewEncoder made
// for r's schema (the rows print as query's do); it returns the rows
// written. The caller closes enc.
func RunLatest(ctx context.Context, r *reader.Reader, q LatestQuery, enc *Encoder) (int64, error) {
	s := r.Schema()
	if enc.schema == nil {
		return 0, fmt.Errorf("query: the encoder is for computed rows, not table %s's", q.Table)
	}
	if enc.schema != s && !enc.schema.Equal(s) {
		return 0, fmt.Errorf("query: the encoder's schema %s is not the table's %s", enc.schema, s)
	}
	return Latest(ctx, r, q, enc.Row)
}

// wrap names the query's table in an error from below.
func (q *LatestQuery) wrap(err error) error {
	if err == nil {
		return nil
	}
	if q.Table == "" {
		return fmt.Errorf("latest: %w", err)
	}
	return fmt.Errorf("latest %s: %w", q.Table, err)
}
