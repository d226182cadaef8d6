package archive

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// The archive's Parquet (Options.Parquet): beside each compressed segment
// object, the segment's rows as Parquet in a Hive layout,
//
//	PREFIX/parquet/table=T/date=YYYY-MM-DD/SSSSSSSSSSSSSSSSSSSS-EEEEEEEEEEEEEEEEEEEE.parquet
//
// one object per UTC date the segment's rows [S, E) fall on, so that a
// lakehouse engine reads a table's history without tickdb. The files are
// the export's (export.ParquetStream, docs/DESIGN.md "Export"): one column
// per table column, same names, schema order; ts an INT64
// TIMESTAMP(NANOS, isAdjustedToUTC=false) holding UTC ns, which DuckDB
// reads as TIMESTAMP_NS, every digit kept; sym columns dictionary-encoded
// strings; a missing f64 a null; zstd. table and date come from the path
// (Hive partitioning).
//
// A row belongs to the segment that stores it, whatever its ts: a
// segment's rows are read by seq (reader.RangeSeq), so a late row is in
// the objects of the segment it arrived in, in the partition of its own
// ts's date, and the segments' objects together hold every row exactly
// once. Within an object rows are in seq order: ts order but for late
// rows. An object is named by date and seq range, so writing a segment
// again puts the same keys.
//
// Several nodes archive into one bucket, each under a prefix of its own
// (s3://lake/fleet/nodeA, s3://lake/fleet/nodeB); one glob reads them all,
// and the path tells the node. In DuckDB (httpfs, or over a copy or mount
// of the bucket):
//
//	SELECT * FROM read_parquet('s3://lake/fleet/*/parquet/table=ticks/**/*.parquet',
//	    hive_partitioning = true, filename = true)
//	WHERE date = DATE '2024-03-09';
//
// The date predicate prunes partitions (files); ts filters by row group
// statistics. Objects written after a column was added have it and older
// ones do not: union_by_name = true reads both (the older rows null).
// Spark (spark.read.option("basePath", ...).parquet(...)) and Trino's
// Hive connector read the same layout; Spark reads ts as a long (see the
// table in DESIGN "Export").

// parquetDates is the most dates one pass over a segment writes at a
// time. A segment's rows are in ts order but for late rows (at most a
// late window behind), so nearly every segment falls on one or two dates
// and is read once; one of a sparse table can span many, and is read once
// per parquetDates of them, so that what is open at a time (a temporary
// file and a Parquet row group's buffers per date) stays bounded.
const parquetDates = 4

// ParquetKey is the key of the Parquet object of the rows of table's
// segment [first, end) that fall on UTC date (YYYY-MM-DD).
func ParquetKey(table, date string, first, end uint64) string {
	return fmt.Sprintf("parquet/table=%s/date=%s/%020d-%020d.parquet", table, date, first, end)
}

// writeSegmentParquet writes rows [first, end) of the local table db/table
// (a compressed segment's, or any seq range the table holds) as Parquet
// objects, one per UTC date of their ts, at ParquetKey(table, date,
// first, end), and returns their keys in date order (for
// Segment.Parquet). It opens a reader of the table for the call; see
// writeParquetRows.
func writeSegmentParquet(ctx context.Context, c *Client, db, table string, first, end uint64) ([]string, error) {
	r, err := reader.Open(db, table, nil)
	if err != nil {
		return nil, fmt.Errorf("archive: parquet of %s rows [%d, %d): %w", table, first, end, err)
	}
	defer r.Close()
	return writeParquetRows(ctx, c, r, table, first, end)
}

