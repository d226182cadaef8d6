package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
)

func TestHTTPBars(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off", Token: "s3cret"})
	auth := []string{"Authorization", "Token s3cret"}
	var b strings.Builder
	for i := range 600 { // 10 minutes, a row every 2 s for each of A and B
		ts := int64(1_700_000_000e9) + int64(i)*1e9
		fmt.Fprintf(&b, "bt,sym=%c price=%d.25,size=%di %d\n", 'A'+i%2, 100+(i*7)%13, 1+i%5, ts)
	}
	writeLines(t, srv, b.String(), auth...)
	if code, _, _ := httpDo(t, srv, "GET", "/bars?table=bt&sym=A&interval=1m", ""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", code)
	}

	rd, err := reader.Open(db, "bt", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	type bar struct {
		Ts                     int64
		Open, High, Low, Close float64
		Volume, Count          int64
	}
	for _, tc := range []struct{ name, params string }{
		{"1m", "interval=1m"},
		{"ns interval and range", "interval=30000000000&from=1700000090000000000&to=2023-11-14T22:19:00Z"},
		{"explicit columns", "interval=90s&field=price&volume=size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := httpDo(t, srv, "GET", "/bars?table=bt&sym=A&ts=ns&"+tc.params, "", auth...)
			if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" {
				t.Fatalf("%d %q %s", code, hdr.Get("Content-Type"), body)
			}
			if got, want := hdr.Get("Tickdb-Next-Seq"), fmt.Sprint(rd.Len()); got != want {
				t.Errorf("Tickdb-Next-Seq %q, want %q (the rows published)", got, want)
			}
			var got []bar
			for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
				var v struct {
					Ts                     int64
					Open, High, Low, Close float64
					Volume, Count          int64
				}
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				got = append(got, bar(v))
			}
			// What query.Bars computes for the same parameters.
			q := query.BarsQuery{Table: "bt", Sym: "A"}
			for _, p := range strings.Split(tc.params, "&") {
				k, v, _ := strings.Cut(p, "=")
				switch k {
				case "interval":
					q.Interval, _ = parseInterval(v)
				case "from":
					q.From, _ = query.ParseTime(v)
					q.HasFrom = true
				case "to":
					q.To, _ = query.ParseTime(v)
					q.HasTo = true
				}
			}
			var want []bar
			if _, err := query.Bars(context.Background(), rd, q, func(b *query.Bar) error {
				want = append(want, bar{b.Ts, math.Float64frombits(b.Open), math.Float64frombits(b.High), math.Float64frombits(b.Low),
					math.Float64frombits(b.Close), int64(b.Volume), b.Count})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(want) < 2 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("bars:\n%v\nwant (query.Bars):\n%v", got, want)
			}
		})
	}
	// The key names, rfc3339 by default.
	_, body, _ := httpDo(t, srv, "GET", "/bars?table=bt&sym=B&interval=1h", "", auth...)
	if want := `{"ts":"2023-11-14T22:00:00.000000000Z","open":107.25,"high":112.25,"low":100.25,"close":107.25,"volume":900,"count":300}` + "\n"; body != want {
		t.Fatalf("one hour of B: %s, want %s", body, want)
	}
	for _, tc := range []struct {
		params string
		code   int
		reason string
	}{
		{"sym=A&interval=1m", 400, "table is required"},
		{"table=bt&interval=1m", 400, "sym is required"},
		{"table=bt&sym=A", 400, "interval is required"},
		{"table=bt&sym=A&interval=soon", 400, "not a duration"},
		{"table=bt&sym=A&interval=0", 400, "not positive"},
		{"table=bt&sym=A&interval=1m&from=yesterday", 400, "from"},
		{"table=bt&sym=A&interval=1m&field=bid", 400, `no column "bid"`},
		{"table=bt&sym=A&interval=1m&volume=sym", 400, "not f64 or i64"},
		{"table=bt&sym=A&interval=1m&format=ilp", 400, "json or csv"},
		{"table=nope&sym=A&interval=1m", 404, "nope"},
	} {
		code, body, hdr := httpDo(t, srv, "GET", "/bars?"+tc.params, "", auth...)
		var e errBody
		if code != tc.code || hdr.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Message, tc.reason) {
			t.Errorf("%s: %d %s, want %d naming %q", tc.params, code, body, tc.code, tc.reason)
		}
	}
	// A symbol the table does not hold: no bars.
	if code, body, _ := httpDo(t, srv, "GET", "/bars?table=bt&sym=Z&interval=1m", "", auth...); code != 200 || body != "" {
		t.Fatalf("unknown symbol: %d %q", code, body)
	}
}
