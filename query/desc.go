package query

import (
	"context"
	"fmt"
	"math"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// MaxDescLimit bounds the rows a newest-first query (Query.Desc) returns:
// it holds them to reverse them.
const MaxDescLimit = 1_000_000

// descFirstWidth is the first time window a newest-first query reads back
// from its end when the table's span is unknown; otherwise the first
// window is the span that holds twice the limit at the table's mean rate.
// Each window that holds fewer rows than still wanted is followed by one
// twice as wide before it.
const descFirstWidth = int64(1e9)

// runDesc is Run for q.Desc: the newest q.Limit rows of the selection,
// newest first (the exact reverse of the ascending order: among rows of
// one ts, the later seq first). It reads windows of time back from the end
// of the range ([lo, hi), each through the ascending run, so a window
// sees the rows an ascending query of it would) and keeps the last rows of
// each, at most the rows still wanted, so that it holds at most q.Limit
// rows whatever the range. Without To, the first window reaches past the
// table's last row, so rows published while it runs may be in it.
func runDesc(ctx context.Context, r *reader.Reader, q Query, emit func(store.Row) error) (int64, error) {
	if q.Limit <= 0 || q.Limit > MaxDescLimit {
		return 0, fmt.Errorf("%w: a newest-first query needs a limit of 1 to %d rows (it holds them to reverse them), not %d", ErrBadQuery, MaxDescLimit, q.Limit)
	}
	snap, err := r.Snapshot()
	if err != nil {
		return 0, q.wrap(err)
	}
	if snap.Len <= snap.FirstSeq {
		return 0, nil
	}
	lowest := int64(math.MinInt64)
	if q.HasFrom {
		lowest = q.From
	}
	// The table's first row's ts: a window that starts at or before it is
	// the last one, and reaches down to lowest (a late row may be older).
	first := lowest
	buf := make([]byte, r.Schema().RowSize)
	if err := r.ReadRow(snap.FirstSeq, buf); err == nil {
		first = store.Row(buf).Ts()
	} // else retention removed it meanwhile: one window down to lowest
	hi, top := int64(reader.ToEnd), snap.LastTs
	if q.HasTo {
		hi, top = q.To, min(q.To, snap.LastTs+1)
	}
	var n int64
	keep := &ring{size: len(buf)}
	floor := max(first, lowest)
	width := descFirstWidth
	if rows := snap.Len - snap.FirstSeq; first != lowest && snap.LastTs > first {
		w := float64(uint64(snap.LastTs)-uint64(first)) / float64(rows) * float64(q.Limit) * 2
		width = int64(max(1, min(w, math.MaxInt64/2)))
	}
	for ; hi > lowest && n < q.Limit; width = min(width*2, math.MaxInt64/2) {
		lo := lowest // the last window
		if top > floor && uint64(top)-uint64(floor) > uint64(width) {
			lo = top - width
		}
		w := q
		w.Desc, w.From, w.HasFrom, w.To, w.HasTo, w.Limit = false, lo, true, hi, true, 0
		keep.reset(int(q.Limit - n))
		if _, err := run(ctx, r, w, keep.add, nil); err != nil {
			return n, err
		}
		for i := keep.len() - 1; i >= 0; i-- {
			if err := emit(keep.at(i)); err != nil {
				return n, q.wrap(err)
			}
			n++
		}
		hi, top = lo, lo
	}
	return n, nil
}

// ring keeps the last max rows added to it, copies.
type ring struct {
	rows  [][]byte
	max   int
	next  int // where the next row goes once full
	count int
	size  int
}

func (k *ring) reset(max int) {
	k.max, k.next, k.count = max, 0, 0
}

func (k *ring) add(row store.Row) error {
	if k.count < k.max {
		if k.count == len(k.rows) {
			k.rows = append(k.rows, make([]byte, k.size))
		}
		copy(k.rows[k.count], row)
		k.count++
		return nil
	}
	copy(k.rows[k.next], row)
	k.next = (k.next + 1) % k.max
	return nil
}

func (k *ring) len() int { return k.count }

// at is the i-th oldest row kept.
func (k *ring) at(i int) store.Row {
	if k.count < k.max {
		return k.rows[i]
	}
	return k.rows[(k.next+i)%k.max]
}
