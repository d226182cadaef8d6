package query

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/tickdb/tickdb/reader"
)

// Bars over compacted history in the files' own order. A compacted
// segment stores each symbol's rows together, and the column scan in
// that order (reader.OrderAny) spares the merge of every symbol's rows
// into seq order, about a quarter of the work of bars over every symbol.
// Bars need no more: each symbol's rows still come in seq order (segment
// by segment, and within a segment in the file's order), so each
// symbol's bar of a bucket folds the same values in the same order as
// in a pass in seq order; only the order the bars go out in must be
// rebuilt: by bucket, and within a bucket by each symbol's first row in
// it, which without late rows is its first seq. So every bar keeps the
// seq of its first row, and the bars of a segment wait until it is read
// whole: then every bucket before the one holding the newest ts read so
// far is complete (the rows after have a ts at least that), and its bars
// go out sorted. A segment's bars are held meanwhile, so this order is
// taken only when they are few (clustered).

// clusterBars is the most bars a segment may be expected to hold for
// Bars to read it in the files' order.
const clusterBars = 1 << 16

// clusterBar is a bar being built: its values, its bucket's first and
// last ts, the seq of its first row and its symbol.
type clusterBar struct {
	acc         barAcc
	start, last int64
	first       uint64
	id          uint32
}

// clusterState is runCluster's: the bars not passed on yet, and each
// symbol's bar of the newest bucket it has a row in (its index in pend;
// -1 none).
type clusterState struct {
	pend []clusterBar
	done []clusterBar
	cur  []int32
}

// clustered reports whether Bars over every symbol of r from from on
// should read in the files' order, and returns r's segment shift: when
// a segment of the range's density may be expected to hold few bars.
func (x *barsRun) clustered(r *reader.Reader, from int64, q BarsQuery) (uint, bool) {
	snap, err := r.Snapshot()
	if err != nil || snap.Len <= snap.FirstSeq {
		return 0, false
	}
	first, err := r.Get(snap.FirstSeq)
	if err != nil {
		return 0, false
	}
	lo, hi := max(first.Ts(), from), snap.LastTs
	if q.HasTo {
		hi = min(hi, q.To)
	}
	rows, rps := float64(snap.Len-snap.FirstSeq), float64(r.SegmentRows())
	span := float64(snap.LastTs) - float64(first.Ts()) // the table's, for its density
	if hi < lo || span <= 0 {
		return 0, false
	}
	segSpan := span * min(rps/rows, 1)
	nsym := float64(max(r.Symbols(), 1))
	if !x.hasSym {
		nsym = 1
	}
	if nsym*(segSpan/float64(x.iv)+1) > clusterBars {
		return 0, false
	}
	shift := uint(0)
	for 1<<shift < r.SegmentRows() {
		shift++
	}
	return shift, true
}

// runCluster computes the bars from a scan in the files' order
// (reader.OrderAny) of ts, the field, the volume and (one series per
// symbol) the sym column, with seqs, and passes them on.
func (x *barsRun) runCluster(ctx context.Context, sc *reader.Scan, shift uint) error {
	c := &x.cl
	c.pend, c.done = c.pend[:0], c.done[:0]
	for i := range c.cur {
		c.cur[i] = -1
	}
	seg, newest := uint64(math.MaxUint64), int64(math.MinInt64)
	seqEnd, hasSym, iv := x.seqEnd, x.hasSym, x.iv
	for sc.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := sc.Block()
		seqs, ts := b.Seqs(), b.I64(0)
		if n := seqs[0] >> shift; n != seg {
			if seg != math.MaxUint64 {
				// Every row from here on has a ts at least newest's.
				bound, _ := bucketOf(newest, iv)
				if err := x.passOn(bound, false); err != nil {
					return err
				}
			}
			seg = n
		}
		var syms []uint32
		if hasSym {
			syms = b.Sym(3)
		}
		fi, ff := b.I64(1), b.F64(1)
		vi, vf := b.I64(2), b.F64(2)
		for i, t := range ts {
			if seqs[i] >= seqEnd {
				continue
			}
			var id uint32
			if hasSym {
				id = syms[i]
			}
			for int(id) >= len(c.cur) {
				c.cur = append(c.cur, -1)
			}
			p := c.cur[id]
			if p < 0 || t > c.pend[p].last {
				// The symbol's first row of a bucket (its rows come in
				// seq order, so in ts order).
				start, last := bucketOf(t, iv)
				c.pend = append(c.pend, clusterBar{start: start, last: last, first: seqs[i], id: id})
				p = int32(len(c.pend) - 1)
				c.cur[id] = p
			}
			a := &c.pend[p].acc
			a.count++
			if ff != nil {
				if v := ff[i]; v == v { // not NaN
					if !a.has {
						a.fo, a.fh, a.fl, a.has = v, v, v, true
					} else if v > a.fh {
						a.fh = v
					} else if v < a.fl {
						a.fl = v
					}
					a.fc = v
				}
			} else {
				v := fi[i]
				if !a.has {
					a.io, a.ih, a.il, a.has = v, v, v, true
				} else if v > a.ih {
					a.ih = v
				} else if v < a.il {
					a.il = v
				}
				a.ic = v
			}
			if vf != nil {
				if v := vf[i]; v == v {
					a.vf += v
				}
			} else {
				a.vi += vi[i]
			}
			newest = max(newest, t)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return x.passOn(0, true)
}

// passOn passes on the bars of the buckets before the one starting at
// bound (every bar with all), by bucket and, within one, by their first
// rows' seqs.
func (x *barsRun) passOn(bound int64, all bool) error {
	c := &x.cl
	keep := c.pend[:0]
	c.done = c.done[:0]
	for _, b := range c.pend {
		if all || b.start < bound {
			c.done = append(c.done, b)
			c.cur[b.id] = -1
			continue
		}
		c.cur[b.id] = int32(len(keep))
		keep = append(keep, b)
	}
	c.pend = keep
	slices.SortFunc(c.done, func(a, b clusterBar) int {
		if r := cmp.Compare(a.start, b.start); r != 0 {
			return r
		}
		return cmp.Compare(a.first, b.first)
	})
	for i := range c.done {
		d := &c.done[i]
		if err := x.fn(x.barOf(&d.acc, d.start, d.id)); err != nil {
			return err
		}
		x.bars++
	}
	return nil
}
