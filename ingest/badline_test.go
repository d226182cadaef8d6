package ingest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/reader"
)

// badLine is one bad line of SPEC §6 against table t (ts, sym, v f64),
// given the time ts of the good line before it: what the server must
// answer (the reason label, the table label of the rejection metric and a
// part of the message).
type badLine struct {
	name   string
	line   func(ts int64) string
	reason string
	table  string // the metric's table label: t once the table exists, "" for what names none
	msg    string
}

// badLines covers every kind of bad line the parser and the table layer
// reject, the tag-only line first, but one: a backslash that ends a line
// escapes the line break after it (a QuestDB client's symbol with a line
// break), so "escapes nothing" happens only at the end of the input; the
// tests send that one last.
func badLines() []badLine {
	return []badLine{
		{"tags alone", func(int64) string { return "t,sym=S1" }, "no_field", "t", "no field after the tags"},
		{"tags alone with a timestamp", func(ts int64) string { return fmt.Sprintf("t,sym=S1 %d", ts+1) }, "no_field", "t", "no field after the tags"},
		{"measurement alone", func(int64) string { return "t" }, "no_field", "t", "no field after the measurement"},
		{"field without value", func(int64) string { return "t,sym=A v" }, "syntax", "t", `field key "v" has no '='`},
		{"empty tag value", func(int64) string { return "t,sym= v=1" }, "syntax", "t", "empty value"},
		{"malformed number", func(ts int64) string { return fmt.Sprintf("t,sym=A v=1.2.3 %d", ts+1) }, "number", "t", "malformed number"},
		{"no value", func(int64) string { return "t,sym=A v=abc" }, "value", "t", "not a number"},
		{"duplicate key", func(ts int64) string { return fmt.Sprintf("t,sym=A v=1,v=2 %d", ts+1) }, "duplicate", "t", "repeats"},
		{"malformed timestamp", func(int64) string { return "t,sym=A v=1 12x" }, "timestamp", "t", "malformed timestamp"},
		// A line naming a column the table lacks adds it, but not when the
		// line is bad: the rows read back show every column the table has.
		{"more columns than a table can have", func(ts int64) string { return fmt.Sprintf("t v=1,%s %d", manyFields(58), ts+1) }, "table_full", "t", `adding 58 columns ("c00", "c01", "c02", ...) would give table t 61 columns, more than the 60`},
		{"type mismatch in a line adding a column", func(ts int64) string { return fmt.Sprintf("t,sym=A,dc=x v=t,w=2 %d", ts+1) }, "type_mismatch", "t", "column \"v\" of table t is f64, got a boolean value"},
		{"late row adding a column", func(ts int64) string { return fmt.Sprintf("t,sym=A v=1,w=2 %d", ts-1) }, "out_of_order", "t", "before"},
		{"symbol too long adding a column", func(ts int64) string {
			return fmt.Sprintf("t,sym=A v=1,note=\"%s\" %d", strings.Repeat("x", 5000), ts+1)
		}, "value", "t", "a symbol is at most"},
		{"type mismatch", func(ts int64) string { return fmt.Sprintf("t,sym=A v=t %d", ts+1) }, "type_mismatch", "t", "column \"v\" of table t is f64, got a boolean value"},
		{"string into the f64 column", func(ts int64) string { return fmt.Sprintf(`t,sym=A v="1.5" %d`, ts+1) }, "type_mismatch", "t", "column \"v\" of table t is f64, got a string value"},
		{"late row", func(ts int64) string { return fmt.Sprintf("t,sym=A v=1 %d", ts-1) }, "out_of_order", "t", "before"},
		{"far future", func(int64) string { return fmt.Sprintf("t,sym=A v=1 %d", int64(math.MaxInt64)) }, "future", "t", "ahead of the server's clock"},
		{"seconds", func(ts int64) string { return fmt.Sprintf("t,sym=A v=1 %d", ts/1e9) }, "ts_unit", "t", "but as seconds it is"},
		{"symbol too long", func(ts int64) string { return fmt.Sprintf("t,sym=%s v=1 %d", strings.Repeat("x", 5000), ts+1) }, "value", "t", "a symbol is at most"},
		{"bad table name", func(ts int64) string { return fmt.Sprintf("a/b,sym=A v=1 %d", ts+1) }, "name", "", "a/b"},
		{"line over the limit", func(ts int64) string { return fmt.Sprintf("t,sym=%s v=1 %d", strings.Repeat("y", 70<<10), ts+1) }, "too_long", "", "limit"},
	}
}

// manyFields is n integer fields, c00=1i,c01=1i,...
func manyFields(n int) string {
	f := make([]string, n)
	for i := range f {
		f[i] = fmt.Sprintf("c%02d=1i", i)
	}
	return strings.Join(f, ",")
}

