package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/writer"
)

// timeFile is a file (ILP or CSV, table t) of rows the time rule refuses
// (far future, two minutes ahead, seconds, ms, µs), between a row an hour
// old and a real-time one and a row without a time, made at now; with
// the reasons and a part of each message, in file order.
func timeFile(format Format, now int64) (text string, reasons, msgs []string) {
	tss := []string{
		strconv.FormatInt(now-int64(time.Hour), 10),
		strconv.FormatInt(math.MaxInt64, 10),
		strconv.FormatInt(now+int64(2*time.Minute), 10),
		strconv.FormatInt(now/1e9, 10),
		strconv.FormatInt(now/1e6, 10),
		strconv.FormatInt(now/1e3, 10),
		strconv.FormatInt(now-int64(time.Second), 10),
		"",
	}
	var b strings.Builder
	if format == CSV {
		b.WriteString("ts,sym,v\n")
	}
	for i, ts := range tss {
		switch {
		case format == CSV:
			fmt.Fprintf(&b, "%s,A,%d\n", ts, i)
		case ts == "":
			fmt.Fprintf(&b, "t,sym=A v=%d\n", i)
		default:
			fmt.Fprintf(&b, "t,sym=A v=%d %s\n", i, ts)
		}
	}
	return b.String(), []string{"future", "future", "ts_unit", "ts_unit", "ts_unit"},
		[]string{"2262-04-11T23:47:16.854775807Z) is", "ahead of the server's clock", "give --ts-unit s ", "give --ts-unit ms ", "give --ts-unit us "}
}

// A file's far-future and wrong-unit rows are bad lines (future,
// ts_unit) naming the fix, in ILP and CSV, under both out-of-order
// policies: the file stores nothing, or with SkipBad its other rows, the
// real-time row and the one without a time at sane times.
func TestFileTimeRule(t *testing.T) {
	for _, format := range []Format{ILP, CSV} {
		for _, ooo := range []writer.OutOfOrderPolicy{writer.OutOfOrderReject, writer.OutOfOrderStamp} {
			for _, skip := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/ooo=%d/skip=%v", format, ooo, skip), func(t *testing.T) {
					db, live := testutil.DB(t)
					now := time.Now().UnixNano()
					text, reasons, msgs := timeFile(format, now)
					var bad []error
					ld := New(&Options{DB: db, LiveRoot: live, Table: "t", SkipBad: skip, Writer: writer.Options{OutOfOrder: ooo},
						Report: func(_ string, err error) { bad = append(bad, err) }})
					err := ld.File(context.Background(), writeFile(t, "f."+format.String(), text), "f", format)
					if cerr := ld.Close(); cerr != nil {
						t.Fatal(cerr)
					}
					if len(bad) != len(reasons) {
						t.Fatalf("bad lines %v, want %d", bad, len(reasons))
					}
					first := 2 // the line of the first bad row
					if format == CSV {
						first = 3 // after the header
					}
					for i, e := range bad {
						var le *lineproto.LineError
						if !errors.As(e, &le) || le.Reason.String() != reasons[i] || !strings.Contains(le.Msg, msgs[i]) || le.Line != first+i {
							t.Errorf("bad line %d: %v (%v); want %s saying %q", i, e, le.Reason, reasons[i], msgs[i])
						}
					}
					if !skip {
						if !errors.Is(err, ErrBadFile) {
							t.Fatalf("File = %v, want a bad file", err)
						}
						if rows, _ := tablecheck.Rows(db, "t"); len(rows) != 0 {
							t.Fatalf("rows stored: %q", rows)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					rows := tableRows(t, db, "t", 3)
					if !strings.HasPrefix(rows[1], strconv.FormatInt(now-int64(time.Second), 10)+" ") {
						t.Errorf("the real-time row: %q", rows[1])
					}
					ts, _ := strconv.ParseInt(rows[2][:strings.IndexByte(rows[2], ' ')], 10, 64)
					if ts < now || ts > time.Now().UnixNano() {
						t.Errorf("the row without a time: %q, want a ts from the load", rows[2])
					}
					tablecheck.VerifyAll(t, db)
				})
			}
		}
	}
}

// TsUnit reads ILP timestamps and CSV integer ts cells (not RFC 3339 ones)
// in its unit; Allow1970 stores seconds given as ns as they are;
// MaxFutureOff stores a row ahead of the clock.
func TestFileTimeOptions(t *testing.T) {
	now := time.Now().UnixNano()
	sec := now / 1e9
	rfc := time.Unix(sec+1, 0).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name   string
		o      Options
		format Format
		text   string
		want   []int64
	}{
		{"ts-unit s, ilp", Options{TsUnit: time.Second}, ILP, fmt.Sprintf("t v=1 %d\n", sec), []int64{sec * 1e9}},
		{"ts-unit ms, csv", Options{TsUnit: time.Millisecond}, CSV, fmt.Sprintf("ts,v\n%d,1\n%s,2\n", sec*1e3, rfc), []int64{sec * 1e9, (sec + 1) * 1e9}},
		{"allow-1970", Options{Allow1970: true}, ILP, fmt.Sprintf("t v=1 %d\n", sec), []int64{sec}},
		{"max-future off", Options{MaxFuture: ingest.MaxFutureOff}, CSV, fmt.Sprintf("ts,v\n%d,1\n", now+int64(time.Hour)), []int64{now + int64(time.Hour)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, live := testutil.DB(t)
			o := c.o
			o.DB, o.LiveRoot, o.Table = db, live, "t"
			ld := New(&o)
			if err := ld.File(context.Background(), writeFile(t, "f", c.text), "f", c.format); err != nil {
				t.Fatal(err)
			}
			if err := ld.Close(); err != nil {
				t.Fatal(err)
			}
			rows := tableRows(t, db, "t", len(c.want))
			for i, ts := range c.want {
				if !strings.HasPrefix(rows[i], strconv.FormatInt(ts, 10)+" ") {
					t.Errorf("row %q, want ts %d", rows[i], ts)
				}
			}
		})
	}
	db, live := testutil.DB(t)
	ld := New(&Options{DB: db, LiveRoot: live, TsUnit: time.Hour})
	defer ld.Close()
	if err := ld.File(context.Background(), writeFile(t, "f", "t v=1\n"), "f", ILP); err == nil || !strings.Contains(err.Error(), "TsUnit") {
		t.Errorf("TsUnit of an hour: %v", err)
	}
}
