package pgwire

import (
	"regexp"
	"strings"
)

// stmtKind says what a statement answers with.
type stmtKind int

const (
	kindRows   stmtKind = iota // RowDescription, DataRows, "SELECT n"
	kindDML                    // INSERT/UPDATE/DELETE: a count DuckDB returns as one row, or rows with RETURNING
	kindNoRows                 // DDL, SET, ...: a command tag only
	kindEmpty                  // nothing but blanks and comments: EmptyQueryResponse
)

// txnAction is what an intercepted transaction statement does to the
// session's transaction status.
type txnAction int

const (
	txnNone txnAction = iota
	txnBegin
	txnEnd // COMMIT or ROLLBACK
)

// plan is how one client statement is answered.
type plan struct {
	client  string   // the statement as the client sent it
	sql     string   // what DuckDB runs; "" runs nothing
	kind    stmtKind // ignored when sql is ""
	keyword string   // first word, upper case
	tag     string   // the command tag when fixed ("SET", "BEGIN"); else derived
	txn     txnAction
	// param is set by SET application_name, to be echoed as a
	// ParameterStatus, as Postgres does for GUC_REPORT settings.
	param     [2]string
	show      string // SHOW of a session setting the connection knows (application_name)
	rewritten bool   // sql differs from client: error positions cannot be mapped
}

// planFor decides how to answer one statement: answered here (settings
// DuckDB does not have, transaction control), rewritten (psql's catalog
// queries, version()), or passed to DuckDB as is.
func planFor(stmt string) plan {
	p := plan{client: stmt, sql: stmt}
	kw := keywords(stmt, 4)
	if len(kw) == 0 {
		p.kind, p.sql = kindEmpty, ""
		return p
	}
	p.keyword = kw[0]
	if ip, ok := intercept(stmt, kw); ok {
		ip.client = stmt
		ip.keyword = kw[0]
		return ip
	}
	if sql, ok := rewriteCatalog(stmt); ok {
		p.sql, p.rewritten = sql, true
	}
	p.kind = kindOf(kw, stmt)
	return p
}

// kindOf classifies a statement by its leading keywords.
func kindOf(kw []string, stmt string) stmtKind {
	switch kw[0] {
	case "INSERT", "UPDATE", "DELETE", "MERGE":
		return kindDML
	case "CREATE", "DROP", "ALTER", "SET", "RESET", "BEGIN", "START", "COMMIT", "END", "ROLLBACK",
		"ABORT", "CHECKPOINT", "FORCE", "ATTACH", "DETACH", "USE", "INSTALL", "LOAD", "VACUUM",
		"ANALYZE", "PREPARE", "DEALLOCATE", "EXPORT", "IMPORT", "TRUNCATE", "COMMENT", "GRANT",
		"REVOKE", "DISCARD", "LISTEN", "NOTIFY", "UNLISTEN", "UPDATE_EXTENSIONS":
		return kindNoRows
	case "COPY":
		// COPY ... TO/FROM a file returns its count; COPY (query) TO
		// STDOUT is psql's \copy, which DuckDB cannot stream back: it
		// fails in DuckDB and is reported as an error.
		return kindDML
	}
	return kindRows
}

