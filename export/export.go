package export

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

var le = binary.LittleEndian

const (
	// batchRows is how many rows are copied out of the table at a time:
	// enough to amortise the per-column calls, few enough (32-500 KiB of
	// rows) to stay in cache.
	batchRows = 1024
	// progressEvery is how often (in rows) a CSV export reports progress.
	progressEvery = 1 << 16
	// nsPerDay is one UTC day: partitions are UTC dates.
	nsPerDay = int64(24 * time.Hour)
	// lastDay is the last day a ts can fall on: the day after it starts
	// past math.MaxInt64 ns.
	lastDay = math.MaxInt64 / nsPerDay
	// partitionPrefix starts every partition directory's name (Hive style
	// key=value).
	partitionPrefix = "date="
	// dateLayout is the partition value's layout.
	dateLayout = "2006-01-02"
)

// File is one file Run wrote.
type File struct {
	// Path is the file's path relative to the export directory:
	// date=2024-01-02/part-00000.parquet.
	Path string
	// Date is the file's UTC date, 2024-01-02.
	Date string
	// Rows and Bytes are its row count and size.
	Rows, Bytes int64
}

// Result is what Run wrote.
type Result struct {
	// Rows is the rows written.
	Rows int64
	// Files are the files written, in time order.
	Files []File
}

// Bytes is the total size of the files.
func (r *Result) Bytes() int64 {
	var n int64
	for _, f := range r.Files {
		n += f.Bytes
	}
	return n
}

// Partitions is the number of date partitions written.
func (r *Result) Partitions() int {
	n := 0
	for i, f := range r.Files {
		if i == 0 || f.Date != r.Files[i-1].Date {
			n++
		}
	}
	return n
}

// Run exports the rows of the table open in r that o selects into dir, a
// Hive-style dataset partitioned by UTC date: dir/date=YYYY-MM-DD/ holds
// part-00000.parquet (or .csv), and part-00001 and on when the date has
// more than o.FileRows rows. It creates dir if needed. It streams: memory
// stays bounded by a few Parquet row groups (or one batch of CSV rows),
// whatever the table's size.
//
// Rows come out in time order, by ts and then seq, each in the partition
// of its own ts's date, as if they had arrived in order: late rows
// (writer.Options.LateWindow) are merged in where their ts puts them, not
// where they arrived.
//
// Run refuses (ErrExists) before it writes anything when a partition
// between the first and the last exported date already holds files.
// Files are written under a hidden temporary name and renamed when
// complete and synced, so a reader of dir never sees half a file; an
// export that fails or whose ctx is cancelled removes every file and
// directory it created. It checks ctx between batches of rows.
//
// A Parquet export builds its row groups on o.Workers goroutines, each
// reading the table through a reader of its own (r is one of them, and
// must not be used until Run returns); a CSV export reads and writes on
// the calling goroutine.
func Run(ctx context.Context, r *reader.Reader, dir string, o *Options) (*Result, error) {
	opts, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.Table == "" {
		opts.Table = filepath.Base(r.Dir())
	}
	e := &exporter{ctx: ctx, r: r, o: &opts, dir: dir, s: r.Schema(), res: &Result{}}
	if err := e.run(); err != nil {
		e.abort()
		if errors.Is(err, ErrExists) {
			return nil, err // it names the partition, and reads "export: ..."
		}
		return nil, fmt.Errorf("export %s: %w", opts.Table, err)
	}
	return e.res, nil
}

// exporter is one Run's state.
type exporter struct {
	ctx context.Context
	r   *reader.Reader
	o   *Options
	dir string
	s   *store.Schema
	res *Result
	// total is the rows to export (as the plan counts them: see run).
	total int64
	// The snapshot taken when Run starts: the rows published, and whether
	// any of them is a late row (then rows are read in time order through
	// reader.Range, see plan.go).
	vis  uint64
	late bool
	// Planning's scratch row and iterator.
	row store.Row
	it  reader.Iter
	// The last date a file was completed for and its next part number:
	// files are named when complete (see complete).
	partDate string
	nextPart int

	// What this Run created, for abort: the files not yet complete, the
	// complete ones (final paths), and the directories made, in order.
	open  []*outFile
	files []string
	dirs  []string
}

