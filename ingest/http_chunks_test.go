package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/reader"
)

// chunkedBody is a body of about 3.5 chunks (http_chunks.go): two tables
// interleaved, blank and comment lines, symbols first seen in later
// chunks, a column that table a gains in the third chunk. It returns the
// body, the lines it has, and each table's rows as tableRows shows them.
func chunkedBody() (body string, lines int, want map[string][]string) {
	var b strings.Builder
	want = map[string][]string{}
	added := false
	for i := 0; b.Len() < 3*chunkText+chunkText/2; i++ {
		lines++
		switch {
		case i%1000 == 7:
			b.WriteString("\n")
		case i%1000 == 9:
			b.WriteString("# a comment\n")
		case i%3 == 2:
			fmt.Fprintf(&b, "b,host=h%d load=%d.5 %d\n", i%7, i, 1000+i)
			want["b"] = append(want["b"], fmt.Sprintf("%d host=h%d load=%d.5", 1000+i, i%7, i))
		default:
			// Symbols new to the request every 40,000 lines.
			sym := fmt.Sprintf("S%d_%d", i/40_000, i%50)
			if b.Len() > 2*chunkText+chunkText/3 {
				added = true
				fmt.Fprintf(&b, "a,sym=%s v=%di,x=t %d\n", sym, i, 1000+i)
				want["a"] = append(want["a"], fmt.Sprintf("%d sym=%s v=%d x=true", 1000+i, sym, i))
				continue
			}
			fmt.Fprintf(&b, "a,sym=%s v=%di %d\n", sym, i, 1000+i)
			want["a"] = append(want["a"], fmt.Sprintf("%d sym=%s v=%d", 1000+i, sym, i))
		}
	}
	if added { // the rows before the column came have its zero value
		for i, r := range want["a"] {
			if !strings.HasSuffix(r, "x=true") {
				want["a"][i] = r + " x=false"
			}
		}
	}
	return b.String(), lines, want
}

// A body of several chunks, staged on several goroutines, is stored as
// the same body staged line by line would be: every row, each table's in
// line order, with the column one table gains midway; plain and gzip.
func TestHTTPChunkedBody(t *testing.T) {
	body, _, want := chunkedBody()
	for _, enc := range []string{"identity", "gzip"} {
		t.Run(enc, func(t *testing.T) {
			srv, db := testServer(t, &Options{ILPAddr: "off"})
			var code int
			var resp string
			if enc == "gzip" {
				var zb bytes.Buffer
				zw := gzip.NewWriter(&zb)
				zw.Write([]byte(body))
				zw.Close()
				c, msg, err := post(&http.Client{Timeout: time.Minute}, "http://"+srv.HTTPAddr().String()+"/write", &zb, true)
				if err != nil {
					t.Fatal(err)
				}
				code, resp = c, msg
			} else {
				code, resp, _ = httpDo(t, srv, "POST", "/write", body)
			}
			if code != http.StatusNoContent {
				t.Fatalf("%d %s", code, resp)
			}
			for table, rows := range want {
				got := tableRows(t, db, table, len(rows), time.Minute)
				for i := range rows {
					if got[i] != rows[i] {
						t.Fatalf("table %s row %d: %q, want %q", table, i, got[i], rows[i])
					}
				}
			}
			if v := counterValue(srv.m.writeMem); v != 0 {
				t.Errorf("write memory %v after the request, want 0", v)
			}
		})
	}
}

