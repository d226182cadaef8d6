package pgwire

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"
)

// column is one result column as the client sees it.
type column struct {
	name   string
	typ    pgType
	shape  *duckShape // the DuckDB type, for values sent as text
	format int16      // 0 text, 1 binary
}

// columnsOf describes rows' columns.
func columnsOf(rows Rows) ([]column, error) {
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	types, err := rows.ColumnTypeNames()
	if err != nil {
		return nil, err
	}
	cols := make([]column, len(names))
	for i, duck := range types {
		cols[i] = column{name: names[i], typ: typeFor(duck), shape: parseShape(duck)}
	}
	return cols, nil
}

func rowDescription(cols []column) *pgproto3.RowDescription {
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, c := range cols {
		fields[i] = pgproto3.FieldDescription{
			Name:         []byte(c.name),
			DataTypeOID:  c.typ.oid,
			DataTypeSize: c.typ.size,
			TypeModifier: c.typ.mod,
			Format:       c.format,
		}
	}
	return &pgproto3.RowDescription{Fields: fields}
}

// portal is an open (or about to open) statement execution: the
// extended protocol's portal, or one statement of a simple Query.
type portal struct {
	plan    plan
	args    []any
	formats []int16  // as bound: none (all text), one for all, or one per column
	told    []column // the statement's columns as described to the client, nil if never

	ctx    context.Context
	cancel context.CancelCauseFunc
	rows   Rows
	cols   []column
	vals   []any // scan destinations
	ptrs   []any
	row    pgproto3.DataRow
	buf    []byte
	offs   []int // per value: start and end in buf, -1 for NULL
	n      int64 // rows sent
	done   bool  // CommandComplete sent
	open   bool
}

// returnsRows says whether the portal answers with a RowDescription and
// DataRows.
func (p *portal) returnsRows() bool {
	if p.plan.sql == "" {
		return false
	}
	switch p.plan.kind {
	case kindRows:
		return true
	case kindDML:
		return hasWord(p.plan.sql, "RETURNING")
	}
	return false
}

// start runs the portal's query in s. Its context is ctx's child, and
// lives until the portal closes: a suspended portal keeps its rows.
func (p *portal) start(ctx context.Context, c *conn) *pgError {
	p.ctx, p.cancel = context.WithCancelCause(ctx)
	p.open = true
	stop := c.run(p.cancel)
	rows, err := c.sess.Query(p.ctx, p.plan.sql, p.args...)
	stop()
	if err != nil {
		return p.error(err)
	}
	p.rows = rows
	cols, err := columnsOf(rows)
	if err != nil {
		return p.error(err)
	}
	if p.told != nil {
		// The client was told the statement's columns before its
		// parameters were known: keep to what it was told, converting
		// values where the types now differ.
		if len(p.told) != len(cols) {
			return newError(codeFeatureUnsupported, fmt.Sprintf("cached plan must not change result type: %d columns described, %d returned", len(p.told), len(cols)))
		}
		for i := range cols {
			cols[i].typ = p.told[i].typ
		}
	}
	switch len(p.formats) {
	case 0:
	case 1:
		for i := range cols {
			cols[i].format = p.formats[0]
		}
	default:
		if len(p.formats) != len(cols) {
			return newError(codeProtocolViolation, fmt.Sprintf("bind message has %d result formats but query has %d columns", len(p.formats), len(cols)))
		}
		for i := range cols {
			cols[i].format = p.formats[i]
		}
	}
	for i := range cols {
		if f := cols[i].format; f != 0 && f != 1 {
			return newError(codeProtocolViolation, fmt.Sprintf("unsupported format code: %d", f))
		}
	}
	p.cols = cols
	p.vals = make([]any, len(cols))
	p.ptrs = make([]any, len(cols))
	for i := range p.vals {
		p.ptrs[i] = &p.vals[i]
	}
	p.row.Values = make([][]byte, len(cols))
	return nil
}

