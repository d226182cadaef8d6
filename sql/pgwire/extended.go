package pgwire

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgproto3"
)

// statement is a prepared statement of the extended protocol.
type statement struct {
	plan plan
	oids []uint32 // parameter types: as declared in Parse, 0 where not
	told []column // result columns sent in a RowDescription; nil if never described
}

// parse answers Parse. The statement is checked by DuckDB when it is
// described or executed, not here.
func (c *conn) parse(m *pgproto3.Parse) *pgError {
	if _, ok := c.stmts[m.Name]; ok && m.Name != "" {
		return newError(codeDuplicateStatement, fmt.Sprintf("prepared statement %q already exists", m.Name))
	}
	pieces := splitStatements(m.Query)
	if len(pieces) > 1 {
		return newError(codeSyntax, "cannot insert multiple commands into a prepared statement")
	}
	p := plan{kind: kindEmpty}
	if len(pieces) == 1 {
		p = c.planFor(pieces[0].text)
	}
	n := max(len(m.ParameterOIDs), maxParam(p.client))
	if n > 65535 {
		return newError(codeProtocolViolation, fmt.Sprintf("too many parameters: %d", n))
	}
	oids := make([]uint32, n)
	copy(oids, m.ParameterOIDs)
	c.stmts[m.Name] = &statement{plan: p, oids: oids}
	c.out.send(&pgproto3.ParseComplete{})
	return nil
}

// bind answers Bind: decodes the parameters and makes the portal.
func (c *conn) bind(m *pgproto3.Bind) *pgError {
	st, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return newError(codeInvalidStatement, fmt.Sprintf("prepared statement %q does not exist", m.PreparedStatement))
	}
	if old, ok := c.portals[m.DestinationPortal]; ok {
		if m.DestinationPortal != "" {
			return newError(codeDuplicateCursor, fmt.Sprintf("portal %q already exists", m.DestinationPortal))
		}
		old.close()
		delete(c.portals, "")
	}
	if e := c.txnGate(&st.plan); e != nil {
		return e
	}
	if len(m.Parameters) != len(st.oids) {
		return newError(codeProtocolViolation, fmt.Sprintf("bind message supplies %d parameters, but prepared statement %q requires %d",
			len(m.Parameters), m.PreparedStatement, len(st.oids)))
	}
	nf := len(m.ParameterFormatCodes)
	if nf > 1 && nf != len(m.Parameters) {
		return newError(codeProtocolViolation, fmt.Sprintf("bind message has %d parameter formats but %d parameters", nf, len(m.Parameters)))
	}
	args := make([]any, len(m.Parameters))
	for i, data := range m.Parameters {
		var format int16
		switch nf {
		case 0:
		case 1:
			format = m.ParameterFormatCodes[0]
		default:
			format = m.ParameterFormatCodes[i]
		}
		v, e := decodeParam(st.oids[i], format, data)
		if e != nil {
			e.message = fmt.Sprintf("%s (parameter $%d)", e.message, i+1)
			return e
		}
		args[i] = v
	}
	c.portals[m.DestinationPortal] = &portal{
		plan:    st.plan,
		args:    args,
		formats: slices.Clone(m.ResultFormatCodes),
		told:    st.told,
	}
	c.out.send(&pgproto3.BindComplete{})
	return nil
}

// describe answers Describe. A statement is described without running
// it; a portal is described by starting it (its rows then wait for
// Execute), which gives the exact columns for the bound parameters.
func (c *conn) describe(m *pgproto3.Describe) *pgError {
	switch m.ObjectType {
	case 'S':
		st, ok := c.stmts[m.Name]
		if !ok {
			return newError(codeInvalidStatement, fmt.Sprintf("prepared statement %q does not exist", m.Name))
		}
		if e := c.txnGate(&st.plan); e != nil {
			return e
		}
		c.out.send(&pgproto3.ParameterDescription{ParameterOIDs: st.oids})
		if !(&portal{plan: st.plan}).returnsRows() {
			c.out.send(&pgproto3.NoData{})
			return nil
		}
		if st.told == nil {
			cols, e := c.describeStatement(st)
			if e != nil {
				return e
			}
			st.told = cols
		}
		c.out.send(rowDescription(st.told))
	case 'P':
		p, ok := c.portals[m.Name]
		if !ok {
			return newError(codeInvalidCursor, fmt.Sprintf("portal %q does not exist", m.Name))
		}
		if !p.returnsRows() {
			c.out.send(&pgproto3.NoData{})
			return nil
		}
		if !p.open {
			if e := p.start(c.ctx, c); e != nil {
				return e
			}
		}
		c.out.send(rowDescription(p.cols))
	default:
		return newError(codeProtocolViolation, fmt.Sprintf("invalid DESCRIBE message subtype %d", m.ObjectType))
	}
	return nil
}

