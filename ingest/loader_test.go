package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/testutil"
)

func parseLines(t *testing.T, text string) []Line {
	t.Helper()
	var p Parser
	var out []Line
	for _, s := range strings.Split(strings.TrimSpace(text), "\n") {
		var l Line
		ok, err := p.Parse([]byte(s), &l)
		if err != nil || !ok {
			t.Fatalf("parse %q: %v", s, err)
		}
		// Own copies: the parser's slices are valid until its next call.
		c := Line{Measurement: []byte(string(l.Measurement)), Ts: l.Ts, HasTs: l.HasTs}
		for _, tg := range l.Tags {
			c.Tags = append(c.Tags, Tag{Key: []byte(string(tg.Key)), Value: []byte(string(tg.Value))})
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
	bad := parseLines(t, "f,sym=A v=1 1\nf,sym=A v=2 2\nf,sym=A w=3 3")
	var err error
	for i := range bad {
		if err = ld.Check(&bad[i]); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrBadLine) || !strings.Contains(err.Error(), "no such column") {
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
	late := parseLines(t, "f,sym=A v=9 0")
	if err := ld.Append(&late[0]); !errors.Is(err, ErrBadLine) {
		t.Fatalf("late row: %v", err)
	}
	if err := ld.Close(); err != nil {
		t.Fatal(err)
	}
	if rows := tableRows(t, db, "f", 2, 0); rows[1] != "2 sym=B v=2" {
		t.Fatalf("rows %q", rows)
	}
	if st := ld.Stats(); st["f"].Durable != 2 || st["g"].Durable != 1 {
		t.Fatalf("stats %+v", st)
	}
	verifyAll(t, db)
}
