package archive

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// Fleet is one table's archives across nodes: several servers (one per
// feed or venue) archive into one bucket, each under a node prefix of its
// own (s3://lake/fleet/venue-a, s3://lake/fleet/venue-b), and a Fleet
// opens the table of that name under each node and reads them as one,
// merged by ts.
type Fleet struct {
	Nodes   []string  // node prefixes, in name order
	Readers []*Reader // Readers[i] is node Nodes[i]'s table
}

// IsFleet reports whether loc names every node under a prefix:
// s3://bucket/prefix/*.
func IsFleet(loc string) bool { return IsURL(loc) && strings.HasSuffix(loc, "/*") }

// OpenFleet opens table under every node of the location loc names with
// its trailing "/*" (s3://lake/fleet/* : the nodes are the prefixes right
// under s3://lake/fleet that hold an archive of table). Nodes without the
// table are left out; none with it is an error. The nodes' schemas must
// be equal.
func OpenFleet(ctx context.Context, loc, table string, o *ReaderOptions) (*Fleet, error) {
	base, ok := strings.CutSuffix(loc, "/*")
	if !ok || !IsURL(loc) {
		return nil, fmt.Errorf("archive: fleet location %q: want s3://bucket/prefix/*", loc)
	}
	var cfg Config
	if o != nil {
		cfg = o.Config
	}
	c, err := Dial(base, cfg)
	if err != nil {
		return nil, err
	}
	nodes, err := c.ListDirs(ctx, "")
	if err != nil {
		return nil, err
	}
	f := &Fleet{}
	for _, n := range nodes {
		if _, err := c.Size(ctx, n+"/"+table+"/"+ManifestName); errors.Is(err, ErrNotFound) {
			continue
		} else if err != nil {
			f.Close()
			return nil, err
		}
		no := ReaderOptions{}
		if o != nil {
			no = *o
			no.Client = nil
		}
		r, err := OpenReader(ctx, c.loc.Sub(n).String(), table, &no)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("archive: node %s: %w", n, err)
		}
		if len(f.Readers) > 0 && !r.Schema().Equal(f.Readers[0].Schema()) {
			r.Close()
			f.Close()
			return nil, fmt.Errorf("archive: node %s's table %s has schema %s, node %s's %s: a fleet's tables must match", n, table, r.Schema(), f.Nodes[0], f.Readers[0].Schema())
		}
		f.Nodes = append(f.Nodes, n)
		f.Readers = append(f.Readers, r)
	}
	if len(f.Readers) == 0 {
		return nil, fmt.Errorf("archive: no node under %s holds table %s (nodes: %s)", base, table, strings.Join(nodes, ", "))
	}
	return f, nil
}

// Close closes every node's Reader.
func (f *Fleet) Close() error {
	var first error
	for _, r := range f.Readers {
		if err := r.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Stats is the traffic of every node's Reader together.
func (f *Fleet) Stats() Stats {
	var s Stats
	for _, r := range f.Readers {
		t := r.Client().Stats()
		s.Gets, s.GetBytes, s.Puts, s.PutBytes = s.Gets+t.Gets, s.GetBytes+t.GetBytes, s.Puts+t.Puts, s.PutBytes+t.PutBytes
	}
	return s
}

// Range calls fn with every row of every node with from <= ts < to (to
// reader.ToEnd: no end), of symbol sym ("" for all), in ts order; rows of
// equal ts come node after node (in Nodes order), each node's in its own
// order. row is a view valid during the call; ids in its sym columns are
// node's (its Reader's SymbolName names them).
func (f *Fleet) Range(ctx context.Context, from, to int64, sym string, fn func(node int, row store.Row) error) error {
	h := &fleetHeap{}
	for i, r := range f.Readers {
		it := new(reader.Iter)
		var err error
		if sym == "" {
			err = r.Range(from, to, it)
		} else if id, ok := r.SymbolID([]byte(sym)); ok {
			err = r.RangeSym(from, to, id, it)
		} else {
			continue
		}
		if err != nil {
			return fmt.Errorf("archive: node %s: %w", f.Nodes[i], err)
		}
		if it.Next() {
			h.items = append(h.items, fleetItem{node: i, it: it})
		} else if err := it.Err(); err != nil {
			return fmt.Errorf("archive: node %s: %w", f.Nodes[i], err)
		}
	}
	heap.Init(h)
	for n := 0; h.Len() > 0; n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		top := &h.items[0]
		if err := fn(top.node, top.it.Row()); err != nil {
			return err
		}
		if top.it.Next() {
			heap.Fix(h, 0)
			continue
		}
		if err := top.it.Err(); err != nil {
			return fmt.Errorf("archive: node %s: %w", f.Nodes[top.node], err)
		}
		heap.Pop(h)
	}
	return nil
}

type fleetItem struct {
	node int
	it   *reader.Iter
}

// fleetHeap orders the nodes' iterators by their current row's (ts,
// node).
type fleetHeap struct{ items []fleetItem }

func (h *fleetHeap) Len() int { return len(h.items) }
func (h *fleetHeap) Less(i, j int) bool {
	a, b := h.items[i].it.Row().Ts(), h.items[j].it.Row().Ts()
	return a < b || a == b && h.items[i].node < h.items[j].node
}
func (h *fleetHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *fleetHeap) Push(x any)    { h.items = append(h.items, x.(fleetItem)) }
func (h *fleetHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
