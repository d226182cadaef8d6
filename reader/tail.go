package reader

import (
	"context"
	"errors"

	"github.com/tickdb/tickdb/store"
)

// Tail follows rows as the writer publishes them, across segment rolls,
// writer crashes and writer restarts. It is not safe for concurrent use.
type Tail struct {
	r     *Reader
	next  uint64
	row   store.Row // the row Poll returned last, and its seq
	cur   uint64
	idle  IdleStrategy
	sym   bool
	id    uint32
	empty int
}

// Tail starts following at sequence number from (Len() for new rows
// only). idle nil means &Backoff{}.
func (r *Reader) Tail(from uint64, idle IdleStrategy) *Tail {
	if idle == nil {
		idle = &Backoff{}
	}
	return &Tail{r: r, next: from, idle: idle}
}

// FilterSym makes the tail return only rows of symbol id.
func (t *Tail) FilterSym(id uint32) { t.sym, t.id = true, id }

// Next is the sequence number of the next row the tail will return.
func (t *Tail) Next() uint64 { return t.next }

// Poll returns the next published row without waiting; ok is false when
// there is none yet. It allocates nothing.
func (t *Tail) Poll() (row store.Row, seq uint64, ok bool, err error) {
	for {
		if t.next >= t.r.visible {
			if t.r.closed {
				return nil, 0, false, ErrClosed
			}
			if t.r.visible = t.r.loadVisible(); t.next >= t.r.visible {
				return nil, 0, false, nil
			}
		}
		row, err = t.r.Get(t.next)
		if err != nil {
			if errors.Is(err, ErrTruncated) {
				// Retention passed us: continue from the new first row.
				t.next = t.r.FirstSeq()
				continue
			}
			return nil, 0, false, err
		}
		seq = t.next
		t.next++
		if t.sym && le.Uint32(row[t.r.symOff:]) != t.id {
			continue
		}
		t.row, t.cur = row, seq
		return row, seq, true, nil
	}
}

// ReadRow copies the row Poll or Wait returned last into dst, checked, as
// Iter.ReadRow does: a row kept past the next Poll, or read while the
// writer may recycle its live slot under the view, is copied so. dst is
// Schema().RowSize bytes, or the size of any of the table's layouts.
func (t *Tail) ReadRow(dst []byte) error { return t.r.copyView(t.cur, t.row, dst) }

// Wait returns the next row, idling with the tail's strategy until one is
// published or ctx is done.
func (t *Tail) Wait(ctx context.Context) (store.Row, uint64, error) {
	for {
		row, seq, ok, err := t.Poll()
		if err != nil {
			return nil, 0, err
		}
		if ok {
			if t.empty > 0 {
				t.empty = 0
				t.idle.Reset()
			}
			return row, seq, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		t.idle.Idle(t.empty)
		t.empty++
	}
}
