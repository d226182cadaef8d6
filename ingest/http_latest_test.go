package ingest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestHTTPLatest(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", Token: "s3cret"})
	auth := []string{"Authorization", "Bearer s3cret"}
	body := "lt,sym=B px=1.5 10000000000\nlt,sym=A px=2.5 20000000000\nlt,sym=B px=3.5 30000000000\nlt,sym=B px=4.5 30000000000\nlt,sym=C\\ D px=5.5 40000000000\n"
	if code, resp, _ := httpDo(t, srv, "POST", "/write", body, auth...); code != http.StatusNoContent {
		t.Fatalf("write: %d %s", code, resp)
	}
	// The token guards it: 401 without, or with a wrong one.
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}} {
		if code, resp, _ := httpDo(t, srv, "GET", "/latest?table=lt", "", hdr...); code != http.StatusUnauthorized {
			t.Fatalf("token %v: %d %s, want 401", hdr, code, resp)
		}
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		// Name order; among equal ts the later row.
		{"newest", "/latest?table=lt&format=csv&ts=ns", "ts,sym,px\n20000000000,A,2.5\n30000000000,B,4.5\n40000000000,C D,5.5\n"},
		{"at", "/latest?table=lt&format=csv&ts=ns&at=29999999999", "ts,sym,px\n20000000000,A,2.5\n10000000000,B,1.5\n"},
		{"at rfc3339", "/latest?table=lt&format=csv&ts=ns&at=1970-01-01T00:00:10Z", "ts,sym,px\n10000000000,B,1.5\n"},
		{"syms", "/latest?table=lt&format=csv&ts=ns&sym=C+D&sym=B&sym=nope", "ts,sym,px\n30000000000,B,4.5\n40000000000,C D,5.5\n"},
		{"before the first", "/latest?table=lt&format=csv&at=1", "ts,sym,px\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got, hdr := httpDo(t, srv, "GET", tc.path, "", auth...)
			if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/csv") || got != tc.want {
				t.Fatalf("%d %q:\n%s\nwant:\n%s", code, hdr.Get("Content-Type"), got, tc.want)
			}
		})
	}
	// json by default: one object per line.
	code, got, hdr := httpDo(t, srv, "GET", "/latest?table=lt&sym=A", "", auth...)
	var row map[string]any
	if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" || json.Unmarshal([]byte(got), &row) != nil ||
		row["sym"] != "A" || row["px"] != 2.5 || row["ts"] != "1970-01-01T00:00:20.000000000Z" {
		t.Fatalf("json: %d %q %s", code, hdr.Get("Content-Type"), got)
	}
	if code, resp, _ := httpDo(t, srv, "POST", "/write", "nosym px=1 1\n", auth...); code != http.StatusNoContent {
		t.Fatalf("write: %d %s", code, resp)
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/latest?table=nope", 404, "nope"},
		{"/latest?table=nosym", 400, "no sym column"},
		{"/latest", 400, "table is required"},
		{"/latest?table=lt&at=yesterday", 400, "yesterday"},
		{"/latest?table=lt&format=ilp", 400, "json or csv"},
		{"/latest?table=lt&ts=ms", 400, "ms"},
	} {
		if code, got, _ := httpDo(t, srv, "GET", tc.path, "", auth...); code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.path, code, got, tc.code, tc.want)
		}
	}
}
