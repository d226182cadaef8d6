package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// cpuRow is a row of table cpu as the reader gives it: every column the
// test adds, read by name from the reader's schema.
type cpuRow struct {
	ts                   int64
	host, dc, note       string
	usage                float64
	temp                 int64
	hasTemp, hasDC, hasN bool // the reader's schema has the column
}

func readCPU(t *testing.T, r *reader.Reader, row store.Row) cpuRow {
	t.Helper()
	s := r.Schema()
	sym := func(name string) (string, bool) {
		i := s.Index(name)
		if i < 0 {
			return "", false
		}
		v, err := r.SymbolName(row.Sym(s.ColAt(i)))
		if err != nil {
			t.Fatalf("symbol of %s: %v", name, err)
		}
		return v, true
	}
	c := cpuRow{ts: row.Ts(), usage: row.F64(s.ColAt(s.Index("usage")))}
	c.host, _ = sym("host")
	c.dc, c.hasDC = sym("dc")
	c.note, c.hasN = sym("note")
	if i := s.Index("temp"); i >= 0 {
		c.temp, c.hasTemp = row.I64(s.ColAt(i)), true
	}
	return c
}

func (c cpuRow) String() string {
	return fmt.Sprintf("%d host=%s usage=%v temp=%d dc=%q note=%q", c.ts, c.host, c.usage, c.temp, c.dc, c.note)
}

