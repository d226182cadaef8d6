package ingest

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// A string field is stored like a tag: a table created from a line with
// one gets a sym column for it, later lines store their strings (escapes
// undone) through the dictionary, over TCP and HTTP alike, and the values
// read back as the symbols they were.
func TestStringFieldsStoredAsSymbols(t *testing.T) {
	srv, db := testServer(t, nil)
	c := dial(t, srv)
	w := bufio.NewWriter(c)
	notes := []struct{ wire, value string }{
		{`"halted"`, "halted"},
		{`""`, ""},
		{`"say \"hi\", x=1 y"`, `say "hi", x=1 y`},
		{`"two\nlines\r"`, "two\nlines\r"},
		{`"back\\slash"`, `back\slash`},
		{`"tab` + "\t" + `in"`, "tab\tin"},
	}
	var want []string
	// 60 lines in one key order, so most take the writer's fast path.
	for i := range 60 {
		n := notes[i%len(notes)]
		fmt.Fprintf(w, "ev,sym=S%d note=%s,px=%d.5 %d\n", i%3, n.wire, i, 1000+i)
		want = append(want, fmt.Sprintf("%d sym=S%d note=%s px=%d.5", 1000+i, i%3, n.value, i))
	}
	// The string column also takes a tag, and a string goes into the
	// column a tag made; a line may leave it out (the empty symbol).
	fmt.Fprintf(w, "ev,sym=S9,note=tagged px=1 2000\n")
	fmt.Fprintf(w, "ev note=\"only a note\",sym=\"S8\" 2001\n")
	fmt.Fprintf(w, "ev,sym=S7 px=2 2002\n")
	want = append(want, "2000 sym=S9 note=tagged px=1", "2001 sym=S8 note=only a note px=NaN", "2002 sym=S7 note= px=2")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := tableRows(t, db, "ev", len(want), 10*time.Second)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r, err := reader.Open(db, "ev", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Schema()
	r.Close()
	want0 := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "note", Type: store.TypeSym}, store.Column{Name: "px", Type: store.TypeF64})
	if !s.Equal(want0) {
		t.Fatalf("schema %v, want %v", s, want0)
	}

	// HTTP: a table made by a request's first line, strings only.
	body := "notes note=\"a, b\",who=\"x y\" 1\nnotes note=\"c\\\"d\",who=\"\" 2\n"
	if code, resp, _ := httpDo(t, srv, "POST", "/write", body); code != http.StatusNoContent {
		t.Fatalf("%d %s", code, resp)
	}
	got = tableRows(t, db, "notes", 2, 10*time.Second)
	if want := []string{"1 note=a, b who=x y", `2 note=c"d who=`}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("notes rows %q, want %q", got, want)
	}
}

// A string field that does not fit its column is a bad line naming both
// types; one over the symbol limit is a bad value. (One the table lacks
// adds a sym column: TestAddColumns.)
func TestStringFieldBadLines(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	if code, resp, _ := httpDo(t, srv, "POST", "/write", "t,sym=A v=1,n=1i,ok=t,note=\"x\" 1\n"); code != http.StatusNoContent {
		t.Fatalf("%d %s", code, resp)
	}
	for _, c := range []struct{ line, reason, msg string }{
		{`t,sym=A v="1.5" 2`, "type_mismatch", `field "v": column "v" of table t is f64, got a string value`},
		{`t,sym=A n="7" 2`, "type_mismatch", `field "n": column "n" of table t is i64, got a string value`},
		{`t,sym=A ok="t" 2`, "type_mismatch", `field "ok": column "ok" of table t is bool, got a string value`},
		{`t,sym=A note=1.5 2`, "type_mismatch", `field "note": column "note" of table t is sym, got a float value (send it as a tag or a quoted string)`},
		{fmt.Sprintf(`t,sym=A note="%s" 2`, strings.Repeat("x", store.MaxSymLen+1)), "value", fmt.Sprintf(`string field "note": value is %d bytes, a symbol is at most %d`, store.MaxSymLen+1, store.MaxSymLen)},
		{fmt.Sprintf(`u note="%s" 2`, strings.Repeat("x", store.MaxSymLen+1)), "value", "a symbol is at most"},
	} {
		code, resp, _ := httpDo(t, srv, "POST", "/write", c.line+"\n")
		if code != http.StatusBadRequest || !strings.Contains(resp, strings.ReplaceAll(c.msg, `"`, `\"`)) {
			t.Errorf("%.60s: %d %s; want 400 saying %q", c.line, code, resp, c.msg)
		}
	}
	if v := rejected(srv, "t", "type_mismatch"); v != 4 {
		t.Errorf("rejected{t,type_mismatch} = %v, want 4", v)
	}
	got := tableRows(t, db, "t", 1, 5*time.Second)
	if got[0] != "1 sym=A v=1 n=1 ok=true note=x" {
		t.Fatalf("rows %q", got)
	}
}
