package ingest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// timeCase is a line the time rule refuses, made at the clock's now: its
// reason and what its message says over TCP (--ts-unit) and over HTTP
// (precision=).
type timeCase struct {
	name      string
	line      func(now int64) string
	reason    string
	tcp, http string
}

func timeCases() []timeCase {
	return []timeCase{
		{name: "the largest ts (2262)", line: func(int64) string { return fmt.Sprintf("tt,sym=F v=1 %d", int64(math.MaxInt64)) },
			reason: "future", tcp: "(2262-04-11T23:47:16.854775807Z) is 235 years ahead of the server's clock", http: "more than the 1m0s max-future allows"},
		{name: "two minutes ahead", line: func(now int64) string { return fmt.Sprintf("tt,sym=F v=2 %d", now+int64(2*time.Minute)) },
			reason: "future", tcp: "s ahead of the server's clock (", http: "more than the 1m0s max-future allows"},
		{name: "seconds", line: func(now int64) string { return fmt.Sprintf("tt,sym=S v=3 %d", now/1e9) },
			reason: "ts_unit", tcp: "give --ts-unit s", http: "send precision=s"},
		{name: "milliseconds", line: func(now int64) string { return fmt.Sprintf("tt,sym=S v=4 %d", now/1e6) },
			reason: "ts_unit", tcp: "give --ts-unit ms", http: "send precision=ms"},
		{name: "microseconds", line: func(now int64) string { return fmt.Sprintf("tt,sym=S v=5 %d", now/1e3) },
			reason: "ts_unit", tcp: "give --ts-unit us", http: "send precision=us"},
	}
}

// rowTs is the ts of a row as tableRows gives it.
func rowTs(t *testing.T, row string) int64 {
	t.Helper()
	ts, err := strconv.ParseInt(row[:strings.IndexByte(row, ' ')], 10, 64)
	if err != nil {
		t.Fatalf("row %q: %v", row, err)
	}
	return ts
}

// saneTs fails unless ts lies between from and the clock now: a server
// stamped row.
func saneTs(t *testing.T, what string, ts, from int64) {
	t.Helper()
	if now := time.Now().UnixNano(); ts < from || ts > now {
		t.Errorf("%s stored at %d (%s), want between %d and %d", what, ts, time.Unix(0, ts).UTC(), from, now)
	}
}

var policies = []struct {
	name string
	ooo  writer.OutOfOrderPolicy
}{{"reject", writer.OutOfOrderReject}, {"stamp", writer.OutOfOrderStamp}}

