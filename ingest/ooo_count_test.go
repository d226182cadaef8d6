package ingest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// scrape reads /metrics and returns the value of family name's sample
// whose labels include every pair of labels ("table", "t", ...), and
// whether there is one.
func scrape(t *testing.T, srv *Server, name string, labels ...string) (float64, bool) {
	t.Helper()
	code, body, _ := httpDo(t, srv, "GET", "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	for _, m := range fams[name].GetMetric() {
		if hasLabels(m, labels) {
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// apiTableOf reads table name from GET /api/tables.
func apiTableOf(t *testing.T, srv *Server, name string) apiTable {
	t.Helper()
	code, body, _ := httpDo(t, srv, "GET", "/api/tables", "")
	var got struct{ Tables []apiTable }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil {
		t.Fatalf("/api/tables: %d %s", code, body)
	}
	for _, tb := range got.Tables {
		if tb.Name == name {
			return tb
		}
	}
	t.Fatalf("/api/tables has no table %s: %s", name, body)
	return apiTable{}
}

// TestOutOfOrderCountsAgree rejects late rows in every way the server
// refuses one (a TCP line, by the fast path and with a column the table
// lacks; an HTTP request, with and without such a column) and checks,
// right after each and with no accepted row after it, that the table's
// counter says the same in reader.Stat (what tickdb stat prints),
// /api/tables (the console) and /metrics, and equals the rejected-lines
// metric for out_of_order.
func TestOutOfOrderCountsAgree(t *testing.T) {
	srv, db := testServer(t, &Options{Writer: writer.Options{LateWindow: time.Second}})
	const t0 = 1_700_000_000_000_000_000
	late := t0 - int64(time.Minute)
	writeLines(t, srv, fmt.Sprintf("o,sym=A v=1 %d\n", t0))
	c := dial(t, srv)
	for i, tc := range []struct {
		name, how, line string
	}{
		{"tcp", "tcp", fmt.Sprintf("o,sym=A v=2 %d", late)},
		{"tcp adding a column", "tcp", fmt.Sprintf("o,sym=A v=2,w=3 %d", late)},
		{"http", "http", fmt.Sprintf("o,sym=A v=2 %d", late)},
		{"http adding a column", "http", fmt.Sprintf("o,sym=B v=2,x=4 %d", late)},
		{"http, after good lines of the request", "http", fmt.Sprintf("o,sym=A v=5 %d\no,sym=A v=6 %d", t0+1, late)},
	} {
		want := uint64(i + 1)
		switch tc.how {
		case "tcp":
			if _, err := io.WriteString(c, tc.line+"\n"); err != nil {
				t.Fatal(err)
			}
			// TCP has no answer: the rejected-lines metric says when
			// the line was refused, and is counted after the table's
			// counter.
			deadline := time.Now().Add(10 * time.Second)
			for rejected(srv, "o", lineproto.ReasonOutOfOrder.String()) < float64(want) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the line was never rejected", tc.name)
				}
				time.Sleep(2 * time.Millisecond)
			}
		case "http":
			if code, body, _ := httpDo(t, srv, "POST", "/write", tc.line+"\n"); code != http.StatusBadRequest || !strings.Contains(body, "before") {
				t.Fatalf("%s: %d %s, want 400 naming the late timestamp", tc.name, code, body)
			}
		}
		r, err := reader.Open(db, "o", nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.Stat()
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		api := apiTableOf(t, srv, "o")
		table, ok := scrape(t, srv, "tickdb_table_out_of_order_total", "table", "o")
		rej, _ := scrape(t, srv, "tickdb_ingest_rows_rejected_total", "table", "o", "reason", "out_of_order")
		if st.OutOfOrder != want || api.OutOfOrder != want || !ok || table != float64(want) || rej != float64(want) {
			t.Fatalf("%s: out-of-order rows: stat %d, /api/tables %d, tickdb_table_out_of_order_total %v (present %v), rejected{out_of_order} %v; want %d everywhere",
				tc.name, st.OutOfOrder, api.OutOfOrder, table, ok, rej, want)
		}
		if st.Rows != 1 {
			t.Fatalf("%s: %d rows, want 1: a rejected request stores nothing", tc.name, st.Rows)
		}
	}
}

// TestLoaderCountsOutOfOrder: a late line the Loader refuses (tickdb
// ingest) is counted in the table at once, checked or appended.
func TestLoaderCountsOutOfOrder(t *testing.T) {
	db, live := testutil.DB(t)
	ld := NewLoader(&Options{DB: db, LiveRoot: live, Allow1970: true})
	defer func() {
		if err := ld.Close(); err != nil {
			t.Error(err)
		}
	}()
	line := func(s string) *lineproto.Line { return &parseLines(t, s)[0] }
	if err := ld.Append(line("g,sym=A v=1 2000")); err != nil {
		t.Fatal(err)
	}
	ld.Publish()
	count := func() uint64 {
		r, err := reader.Open(db, "g", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return r.OutOfOrder()
	}
	if err := ld.Append(line("g,sym=A v=2 1000")); err == nil {
		t.Fatal("a late line was stored")
	}
	if n := count(); n != 1 {
		t.Fatalf("after a late Append: %d out-of-order rows, want 1", n)
	}
	if err := ld.Check(line("g,sym=A v=2 1000")); err == nil {
		t.Fatal("a late line passed the check")
	}
	if n := count(); n != 2 {
		t.Fatalf("after a late Check: %d out-of-order rows, want 2", n)
	}
}