// Over TCP, every bad line is skipped alone: the good lines around it are
// stored, in order, none changed, and the line after it is not blocked
// (a tag-only line of a historical feed used to be stored at the server's
// clock, which made every later line a late row). Each rejection is
// counted under its reason and, once the table exists, its name.
func TestBadLinesNeverBlockTCP(t *testing.T) {
	srv, db := testServer(t, nil)
	c := dial(t, srv)
	w := bufio.NewWriter(c)
	base := time.Now().Add(-time.Hour).UnixNano() // a historical feed: every ts before the server's clock
	var want []string
	good := func(k int) {
		ts := base + int64(k)*1000
		fmt.Fprintf(w, "t,sym=G%d v=%d.5 %d\n", k, k, ts)
		want = append(want, fmt.Sprintf("%d sym=G%d v=%d.5", ts, k, k))
	}
	good(0)
	bad := badLines()
	for i, b := range bad {
		fmt.Fprintln(w, b.line(base+int64(i)*1000))
		good(i + 1)
	}
	w.WriteString(`t,sym=A\`) // the last bytes: the backslash escapes nothing
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	bad = append(bad, badLine{reason: "escape", table: "t"})
	got := tableRows(t, db, "t", len(want), 10*time.Second)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	counts := map[[2]string]float64{}
	for _, b := range bad {
		counts[[2]string{b.table, b.reason}]++
	}
	waitRejected(t, srv, "t", "escape", 1) // read at the close, maybe after the rows are in
	for k, n := range counts {
		// The parse errors are counted by the event loop, the others by
		// the writer after the good line before them: all are in by now.
		if v := rejected(srv, k[0], k[1]); v != n {
			t.Errorf("rejected{table=%q,reason=%s} = %v, want %v", k[0], k[1], v, n)
		}
	}
	if v := rejected(srv, "", "no_field"); v != 0 {
		t.Errorf(`rejected{table="",reason=no_field} = %v; the table exists, its rejections must name it`, v)
	}
}

// Over HTTP, a request holding a bad line answers 400 naming its 1-based
// line and the reason, and commits nothing of the request (not even the
// good line before it, or its symbol); the next request is stored.
func TestBadLinesNeverBlockHTTP(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	base := time.Now().Add(-time.Hour).UnixNano()
	var want []string
	good := func(k int) string {
		ts := base + int64(k)*1000
		want = append(want, fmt.Sprintf("%d sym=G%d v=%d.5", ts, k, k))
		return fmt.Sprintf("t,sym=G%d v=%d.5 %d\n", k, k, ts)
	}
	post := func(body string) (int, errBody) {
		t.Helper()
		code, resp, _ := httpDo(t, srv, "POST", "/write", body)
		var e errBody
		if code != http.StatusNoContent {
			if err := json.Unmarshal([]byte(resp), &e); err != nil {
				t.Fatalf("status %d, body %q: %v", code, resp, err)
			}
		}
		return code, e
	}
	if code, e := post(good(0)); code != http.StatusNoContent {
		t.Fatalf("first write: %d %+v", code, e)
	}
	bad := badLines()
	for i, b := range bad {
		ts := base + int64(i)*1000
		body := fmt.Sprintf("t,sym=H%d v=1 %d\n%s\n", i, ts+500, b.line(ts+500))
		code, e := post(body)
		if code != http.StatusBadRequest || e.Line != 2 || e.Code != "invalid" || !strings.Contains(e.Message, b.msg) {
			t.Errorf("%s: %d %+v; want 400 naming line 2 and saying %q", b.name, code, e, b.msg)
		}
		if code, e := post(good(i + 1)); code != http.StatusNoContent {
			t.Fatalf("%s: the good request after it: %d %+v", b.name, code, e)
		}
	}
	// A backslash that ends the body escapes nothing.
	if code, e := post(fmt.Sprintf("t,sym=E v=1 %d\nt,sym=A\\", base+int64(len(bad))*1000+500)); code != http.StatusBadRequest ||
		e.Line != 2 || !strings.Contains(e.Message, "escapes nothing") {
		t.Errorf("trailing backslash: %d %+v; want 400 naming line 2 and saying it escapes nothing", code, e)
	}
	bad = append(bad, badLine{reason: "escape", table: "t"})
	got := tableRows(t, db, "t", len(want), 10*time.Second)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range bad {
		if _, ok := r.SymbolID(fmt.Appendf(nil, "H%d", i)); ok {
			t.Errorf("symbol H%d of a rejected request is in the dictionary", i)
		}
	}
	counts := map[[2]string]float64{}
	for _, b := range bad {
		counts[[2]string{b.table, b.reason}]++
	}
	for k, n := range counts {
		if v := rejected(srv, k[0], k[1]); v != n {
			t.Errorf("rejected{table=%q,reason=%s} = %v, want %v", k[0], k[1], v, n)
		}
	}
}

// waitRejected waits up to 10 s for the rejected-lines counter of table
// and reason to reach n.
func waitRejected(t *testing.T, srv *Server, table, reason string, n float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for rejected(srv, table, reason) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}