// execute answers Execute: up to limit rows (all when 0), then
// CommandComplete or PortalSuspended.
func (c *conn) execute(name string, limit int64) *pgError {
	p, ok := c.portals[name]
	if !ok {
		return newError(codeInvalidCursor, fmt.Sprintf("portal %q does not exist", name))
	}
	if e := c.txnGate(&p.plan); e != nil {
		return e
	}
	switch {
	case p.done:
		c.out.send(&pgproto3.CommandComplete{CommandTag: []byte(commandTag(&p.plan, 0))})
		return nil
	case p.plan.sql == "":
		c.finishFixed(&p.plan)
		p.done = true
		return nil
	case p.plan.keyword == "COPY":
		p.done = true
		return c.copy(&p.plan)
	}
	if !p.open {
		if e := p.start(c.ctx, c); e != nil {
			return e
		}
	}
	return p.stream(c, limit)
}

// closeObject answers Close; closing what does not exist is no error.
func (c *conn) closeObject(m *pgproto3.Close) {
	switch m.ObjectType {
	case 'S':
		delete(c.stmts, m.Name)
	case 'P':
		if p, ok := c.portals[m.Name]; ok {
			p.close()
			delete(c.portals, m.Name)
		}
	}
	c.out.send(&pgproto3.CloseComplete{})
}

// The wrapper that describes a query without running it: DuckDB plans
// the whole query, and LIMIT 0 stops it before the first row.
const (
	describePrefix = "SELECT * FROM (\n"
	describeSuffix = "\n) AS pgwire_describe LIMIT 0"
)

// describeStatement finds a statement's result columns before its
// parameters are known. Queries (SELECT, WITH, VALUES, FROM, SHOW,
// DESCRIBE, ...) are planned inside a LIMIT 0 wrapper; anything else that
// returns rows (INSERT ... RETURNING, PRAGMA, CALL, EXPLAIN) runs between
// BEGIN TRANSACTION and ROLLBACK.
//
// The parameters are stand-ins of the kind Bind will pass: an empty
// string (a string literal to DuckDB) where the type is not declared, a
// zero value of the declared type otherwise. DuckDB may type a result
// column that is a bare parameter differently once the real values come;
// the portal then converts its values to the types described here.
func (c *conn) describeStatement(st *statement) ([]column, *pgError) {
	args := make([]any, len(st.oids))
	for i, oid := range st.oids {
		args[i] = standIn(oid)
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(context.Canceled)
	stop := c.run(cancel)
	defer stop()

	fail := func(err error, q string, shift int) *pgError {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		e := toPGError(err, q)
		e.position -= shift
		if e.position < 1 || st.plan.rewritten {
			e.position = 0
		}
		return e
	}
	switch st.plan.keyword {
	case "SELECT", "WITH", "VALUES", "FROM", "TABLE", "SHOW", "DESCRIBE", "SUMMARIZE", "PIVOT", "UNPIVOT", "(":
		q := describePrefix + st.plan.sql + describeSuffix
		rows, err := c.sess.Query(ctx, q, args...)
		if err != nil {
			return nil, fail(err, q, len(describePrefix))
		}
		defer rows.Close()
		cols, err := columnsOf(rows)
		if err != nil {
			return nil, fail(err, q, len(describePrefix))
		}
		return cols, nil
	}
	if err := c.exec(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, fail(err, "", 0)
	}
	defer func() { _ = c.exec(context.WithoutCancel(ctx), "ROLLBACK") }()
	rows, err := c.sess.Query(ctx, st.plan.sql, args...)
	if err != nil {
		return nil, fail(err, st.plan.sql, 0)
	}
	defer rows.Close()
	cols, err := columnsOf(rows)
	if err != nil {
		return nil, fail(err, st.plan.sql, 0)
	}
	return cols, nil
}

// exec runs a statement whose rows do not matter.
func (c *conn) exec(ctx context.Context, q string) error {
	rows, err := c.sess.Query(ctx, q)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	err = rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}
