package pgwire

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"
)

// TestErrorPosition runs bad statements in DuckDB and checks the position
// computed from DuckDB's excerpt against where the offending word is: on
// later lines, after CR LF pairs (which DuckDB counts as two lines), past
// multi-byte characters, and in lines so long that DuckDB cuts the
// excerpt with "..." on one side or both.
func TestErrorPosition(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE trades(ts TIMESTAMP_NS, sym VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	long := func(n int) string {
		var cols []string
		for i := range n {
			cols = append(cols, fmt.Sprintf("%d AS c%d", i, i))
		}
		return strings.Join(cols, ", ")
	}
	for _, tc := range []struct {
		name, sql, at, code string // at: the text the position must point at (its first occurrence after a ⟪ mark)
	}{
		{"syntax", "SELECT * FORM ⟪trades", "trades", codeSyntax},
		{"misspelt-keyword", "⟪SELEC 1", "SELEC", codeSyntax},
		{"table", "SELECT * FROM ⟪nosuch", "nosuch", codeUndefinedTable},
		{"column", "SELECT ⟪nosuch FROM trades", "nosuch", codeUndefinedColumn},
		{"function", "SELECT ⟪nofn(1)", "nofn", codeUndefinedFunction},
		{"third-line", "SELECT 1,\n  2 +\n  ⟪FROM trades", "FROM", codeSyntax},
		{"crlf", "SELECT 1,\r\n  2 +\r\n  ⟪FROM trades", "FROM", codeSyntax},
		{"unicode", "SELECT 'héllo wörld ☃' AS x, * FORM ⟪trades", "trades", codeSyntax},
		{"unicode-column", "SELECT 'héllo wörld ☃' AS x, ⟪nosuch FROM trades", "nosuch", codeUndefinedColumn},
		{"unicode-second-line", "SELECT 'é☃',\n  'ü', * FORM ⟪trades", "trades", codeSyntax},
		{"long-line-cut-left", "SELECT " + long(40) + " FROM trades WHERE ⟪WHERE", "WHERE", codeSyntax},
		{"long-line-cut-both", "SELECT " + long(30) + ", ⟪nosuch, " + long(30) + " FROM trades", "nosuch", codeUndefinedColumn},
		{"long-line-cut-right", "SELECT ⟪nosuch, " + long(30) + " FROM trades", "nosuch", codeUndefinedColumn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := strings.Index(tc.sql, "⟪")
			q := strings.Replace(tc.sql, "⟪", "", 1)
			want := utf8.RuneCountInString(q[:mark]) + 1
			if !strings.HasPrefix(q[mark:], tc.at) {
				t.Fatalf("bad case: %q at %d", tc.at, mark)
			}
			_, err := db.Exec(q)
			var de *duckdb.Error
			if !errors.As(err, &de) {
				t.Fatalf("DuckDB error: %v", err)
			}
			e := toPGError(err, q)
			if e.position != want || e.code != tc.code {
				t.Errorf("%s at %d, want %s at %d\nDuckDB said: %s", e.code, e.position, tc.code, want, de.Msg)
			}
			if strings.Contains(e.message, "LINE") || strings.Contains(e.message, "Error:") {
				t.Errorf("message %q keeps DuckDB's prefix or excerpt", e.message)
			}
		})
	}
}

func TestCutExcerpt(t *testing.T) {
	for _, tc := range []struct {
		name, msg, query, rest string
		pos                    int
	}{
		{"none", "Table with name x does not exist!", "SELECT * FROM x", "Table with name x does not exist!", 0},
		{"plain", "syntax error at or near \"t\"\n\nLINE 1: SELECT * FORM t\n                      ^", "SELECT * FORM t",
			"syntax error at or near \"t\"", 15},
		{"excerpt-not-from-query", "bad\n\nLINE 1: SELECT 2\n        ^", "SELECT 1", "bad", 0},
		{"line-past-end", "bad\n\nLINE 3: x\n        ^", "x", "bad", 0},
	} {
		rest, pos := cutExcerpt(tc.msg, tc.query, false)
		if rest != tc.rest || pos != tc.pos {
			t.Errorf("%s: %q at %d, want %q at %d", tc.name, rest, pos, tc.rest, tc.pos)
		}
	}
}

func TestDuckCode(t *testing.T) {
	for _, tc := range []struct {
		typ  duckdb.ErrorType
		msg  string
		code string
	}{
		{duckdb.ErrorTypeCatalog, `Cannot execute statement of type "CREATE" on database "x" which is attached in read-only mode!`, codeReadOnlyTxn},
		{duckdb.ErrorTypeInvalidInput, "Cannot launch in-memory database in read-only mode!", codeReadOnlyTxn},
		{duckdb.ErrorTypeCatalog, "unrecognized configuration parameter \"foo\"", codeUndefinedObject},
		{duckdb.ErrorTypeCatalog, "Table Function with name x does not exist!", codeUndefinedFunction},
		{duckdb.ErrorTypeCatalog, "Schema with name x does not exist!", codeInvalidSchema},
		{duckdb.ErrorTypeBinder, "Referenced column \"x\" not found in FROM clause!", codeUndefinedColumn},
		{duckdb.ErrorTypeBinder, "No function matches the given name and argument types 'f(INTEGER)'.", codeUndefinedFunction},
		{duckdb.ErrorTypeConversion, "Could not convert string 'abc' to INT32", codeInvalidText},
		{duckdb.ErrorTypePermission, "Permission Error: file system access disabled", codeInsufficientPriv},
		{duckdb.ErrorTypeInterrupt, "Interrupted!", codeQueryCanceled},
		{duckdb.ErrorTypeInternal, "boom", codeInternal},
	} {
		if got := duckCode(tc.typ, tc.msg); got != tc.code {
			t.Errorf("%q: %s, want %s", tc.msg, got, tc.code)
		}
	}
}