// commandTag is the CommandComplete tag Postgres would send for a
// statement that returned n rows (or changed n rows).
func commandTag(p *plan, n int64) string {
	if p.tag != "" {
		return p.tag
	}
	count := itoa(n)
	switch p.keyword {
	case "INSERT":
		return "INSERT 0 " + count
	case "UPDATE", "DELETE", "MERGE", "COPY", "FETCH", "MOVE":
		return p.keyword + " " + count
	}
	if p.kind == kindRows {
		return "SELECT " + count
	}
	kw := keywords(p.client, 6)
	switch kw[0] {
	case "CREATE", "DROP", "ALTER":
		// CREATE [OR REPLACE] [TEMP|TEMPORARY|UNIQUE|...] TABLE -> CREATE TABLE
		for _, w := range kw[1:] {
			switch w {
			case "OR", "REPLACE", "TEMP", "TEMPORARY", "UNIQUE", "PERSISTENT", "IF", "NOT", "EXISTS":
				continue
			case "MATERIALIZED":
				return kw[0] + " MATERIALIZED VIEW"
			}
			return kw[0] + " " + w
		}
		return kw[0]
	case "START":
		return "BEGIN"
	case "END", "ABORT":
		return "COMMIT"
	case "TRUNCATE":
		return "TRUNCATE TABLE"
	}
	return kw[0]
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// pgVersion is what version() and server_version say: Postgres 15, the
// protocol and catalog dialect clients are answered in.
const (
	serverVersion = "15.0 (tickdb)"
	versionString = "PostgreSQL 15.0 (tickdb, DuckDB) on x86_64-pc-linux-gnu, compiled by Go, 64-bit"
)

// Settings Postgres clients set or read on connect that DuckDB does not
// have; SET to them is accepted and ignored.
var ignoredSettings = map[string]bool{
	"extra_float_digits": true, "application_name": true, "datestyle": true, "search_path": true,
	"statement_timeout": true, "client_encoding": true, "intervalstyle": true, "client_min_messages": true,
	"lock_timeout": true, "idle_in_transaction_session_timeout": true, "standard_conforming_strings": true,
	"bytea_output": true, "default_transaction_isolation": true, "default_transaction_read_only": true,
	"transaction_isolation": true, "transaction_read_only": true, "jit": true, "synchronous_commit": true,
	"row_security": true, "escape_string_warning": true, "geqo": true, "join_collapse_limit": true,
	"idle_session_timeout": true, "tcp_keepalives_idle": true, "tcp_keepalives_interval": true,
	"tcp_keepalives_count": true, "lc_messages": true, "lc_monetary": true, "lc_numeric": true, "lc_time": true,
	"session_replication_role": true,
}

// Settings SHOW answers here, with what a client expects of a UTF-8,
// UTC, ISO-dates Postgres 15.
var shownSettings = map[string][2]string{
	"server_version":                {"server_version", serverVersion},
	"server_version_num":            {"server_version_num", "150000"},
	"server_encoding":               {"server_encoding", "UTF8"},
	"client_encoding":               {"client_encoding", "UTF8"},
	"datestyle":                     {"DateStyle", "ISO, MDY"},
	"intervalstyle":                 {"IntervalStyle", "postgres"},
	"integer_datetimes":             {"integer_datetimes", "on"},
	"standard_conforming_strings":   {"standard_conforming_strings", "on"},
	"transaction isolation level":   {"transaction_isolation", "serializable"},
	"transaction_isolation":         {"transaction_isolation", "serializable"},
	"default_transaction_isolation": {"default_transaction_isolation", "serializable"},
	"transaction_read_only":         {"transaction_read_only", "off"},
	"search_path":                   {"search_path", "main"},
	"max_identifier_length":         {"max_identifier_length", "63"},
	"lc_collate":                    {"lc_collate", "C"},
	"lc_ctype":                      {"lc_ctype", "C"},
	"is_superuser":                  {"is_superuser", "off"},
	"statement_timeout":             {"statement_timeout", "0"},
	"extra_float_digits":            {"extra_float_digits", "1"},
}

var (
	setStmt     = regexp.MustCompile(`(?is)^\s*SET\s+(?:SESSION\s+|LOCAL\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*(?:=|\s+TO\s+|\s+)\s*(.*?)\s*;?\s*$`)
	showStmt    = regexp.MustCompile(`(?is)^\s*SHOW\s+(.+?)\s*;?\s*$`)
	versionStmt = regexp.MustCompile(`(?is)^\s*SELECT\s+(?:pg_catalog\.)?version\s*\(\s*\)\s*;?\s*$`)
)

// intercept answers the statements clients send on connect that DuckDB
// would reject or answer wrongly. kw holds the first words, upper case.
func intercept(stmt string, kw []string) (plan, bool) {
	fixed := func(tag string, txn txnAction) (plan, bool) {
		return plan{kind: kindNoRows, tag: tag, txn: txn}, true
	}
	word := func(i int) string {
		if i < len(kw) {
			return kw[i]
		}
		return ""
	}
	switch kw[0] {
	case "BEGIN", "START":
		if kw[0] == "START" && word(1) != "TRANSACTION" {
			return plan{}, false
		}
		return fixed("BEGIN", txnBegin)
	case "COMMIT", "END":
		if word(1) == "PREPARED" {
			return plan{}, false
		}
		return fixed("COMMIT", txnEnd)
	case "ROLLBACK", "ABORT":
		if word(1) == "PREPARED" || word(1) == "TO" {
			return plan{}, false
		}
		return fixed("ROLLBACK", txnEnd)
	case "DISCARD":
		return fixed("DISCARD "+strings.Join(kw[1:], " "), txnNone)
	case "UNLISTEN", "LISTEN":
		return fixed(kw[0], txnNone)
	case "SET":
		if word(1) == "SESSION" && word(2) == "CHARACTERISTICS" || word(1) == "TRANSACTION" {
			return fixed("SET", txnNone)
		}
		m := setStmt.FindStringSubmatch(stmt)
		if m == nil {
			return plan{}, false
		}
		name := strings.ToLower(m[1])
		if !ignoredSettings[name] {
			return plan{}, false
		}
		p := plan{kind: kindNoRows, tag: "SET"}
		if name == "application_name" {
			p.param = [2]string{"application_name", unquoteSetting(m[2])}
		}
		return p, true
	case "SHOW":
		m := showStmt.FindStringSubmatch(stmt)
		if m == nil {
			return plan{}, false
		}
		name := strings.Join(strings.Fields(strings.ToLower(m[1])), " ")
		if s, ok := shownSettings[name]; ok {
			return plan{sql: "SELECT " + sqlString(s[1]) + " AS " + sqlIdent(s[0]), kind: kindRows, tag: "SHOW", rewritten: true}, true
		}
		if name == "timezone" || name == "time zone" {
			return plan{sql: "SELECT 'UTC' AS \"TimeZone\"", kind: kindRows, tag: "SHOW", rewritten: true}, true
		}
		if name == "application_name" {
			return plan{show: name, kind: kindRows, tag: "SHOW", rewritten: true}, true
		}
	case "SELECT":
		if versionStmt.MatchString(stmt) {
			return plan{sql: "SELECT " + sqlString(versionString) + " AS version", kind: kindRows, rewritten: true}, true
		}
	}
	return plan{}, false
}

// unquoteSetting reads a SET value: 'a”b', "x" or a bare word.
func unquoteSetting(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'') {
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1]
	}
	return v
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func sqlIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
