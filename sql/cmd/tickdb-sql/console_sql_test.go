package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/tickdb/tickdb/ingest"
)

// TestConsoleSQL: tickdb serve's GET /sql (what the console's Query panel
// runs in SQL mode) passes SQL to a real tickdb-sql and streams its rows as
// json and csv, timestamps with their nine digits as tickdb-sql's text
// format gives them; a syntax error is a 400 with the SQL server's
// message, sqlstate and position; /api/tables says "sql": true.
func TestConsoleSQL(t *testing.T) {
	db := table(t)
	addr := startSQL(t, db, "tok")
	srv, err := ingest.Start(&ingest.Options{DB: db, ILPAddr: "off", HTTPAddr: "127.0.0.1:0", LiveRoot: t.TempDir(), Token: "tok", SQLAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := "http://" + srv.HTTPAddr().String()
	client := &http.Client{Timeout: time.Minute}
	get := func(path, token string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest("GET", base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	sqlPath := func(q, format, limit string) string {
		v := url.Values{"q": {q}, "format": {format}}
		if limit != "" {
			v.Set("limit", limit)
		}
		return "/sql?" + v.Encode()
	}

	q := "SELECT ts, sym, price FROM trades ORDER BY ts"
	for _, c := range []struct{ name, format, limit, ctype, want string }{
		{"json", "json", "", "application/x-ndjson",
			`{"ts":"2024-01-02 14:30:00","sym":"AAPL","price":100.5}` + "\n" +
				`{"ts":"2024-01-02 14:30:01.000000001","sym":"MSFT","price":101.5}` + "\n" +
				`{"ts":"2024-01-02 14:30:02.000000002","sym":"AAPL","price":102.5}` + "\n"},
		{"csv", "csv", "", "text/csv; charset=utf-8",
			"ts,sym,price\n" +
				"2024-01-02 14:30:00,AAPL,100.5\n" +
				"2024-01-02 14:30:01.000000001,MSFT,101.5\n" +
				"2024-01-02 14:30:02.000000002,AAPL,102.5\n"},
		{"limit", "json", "2", "application/x-ndjson",
			`{"ts":"2024-01-02 14:30:00","sym":"AAPL","price":100.5}` + "\n" +
				`{"ts":"2024-01-02 14:30:01.000000001","sym":"MSFT","price":101.5}` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, ctype, body := get(sqlPath(q, c.format, c.limit), "tok")
			if code != 200 || ctype != c.ctype || body != c.want {
				t.Errorf("%d %q\n%s\nwant 200 %q\n%s", code, ctype, body, c.ctype, c.want)
			}
		})
	}
	t.Run("types", func(t *testing.T) {
		code, _, body := get(sqlPath("SELECT size, size > 150 AS big, NULL::DOUBLE AS none, 'a\"b' AS s FROM trades ORDER BY ts LIMIT 1", "json", ""), "tok")
		if want := `{"size":100,"big":"f","none":null,"s":"a\"b"}` + "\n"; code != 200 || body != want {
			t.Errorf("%d %s, want %s", code, body, want)
		}
	})
	t.Run("no token", func(t *testing.T) {
		if code, _, body := get(sqlPath(q, "json", ""), ""); code != http.StatusUnauthorized {
			t.Errorf("%d %s, want 401", code, body)
		}
	})
	t.Run("syntax error", func(t *testing.T) {
		code, ctype, body := get(sqlPath("SELEC ts FROM trades", "json", ""), "tok")
		var e struct {
			Error    string
			SQLState string
			Position int
		}
		if code != http.StatusBadRequest || ctype != "application/json" || json.Unmarshal([]byte(body), &e) != nil ||
			e.Error == "" || e.SQLState != "42601" || e.Position < 1 {
			t.Errorf("%d %q %s, want 400 with an error, sqlstate 42601 and a position", code, ctype, body)
		}
	})
	t.Run("api tables", func(t *testing.T) {
		code, _, body := get("/api/tables", "tok")
		var got struct {
			SQL    bool
			Tables []struct{ Name string }
		}
		if code != 200 || json.Unmarshal([]byte(body), &got) != nil || !got.SQL || len(got.Tables) != 1 || got.Tables[0].Name != "trades" {
			t.Errorf("%d %s, want \"sql\": true and table trades", code, body)
		}
	})
}
