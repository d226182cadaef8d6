package export

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/tickdb/tickdb/reader"
)

// A Parquet export builds row groups in parallel and writes them in
// order. The calling goroutine plans the files, opens each, hands its
// row groups (the rows between two of the plan's cuts, about
// RowGroupRows) to the workers and commits them to their file in plan
// order: a commit appends
// the row group's finished pages, so the committing goroutine copies
// bytes while the workers decode, encode and compress. Each worker reads
// through a reader of its own. At most Workers+1 row groups exist at a
// time: the memory of a Parquet export is that many row groups' column
// buffers and compressed pages, whatever the table's size.

// rgTask is one row group to build: the rows [from, to) of file f.
type rgTask struct {
	f        *parquetOut
	from, to cut
	rg       *parquet.ConcurrentRowGroupWriter
	rows     int64      // the rows written, set by the worker before done
	done     chan error // the worker's result; buffered, so it never waits
}

// parquetOut is a Parquet file being written.
type parquetOut struct {
	*outFile
	w    *parquet.GenericWriter[any]
	left int // row groups not yet committed
}

// worker builds row groups on one goroutine.
type worker struct {
	sc   *scanner
	fill *rowGroupFiller
}

// build writes task t's rows into its row group and flushes the row
// group's pages (encoding and compressing them here, not in the
// committing goroutine).
func (w *worker) build(ctx context.Context, t *rgTask) error {
	if err := w.sc.start(t.from, t.to); err != nil {
		return err
	}
	cols := t.rg.ColumnWriters()
	for {
		n, err := w.sc.fill()
		if err != nil || n == 0 {
			if err == nil {
				err = t.rg.Flush()
			}
			return err
		}
		if err := w.fill.write(cols, w.sc.batch, n); err != nil {
			return err
		}
		t.rows += int64(n)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (e *exporter) runParquet(plan []filePlan) (err error) {
	groups := 0
	for _, fp := range plan {
		groups += len(fp.cuts) - 1
	}
	nw := min(e.o.Workers, groups)
	if nw == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(e.ctx)
	work := make(chan *rgTask)
	var wg sync.WaitGroup
	var extra []*reader.Reader
	defer func() {
		cancel()
		close(work)
		wg.Wait()
		for _, r := range extra {
			r.Close()
		}
	}()
	for i := range nw {
		r := e.r
		if i > 0 {
			if r, err = reader.Open(filepath.Dir(e.r.Dir()), filepath.Base(e.r.Dir()), e.o.Reader); err != nil {
				return err
			}
			extra = append(extra, r)
		}
		w := &worker{sc: newScanner(r, e.s, e.late, e.vis), fill: newRowGroupFiller(e.s, symCache{r: r})}
		wg.Go(func() {
			for t := range work {
				t.done <- w.build(ctx, t)
			}
		})
	}

	var pending []*rgTask
	commit := func() error {
		t := pending[0]
		pending = pending[1:]
		if err := <-t.done; err != nil {
			return fmt.Errorf("%s: %w", t.f.name, err)
		}
		if _, err := t.rg.Commit(); err != nil {
			return fmt.Errorf("%s: %w", t.f.name, err)
		}
		t.f.rows += t.rows
		e.res.Rows += t.rows
		if t.f.left--; t.f.left == 0 {
			if err := t.f.w.Close(); err != nil {
				return fmt.Errorf("%s: %w", t.f.name, err)
			}
			if err := e.complete(t.f.outFile); err != nil {
				return err
			}
		}
		if e.o.Progress != nil {
			e.o.Progress(e.res.Rows, e.total)
		}
		return nil
	}
	ps := newParquetSchema(e.s)
	meta := map[string]string{"tickdb.table": e.o.Table, "tickdb.schema": e.s.String()}
	for _, fp := range plan {
		of, err := e.create(fp)
		if err != nil {
			return err
		}
		pf := &parquetOut{outFile: of, w: newParquetWriter(of.f, e.s, ps, e.o, meta)}
		pf.left = len(fp.cuts) - 1
		for i := range pf.left {
			t := &rgTask{f: pf, from: fp.cuts[i], to: fp.cuts[i+1], rg: pf.w.BeginRowGroup(), done: make(chan error, 1)}
			select {
			case work <- t:
			case <-ctx.Done():
				return ctx.Err()
			}
			pending = append(pending, t)
			for len(pending) > nw {
				if err := commit(); err != nil {
					return err
				}
			}
		}
	}
	for len(pending) > 0 {
		if err := commit(); err != nil {
			return err
		}
	}
	return nil
}
