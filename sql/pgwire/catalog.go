package pgwire

import (
	"regexp"
	"strings"
)

// psql's backslash commands (\dt, \d NAME, \d, \l) send catalog queries
// that DuckDB's pg_catalog emulation almost answers. The rewrites below
// close the gap for the query shapes psql 15 sends (captured with psql
// -E; see catalog_test.go), and touch only statements that name
// pg_catalog, so a user's own SQL is never changed.
//
// They work on psql's fixed text, not on parsed SQL: each pattern is
// specific enough to match only where psql writes it.

// catalogRule is one textual rewrite.
type catalogRule struct {
	re   *regexp.Regexp
	repl string
}

var catalogRules = []catalogRule{
	// \d+ NAME: the table's storage options (none).
	{regexp.MustCompile(`pg_catalog\.array_to_string\(c\.reloptions \|\| array\(select 'toast\.' \|\| x from pg_catalog\.unnest\(tc\.reloptions\) x\), ', '\)`), "NULL::VARCHAR"},
	// c.relname OPERATOR(pg_catalog.~) '^(trades)$': DuckDB has the
	// operators, not the OPERATOR() syntax. psql's patterns are anchored
	// ^(...)$, so DuckDB's ~ (a full match) agrees with Postgres's (a
	// search).
	{regexp.MustCompile(`OPERATOR\(pg_catalog\.([~!=<>*]+)\)`), "$1"},
	// COLLATE pg_catalog.default: DuckDB has no such collation; the
	// default is what it does anyway.
	{regexp.MustCompile(`(?i)\s+COLLATE\s+pg_catalog\."?(default|C)"?`), ""},
	// pg_catalog.pg_get_userbyid(c.relowner): the owner's name. Every
	// object belongs to the one user there is.
	{regexp.MustCompile(`pg_catalog\.pg_get_userbyid\([^()]*\)`), "'tickdb'"},
	// \dt lists relkind r (tables) and p (partitioned tables); tickdb
	// tables are DuckDB views, so \dt lists views too (shown with Type
	// "view").
	{regexp.MustCompile(`c\.relkind IN \('r','p',''\)`), "c.relkind IN ('r','p','v','')"},
	// x::pg_catalog.regtype::pg_catalog.text: DuckDB has neither reg*
	// types nor schema-qualified type names.
	{regexp.MustCompile(`::pg_catalog\.reg(type|class|proc|namespace|role)::pg_catalog\.text`), "::VARCHAR"},
	{regexp.MustCompile(`::pg_catalog\.(text|name|bpchar|varchar)\b`), "::VARCHAR"},
	// \l: the database's encoding and locale, which DuckDB's pg_database
	// lacks.
	{regexp.MustCompile(`pg_catalog\.pg_encoding_to_char\([^()]*\)`), "'UTF8'"},
	{regexp.MustCompile(`FROM pg_catalog\.pg_database d\b`), `FROM (SELECT oid, datname, 0 AS datdba, 6 AS encoding, 'C' AS datcollate, 'C' AS datctype,
	NULL::VARCHAR AS daticulocale, 'c' AS datlocprovider, NULL::VARCHAR[] AS datacl
	FROM pg_catalog.pg_database WHERE datname NOT IN ('system', 'temp')) d`},
	{regexp.MustCompile(`pg_catalog\.array_to_string\(`), "array_to_string("},
	// pg_get_expr(expr, relation, pretty): DuckDB's takes two arguments.
	{regexp.MustCompile(`pg_catalog\.pg_get_expr\(([^(),]+),\s*([^(),]+),\s*true\)`), "pg_catalog.pg_get_expr($1, $2)"},
	// \dt+, \d+ NAME: sizes (unknown: NULL) and table options.
	{regexp.MustCompile(`pg_catalog\.pg_(table|total_relation|relation|indexes)_size\([^()]*\)`), "NULL::BIGINT"},
	// \d+ VIEW: DuckDB's pg_get_viewdef takes the oid alone.
	{regexp.MustCompile(`pg_catalog\.pg_get_viewdef\('?(\d+)'?(?:::pg_catalog\.oid)?, true\)`), "pg_catalog.pg_get_viewdef($1)"},
	// \d NAME reads pg_class columns DuckDB's pg_class lacks.
	{regexp.MustCompile(`pg_catalog\.pg_class (c|tc|c2)\b`), `(SELECT *, false AS relforcerowsecurity FROM pg_catalog.pg_class) $1`},
}

// emptyCatalogs are the catalogs of features DuckDB does not have
// (row security policies, extended statistics, publications, table
// inheritance, triggers, rules): psql's queries on them are answered with
// no rows, which psql shows as nothing.
var emptyCatalogs = regexp.MustCompile(`\bpg_catalog\.pg_(policy|statistic_ext|publication|publication_rel|publication_namespace|inherits|trigger|rewrite|partitioned_table)\b`)

// noRows is the answer to a query on an empty catalog.
const noRows = "SELECT NULL::VARCHAR AS none WHERE false"

// Grafana's PostgreSQL data source lists tables and columns with queries
// on information_schema that pick the schemas off search_path with
// quote_ident, string_to_array and generate_series, which DuckDB lacks or
// spells differently (and its search_path setting is empty): the schema
// test becomes the current schema, quote_ident of a plain column its
// value.
var grafanaRules = []catalogRule{
	{regexp.MustCompile(`(?s)IN \(\s*SELECT\s+CASE WHEN trim\(s\[i\]\) = '"\$user"' THEN user ELSE trim\(s\[i\]\) END\s+FROM\s+generate_series\(.*?\) as i,\s*string_to_array\(current_setting\('search_path'\),\s*','\) s\s*\)`),
		"IN (current_schema())"},
	{regexp.MustCompile(`quote_ident\((table_name|table_schema|column_name)\)`), "$1"},
}

// rewriteCatalog rewrites one of psql's catalog queries, or Grafana's, for
// DuckDB; false when stmt is neither (it names neither pg_catalog nor
// information_schema, or nothing matched).
func rewriteCatalog(stmt string) (string, bool) {
	if strings.Contains(stmt, "information_schema.") && strings.Contains(stmt, "quote_ident(") {
		out := stmt
		for _, r := range grafanaRules {
			out = r.re.ReplaceAllString(out, r.repl)
		}
		return out, out != stmt
	}
	if !strings.Contains(stmt, "pg_catalog.") {
		return stmt, false
	}
	if emptyCatalogs.MatchString(stmt) {
		return noRows, true
	}
	out := stmt
	for _, r := range catalogRules {
		out = r.re.ReplaceAllString(out, r.repl)
	}
	return out, out != stmt
}
