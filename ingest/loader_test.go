package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/store"
)

func parseLines(t *testing.T, text string) []lineproto.Line {
	t.Helper()
	var p lineproto.Parser
	var out []lineproto.Line
	for _, s := range strings.Split(strings.TrimSpace(text), "\n") {
		var l lineproto.Line
		ok, err := p.Parse([]byte(s), &l)
		if err != nil || !ok {
			t.Fatalf("parse %q: %v", s, err)
		}
		// Own copies: the parser's slices are valid until its next call.
		c := lineproto.Line{Measurement: []byte(string(l.Measurement)), Ts: l.Ts, HasTs: l.HasTs}
		for _, tg := range l.Tags {
			c.Tags = append(c.Tags, lineproto.Tag{Key: []byte(string(tg.Key)), Value: []byte(string(tg.Value))})
		}
		for _, f := range l.Fields {
			f.Key = []byte(string(f.Key))
			c.Fields = append(c.Fields, f)
		}
		out = append(out, c)
	}
	return out
}

// A file checked whole fails on its bad line having stored nothing (no
// table either); a good one is stored, made durable by Close.
func TestLoaderCheckThenAppend(t *testing.T) {
	db, live := testutil.DB(t)
	ld := NewLoader(&Options{DB: db, LiveRoot: live})
	// Line 3 adds column w; line 4 conflicts with the type line 3 gives it.
	bad := parseLines(t, "f,sym=A v=1 1\nf,sym=A v=2 2\nf,sym=A w=3 3\nf,sym=A w=t 4")
	var err error
	for i := range bad {
		if err = ld.Check(&bad[i]); err != nil {
			break
		}
	}
	if !errors.Is(err, lineproto.ErrBadLine) || !strings.Contains(err.Error(), `field "w": column "w" of table f is f64, got a boolean value`) {
		t.Fatalf("check: %v", err)
	}
	if _, err := os.Stat(filepath.Join(db, "f")); !os.IsNotExist(err) {
		t.Fatalf("table created by a check: %v", err)
	}
	ld.Reset()
	good := parseLines(t, "f,sym=A v=1 1\nf,sym=B v=2 2\ng x=1i 5")
	for i := range good {
		if err := ld.Check(&good[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range good {
		if err := ld.Append(&good[i]); err != nil {
			t.Fatal(err)
		}
	}
	// A late row is bad, and adds no column even when it names one.
	late := parseLines(t, "f,sym=A v=9 0\nf,sym=A v=9,late=1i 0")
	for i := range late {
		if err := ld.Append(&late[i]); !errors.Is(err, lineproto.ErrBadLine) {
			t.Fatalf("late row %d: %v", i, err)
		}
	}
	// A line naming a new field adds its column; the rows before read it as 0.
	grow := parseLines(t, "f,sym=C v=3,w=4i 3")
	if err := ld.Check(&grow[0]); err != nil {
		t.Fatal(err)
	}
	if err := ld.Append(&grow[0]); err != nil {
		t.Fatal(err)
	}
	if err := ld.Close(); err != nil {
		t.Fatal(err)
	}
	if rows := tableRows(t, db, "f", 3, 0); strings.Join(rows, "\n") != "1 sym=A v=1 w=0\n2 sym=B v=2 w=0\n3 sym=C v=3 w=4" {
		t.Fatalf("rows %q", rows)
	}
	if st := ld.Stats(); st["f"].Durable != 3 || st["g"].Durable != 1 {
		t.Fatalf("stats %+v", st)
	}
	tablecheck.VerifyAll(t, db)
}

// A new table takes any first timestamp, before the epoch too, from a
// line-protocol line or a CSV file planned from its header (the check
// used to start a new table at ts 0 and call a negative one late); the
// order is still checked after it.
func TestLoaderNewTableNegativeTs(t *testing.T) {
	db, live := testutil.DB(t)
	ld := NewLoader(&Options{DB: db, LiveRoot: live})
	lines := parseLines(t, "n v=1 -9223372036854775808\nn v=2 -5\nn v=3 0\nn v=4 -1")
	for i := range lines[:3] {
		if err := ld.Check(&lines[i]); err != nil {
			t.Fatalf("check line %d: %v", i+1, err)
		}
	}
	if err := ld.Check(&lines[3]); !errors.Is(err, lineproto.ErrBadLine) {
		t.Fatalf("check of a late line: %v", err)
	}
	if n, err := ld.AppendLines(lines[:3], 0); n != 3 || err != nil {
		t.Fatalf("append: %d %v", n, err)
	}

	ld.Reset()
	// The schema and the lines of the CSV file "ts,v\n-7,1\n0,2\n", as
	// load's CSV reader gives them (its header and first rows make v i64).
	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "v", Type: store.TypeI64})
	ld.Plan("c", s)
	var csvLines []lineproto.Line
	for i, ts := range []int64{-7, 0} {
		l := lineproto.Line{Measurement: []byte("c"), Ts: ts, HasTs: true,
			Fields: []lineproto.Field{{Key: []byte("v"), Kind: lineproto.KindInt, I: int64(i + 1)}}}
		if err := ld.CheckAt(&l, 0); err != nil {
			t.Fatalf("check CSV row %d: %v", i+1, err)
		}
		csvLines = append(csvLines, l)
	}
	if err := ld.Create("c", s); err != nil {
		t.Fatal(err)
	}
	if n, err := ld.AppendLines(csvLines, 0); n != 2 || err != nil {
		t.Fatalf("append CSV: %d %v", n, err)
	}
	if err := ld.Close(); err != nil {
		t.Fatal(err)
	}
	if rows := tableRows(t, db, "n", 3, 0); rows[0] != "-9223372036854775808 v=1" || rows[1] != "-5 v=2" {
		t.Fatalf("rows %q", rows)
	}
	if rows := tableRows(t, db, "c", 2, 0); rows[0] != "-7 v=1" {
		t.Fatalf("rows %q", rows)
	}
	tablecheck.VerifyAll(t, db)
}

// CheckAt checks lines without a timestamp as AppendLines with the same
// now stores them: at now, or at the table's last row's time when later.
func TestLoaderCheckAtStamps(t *testing.T) {
	db, live := testutil.DB(t)
	// Its clock (now) reads a few µs after the epoch, so its rows are
	// 1970 data in every unit: Allow1970.
	ld := NewLoader(&Options{DB: db, LiveRoot: live, Allow1970: true})
	check := func(text string, now int64) (bad []int) {
		t.Helper()
		ld.Reset()
		lines := parseLines(t, text)
		for i := range lines {
			if err := ld.CheckAt(&lines[i], now); err != nil {
				if !errors.Is(err, lineproto.ErrBadLine) {
					t.Fatal(err)
				}
				bad = append(bad, i+1)
			}
		}
		return bad
	}
	if bad := check("s v=1\ns v=2 500\ns v=3 1000", 1000); len(bad) != 1 || bad[0] != 2 {
		t.Fatalf("bad lines %v, want [2]", bad)
	}
	text := "s v=1 2000\ns v=2\ns v=3 1500\ns v=4 2000"
	if bad := check(text, 1000); len(bad) != 1 || bad[0] != 3 {
		t.Fatalf("bad lines %v, want [3]", bad)
	}
	lines := parseLines(t, text)
	if n, err := ld.AppendLines(lines[:2], 1000); n != 2 || err != nil {
		t.Fatalf("append: %d %v", n, err)
	}
	if n, err := ld.AppendLines(lines[2:], 1000); n != 0 || !errors.Is(err, lineproto.ErrBadLine) {
		t.Fatalf("append of the line CheckAt found bad: %d %v", n, err)
	}
	if n, err := ld.AppendLines(lines[3:], 1000); n != 1 || err != nil {
		t.Fatalf("append: %d %v", n, err)
	}
	if err := ld.Close(); err != nil {
		t.Fatal(err)
	}
	if rows := tableRows(t, db, "s", 3, 0); rows[1] != "2000 v=2" {
		t.Fatalf("rows %q", rows)
	}
	// An existing table's last row counts too.
	ld = NewLoader(&Options{DB: db, LiveRoot: live})
	defer ld.Close()
	if bad := check("s v=5\ns v=6 1999", 1000); len(bad) != 1 || bad[0] != 2 {
		t.Fatalf("bad lines %v, want [2]", bad)
	}
}
