package pgwire

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPsqlCatalogQueries runs every catalog query psql 15 sends for \dt,
// \d, \d NAME, \d+ NAME, \dt+, \dv, \dn and \l (testdata/psql15, captured
// with psql -E from psql 15.18), as the server plans them, in DuckDB: none
// may fail, and \dt and \d trades must find what is there.
func TestPsqlCatalogQueries(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(tradesDDL); err != nil {
		t.Fatal(err)
	}
	oids := map[string]string{}
	for _, name := range []string{"trades", "big_trades"} {
		var oid int64
		if err := db.QueryRow("SELECT oid FROM pg_catalog.pg_class WHERE relname = $1", name).Scan(&oid); err != nil {
			t.Fatal(err)
		}
		oids["{"+name+"_oid}"] = fmt.Sprint(oid)
	}
	files, err := filepath.Glob("testdata/psql15/*.sql")
	if err != nil || len(files) < 20 {
		t.Fatalf("%d captured queries, %v", len(files), err)
	}
	results := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		q := string(b)
		for k, v := range oids {
			q = strings.ReplaceAll(q, k, v)
		}
		pieces := splitStatements(q)
		if len(pieces) != 1 {
			t.Fatalf("%s: %d statements", f, len(pieces))
		}
		p := planFor(pieces[0].text)
		rows, err := db.Query(p.sql)
		if err != nil {
			t.Errorf("%s: %v\nas run:\n%s", f, err, p.sql)
			continue
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			results[filepath.Base(f)] = append(results[filepath.Base(f)], strings.TrimSpace(fmt.Sprintln(vals...)))
		}
		if err := rows.Err(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		rows.Close()
	}
	for file, want := range map[string][]string{
		"dt.1.sql":       {"main big_trades view tickdb", "main trades table tickdb"},
		"d.1.sql":        {"main big_trades view tickdb", "main trades table tickdb"},
		"dv.1.sql":       {"main big_trades view tickdb"},
		"dn.1.sql":       {"main tickdb"},
		"d_trades.1.sql": {oids["{trades_oid}"] + " main trades"},
		"l.1.sql":        {"memory tickdb UTF8 C C <nil> libc <nil>"},
	} {
		if got := strings.Join(results[file], "\n"); got != strings.Join(want, "\n") {
			t.Errorf("%s:\n%s\nwant\n%s", file, got, strings.Join(want, "\n"))
		}
	}
	var cols []string
	for _, r := range results["d_trades.3.sql"] {
		cols = append(cols, strings.Join(strings.Fields(r)[:2], " "))
	}
	if got := strings.Join(cols, ", "); got != "ts timestamp_ns, sym varchar, price float8, size int8, flag bool" {
		t.Errorf("\\d trades columns: %s", got)
	}
}

func TestRewriteCatalog(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{`WHERE c.relname OPERATOR(pg_catalog.~) '^(trades)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid)`,
			`WHERE c.relname ~ '^(trades)$' AND pg_catalog.pg_table_is_visible(c.oid)`},
		{`pg_catalog.pg_get_userbyid(c.relowner) as "Owner" FROM pg_catalog.pg_namespace n`, `'tickdb' as "Owner" FROM pg_catalog.pg_namespace n`},
		{`FROM pg_catalog.pg_namespace n WHERE c.relkind IN ('r','p','')`, `FROM pg_catalog.pg_namespace n WHERE c.relkind IN ('r','p','v','')`},
		{`CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END`, `CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::VARCHAR END`},
		{`SELECT 1 FROM pg_catalog.pg_policy pol`, noRows},
	} {
		got, ok := rewriteCatalog(tc.in)
		if !ok || got != tc.out {
			t.Errorf("rewriteCatalog(%q) = %q, %v; want %q", tc.in, got, ok, tc.out)
		}
	}
	// A user's own SQL is never touched.
	for _, q := range []string{
		`SELECT * FROM trades WHERE sym OPERATOR(pg_catalog.~) 'x'`[:35],
		`SELECT relkind FROM pg_class c WHERE c.relkind IN ('r','p','')`,
		`SELECT * FROM trades`,
	} {
		if got, ok := rewriteCatalog(q); ok || got != q {
			t.Errorf("rewriteCatalog(%q) = %q, %v; want it untouched", q, got, ok)
		}
	}
}

