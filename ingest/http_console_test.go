package ingest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/writer"
)

func TestHTTPConsole(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", Token: "s3cret", Writer: writer.Options{LateWindow: DefaultLateWindow}})
	auth := []string{"Authorization", "Bearer s3cret"}
	// The page and its assets need no token: they hold no data.
	for _, tc := range []struct{ path, ctype, has string }{
		{"/", "text/html", "<title>tickdb console</title>"},
		{"/console/console.js", "text/javascript", "new EventSource("},
		{"/console/console.css", "text/css", "#chart"},
		{"/console/vendor/uplot/uPlot.iife.min.js", "text/javascript", "uPlot"},
		{"/console/vendor/uplot/uPlot.min.css", "text/css", ".uplot"},
		{"/console/vendor/uplot/LICENSE", "text/plain", "MIT"},
	} {
		code, body, hdr := httpDo(t, srv, "GET", tc.path, "")
		if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), tc.ctype) || !strings.Contains(body, tc.has) {
			t.Errorf("%s: %d %q, want 200 %s holding %q", tc.path, code, hdr.Get("Content-Type"), tc.ctype, tc.has)
		}
	}
	if code, _, _ := httpDo(t, srv, "GET", "/nope", ""); code != http.StatusNotFound {
		t.Errorf("/nope: %d, want 404", code)
	}
	if code, _, _ := httpDo(t, srv, "GET", "/api/tables", ""); code != http.StatusUnauthorized {
		t.Errorf("/api/tables without the token: %d, want 401", code)
	}
	var empty struct{ Tables []apiTable }
	if code, body, _ := httpDo(t, srv, "GET", "/api/tables", "", auth...); code != 200 || json.Unmarshal([]byte(body), &empty) != nil || empty.Tables == nil || len(empty.Tables) != 0 {
		t.Fatalf("no tables: %d %s", code, body)
	}
	writeLines(t, srv, "b,sym=X v=1 5\na,sym=Q\\ R px=1.5,n=2i 1000\na,sym=S px=2.5,n=3i 3000\na,sym=Q\\ R px=3.5,n=4i 2000\n", auth...)
	code, body, hdr := httpDo(t, srv, "GET", "/api/tables", "", auth...)
	var got struct{ Tables []apiTable }
	if code != 200 || hdr.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &got) != nil || len(got.Tables) != 2 {
		t.Fatalf("%d %q %s", code, hdr.Get("Content-Type"), body)
	}
	a := got.Tables[0]
	if a.Name != "a" || a.Rows != 3 || *a.FirstTs != 1000 || *a.LastTs != 2000 /* the last row's, a late one */ || a.SymCount != 2 ||
		strings.Join(a.Symbols, ",") != "Q R,S" || a.Writer != "open" || a.WriterPid == 0 || a.Bytes <= 0 || a.Late != 1 || a.OutOfOrder != 0 ||
		len(a.Schema) != 4 || a.Schema[0] != (apiColumn{"ts", "ts"}) || a.Schema[1] != (apiColumn{"sym", "sym"}) || a.Schema[2] != (apiColumn{"px", "f64"}) {
		t.Fatalf("table a: %s", body)
	}
	if got.Tables[1].Name != "b" || got.Tables[1].Rows != 1 {
		t.Fatalf("table b: %s", body)
	}
}
