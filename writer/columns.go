package writer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/mmap"
	"github.com/tickdb/tickdb/store"
)

// AddColumn adds column c to the table, online: rows appended from now on
// have it (Schema and NewRow give the new layout; a row buffer of the old
// size gets ErrRowSize), rows appended before read it as its missing value
// (NaN, 0, false, the empty symbol: store.Row's getters). Every column
// keeps its offset (store.Schema.AddColumn), so a reader that has the
// table open goes on reading it, and sees the new column once it loads the
// new schema (the reader does when it meets a row of the new layout).
//
// It is a close and a reopen that keeps the writer lock: every row is made
// durable and the index files checkpointed, the schema is written to the
// schema file (docs/FORMAT.md §15), the rows of the current segment are
// rewritten in the new layout, and the writer reopens on it. It takes
// about as long as Close and Open (milliseconds), during which no row is
// appended. Stats' counters go on from where they were. It must not run
// while another goroutine is in WaitDurable (the writer's state is
// rebuilt). On an error the writer is closed.
func (w *Writer) AddColumn(c store.Column) error { return w.AddColumns(c) }

// AddColumns is AddColumn for several columns, added in order, in one
// close and reopen.
func (w *Writer) AddColumns(cols ...store.Column) error {
	if w.closed {
		return ErrClosed
	}
	ns := w.schema
	for _, c := range cols {
		var err error
		if ns, err = ns.AddColumn(c); err != nil {
			return err
		}
	}
	if len(cols) == 0 {
		return nil
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	what := fmt.Sprintf("add columns %q to table %s", names, w.name)
	o := w.opts
	o.Schema = ns
	id, dir, name, lock := w.ctl.TableID, w.dir, w.name, w.lock
	w.lock = nil // kept through the reopen: no other writer can take the table
	fail := func(step string, err error) error {
		lock.Close()
		w.closed = true
		o.Group.leaveIfSet()
		return fmt.Errorf("writer: %s: %s: %w", what, step, err)
	}
	w.reopening = true
	if err := w.Close(); err != nil {
		return fail("close", err)
	}
	w.columnStep(1)
	// The schema file first, then the feature bit that makes readers read
	// it: a crash between leaves the table as it was.
	if err := index.WriteSchema(dir, ns, id, o.fs); err != nil {
		return fail("write the schema", err)
	}
	w.columnStep(2)
	ctl, err := index.OpenCtl(filepath.Join(dir, format.CtlName), o.fs)
	if err != nil {
		return fail("open ctl", err)
	}
	ctl.AddFeatures(index.FeatColumns)
	err = ctl.Sync()
	if e := ctl.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fail("mark the table", err)
	}
	w.columnStep(3)
	before := w.final // the counters kept in memory, which go on
	*w = Writer{opts: o, log: o.Logger, fs: o.fs, dir: dir, name: name, lock: lock, symOff: -1}
	w.sh.rollStalls.Store(before.RollStalls)
	w.sh.stallNanos.Store(int64(before.StallTime))
	w.sh.flushes.Store(before.Flushes)
	w.sh.flushBytes.Store(before.FlushBytes)
	w.sh.lagAlarms.Store(before.LagAlarms)
	if err := w.open(); err != nil {
		w.closeFiles()
		w.closed = true
		o.Group.leaveIfSet()
		return fmt.Errorf("writer: %s: reopen: %w", what, err)
	}
	w.start()
	for _, c := range cols {
		w.log.Info("writer: added column", "table", name, "column", c.Name, "type", c.Type.String(), "row_size", ns.RowSize)
	}
	return nil
}

