package export

import (
	"fmt"
	"math"
	"time"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// Planning in time order.
//
// Rows are exported in (ts, seq) order, each into the partition of its
// own ts's date, as if they had arrived in order. A table with late rows
// (writer.Options.LateWindow) stores them where they arrived, so a walk in
// seq order gets neither right: a late row can sit among the next date's
// rows. The plan therefore cuts the table's time order, not its seq
// order. A cut (ts T, seq S) is a position in the (ts, seq) order: the
// rows before it are those with ts < T, or ts = T and seq < S. A file is
// the rows between two cuts, and so is each Parquet row group; the rows
// of a date lie between the cuts (midnight, SeekTime(midnight)) of the
// date and of the next (every row before SeekTime(t) has ts < t, so that
// cut is the same as (t, 0)).
//
// The cuts inside a date come from the in-order walk: every FileRows seqs
// (RowGroupRows within a file) from the date's first seq, the row at that
// seq gives the cut (its ts, its seq), which lies exactly between its
// neighbours in time order. For a table without late rows the rows
// between two such cuts are exactly the rows between their seqs, so the
// plan, the files and the row groups are those of a plain seq walk, and
// the scan is one (reader.RangeSeq, a zero-allocation walk over the
// mapping: see scanner). With late rows a range is read with
// reader.Range, which merges them in by (ts, seq), and a cut's rows
// differ from its seqs' by the late rows that arrived on the other side
// of it: those within about one late window of it. A file or row group
// may so hold a few more or fewer rows than FileRows or RowGroupRows.
//
// (The other design, a seq plan for the rows that arrived in order with
// each file merging in its late rows, would need to know which rows are
// late and where each belongs, which only the reader's late index knows;
// the reader's API gives that as Range's merge, which cuts in time order
// use as it is.)

// cut is a position in the table's (ts, seq) order.
type cut struct {
	ts  int64
	seq uint64
}

// holds reports whether a row (ts, seq) comes before c.
func (c cut) holds(ts int64, seq uint64) bool {
	return ts < c.ts || ts == c.ts && seq < c.seq
}

// filePlan is one file to write: the rows of one date between cuts[0]
// and cuts[len-1]; in a Parquet file each pair of adjacent cuts is a row
// group.
type filePlan struct {
	date string
	part int // its place among the date's planned files
	cuts []cut
}

// rows is the file's rows in seq terms: exact for a table without late
// rows, an estimate otherwise.
func (fp *filePlan) rows() int64 { return int64(fp.cuts[len(fp.cuts)-1].seq - fp.cuts[0].seq) }

// bounds sets the export's snapshot (the rows published when Run starts)
// and returns the cuts [from, to) of the rows to export: from the first
// row with ts >= From (else the first row) to the first with ts >= To,
// or past the rows published (ts <= their newest, seq below their count)
// if that comes first. A row published since is never exported: its seq
// is past the count, and a late one's is the only kind that can lie
// before that cut in time order (the scans skip those).
func (e *exporter) bounds() (from, to cut, err error) {
	snap, err := e.r.Snapshot()
	if err != nil {
		return cut{}, cut{}, err
	}
	e.vis, e.late = snap.Len, snap.Late > 0
	from = cut{math.MinInt64, min(snap.FirstSeq, e.vis)}
	to = cut{snap.LastTs, e.vis}
	if e.o.HasFrom {
		if from, err = e.cutAt(e.o.From); err != nil {
			return cut{}, cut{}, err
		}
	}
	if e.o.HasTo {
		c, err := e.cutAt(e.o.To)
		if err != nil {
			return cut{}, cut{}, err
		}
		if to.holds(c.ts, 0) { // c is (To, 0): every row before it has ts < To
			to = c
		}
	}
	if to.holds(from.ts, from.seq) {
		return from, to, nil
	}
	return to, to, nil // From past the published rows
}

// cutAt is the cut before every row with ts >= t.
func (e *exporter) cutAt(t int64) (cut, error) {
	s, err := e.r.SeekTime(t)
	return cut{t, min(s, e.vis)}, err
}

// plan splits the rows [from, to) into files: by date, then into parts
// of about FileRows rows, and for Parquet each part into row groups of
// about RowGroupRows.
func (e *exporter) plan(from, to cut) ([]filePlan, error) {
	var plan []filePlan
	var parts []cut
	group := uint64(0)
	if e.o.Format == FormatParquet {
		group = uint64(e.o.RowGroupRows)
	}
	if !to.holds(from.ts, from.seq) {
		return nil, nil
	}
	for t := from.ts; ; {
		ts, ok, err := e.firstTs(t, to)
		if err != nil || !ok {
			return plan, err
		}
		if ts < t {
			return nil, fmt.Errorf("%w: rows out of time order: a seek to ts %d found a row with ts %d", store.ErrCorrupt, t, ts)
		}
		d := dayOf(ts)
		lo, hi, last := from, to, true
		if start := dayStart(d); start > from.ts {
			if lo, err = e.cutAt(start); err != nil {
				return nil, err
			}
		}
		if d < lastDay && (d+1)*nsPerDay <= to.ts {
			if hi, err = e.cutAt((d + 1) * nsPerDay); err != nil {
				return nil, err
			}
			last = false
		}
		date := time.Unix(d*86400, 0).UTC().Format(dateLayout)
		if parts, err = e.grid(parts[:0], lo, hi, uint64(e.o.FileRows)); err != nil {
			return nil, err
		}
		for i := range len(parts) - 1 {
			cuts := []cut{parts[i], parts[i+1]}
			if group > 0 {
				if cuts, err = e.grid(nil, parts[i], parts[i+1], group); err != nil {
					return nil, err
				}
			}
			plan = append(plan, filePlan{date: date, part: i, cuts: cuts})
		}
		if last {
			return plan, nil
		}
		t = hi.ts
	}
}

// grid appends to cuts the cuts that split [a, b) into pieces of about n
// seqs: a, then the row n seqs after the last cut (or, in a table with
// late rows, the first after it that lies between the last cut and b in
// time order), and so on while that is before b's seq, then b.
func (e *exporter) grid(cuts []cut, a, b cut, n uint64) ([]cut, error) {
	cuts = append(cuts, a)
	for last := a; b.seq > last.seq && b.seq-last.seq > n; {
		c, ok, err := e.gridCut(last.seq+n, last, b)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		cuts = append(cuts, c)
		last = c
	}
	return append(cuts, b), nil
}

// gridCut is the cut at the first row from seq s, below b's seq, that
// lies after last and before b in time order: row s itself in a table
// without late rows, where any other is damage.
func (e *exporter) gridCut(s uint64, last, b cut) (cut, bool, error) {
	for ; s < b.seq; s++ {
		if err := e.r.ReadRow(s, e.row); err != nil {
			return cut{}, false, err
		}
		ts := e.row.Ts()
		if ts >= last.ts && b.holds(ts, s) {
			return cut{ts, s}, true, nil
		}
		if !e.late {
			return cut{}, false, fmt.Errorf("%w: rows out of time order: row %d has ts %d, outside [%d, %d]", store.ErrCorrupt, s, ts, last.ts, b.ts)
		}
	}
	return cut{}, false, nil
}

// firstTs is the ts of the first row to export, in time order, with ts
// >= t; ok is false when no such row comes before the cut to.
func (e *exporter) firstTs(t int64, to cut) (ts int64, ok bool, err error) {
	if !to.holds(t, 0) {
		return 0, false, nil
	}
	if !e.late {
		s, err := e.r.SeekTime(t)
		if err != nil || s >= to.seq {
			return 0, false, err
		}
		if err := e.r.ReadRow(s, e.row); err != nil {
			return 0, false, err
		}
		return e.row.Ts(), true, nil
	}
	// In time order, late rows merged in (to the end, as scanner does):
	// rows published since Run started are skipped.
	if err := e.r.Range(t, reader.ToEnd, &e.it); err != nil {
		return 0, false, err
	}
	for e.it.Next() {
		seq, ts := e.it.Seq(), e.it.Row().Ts()
		if !to.holds(ts, seq) {
			return 0, false, nil
		}
		if seq < e.vis {
			return ts, true, nil
		}
	}
	return 0, false, e.it.Err()
}

// dayStart is the first ns of day d, or MinInt64 for the day it falls in.
func dayStart(d int64) int64 {
	if d <= dayOf(math.MinInt64) {
		return math.MinInt64
	}
	return d * nsPerDay
}