func TestIntercept(t *testing.T) {
	for _, tc := range []struct {
		sql, tag, runs string // runs: what DuckDB runs, "" for nothing
		txn            txnAction
	}{
		{"SET extra_float_digits = 3", "SET", "", txnNone},
		{"set application_name to 'psql'", "SET", "", txnNone},
		{"SET SESSION statement_timeout = 0", "SET", "", txnNone},
		{"SET DateStyle = ISO", "SET", "", txnNone},
		{"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET", "", txnNone},
		{"SET TRANSACTION READ ONLY", "SET", "", txnNone},
		{"SET threads = 4", "", "SET threads = 4", txnNone}, // DuckDB's own: passed on
		{"begin", "BEGIN", "", txnBegin},
		{"START TRANSACTION ISOLATION LEVEL SERIALIZABLE", "BEGIN", "", txnBegin},
		{"COMMIT", "COMMIT", "", txnEnd},
		{"END", "COMMIT", "", txnEnd},
		{"ROLLBACK", "ROLLBACK", "", txnEnd},
		{"DISCARD ALL", "DISCARD ALL", "", txnNone},
		{"SHOW transaction   isolation level", "SHOW", `SELECT 'serializable' AS "transaction_isolation"`, txnNone},
		{"SHOW search_path;", "SHOW", `SELECT 'main' AS "search_path"`, txnNone},
		{"select  version( )", "", "SELECT " + sqlString(versionString) + " AS version", txnNone},
		{"SHOW TABLES", "", "SHOW TABLES", txnNone},
	} {
		p := planFor(tc.sql)
		if p.tag != tc.tag || p.sql != tc.runs || p.txn != tc.txn {
			t.Errorf("planFor(%q): tag %q, runs %q, txn %d; want %q, %q, %d", tc.sql, p.tag, p.sql, p.txn, tc.tag, tc.runs, tc.txn)
		}
	}
	if p := planFor("SET application_name = 'my app'"); p.param != [2]string{"application_name", "my app"} {
		t.Errorf("SET application_name reports %q", p.param)
	}
}

func TestSplitStatements(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" ;; -- only a comment\n /* and /* nested */ another */ ;", nil},
		{"SELECT 1", []string{"SELECT 1@0"}},
		{"SELECT 1; SELECT 2;", []string{"SELECT 1@0", " SELECT 2@9"}},
		{"SELECT 'a;b'; SELECT \"x;\" FROM t", []string{"SELECT 'a;b'@0", " SELECT \"x;\" FROM t@13"}},
		{"SELECT $$;$$, $tag$ ; $$ ; $tag$; SELECT $1", []string{"SELECT $$;$$, $tag$ ; $$ ; $tag$@0", " SELECT $1@33"}},
		{"SELECT E'\\';'; SELECT 'it''s;'", []string{"SELECT E'\\';'@0", " SELECT 'it''s;'@14"}},
		{"SELECT 'é'; SELECT 2 -- ; x", []string{"SELECT 'é'@0", " SELECT 2 -- ; x@11"}},
		{"SELECT 1 /* ; */; SELECT 'unterminated;", []string{"SELECT 1 /* ; */@0", " SELECT 'unterminated;@17"}},
	} {
		var got []string
		for _, p := range splitStatements(tc.in) {
			got = append(got, fmt.Sprintf("%s@%d", p.text, p.offset))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("splitStatements(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if n := maxParam("SELECT $1, '$7', $$ $9 $$, \"$8\", $12 -- $20"); n != 12 {
		t.Errorf("maxParam = %d, want 12", n)
	}
	if kw := keywords("  /* c */ insert INTO t", 3); strings.Join(kw, " ") != "INSERT INTO T" {
		t.Errorf("keywords = %q", kw)
	}
	if !hasWord("INSERT INTO t VALUES (1) returning a", "RETURNING") || hasWord("SELECT 'returning'", "RETURNING") {
		t.Error("hasWord")
	}
}