func (e *exporter) run() error {
	e.row = e.s.NewRow()
	from, to, err := e.bounds()
	if err != nil {
		return err
	}
	plan, err := e.plan(from, to)
	if err != nil {
		return err
	}
	// The rows between the plan's cuts as their seqs count them: exact
	// for a table without late rows, and for a whole table; with late
	// rows and From or To, off by the late rows on the other side of
	// either from their seqs (the last call reports the count written).
	for i := range plan {
		e.total += plan[i].rows()
	}
	if e.o.Progress != nil {
		e.o.Progress(0, e.total)
	}
	if err := e.mkdir(e.dir); err != nil {
		return err
	}
	if err := e.checkFree(plan); err != nil {
		return err
	}
	if e.o.Format == FormatCSV {
		err = e.runCSV(plan)
	} else {
		err = e.runParquet(plan)
	}
	if err != nil {
		return err
	}
	if e.o.Progress != nil {
		e.total = e.res.Rows
		e.o.Progress(e.res.Rows, e.total)
	}
	return nil
}

// checkFree fails with ErrExists when a partition from the plan's first
// date to its last holds anything.
func (e *exporter) checkFree(plan []filePlan) error {
	if len(plan) == 0 {
		return nil
	}
	first, last := plan[0].date, plan[len(plan)-1].date
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		return err
	}
	for _, ent := range ents {
		v, ok := strings.CutPrefix(ent.Name(), partitionPrefix)
		if !ok {
			continue
		}
		// Partition values have a fixed width: they compare as dates.
		if _, err := time.Parse(dateLayout, v); err != nil || v < first || v > last {
			continue
		}
		p := filepath.Join(e.dir, ent.Name())
		if !ent.IsDir() {
			return fmt.Errorf("%w: %s is a file", ErrExists, p)
		}
		in, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		if len(in) > 0 {
			return fmt.Errorf("%w: %s holds %d (%s); remove them or export elsewhere", ErrExists, p, len(in), in[0].Name())
		}
	}
	return nil
}

// runCSV writes the planned files one after the other, streaming rows
// through query's CSV encoder.
func (e *exporter) runCSV(plan []filePlan) error {
	sc := newScanner(e.r, e.s, e.late, e.vis)
	var reported int64
	for _, fp := range plan {
		of, err := e.create(fp)
		if err != nil {
			return err
		}
		c := newCSVFile(of.f, e.s, e.o.Table, e.r.SymbolName)
		if err := sc.start(fp.cuts[0], fp.cuts[len(fp.cuts)-1]); err != nil {
			return err
		}
		for {
			n, err := sc.fill()
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			if err := c.write(sc.batch, n); err != nil {
				return fmt.Errorf("%s: %w", of.name, err)
			}
			e.res.Rows += int64(n)
			of.rows += int64(n)
			if e.o.Progress != nil && e.res.Rows-reported >= progressEvery {
				reported = e.res.Rows
				e.o.Progress(reported, e.total)
			}
			if err := e.ctx.Err(); err != nil {
				return err
			}
		}
		if err := c.close(); err != nil {
			return fmt.Errorf("%s: %w", of.name, err)
		}
		if err := e.complete(of); err != nil {
			return err
		}
	}
	return nil
}

// outFile is a file being written, under its temporary name.
type outFile struct {
	f    *os.File
	tmp  string // its temporary path
	name string // its final path relative to the export directory (set by complete)
	pdir string // its partition directory, relative
	date string
	rows int64
}