// upgradeTail rewrites, in the schema's layout, the durable file of the
// segment the next row goes to when it holds rows of an earlier layout
// (the writer that added a column closed the table on them), and removes
// later segment files of an earlier layout, which hold no rows (made
// ahead by the preparer). A crash part way leaves the old file or the
// new one (written under a temporary name, then renamed), and the next
// open does it again. Only a closed table is upgraded: a writer that dies
// after opening one has upgraded it before its first row.
func (w *Writer) upgradeTail() error {
	c := w.ctl
	if c.Features()&index.FeatColumns == 0 || c.State() != index.StateClosed {
		return nil
	}
	visible := c.RawSnap().Visible
	cur := visible >> w.shift
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return err
	}
	changed := false
	for _, e := range ents {
		var n uint64
		if _, err := fmt.Sscanf(e.Name(), "seg-%010d.dat", &n); err != nil || e.Name() != format.SegName(n) || n < cur {
			continue
		}
		b, rs, err := w.mapDurable(n) // (checks the header)
		if err != nil {
			return err
		}
		mmap.Unmap(b)
		if b == nil || rs == w.rowSize {
			continue
		}
		if n == cur && visible > cur<<w.shift {
			err = w.rewriteLayout(n, rs, visible)
		} else {
			err = w.fs.Remove(format.SegPath(w.dir, n))
		}
		if err != nil {
			return err
		}
		changed = true
	}
	if err := w.fs.SyncPath(w.dir); err != nil {
		return err
	}
	if changed {
		// The new layout is durable; the control file's sync that
		// follows (recover's) is the first since AddColumns' own.
		w.columnStep(6)
	}
	return nil
}

// rewriteLayout writes rows [n's first, end) of segment n, rows of rs
// bytes, into a new durable file of the schema's layout: each row's bytes,
// the added columns' missing values, a new check word. It reads and
// writes a few MiB at a time (the rows were written with O_DIRECT: they
// are on the device, not in the page cache, and a read of a mapping
// would fault them in a page at a time).
func (w *Writer) rewriteLayout(n, rs, end uint64) error {
	base := n << w.shift
	path := format.SegPath(w.dir, n)
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := path + ".tmp"
	// O_DIRECT, as the flusher writes: the rows go to the device without
	// filling the page cache (on this kind of machine allocating its pages
	// costs more than the write). Chunks of 64 Ki rows start on 4 KiB
	// boundaries; the last is zero padded to one.
	f, err := w.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|oDirect, 0o644)
	if errors.Is(err, syscall.EINVAL) {
		f, err = w.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	}
	if err != nil {
		return err
	}
	const chunk = 64 << 10 // rows at a time
	in := make([]byte, min(chunk, end-base)*rs)
	out, err := mmap.MapAnon(int(chunk*w.rowSize + format.BlockSize))
	if err != nil {
		f.Close()
		return err
	}
	defer mmap.Unmap(out)
	format.SegHeader{TableID: w.ctl.TableID, RowSize: int(w.rowSize), SegNo: n, RowsPerSeg: w.rps}.Marshal(out[:format.BlockSize])
	_, err = f.WriteAt(out[:format.BlockSize], 0)
	for i := base; err == nil && i < end; i += chunk {
		k := min(chunk, end-i)
		if _, err = src.ReadAt(in[:k*rs], int64(format.BlockSize+(i-base)*rs)); err != nil {
			break
		}
		clear(out[:k*w.rowSize])
		for j := range k { // (in does not alias out)
			seq := i + j
			row := in[j*rs : (j+1)*rs]
			if !format.Valid(seq, row) {
				continue // below the first row, or never written: stays zero
			}
			format.Relayout(w.schema, seq, out[j*w.rowSize:(j+1)*w.rowSize], row)
		}
		m := (k*w.rowSize + format.BlockSize - 1) &^ (format.BlockSize - 1)
		clear(out[k*w.rowSize : m])
		_, err = f.WriteAt(out[:m], int64(format.BlockSize+(i-base)*w.rowSize))
	}
	if err == nil {
		err = f.Truncate(w.segSize)
	}
	if err == nil {
		err = f.Sync()
	}
	if e := f.Close(); err == nil {
		err = e
	}
	if err == nil {
		w.columnStep(4)
		err = w.fs.Rename(tmp, path)
	}
	if err == nil {
		w.columnStep(5)
	}
	if err != nil {
		w.fs.Remove(tmp)
		return err
	}
	w.log.Info("writer: rewrote the last segment for added columns", "table", w.name, "segment", n, "rows", end-base, "row_size", w.rowSize, "was", rs)
	return nil
}

// columnStep calls Options.columnHook (tests) after step n of AddColumn.
func (w *Writer) columnStep(n int) {
	if w.opts.columnHook != nil {
		w.opts.columnHook(n)
	}
}
