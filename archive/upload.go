package archive

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
)

// SyncOptions tunes Sync; nil means the defaults.
type SyncOptions struct {
	// Uploads is how many segments go up at once (default 2). Each is
	// streamed from its file, so memory stays within a few buffers each.
	Uploads int
	// Parquet also writes each archived segment's rows as Parquet in the
	// Hive layout (parquet/table=T/date=YYYY-MM-DD/...), for lakehouse
	// engines.
	Parquet bool
	// MaxSegments bounds the segments one call uploads (0: all there are).
	MaxSegments int
}

// SyncResult is what one Sync uploaded.
type SyncResult struct {
	Segments int   // segments uploaded
	Bytes    int64 // bytes put, every object counted
	// Manifest is the table's manifest after the call (nil when there is
	// nothing archived yet).
	Manifest *Manifest
	// Pending is how many compressed segments, and their bytes, are on
	// the local disk but not in the manifest after the call (what
	// MaxSegments or an error left).
	PendingSegs  uint64
	PendingBytes int64
}

// Sync uploads every compressed segment of table in database directory
// db that the archive's manifest does not list yet, with what a reader
// needs beside it, then writes the manifest. It can run while a writer
// appends to the table (it reads the files a reader reads, O_RDONLY) and
// again at any time: segments the manifest lists are not uploaded again,
// and an upload cut short (a crash, the server gone) is done again whole
// by the next call, under the same names.
func Sync(ctx context.Context, c *Client, db, table string, o *SyncOptions) (res SyncResult, err error) {
	if o == nil {
		o = &SyncOptions{}
	}
	uploads := max(o.Uploads, 1)
	if o.Uploads == 0 {
		uploads = 2
	}
	dir := filepath.Join(db, table)
	ctl, err := index.OpenCtl(filepath.Join(dir, format.CtlName), nil)
	if err != nil {
		return SyncResult{}, fmt.Errorf("archive: table %s: %w", table, err)
	}
	defer ctl.Close()
	m, err := ReadManifest(ctx, c, table)
	if err != nil {
		return SyncResult{}, err
	}
	id := hex.EncodeToString(ctl.TableID[:])
	if m != nil && m.TableID != id {
		return SyncResult{}, fmt.Errorf("archive: %s holds another table named %s (table id %s; this one is %s): archive it under another prefix", c.loc, table, m.TableID, id)
	}
	snap, err := ctl.Snapshot()
	if err != nil {
		return SyncResult{}, fmt.Errorf("archive: table %s: %w", table, err)
	}
	put0 := c.Stats().PutBytes
	defer func() { res.Bytes = c.Stats().PutBytes - put0 }()

	shift := ctl.SegShift
	rowsPerSeg := ctl.RowsPerSeg()
	cmp := ctl.CmpSegs()
	first := snap.FirstSeq >> shift
	next := first
	if m != nil && len(m.Segments) > 0 {
		last := m.Segments[len(m.Segments)-1]
		next = last.Seg + 1
		if last.Rows() < rowsPerSeg && !samePartial(dir, ctl, last) {
			next = last.Seg // the last one was partial and has grown since
		}
		if next < first {
			return res, fmt.Errorf("archive: table %s: local segments %d to %d were deleted before they were archived (retention not told to wait for the archive); the archive at %s ends at row %d and cannot go on without a gap", table, next, first-1, c.loc, m.EndSeq)
		}
	}
	if m == nil {
		m = &Manifest{Format: manifestFormat, Table: table, TableID: id, SegShift: shift,
			StrideShift: ctl.StrideShift, RowSize: ctl.Schema.RowSize, FirstSeq: next << shift, EndSeq: next << shift,
			LastTs: math.MinInt64}
	}
	res.Manifest = m
	if cmp <= next {
		return res, nil
	}
	defer func() {
		from := m.EndSeq >> shift
		if k := len(m.Segments); k > 0 && m.Segments[k-1].Seg == from && samePartial(dir, ctl, m.Segments[k-1]) {
			from++ // the partial last segment, up as it is
		}
		res.PendingSegs, res.PendingBytes = localPending(db, table, from)
	}()
	late := newLateCursor(dir, snap.Late)
	defer late.close()
	limit := cmp
	if o.MaxSegments > 0 {
		limit = min(cmp, next+uint64(o.MaxSegments))
	}
	// The manifest is written after every chunk of segments: a crash
	// costs at most a chunk's uploads again.
	chunk := uint64(8 * uploads)
	var superseded []Segment
	for n := next; n < limit; n += chunk {
		batch := make([]Segment, min(chunk, limit-n))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(uploads)
		for i := range batch {
			g.Go(func() error {
				return uploadSegment(gctx, c, db, table, ctl, late, n+uint64(i), &batch[i], o.Parquet)
			})
		}
		if err := g.Wait(); err != nil {
			return res, err
		}
		for _, s := range batch {
			if s.Key == "" { // gone since (retention, or a writer's reopen)
				break
			}
			if k := len(m.Segments); k > 0 && m.Segments[k-1].Seg == s.Seg {
				superseded = append(superseded, m.Segments[k-1])
				m.Segments = m.Segments[:k-1]
			}
			m.Segments = append(m.Segments, s)
			m.EndSeq = s.EndSeq
			m.LastTs = max(m.LastTs, s.MaxTs)
			res.Segments++
		}
		// Everything a reader of the new segments needs is up before the
		// manifest that lists them.
		if err := syncMeta(ctx, c, dir, ctl, m); err != nil {
			return res, err
		}
		m.Updated = time.Now().UTC()
		if err := writeManifest(ctx, c, m); err != nil {
			return res, err
		}
		// The objects of a partial segment the manifest no longer lists:
		// its Parquet would count those rows twice.
		for _, old := range superseded {
			removeSegment(ctx, c, old)
		}
		superseded = superseded[:0]
		if batch[len(batch)-1].Key == "" {
			break
		}
	}
	return res, nil
}