// create makes fp's partition directory if needed and creates its file
// under a hidden temporary name (named after its place in the plan).
func (e *exporter) create(fp filePlan) (*outFile, error) {
	pdir := partitionPrefix + fp.date
	if err := e.mkdir(filepath.Join(e.dir, pdir)); err != nil {
		return nil, err
	}
	base := fmt.Sprintf("part-%05d%s", fp.part, e.o.Format.ext())
	of := &outFile{name: filepath.Join(pdir, base), tmp: filepath.Join(e.dir, pdir, "."+base+".tmp"), pdir: pdir, date: fp.date}
	f, err := os.OpenFile(of.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	of.f = f
	e.open = append(e.open, of)
	return of, nil
}

// complete syncs and closes a file whose content is written, renames it
// to its final name and syncs its directory. Files complete in plan
// order, and each is named here, part-00000 on in its date: a planned
// file that got no rows (possible only with late rows, whose cuts may
// leave a few seqs' worth of time empty) is removed instead, and the
// date's parts stay numbered without a gap.
func (e *exporter) complete(of *outFile) error {
	e.open = slices.DeleteFunc(e.open, func(o *outFile) bool { return o == of })
	if of.rows == 0 {
		err := of.f.Close()
		if rerr := os.Remove(of.tmp); err == nil {
			err = rerr
		}
		return err
	}
	err := of.f.Sync()
	st, serr := of.f.Stat()
	if cerr := of.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = serr
	}
	if of.date != e.partDate {
		e.partDate, e.nextPart = of.date, 0
	}
	of.name = filepath.Join(of.pdir, fmt.Sprintf("part-%05d%s", e.nextPart, e.o.Format.ext()))
	e.nextPart++
	final := filepath.Join(e.dir, of.name)
	if err == nil {
		err = os.Rename(of.tmp, final)
	}
	if err != nil {
		os.Remove(of.tmp)
		return fmt.Errorf("%s: %w", of.name, err)
	}
	e.files = append(e.files, final)
	e.res.Files = append(e.res.Files, File{Path: of.name, Date: of.date, Rows: of.rows, Bytes: st.Size()})
	return syncDir(filepath.Dir(final))
}

// mkdir creates dir (and its parents) unless it exists, remembering what
// it created.
func (e *exporter) mkdir(dir string) error {
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	slices.Reverse(made)
	e.dirs = append(e.dirs, made...)
	return nil
}

// abort removes what a failed Run created: the files being written, the
// files written, then the directories made, those that are empty.
func (e *exporter) abort() {
	for _, of := range e.open {
		of.f.Close()
		os.Remove(of.tmp)
	}
	for _, f := range e.files {
		os.Remove(f)
	}
	for i := len(e.dirs) - 1; i >= 0; i-- {
		os.Remove(e.dirs[i]) // fails, as it should, on a directory not empty
	}
}

// dayOf is the UTC day of ts: days since the epoch, rounded down.
func dayOf(ts int64) int64 {
	d := ts / nsPerDay
	if ts%nsPerDay < 0 {
		d--
	}
	return d
}

// syncDir fsyncs a directory, so that the names renamed into it last.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) {
		return nil // a file system without directory sync
	}
	return err
}

// symCache resolves symbol ids to names, each id through the reader once.
type symCache struct {
	r     *reader.Reader
	names [][]byte
	known []bool
}

// name returns symbol id's name; the slice stays valid and unchanged for
// the cache's life.
func (c *symCache) name(id uint32) ([]byte, error) {
	if id == store.NoSym {
		return nil, nil // a sym column added after the row was written: ""
	}
	if int(id) < len(c.known) && c.known[id] {
		return c.names[id], nil
	}
	s, err := c.r.SymbolName(id)
	if err != nil {
		return nil, err
	}
	if int(id) >= len(c.names) {
		n := max(int(id)+1, 2*len(c.names))
		c.names = slices.Grow(c.names, n-len(c.names))[:n]
		c.known = slices.Grow(c.known, n-len(c.known))[:n]
	}
	c.names[id], c.known[id] = []byte(s), true
	return c.names[id], nil
}