// Over TCP, a far-future row and rows in seconds, ms and µs are skipped,
// counted under future and ts_unit and logged with the fix; a line of a
// table that does not exist creates nothing; the rows with a real
// timestamp and without one after them are stored at sane times. Both
// out-of-order policies.
func TestTimeRuleTCP(t *testing.T) {
	for _, p := range policies {
		t.Run(p.name, func(t *testing.T) {
			var logs testutil.LogBuffer
			srv, db := testServer(t, &Options{Writer: writer.Options{OutOfOrder: p.ooo},
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			c := dial(t, srv)
			w := bufio.NewWriter(c)
			start := time.Now().UnixNano()
			fmt.Fprintf(w, "fresh,sym=F v=1 %d\n", int64(math.MaxInt64)) // would create table fresh
			fmt.Fprintf(w, "tt,sym=G v=0 %d\n", start-int64(time.Second))
			cases := timeCases()
			for _, tc := range cases {
				fmt.Fprintln(w, tc.line(start))
			}
			after := time.Now().UnixNano()
			fmt.Fprintf(w, "tt,sym=G v=8 %d\ntt,sym=G v=9\n", after)
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			rows := tableRows(t, db, "tt", 3, 10*time.Second)
			if got := rowTs(t, rows[1]); got != after || !strings.HasSuffix(rows[1], "v=8") {
				t.Errorf("the real-time row after the bad ones: %q, want ts %d", rows[1], after)
			}
			saneTs(t, "the line without a timestamp", rowTs(t, rows[2]), after)
			for _, want := range []struct {
				table, reason string
				n             float64
			}{{"tt", "future", 2}, {"tt", "ts_unit", 3}, {"", "future", 1}, {"tt", "out_of_order", 0}} {
				if got := rejected(srv, want.table, want.reason); got != want.n {
					t.Errorf("rejected{table=%q,reason=%s} = %v, want %v", want.table, want.reason, got, want.n)
				}
			}
			if reader.Exists(db, "fresh") {
				t.Error("a far-future line created its table")
			}
			log := logs.String()
			for _, tc := range cases {
				if !strings.Contains(log, tc.tcp) {
					t.Errorf("%s: the log does not say %q:\n%s", tc.name, tc.tcp, log)
				}
			}
		})
	}
}

// Over HTTP, a request holding such a line answers 400 naming it and the
// fix (precision=), and stores nothing; with the right precision the same
// times are stored; a real-time row and one without a timestamp are
// stored after them at sane times. Both out-of-order policies.
func TestTimeRuleHTTP(t *testing.T) {
	for _, p := range policies {
		t.Run(p.name, func(t *testing.T) {
			srv, db := testServer(t, &Options{ILPAddr: "off", Writer: writer.Options{OutOfOrder: p.ooo}})
			start := time.Now().UnixNano()
			post := func(path, body string) (int, errBody) {
				t.Helper()
				code, resp, _ := httpDo(t, srv, "POST", path, body)
				var e errBody
				if code != http.StatusNoContent {
					if err := json.Unmarshal([]byte(resp), &e); err != nil {
						t.Fatalf("status %d, body %q: %v", code, resp, err)
					}
				}
				return code, e
			}
			bad := func(name, path, body, msg string) {
				t.Helper()
				if code, e := post(path, body); code != http.StatusBadRequest || e.Line != 2 || !strings.Contains(e.Message, msg) {
					t.Errorf("%s: %d %+v; want 400 naming line 2 and saying %q", name, code, e, msg)
				}
			}
			// A table the request would create is not created.
			bad("new table", "/write", fmt.Sprintf("fresh,sym=A v=1 %d\nfresh,sym=A v=2 %d\n", start, int64(math.MaxInt64)), "ahead of the server's clock")
			if reader.Exists(db, "fresh") {
				t.Error("a request with a far-future line created its table")
			}
			if code, e := post("/write", fmt.Sprintf("tt,sym=G v=0 %d\n", start-int64(time.Second))); code != http.StatusNoContent {
				t.Fatalf("first write: %d %+v", code, e)
			}
			for _, tc := range timeCases() {
				bad(tc.name, "/write", fmt.Sprintf("tt,sym=H v=1 %d\n%s\n", start-int64(time.Second)/2, tc.line(start)), tc.http)
			}
			sec := start / 1e9
			// With a precision: seconds sent as ms read as µs-shaped ns, and
			// the fix named is still the sender's unit.
			bad("seconds as ms", "/write?precision=ms", fmt.Sprintf("tt,sym=H v=1 %d\ntt,sym=S v=1 %d\n", start/1e6-500, sec), "send precision=s")
			bad("an hour ahead, in seconds", "/api/v2/write?precision=s", fmt.Sprintf("tt,sym=H v=1 %d\ntt,sym=S v=1 %d\n", sec+1, sec+3600), fmt.Sprintf("timestamp %d (%s) is", (sec+3600)*1e9, time.Unix(sec+3600, 0).UTC().Format(time.RFC3339)))
			// Stored as meant with the right precision (ties of ts are fine).
			for _, ok := range []struct{ prec, ts string }{
				{"s", strconv.FormatInt(sec, 10)}, {"ms", strconv.FormatInt(sec*1e3, 10)}, {"u", strconv.FormatInt(sec*1e6, 10)},
			} {
				if code, e := post("/write?precision="+ok.prec, "tt,sym=P v=7 "+ok.ts+"\n"); code != http.StatusNoContent {
					t.Errorf("precision=%s: %d %+v", ok.prec, code, e)
				}
			}
			after := time.Now().UnixNano()
			if code, e := post("/write", fmt.Sprintf("tt,sym=G v=8 %d\ntt,sym=G v=9\n", after)); code != http.StatusNoContent {
				t.Fatalf("the real-time rows after: %d %+v", code, e)
			}
			rows := tableRows(t, db, "tt", 6, 10*time.Second)
			for i := 1; i <= 3; i++ {
				if got := rowTs(t, rows[i]); got != sec*1e9 {
					t.Errorf("row %q, want ts %d (the seconds given with their precision)", rows[i], sec*1e9)
				}
			}
			if got := rowTs(t, rows[4]); got != after {
				t.Errorf("the real-time row: %q, want ts %d", rows[4], after)
			}
			saneTs(t, "the line without a timestamp", rowTs(t, rows[5]), after)
			for _, want := range []struct {
				table, reason string
				n             float64
			}{{"tt", "future", 3}, {"tt", "ts_unit", 4}, {"", "future", 1}} {
				if got := rejected(srv, want.table, want.reason); got != want.n {
					t.Errorf("rejected{table=%q,reason=%s} = %v, want %v", want.table, want.reason, got, want.n)
				}
			}
		})
	}
}

// The opt-outs: with Allow1970 a seconds-shaped ns timestamp is stored as
// given; with MaxFutureOff a row two minutes ahead is stored; 5 and 1,000
// ns (1970 in every unit) need no opt-out; TsUnit reads the listener's
// timestamps in seconds and names the unit its wrong ones are in.
func TestTimeRuleOptOuts(t *testing.T) {
	now := time.Now().UnixNano()
	sec := now / 1e9
	t.Run("allow1970", func(t *testing.T) {
		srv, db := testServer(t, &Options{Allow1970: true})
		fmt.Fprintf(dial(t, srv), "a,sym=A v=1 %d\n", sec)
		writeLines(t, srv, fmt.Sprintf("h,sym=A v=1 %d\n", sec))
		for _, table := range []string{"a", "h"} {
			if rows := tableRows(t, db, table, 1, 10*time.Second); rowTs(t, rows[0]) != sec {
				t.Errorf("%s: %q, want ts %d", table, rows[0], sec)
			}
		}
	})
	t.Run("max-future off", func(t *testing.T) {
		srv, db := testServer(t, &Options{MaxFuture: MaxFutureOff})
		ahead := now + int64(2*time.Minute)
		fmt.Fprintf(dial(t, srv), "a,sym=A v=1 %d\n", ahead)
		writeLines(t, srv, fmt.Sprintf("h,sym=A v=1 %d\n", ahead))
		for _, table := range []string{"a", "h"} {
			if rows := tableRows(t, db, table, 1, 10*time.Second); rowTs(t, rows[0]) != ahead {
				t.Errorf("%s: %q, want ts %d", table, rows[0], ahead)
			}
		}
	})
	t.Run("1970 in every unit", func(t *testing.T) {
		srv, db := testServer(t, nil)
		fmt.Fprint(dial(t, srv), "a,sym=A v=1 5\na,sym=A v=2 1000\n")
		writeLines(t, srv, "h,sym=A v=1 5\nh,sym=A v=2 1000\n")
		for _, table := range []string{"a", "h"} {
			rows := tableRows(t, db, table, 2, 10*time.Second)
			if rowTs(t, rows[0]) != 5 || rowTs(t, rows[1]) != 1000 {
				t.Errorf("%s: %q", table, rows)
			}
		}
	})
	t.Run("ts-unit", func(t *testing.T) {
		var logs testutil.LogBuffer
		srv, db := testServer(t, &Options{TsUnit: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		c := dial(t, srv)
		// Seconds read as ms: the fix names seconds; then ms, stored.
		fmt.Fprintf(c, "a,sym=A v=1 %d\na,sym=A v=2 %d\n", sec, sec*1e3)
		if rows := tableRows(t, db, "a", 1, 10*time.Second); rowTs(t, rows[0]) != sec*1e9 {
			t.Errorf("%q, want ts %d", rows[0], sec*1e9)
		}
		if got := rejected(srv, "", "ts_unit"); got != 1 {
			t.Errorf("rejected{reason=ts_unit} = %v, want 1", got)
		}
		if want := fmt.Sprintf("timestamp %d read as milliseconds is 1970-", sec); !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), "give --ts-unit s") {
			t.Errorf("log does not say %q and give --ts-unit s:\n%s", want, logs.String())
		}
	})
	if _, err := Start(&Options{DB: t.TempDir(), TsUnit: time.Minute}); err == nil || !strings.Contains(err.Error(), "TsUnit") {
		t.Errorf("TsUnit of a minute: %v", err)
	}
}

// A table that already holds a far-future row (written with the check
// off, as every table was before it): opening it logs an error naming the
// table, the row's seq and ts and the way out; its lines with a real
// timestamp are refused as late (reject) or as future (stamp), and lines
// without one as future, naming the row and the way out; nothing is
// stored at the far time, and other tables are not touched.
func TestTimeRuleFarRowAlreadyStored(t *testing.T) {
	db, live := testutil.DB(t)
	start := func(o *Options) *Server {
		t.Helper()
		o.DB, o.LiveRoot, o.ILPAddr, o.HTTPAddr = db, live, "127.0.0.1:0", "127.0.0.1:0"
		srv, err := Start(o)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	closeSrv := func(srv *Server) {
		t.Helper()
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	old := start(&Options{MaxFuture: MaxFutureOff})
	t0 := time.Now().Add(-time.Hour).UnixNano()
	writeLines(t, old, fmt.Sprintf("bk,sym=A v=1 %d\nbk,sym=A v=2 %d\nok,sym=A v=1 %d\n", t0, int64(math.MaxInt64), t0))
	closeSrv(old)

	const row = "row seq 1, ts 9223372036854775807 (2262-04-11T23:47:16.854775807Z)"
	wayOut := "tickdb query --db " + db + " --table bk --to "
	for _, p := range policies {
		t.Run(p.name, func(t *testing.T) {
			var logs testutil.LogBuffer
			srv := start(&Options{Writer: writer.Options{OutOfOrder: p.ooo}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			defer closeSrv(srv)
			log := logs.String()
			for _, want := range []string{"table holds a row far ahead of the clock", "table=bk", "seq=1", "ts=9223372036854775807", "time=2262-04-11T23:47:16.854775807Z", wayOut} {
				if !strings.Contains(log, want) {
					t.Errorf("the log at open does not say %q:\n%s", want, log)
				}
			}
			if n := strings.Count(log, "far ahead of the clock"); n != 1 {
				t.Errorf("%d tables named as holding a far row, want 1 (bk):\n%s", n, log)
			}
			now := time.Now().UnixNano()
			realMsg := "is before the last row of table bk"
			if p.ooo == writer.OutOfOrderStamp {
				realMsg = "--out-of-order stamp would store it at the time of table bk's newest row"
			}
			for _, c := range []struct{ name, line, msg string }{
				{"a real-time row", fmt.Sprintf("bk,sym=A v=3 %d", now), realMsg},
				{"a row without a timestamp", "bk,sym=A v=4", "has no timestamp, and would be stored at the time of table bk's newest row"},
			} {
				code, resp, _ := httpDo(t, srv, "POST", "/write", c.line+"\n")
				if code != http.StatusBadRequest || !strings.Contains(resp, c.msg) || !strings.Contains(resp, row) || !strings.Contains(resp, wayOut) {
					t.Errorf("%s: %d %s\nwant 400 saying %q, naming %q and the way out", c.name, code, resp, c.msg, row)
				}
			}
			conn := dial(t, srv)
			after := "ok_" + p.name // a table written after the bk lines: they are counted by when it has its row
			fmt.Fprintf(conn, "bk,sym=A v=5 %d\nbk,sym=A v=6\n%s,sym=A v=2 %d\n", now, after, now)
			tableRows(t, db, after, 1, 10*time.Second)
			// The real-time lines (HTTP and TCP) are late under reject and
			// future under stamp; the lines without a timestamp are future.
			late, future := rejected(srv, "bk", "out_of_order"), rejected(srv, "bk", "future")
			if want := 2.0; p.ooo == writer.OutOfOrderStamp && (late != 0 || future != 4) || p.ooo == writer.OutOfOrderReject && (late != want || future != want) {
				t.Errorf("rejected{bk,out_of_order} = %v, {bk,future} = %v", late, future)
			}
			if rows := tableRows(t, db, "bk", 2, 0); rowTs(t, rows[1]) != math.MaxInt64 {
				t.Errorf("rows of bk: %q", rows)
			}
		})
	}
}

// GET /query, /bars and /latest answer 400 with the hint for a time
// parameter that reads as seconds or ms of now.
func TestTimeParamHints(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	writeLines(t, srv, fmt.Sprintf("q,sym=A px=1.5 %d\n", time.Now().UnixNano()))
	sec, ms := time.Now().Unix(), time.Now().UnixMilli()
	for _, path := range []string{
		fmt.Sprintf("/query?table=q&from=%d", sec),
		fmt.Sprintf("/query?table=q&to=%d", ms),
		fmt.Sprintf("/bars?table=q&sym=A&interval=1m&from=%d", sec),
		fmt.Sprintf("/latest?table=q&at=%d", ms),
	} {
		code, body, _ := httpDo(t, srv, "GET", path, "")
		if code != http.StatusBadRequest || !strings.Contains(body, "is integer ns, 1970-01-01T") || !strings.Contains(body, "it is 20") {
			t.Errorf("%s: %d %s, want 400 with the hint", path, code, body)
		}
	}
}