// Bad lines in a body of several chunks: the first in line order is
// named, by its line number in the whole body, whichever chunk's goroutine
// found its own first; it alone is counted; nothing is stored. The same
// for a line over the line limit, and for a request whose last line is bad.
func TestHTTPChunkedBadLines(t *testing.T) {
	body, lines, _ := chunkedBody()
	ls := strings.SplitAfter(body, "\n")
	bad := func(line string, at ...int) string {
		c := append([]string(nil), ls...)
		for _, i := range at {
			c[i-1] = line
		}
		return strings.Join(c, "")
	}
	const syntax = "a,sym=S0_0 v=1x 5\n"         // a malformed number: found staging the chunk
	const mismatch = "a,sym=S0_0 v=\"text\" 5\n" // a string into an i64 column: found by the check
	long := func(at int) string {
		c := append([]string(nil), ls...)
		c[at-1] = "a,sym=S0_0 v=1i,pad=\"" + strings.Repeat("x", 70<<10) + "\" 5\n"
		return strings.Join(c, "")
	}
	for _, tc := range []struct {
		name          string
		body          string
		line          int
		table, reason string
	}{
		{"first and third chunks", bad(syntax, 20_000, 3*lines/4), 20_000, "a", "number"},
		{"third chunk only", bad(syntax, 3*lines/4), 3 * lines / 4, "a", "number"},
		{"third chunk, then the first", bad(mismatch, 3*lines/4, 20_000), 20_000, "a", "type_mismatch"},
		{"last line", bad(mismatch, lines), lines, "a", "type_mismatch"},
		{"long line in the fourth chunk", long(lines - 10), lines - 10, "", "too_long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, db := testServer(t, &Options{ILPAddr: "off"})
			// The tables and their columns exist: the bad line is a type
			// conflict against them.
			if code, resp, _ := httpDo(t, srv, "POST", "/write", "a,sym=S0_0 v=1i 1\nb,host=h0 load=0.5 1\n"); code != http.StatusNoContent {
				t.Fatalf("%d %s", code, resp)
			}
			code, resp, _ := httpDo(t, srv, "POST", "/write", tc.body)
			var e errBody
			_ = json.Unmarshal([]byte(resp), &e)
			if code != http.StatusBadRequest || e.Line != tc.line || !strings.Contains(e.Message, fmt.Sprintf("line %d", tc.line)) {
				t.Fatalf("%d %+v, want 400 naming line %d", code, e, tc.line)
			}
			if v := rejected(srv, tc.table, tc.reason); v != 1 {
				t.Errorf("rejected{table=%q,reason=%s} = %v, want 1", tc.table, tc.reason, v)
			}
			r, err := reader.Open(db, "a", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if n := r.Len(); n != 1 {
				t.Errorf("table a has %d rows after the rejected request, want 1", n)
			}
			if v := counterValue(srv.m.writeMem); v != 0 {
				t.Errorf("write memory %v after the request, want 0", v)
			}
		})
	}
}

// lastLineEnd finds the last line end that no backslash escapes.
func TestLastLineEnd(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", -1},
		{"abc", -1},
		{"a\nb", 1},
		{"a\nb\n", 3},
		{"a\nb\\\n", 1},      // an escaped line end
		{"a\nb\\\\\n", 5},    // an escaped backslash, then the end
		{"\\\n\\\n", -1},     // every line end escaped
		{"a\nb\\\\\\\nc", 1}, // three backslashes: escaped
	} {
		if got := lastLineEnd([]byte(tc.s)); got != tc.want {
			t.Errorf("lastLineEnd(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// A chunk's stage gives back the unused end of its 1 MiB block once
// staged (trim): whole pages, the rows unchanged, the memory charged
// back.
func TestStageTrim(t *testing.T) {
	var charged int64
	h := &httpAPI{s: &Server{opts: (&Options{}).withDefaults()}}
	bs := newBodyStager(h, 1, func(n int64) error { charged += n; return nil }, 0)
	text := []byte("t,sym=A v=1.5 10\nt,sym=B v=2.5 20\nt,sym=A v=3.5 30\n")
	c := bs.newChunk(nil, text)
	c.st.firstBlock = chunkText
	bs.stageChunk(c)
	if c.fail != nil || c.st.rows != 3 {
		t.Fatalf("staged %d rows: %+v", c.st.rows, c.fail)
	}
	tb := c.st.tables[0]
	if len(tb.mapped) != 1 || cap(tb.blocks[0]) != stageBlockMax {
		t.Fatalf("%d mapped blocks, the first of %d bytes; want one of %d", len(tb.mapped), cap(tb.blocks[0]), stageBlockMax)
	}
	before, mem := charged, c.st.mem
	c.st.trim()
	if got := cap(tb.blocks[0]); got != pageSize {
		t.Errorf("block of %d bytes after trim, want %d", got, pageSize)
	}
	if freed := int64(stageBlockMax - pageSize); before-charged != freed || mem-c.st.mem != freed {
		t.Errorf("charged back %d, stage memory down %d; want %d", before-charged, mem-c.st.mem, freed)
	}
	var it stageIter
	it.init(tb)
	var l lineproto.Line
	var got []string
	for it.next() {
		it.asLine(&l)
		got = append(got, fmt.Sprintf("%s %s %v %d", l.Tags[0].Value, l.Fields[0].Key, l.Fields[0].F, l.Ts))
	}
	if want := "A v 1.5 10|B v 2.5 20|A v 3.5 30"; strings.Join(got, "|") != want {
		t.Errorf("rows after trim %q, want %q", strings.Join(got, "|"), want)
	}
	c.st.free()
}
