package ingest

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestHTTPSQLNotConfigured: without SQLAddr, GET /sql says so (404, a
// JSON error) behind the token, and /api/tables says "sql": false. The
// SQL path itself is tested against a real tickdb-sql in the sql module
// (sql/cmd/tickdb-sql/console_sql_test.go).
func TestHTTPSQLNotConfigured(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", Token: "s3cret"})
	auth := []string{"Authorization", "Bearer s3cret"}
	if code, _, _ := httpDo(t, srv, "GET", "/sql?q=SELECT+1", ""); code != http.StatusUnauthorized {
		t.Errorf("/sql without the token: %d, want 401", code)
	}
	code, body, hdr := httpDo(t, srv, "GET", "/sql?q=SELECT+1", "", auth...)
	var e map[string]any
	if code != http.StatusNotFound || hdr.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &e) != nil ||
		len(e) != 1 || e["error"] != "no SQL server configured (serve --sql ADDR)" {
		t.Errorf("/sql with no SQL server: %d %q %s", code, hdr.Get("Content-Type"), body)
	}
	code, body, _ = httpDo(t, srv, "GET", "/api/tables", "", auth...)
	var got map[string]json.RawMessage
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || string(got["sql"]) != "false" || got["tables"] == nil {
		t.Errorf("/api/tables: %d %s, want \"sql\": false", code, body)
	}
}

// TestHTTPSQLUnreachable: a configured SQL server that is not there is a
// 502 naming its address, and a bad request is a 400, before any
// connection.
func TestHTTPSQLUnreachable(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", SQLAddr: "127.0.0.1:1"})
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/sql?q=SELECT+1", http.StatusBadGateway},
		{"/sql", http.StatusBadRequest},
		{"/sql?q=SELECT+1&format=parquet", http.StatusBadRequest},
		{"/sql?q=SELECT+1&limit=0", http.StatusBadRequest},
		{"/sql?q=SELECT+1&limit=1000001", http.StatusBadRequest},
	} {
		code, body, _ := httpDo(t, srv, "GET", tc.path, "")
		var e struct{ Error string }
		if code != tc.code || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
			t.Errorf("%s: %d %s, want %d and a JSON error", tc.path, code, body, tc.code)
		}
	}
	code, body, _ := httpDo(t, srv, "GET", "/api/tables", "")
	var got struct{ SQL bool }
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || !got.SQL {
		t.Errorf("/api/tables: %d %s, want \"sql\": true", code, body)
	}
}
