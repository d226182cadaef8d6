package ingest

// Loader methods for package load's CSV files and batched stores, kept in
// a file of their own next to loader.go.

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Plan makes Check take table name, which does not exist yet, to have
// schema s rather than the schema of the first line checked for it: a CSV
// file's header names columns that its first row may leave empty. Reset
// forgets it; Create makes the table.
func (ld *Loader) Plan(name string, s *store.Schema) {
	ld.c.seen[name] = &checkState{lo: newLayout(name, s), lastTs: math.MinInt64}
}

// Create creates table name with schema s, or opens it when it exists
// (whose schema must then be s), so that lines are appended to it with
// the columns s gives, in its order.
func (ld *Loader) Create(name string, s *store.Schema) error {
	sk := ld.s
	if t, ok := sk.tables[name]; ok {
		if !t.schema.Equal(s) {
			return fmt.Errorf("ingest: table %s has schema %v, not %v", name, t.schema, s)
		}
		return nil
	}
	if err := store.ValidTableName(name); err != nil {
		return &lineproto.LineError{Reason: lineproto.ReasonName, Msg: err.Error()}
	}
	o := sk.opts.Writer
	o.Logger = sk.log
	if sk.opts.LiveRoot != "" {
		o.LiveDir = filepath.Join(sk.opts.LiveRoot, name)
	}
	o.Schema = s
	w, err := writer.Open(sk.opts.DB, name, &o)
	if err != nil {
		return err
	}
	sk.log.Info("ingest: table open", "table", name, "rows", w.Len(), "schema", w.Schema().String())
	t := newTable(name, w, sk.log)
	sk.noteFar(t)
	sk.tables[name] = t
	sk.last = t
	sk.copyStats(t)
	return nil
}

// CheckAt is Check for lines that AppendLines will store with the same
// now: a line without a timestamp is checked as stored at now, or at its
// table's last row's time when that is later (as the table and the lines
// checked before it leave it), so that a later line of the same table
// timed before that is found bad here and not when it is stored.
func (ld *Loader) CheckAt(l *lineproto.Line, now int64) error {
	ld.s.now = now
	if err := ld.c.line(l); err != nil {
		ld.s.countLate(l.Measurement, err)
		return err
	}
	if !l.HasTs {
		if st := ld.c.seen[string(l.Measurement)]; st != nil && st.lastTs < now {
			st.lastTs = now
		}
	}
	return nil
}

// AppendLines stores ls in order, like Append on each, and stops at the
// first line that fails: it returns how many lines were stored before it
// and its error (a *LineError for a bad line, whose Line is for the caller
// to set; another error is a write failure). A line without a timestamp is
// stored at now (ns since the epoch), or at its table's last row's time
// when that is later. Giving now, rather than reading the clock per line
// as Append does, saves a clock read per line (on some machines as costly
// as storing the line) and lets a caller that checked the lines with
// CheckAt and the same now store exactly what it checked.
func (ld *Loader) AppendLines(ls []lineproto.Line, now int64) (int, error) {
	s := ld.s
	s.now = now
	for i := range ls {
		if _, err := s.store(&ls[i]); err != nil {
			s.countLate(ls[i].Measurement, err)
			return i, err
		}
	}
	return len(ls), nil
}