// error converts err from the portal's query, with the cancellation
// cause when its context was cancelled, and the position in the
// client's text.
func (p *portal) error(err error) *pgError {
	if p.ctx != nil && p.ctx.Err() != nil {
		err = context.Cause(p.ctx)
	}
	e := toPGError(err, p.plan.sql)
	if p.plan.rewritten {
		e.position = 0
	}
	return e
}

// stream sends up to limit rows (all when limit <= 0), then
// CommandComplete, or PortalSuspended when rows remain.
func (p *portal) stream(c *conn, limit int64) *pgError {
	stop := c.run(p.cancel)
	defer stop()
	if p.plan.kind == kindDML && !p.returnsRows() {
		return p.finishCount(c)
	}
	if !p.returnsRows() {
		// Statements answered with a tag only: run to completion.
		for p.rows.Next() {
		}
		if err := p.rows.Err(); err != nil {
			return p.error(err)
		}
		p.finish(c, commandTag(&p.plan, 0))
		return nil
	}
	for sent := int64(0); limit <= 0 || sent < limit; sent++ {
		if !p.rows.Next() {
			if err := p.rows.Err(); err != nil {
				return p.error(err)
			}
			p.finish(c, commandTag(&p.plan, p.n))
			return nil
		}
		if err := p.rows.Scan(p.ptrs...); err != nil {
			return p.error(err)
		}
		if e := p.sendRow(c); e != nil {
			return e
		}
		if c.out.err != nil {
			return p.error(c.out.err)
		}
		p.n++
	}
	c.out.send(&pgproto3.PortalSuspended{})
	return nil
}

// sendRow encodes the scanned row into one DataRow.
func (p *portal) sendRow(c *conn) *pgError {
	buf := p.buf[:0]
	offs := p.offs[:0]
	for i, col := range p.cols {
		v := p.vals[i]
		if v == nil {
			offs = append(offs, -1, -1)
			continue
		}
		start := len(buf)
		var err error
		if col.format == 1 {
			buf, err = appendBinary(buf, col.typ.oid, col.shape, v)
		} else {
			buf, err = appendText(buf, col.typ.oid, col.shape, v)
			if err == nil && !utf8.Valid(buf[start:]) {
				err = fmt.Errorf("%w: invalid UTF-8 in column %q", errEncode, col.name)
			}
		}
		if err != nil {
			return newError(codeDatatypeMismatch, fmt.Sprintf("column %q: %v", col.name, err))
		}
		offs = append(offs, start, len(buf))
	}
	for i := range p.cols {
		if offs[2*i] < 0 {
			p.row.Values[i] = nil
		} else {
			p.row.Values[i] = buf[offs[2*i]:offs[2*i+1]]
		}
	}
	p.buf, p.offs = buf, offs
	c.out.send(&p.row)
	return nil
}

// finishCount reads the row count DuckDB returns for INSERT, UPDATE and
// DELETE (one BIGINT column "Count") into the command tag.
func (p *portal) finishCount(c *conn) *pgError {
	var n int64
	for p.rows.Next() {
		var v any
		if len(p.cols) == 1 {
			if err := p.rows.Scan(&v); err != nil {
				return p.error(err)
			}
			if x, ok := toInt64(v); ok {
				n += x
			}
		}
	}
	if err := p.rows.Err(); err != nil {
		return p.error(err)
	}
	p.finish(c, commandTag(&p.plan, n))
	return nil
}

func (p *portal) finish(c *conn, tag string) {
	c.out.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
	p.done = true
	p.closeRows()
}

func (p *portal) closeRows() {
	if p.rows != nil {
		_ = p.rows.Close()
		p.rows = nil
	}
}

// close frees the portal's rows and cancels its query.
func (p *portal) close() {
	if p.cancel != nil {
		p.cancel(context.Canceled)
	}
	p.closeRows()
}