// A line naming a field or tag its table lacks adds the column, typed by
// the value (an integer field i64, a tag sym, a string field sym), over
// TCP and over HTTP; the rows before read it as missing (0, ""). A type
// conflict with a column stays a bad line naming both types, and changes
// nothing: not even a column another of its keys would add.
func TestAddColumns(t *testing.T) {
	for _, transport := range []string{"tcp", "http"} {
		t.Run(transport, func(t *testing.T) {
			logs := &testutil.LogBuffer{}
			srv, db := testServer(t, &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
			send := func(line string) {}
			switch transport {
			case "tcp":
				c := dial(t, srv)
				send = func(line string) {
					t.Helper()
					if _, err := fmt.Fprintln(c, line); err != nil {
						t.Fatal(err)
					}
				}
			case "http":
				send = func(line string) {
					t.Helper()
					code, resp, _ := httpDo(t, srv, "POST", "/write", line+"\n")
					if bad := strings.Contains(line, `usage="x"`) || strings.Contains(line, "temp=1.5"); bad != (code == http.StatusBadRequest) {
						t.Fatalf("%s: %d %s", line, code, resp)
					}
				}
			}
			send(`cpu,host=a usage=2.5 1`)
			tableRows(t, db, "cpu", 1, 10*time.Second) // the table exists before the column is added
			send(`cpu,host=a usage=2.5,temp=40i 2`)
			send(`cpu,host=a,dc=x usage=1 3`)
			send(`cpu,host=a usage=1,note="halted" 4`)
			send(`cpu,host=a usage="x" 5`)              // a string for f64 usage
			send(`cpu,host=a,rack=r1 temp=1.5,fan=1 5`) // a float for i64 temp: adds neither rack nor fan
			send(`cpu,host=b usage=3,temp=7i 6`)
			tableRows(t, db, "cpu", 5, 10*time.Second)
			waitRejected(t, srv, "cpu", "type_mismatch", 2)

			r, err := reader.Open(db, "cpu", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var names []string
			for _, c := range r.Schema().Cols {
				names = append(names, c.Name+":"+c.Type.String())
			}
			if got, want := strings.Join(names, " "), "ts:ts host:sym usage:f64 temp:i64 dc:sym note:sym"; got != want {
				t.Fatalf("schema %s, want %s", got, want)
			}
			var it reader.Iter
			if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
				t.Fatal(err)
			}
			var got []string
			for it.Next() {
				got = append(got, readCPU(t, r, it.Row()).String())
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			want := []string{
				`1 host=a usage=2.5 temp=0 dc="" note=""`,
				`2 host=a usage=2.5 temp=40 dc="" note=""`,
				`3 host=a usage=1 temp=0 dc="x" note=""`,
				`4 host=a usage=1 temp=0 dc="" note="halted"`,
				`6 host=b usage=3 temp=7 dc="" note=""`,
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// The first row was written before dc existed: its id is
			// store.NoSym, which reads as "".
			if row, err := r.Get(0); err != nil || row.Sym(r.Schema().ColAt(r.Schema().Index("dc"))) != store.NoSym {
				t.Errorf("row 0's dc: %v (err %v), want store.NoSym", row.Sym(r.Schema().ColAt(r.Schema().Index("dc"))), err)
			}

			for _, c := range []struct{ line, msg string }{
				{`cpu,host=a usage="x" 5`, `field "usage": column "usage" of table cpu is f64, got a string value`},
				{`cpu,host=a,rack=r1 temp=1.5,fan=1 5`, `field "temp": column "temp" of table cpu is i64, got a float value`},
			} {
				code, resp, _ := httpDo(t, srv, "POST", "/write", c.line+"\n")
				if code != http.StatusBadRequest || !strings.Contains(resp, strings.ReplaceAll(c.msg, `"`, `\"`)) {
					t.Errorf("%s: %d %s, want 400 saying %s", c.line, code, resp, c.msg)
				}
			}
			for _, col := range []string{"temp", "dc", "note"} {
				if !strings.Contains(logs.String(), `msg="ingest: added column" table=cpu column=`+col) {
					t.Errorf("no info line for the added column %s in the log:\n%s", col, logs.String())
				}
			}
			for _, col := range []string{"rack", "fan"} {
				if strings.Contains(logs.String(), "column="+col) {
					t.Errorf("column %s of a bad line was added:\n%s", col, logs.String())
				}
			}
		})
	}
}

// An HTTP request is checked whole, columns its lines add included: a
// request whose second line conflicts with the type its first line gives
// a new column stores nothing and adds no column; a good one that adds a
// column and uses it in its next line is stored.
func TestAddColumnsHTTPRequest(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	writeLines(t, srv, "cpu,host=a usage=1 1\n")
	code, resp, _ := httpDo(t, srv, "POST", "/write", "cpu,host=a usage=1,z=1i 2\ncpu,host=a z=\"s\" 3\n")
	var e errBody
	if code != http.StatusBadRequest || json.Unmarshal([]byte(resp), &e) != nil || e.Line != 2 ||
		!strings.Contains(e.Message, `column "z" of table cpu is i64, got a string value`) {
		t.Fatalf("%d %s, want 400 naming line 2 and the types", code, resp)
	}
	if got := tableRows(t, db, "cpu", 1, 5*time.Second); got[0] != "1 host=a usage=1" {
		t.Fatalf("rows %q", got)
	}
	writeLines(t, srv, "cpu,host=b usage=2,z=1i 2\ncpu,host=b,dc=x z=2i 3\n")
	got := tableRows(t, db, "cpu", 3, 5*time.Second)
	want := []string{"1 host=a usage=1 z=0 dc=", "2 host=b usage=2 z=1 dc=", "3 host=b usage=NaN z=2 dc=x"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The reopened writer keeps the table's last time: a late row is bad.
	if code, resp, _ := httpDo(t, srv, "POST", "/write", "cpu,host=c usage=1 2\n"); code != http.StatusBadRequest || !strings.Contains(resp, "before the last row of table cpu (3, 1970-01-01T00:00:00.000000003Z)") {
		t.Fatalf("late row: %d %s", code, resp)
	}
}

// A reader of the same process that has the table open when a column is
// added goes on reading every row, through the tail and through Range,
// and has the new column in its schema once it has read a row of the new
// layout.
func TestAddColumnReaderOpen(t *testing.T) {
	srv, db := testServer(t, nil)
	c := dial(t, srv)
	for i := range 100 {
		fmt.Fprintf(c, "cpu,host=h%d usage=%d.5 %d\n", i%3, i, 1000+i)
	}
	tableRows(t, db, "cpu", 100, 10*time.Second)
	r, err := reader.Open(db, "cpu", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tail := r.Tail(0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	check := func(n int) {
		t.Helper()
		for i := int(tail.Next()); i < n; i++ {
			row, seq, err := tail.Wait(ctx)
			if err != nil {
				t.Fatalf("tail at row %d: %v", i, err)
			}
			got := readCPU(t, r, row)
			want := cpuRow{ts: int64(1000 + i), host: fmt.Sprintf("h%d", i%3), usage: float64(i) + 0.5}
			if i >= 150 {
				want.temp = int64(i)
			}
			if i >= 200 {
				want.dc = "dc1"
			}
			if seq != uint64(i) || got.String() != want.String() {
				t.Fatalf("tail row %d (seq %d): %s, want %s", i, seq, got, want)
			}
		}
	}
	check(50) // a reader part way through the old layout's rows
	for i := 100; i < 150; i++ {
		fmt.Fprintf(c, "cpu,host=h%d usage=%d.5 %d\n", i%3, i, 1000+i)
	}
	for i := 150; i < 200; i++ {
		fmt.Fprintf(c, "cpu,host=h%d usage=%d.5,temp=%di %d\n", i%3, i, i, 1000+i)
	}
	check(150)
	if r.Schema().Index("temp") >= 0 {
		t.Logf("the reader has temp before reading a row of the new layout")
	}
	check(200)
	if i := r.Schema().Index("temp"); i < 0 || r.Schema().Cols[i].Type != store.TypeI64 {
		t.Fatalf("reader schema after the new rows: %v, want temp i64", r.Schema())
	}
	for i := 200; i < 250; i++ {
		fmt.Fprintf(c, "cpu,host=h%d,dc=dc1 usage=%d.5,temp=%di %d\n", i%3, i, i, 1000+i)
	}
	check(250)
	if r.Schema().Index("dc") < 0 {
		t.Fatalf("reader schema after the new rows: %v, want dc", r.Schema())
	}
	// Range from the same reader: every row, the old ones with the new
	// columns missing.
	var it reader.Iter
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		got := readCPU(t, r, it.Row())
		if got.ts != int64(1000+n) || got.usage != float64(n)+0.5 || (n < 150 && (got.temp != 0 || got.dc != "")) ||
			(n >= 150 && got.temp != int64(n)) || (n >= 200 && got.dc != "dc1") {
			t.Fatalf("range row %d: %s", n, got)
		}
		n++
	}
	if it.Err() != nil || n != 250 {
		t.Fatalf("range: %d rows, err %v; want 250", n, it.Err())
	}
}

// HTTP writes wait for durability from their handlers' goroutines while
// lines over TCP add columns to the same table: the writer is rebuilt in
// place for each column, so the addition waits for those handlers (run
// with -race).
func TestAddColumnsWhileHTTPWaits(t *testing.T) {
	srv, db := testServer(t, nil)
	writeLines(t, srv, "race,host=a v=1\n")
	const posts, cols = 40, 15
	done := make(chan error, 1)
	go func() {
		for range posts {
			code, resp, err := postOnce(srv, "race,host=a v=1\n")
			if err == nil && code != http.StatusNoContent {
				err = fmt.Errorf("%d %s", code, resp)
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	c := dial(t, srv)
	for i := range cols {
		fmt.Fprintf(c, "race,host=b v=2,c%02d=%di\n", i, i)
		time.Sleep(time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tableRows(t, db, "race", 1+posts+cols, 10*time.Second)
	r, err := reader.Open(db, "race", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := len(r.Schema().Cols); n != 3+cols {
		t.Fatalf("schema %v: %d columns, want %d", r.Schema(), n, 3+cols)
	}
}

// postOnce is httpDo for another goroutine than the test's.
func postOnce(srv *Server, body string) (int, string, error) {
	resp, err := http.Post("http://"+srv.HTTPAddr().String()+"/write", "text/plain", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String(), nil
}
