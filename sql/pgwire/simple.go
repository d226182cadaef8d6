package pgwire

import (
	"github.com/jackc/pgx/v5/pgproto3"
)

// simpleQuery answers a Query message: each statement in turn, stopping
// at the first error, then ReadyForQuery. It returns only write errors.
func (c *conn) simpleQuery(q string) error {
	// A Query destroys the unnamed statement and portal.
	delete(c.stmts, "")
	if p := c.portals[""]; p != nil {
		p.close()
		delete(c.portals, "")
	}
	pieces := splitStatements(q)
	if len(pieces) == 0 {
		c.out.send(&pgproto3.EmptyQueryResponse{})
	}
	for _, pc := range pieces {
		if e := c.runSimple(pc); e != nil {
			if e.position > 0 {
				e.position += pc.offset
			}
			c.fail(e)
			break
		}
		if c.out.err != nil {
			return c.out.err
		}
	}
	c.out.send(&pgproto3.ReadyForQuery{TxStatus: c.tx})
	return c.out.flush()
}

// runSimple answers one statement of a Query message.
func (c *conn) runSimple(pc sqlPiece) *pgError {
	p := c.planFor(pc.text)
	if e := c.txnGate(&p); e != nil {
		return e
	}
	if p.sql == "" {
		c.finishFixed(&p)
		return nil
	}
	if p.keyword == "COPY" {
		return c.copy(&p)
	}
	pt := &portal{plan: p}
	defer pt.close()
	if e := pt.start(c.ctx, c); e != nil {
		return e
	}
	if pt.returnsRows() {
		c.out.send(rowDescription(pt.cols))
	}
	return pt.stream(c, 0)
}

// planFor is planFor with the session's own settings filled in.
func (c *conn) planFor(stmt string) plan {
	p := planFor(stmt)
	if p.show != "" {
		p.sql = "SELECT " + sqlString(c.params[p.show]) + " AS " + sqlIdent(p.show)
	}
	return p
}

// txnGate refuses statements in a failed transaction block, as Postgres
// does, until COMMIT or ROLLBACK.
func (c *conn) txnGate(p *plan) *pgError {
	if c.tx == 'E' && p.txn != txnEnd {
		return newError(codeInFailedTxn, "current transaction is aborted, commands ignored until end of transaction block")
	}
	return nil
}

// finishFixed answers a statement that runs nothing in DuckDB: a
// transaction command (DuckDB's own transactions are left alone: the
// tables are read through views of tickdb, and a client's BEGIN must not
// pin a DuckDB snapshot), an ignored SET, an empty statement.
func (c *conn) finishFixed(p *plan) {
	if p.kind == kindEmpty {
		c.out.send(&pgproto3.EmptyQueryResponse{})
		return
	}
	tag := p.tag
	switch p.txn {
	case txnBegin:
		if c.tx == 'I' {
			c.tx = 'T'
		}
	case txnEnd:
		if c.tx == 'E' {
			tag = "ROLLBACK"
		}
		c.tx = 'I'
	}
	if p.param[0] != "" {
		c.params[p.param[0]] = p.param[1]
		c.out.send(&pgproto3.ParameterStatus{Name: p.param[0], Value: p.param[1]})
	}
	c.out.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
}