// writeParquetRows is writeSegmentParquet with the table open in r (used
// on the calling goroutine only, until it returns).
//
// Each date's file is built in a temporary file under os.TempDir, put
// with c.PutReader and removed; memory is a Parquet row group's buffers
// per date open (at most parquetDates at a time), whatever the segment's
// size. Rows [first, end) must be published and not deleted by
// retention. Nothing is put before every file of a pass over the rows is
// complete; a failure can leave some dates' objects put (a retry puts
// them again, under the same keys). It checks ctx every 1,024 rows.
func writeParquetRows(ctx context.Context, c *Client, r *reader.Reader, table string, first, end uint64) ([]string, error) {
	where := fmt.Sprintf("archive: parquet of %s rows [%d, %d)", table, first, end)
	if first >= end {
		return nil, fmt.Errorf("%s: an empty range", where)
	}
	snap, err := r.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if first < snap.FirstSeq || end > snap.Len {
		return nil, fmt.Errorf("%s: the table holds rows [%d, %d)", where, snap.FirstSeq, snap.Len)
	}
	p := &parquetPass{ctx: ctx, c: c, r: r, table: table, first: first, end: end,
		opts: &export.Options{Table: table}, row: r.Schema().NewRow(), done: map[int64]bool{}}
	defer p.discard()
	var keys []string
	for {
		more, err := p.run()
		if err == nil {
			var k []string
			k, err = p.put()
			keys = append(keys, k...)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if !more {
			break
		}
	}
	slices.Sort(keys) // date order: the dates are fixed-width
	return keys, nil
}

// parquetPass writes one segment's Parquet, parquetDates dates at a time.
type parquetPass struct {
	ctx        context.Context
	c          *Client
	r          *reader.Reader
	table      string
	first, end uint64
	opts       *export.Options
	it         reader.Iter
	row        store.Row
	done       map[int64]bool // days written by earlier passes
	open       []*dayFile     // this pass's, at most parquetDates
}

// run reads the rows once and writes those of the dates not done yet
// into this pass's files, opening one per new date up to parquetDates;
// more reports rows of other dates left for another pass.
func (p *parquetPass) run() (more bool, err error) {
	if err := p.r.RangeSeq(p.first, p.end, &p.it); err != nil {
		return false, err
	}
	var last *dayFile // the file the last row went to
	n := 0
	for p.it.Next() {
		if err := p.it.ReadRow(p.row); err != nil { // a checked copy
			return false, fmt.Errorf("row %d: %w", p.it.Seq(), err)
		}
		if n++; n%1024 == 0 {
			if err := p.ctx.Err(); err != nil {
				return false, err
			}
		}
		if d := dayOf(p.row.Ts()); last == nil || last.day != d {
			f, err := p.file(d)
			if err != nil {
				return false, err
			}
			if f == nil {
				more = more || !p.done[d]
				continue
			}
			last = f
		}
		if err := last.pq.Row(p.row); err != nil {
			return false, fmt.Errorf("%s: %w", last.date(), err)
		}
	}
	if err := p.it.Err(); err != nil {
		return false, err
	}
	for _, f := range p.open {
		if err := f.pq.Close(); err != nil {
			return false, fmt.Errorf("%s: %w", f.date(), err)
		}
	}
	return more, nil
}

// file is the file of day d in this pass, created if d has none and the
// pass has room; nil for a day done or left for another pass.
func (p *parquetPass) file(d int64) (*dayFile, error) {
	for _, f := range p.open {
		if f.day == d {
			return f, nil
		}
	}
	if p.done[d] || len(p.open) == parquetDates {
		return nil, nil
	}
	tmp, err := os.CreateTemp("", "tickdb-archive-*.parquet")
	if err != nil {
		return nil, err
	}
	f := &dayFile{day: d, f: tmp}
	p.open = append(p.open, f)
	if f.pq, err = export.NewParquetStream(tmp, p.r, p.opts); err != nil {
		return nil, err
	}
	return f, nil
}

// put uploads this pass's files and removes them, and marks their dates
// done.
func (p *parquetPass) put() ([]string, error) {
	var keys []string
	for len(p.open) > 0 {
		f := p.open[0]
		key := ParquetKey(p.table, f.date(), p.first, p.end)
		size, err := f.f.Seek(0, io.SeekEnd)
		if err == nil {
			_, err = f.f.Seek(0, io.SeekStart)
		}
		if err == nil {
			err = p.c.PutReader(p.ctx, key, f.f, size)
		}
		if err != nil {
			return nil, err
		}
		p.done[f.day] = true
		keys = append(keys, key)
		p.open = p.open[1:]
		f.remove()
	}
	return keys, nil
}

// discard removes the files still open (a failed pass).
func (p *parquetPass) discard() {
	for _, f := range p.open {
		f.remove()
	}
	p.open = nil
}

// dayFile is one date's Parquet file being written, in a temporary file.
type dayFile struct {
	day int64 // days since the epoch
	f   *os.File
	pq  *export.ParquetStream
}

// date is the file's UTC date, YYYY-MM-DD.
func (f *dayFile) date() string { return time.Unix(f.day*86400, 0).UTC().Format("2006-01-02") }

func (f *dayFile) remove() {
	f.f.Close()
	os.Remove(f.f.Name())
}

// dayOf is the UTC day of ts: days since the epoch, rounded down.
func dayOf(ts int64) int64 {
	const nsPerDay = int64(24 * time.Hour)
	d := ts / nsPerDay
	if ts%nsPerDay < 0 {
		d--
	}
	return d
}
