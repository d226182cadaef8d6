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
// row groups (rows [a, b) of the table, RowGroupRows at a time) to the
// workers and commits them to their file in plan order: a commit appends
// the row group's finished pages, so the committing goroutine copies
// bytes while the workers decode, encode and compress. Each worker reads
// through a reader of its own. At most Workers+1 row groups exist at a
// time: the memory of a Parquet export is that many row groups' column
// buffers and compressed pages, whatever the table's size.

// rgTask is one row group to build: rows [a, b) of file f.
type rgTask struct {
	f    *parquetOut
	a, b uint64
	rg   *parquet.ConcurrentRowGroupWriter
	done chan error // the worker's result; buffered, so it never waits
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
	w.sc.start(t.a, t.b)
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
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (e *exporter) runParquet(plan []filePlan) (err error) {
	rgRows := uint64(e.o.RowGroupRows)
	groups := uint64(0)
	for _, fp := range plan {
		groups += (fp.b - fp.a + rgRows - 1) / rgRows
	}
	nw := min(e.o.Workers, int(min(groups, 1<<16)))
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
		w := &worker{sc: newScanner(r), fill: newRowGroupFiller(e.s, symCache{r: r})}
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
		n := int64(t.b - t.a)
		t.f.rows += n
		e.res.Rows += n
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
		pf.left = int((fp.b - fp.a + rgRows - 1) / rgRows)
		for a := fp.a; a < fp.b; {
			b := min(a+rgRows, fp.b)
			t := &rgTask{f: pf, a: a, b: b, rg: pf.w.BeginRowGroup(), done: make(chan error, 1)}
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
			a = b
		}
	}
	for len(pending) > 0 {
		if err := commit(); err != nil {
			return err
		}
	}
	return nil
}
