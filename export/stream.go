package export

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// ParquetStream writes one Parquet file of the rows handed to Row, in the
// order given, to a stream (an HTTP response): the same schema, column
// mapping, codecs and metadata as Run's files. Parquet's footer comes
// last, so the file is written front to back: each row group goes out
// when it holds o.RowGroupRows rows, and the memory is one row group's
// column buffers and one batch of rows, whatever the rows' number. Only
// Compression, RowGroupRows and Table of o apply. Nothing is written to w
// before the first row group is complete (or Close).
type ParquetStream struct {
	w     *parquet.GenericWriter[any]
	rg    *parquet.ConcurrentRowGroupWriter
	fill  *rowGroupFiller
	s     *store.Schema
	batch []byte
	n     int   // rows in batch
	inRG  int64 // rows in rg
	per   int64 // rows per row group
	rows  int64
}

// NewParquetStream starts a Parquet file of the rows of the table open in
// r on w. r must stay open until Close returns (it names the symbols).
func NewParquetStream(w io.Writer, r *reader.Reader, o *Options) (*ParquetStream, error) {
	opts, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.Table == "" {
		opts.Table = filepath.Base(r.Dir())
	}
	s := r.Schema()
	meta := map[string]string{"tickdb.table": opts.Table, "tickdb.schema": s.String()}
	return &ParquetStream{
		w:     newParquetWriter(w, s, newParquetSchema(s), &opts, meta),
		fill:  newRowGroupFiller(s, symCache{r: r}),
		s:     s,
		batch: make([]byte, batchRows*s.RowSize),
		per:   int64(opts.RowGroupRows),
	}, nil
}

// Row appends one row of the table's schema (or of another of its
// layouts: docs/FORMAT.md §15). The row is copied.
func (p *ParquetStream) Row(row store.Row) error {
	dst := p.batch[p.n*p.s.RowSize:][:p.s.RowSize]
	if len(row) == len(dst) {
		copy(dst, row)
	} else {
		format.Relayout(p.s, 0, dst, row) // (the check word is not exported)
	}
	p.n++
	if p.n == batchRows || p.inRG+int64(p.n) == p.per {
		return p.flushBatch()
	}
	return nil
}

// Rows is the number of rows appended so far.
func (p *ParquetStream) Rows() int64 { return p.rows + int64(p.n) }

func (p *ParquetStream) flushBatch() error {
	if p.n == 0 {
		return nil
	}
	if p.rg == nil {
		p.rg = p.w.BeginRowGroup()
	}
	if err := p.fill.write(p.rg.ColumnWriters(), p.batch, p.n); err != nil {
		return err
	}
	p.inRG += int64(p.n)
	p.rows += int64(p.n)
	p.n = 0
	if p.inRG >= p.per {
		return p.commit()
	}
	return nil
}

func (p *ParquetStream) commit() error {
	if p.rg == nil {
		return nil
	}
	rg := p.rg
	p.rg, p.inRG = nil, 0
	if err := rg.Flush(); err != nil {
		return err
	}
	if _, err := rg.Commit(); err != nil {
		return fmt.Errorf("parquet row group: %w", err)
	}
	return nil
}

// Close writes the last row group and the footer. It does not close w.
func (p *ParquetStream) Close() error {
	if err := p.flushBatch(); err != nil {
		return err
	}
	if err := p.commit(); err != nil {
		return err
	}
	return p.w.Close()
}