// samePartial reports whether the archived partial segment s is the local
// compressed segment as it is (the same rows: tickdb compact compresses a
// closed table's partial last segment), so that it is not put again.
func samePartial(dir string, ctl *index.Ctl, s Segment) bool {
	g, err := cseg.Open(format.ZSegPath(dir, s.Seg), ctl.Schema, cseg.Header{TableID: ctl.TableID, SegNo: s.Seg, RowsPerSeg: ctl.RowsPerSeg()})
	if err != nil {
		return false
	}
	defer g.Close()
	return g.Rows() == s.Rows()
}

// syncMeta puts the ctl copy, the schema file and the new dictionary
// bytes, and records them in m.
func syncMeta(ctx context.Context, c *Client, dir string, ctl *index.Ctl, m *Manifest) error {
	table := m.Table
	if m.Ctl == "" {
		b, err := os.ReadFile(filepath.Join(dir, format.CtlName))
		if err != nil {
			return fmt.Errorf("archive: table %s: %w", table, err)
		}
		key := table + "/ctl"
		if err := c.Put(ctx, key, b[:format.BlockSize]); err != nil { // page 0: schema and geometry
			return err
		}
		m.Ctl = key
	}
	m.LateWindow = max(m.LateWindow, ctl.LateWindow())
	m.Features |= ctl.Features()
	if b, err := os.ReadFile(filepath.Join(dir, format.SchemaName)); err == nil {
		key := fmt.Sprintf("%s/schema-%08x", table, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
		if key != m.Schema {
			if err := c.Put(ctx, key, b); err != nil {
				return err
			}
			m.Schema = key
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("archive: table %s: %w", table, err)
	}
	count, end := ctl.SymCount(), ctl.SymBytes()
	if end <= m.SymBytes {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, format.SymName))
	if err != nil {
		return fmt.Errorf("archive: table %s: %w", table, err)
	}
	defer f.Close()
	from := m.SymBytes
	key := SymKey(table, from, end)
	if err := c.PutReader(ctx, key, io.NewSectionReader(f, int64(from), int64(end-from)), int64(end-from)); err != nil {
		return err
	}
	m.Sym = append(m.Sym, SymPiece{Key: key, From: from, To: end})
	m.SymCount, m.SymBytes = count, end
	return nil
}

// uploadSegment puts segment n's compressed file, its time index entries
// and its late entries (from late), and fills s. A
// segment whose file is gone leaves s.Key empty.
func uploadSegment(ctx context.Context, c *Client, db, table string, ctl *index.Ctl, late *lateCursor, n uint64, s *Segment, parquet bool) error {
	dir := filepath.Join(db, table)
	path := format.ZSegPath(dir, n)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("archive: table %s: %w", table, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	// The open file is the one read from here on, even if a writer
	// replaces the path.
	g, err := cseg.Open(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), ctl.Schema,
		cseg.Header{TableID: ctl.TableID, SegNo: n, RowsPerSeg: ctl.RowsPerSeg()})
	if err != nil {
		return fmt.Errorf("archive: table %s: %s: %w", table, path, err)
	}
	rows, version := g.Rows(), g.Version()
	minTs, maxTs := int64(math.MaxInt64), int64(math.MinInt64)
	for b := range g.Blocks() {
		lo, hi := g.BlockTs(b)
		minTs, maxTs = min(minTs, lo), max(maxTs, hi)
	}
	g.Close()
	if rows == 0 {
		return nil
	}
	first := n << ctl.SegShift
	end := first + rows
	*s = Segment{Seg: n, FirstSeq: first, EndSeq: end, MinTs: minTs, MaxTs: maxTs, Version: version,
		Key: SegKey(table, first, end, "zdat"), Size: st.Size()}
	lateBytes, err := late.entries(first, end)
	if err != nil {
		return err
	}
	// The segment's three objects go up side by side.
	k := ctl.StrideShift
	s.TsFirst = (first + 1<<k - 1) >> k
	s.TsCount = (end+1<<k-1)>>k - s.TsFirst
	s.TsIdx = SegKey(table, first, end, "tsi")
	tf, err := os.Open(filepath.Join(dir, format.TimeIdxName))
	if err != nil {
		return fmt.Errorf("archive: table %s: %w", table, err)
	}
	defer tf.Close()
	g2, gctx := errgroup.WithContext(ctx)
	g2.Go(func() error { return c.PutReader(gctx, s.Key, io.NewSectionReader(f, 0, st.Size()), st.Size()) })
	g2.Go(func() error {
		// Time index entries k with rows k*K in [first, end).
		size := int64(s.TsCount) * 8
		return c.PutReader(gctx, s.TsIdx, io.NewSectionReader(tf, format.BlockSize+int64(s.TsFirst)*8, size), size)
	})
	if len(lateBytes) > 0 {
		s.Late, s.LateCount = SegKey(table, first, end, "late"), uint64(len(lateBytes)/lateEntry)
		g2.Go(func() error { return c.Put(gctx, s.Late, lateBytes) })
	}
	if err := g2.Wait(); err != nil {
		return err
	}
	if parquet {
		keys, err := writeSegmentParquet(ctx, c, db, table, first, end)
		if err != nil {
			return err
		}
		s.Parquet = keys
	}
	return nil
}

// lateCursor reads late.idx's published entries, found by seq.
type lateCursor struct {
	f     *os.File
	count uint64 // entries published
}

func newLateCursor(dir string, count uint64) *lateCursor {
	l := &lateCursor{count: count}
	if count > 0 {
		l.f, _ = os.Open(filepath.Join(dir, format.LateIdxName))
	}
	return l
}

func (l *lateCursor) close() {
	if l.f != nil {
		l.f.Close()
	}
}

const lateEntry = 32

// seqAt is entry i's seq.
func (l *lateCursor) seqAt(i uint64) (uint64, error) {
	var b [8]byte
	if _, err := l.f.ReadAt(b[:], format.BlockSize+int64(i)*lateEntry); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// search is the first entry whose seq is at or past seq.
func (l *lateCursor) search(seq uint64) (uint64, error) {
	lo, hi := uint64(0), l.count
	for lo < hi {
		mid := (lo + hi) / 2
		q, err := l.seqAt(mid)
		if err != nil {
			return 0, fmt.Errorf("archive: %s: %w", l.f.Name(), err)
		}
		if q < seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// entries returns the late.idx entries of rows [from, to). Safe for
// concurrent use.
func (l *lateCursor) entries(from, to uint64) ([]byte, error) {
	if l.f == nil {
		return nil, nil
	}
	// Entries are in seq order: binary searches find the first at or
	// past from and the first at or past to.
	lo, err := l.search(from)
	if err != nil {
		return nil, err
	}
	hi, err := l.search(to)
	if err != nil || hi == lo {
		return nil, err
	}
	b := make([]byte, (hi-lo)*lateEntry)
	if _, err := l.f.ReadAt(b, format.BlockSize+int64(lo)*lateEntry); err != nil {
		return nil, fmt.Errorf("archive: %s: %w", l.f.Name(), err)
	}
	return b, nil
}

// removeSegment deletes a segment's objects that a newer manifest no
// longer lists (a partial segment archived again with more rows), unless
// the newer entry has the same key. A failure leaves an unlisted object,
// harmless to readers of the manifest.
func removeSegment(ctx context.Context, c *Client, s Segment) {
	for _, key := range append([]string{s.Key, s.TsIdx, s.Late}, s.Parquet...) {
		if key != "" {
			_ = c.Remove(ctx, key)
		}
	}
}
