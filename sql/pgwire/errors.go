package pgwire

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgproto3"
)

var (
	// ErrServerClosed is returned by Serve when it is called after Close.
	ErrServerClosed = errors.New("pgwire: server closed")

	// errEncode: a value cannot be written as the type the client was
	// told.
	errEncode = errors.New("pgwire: cannot encode")
	// errUserCancel is the cause of a query context cancelled by a
	// CancelRequest.
	errUserCancel = errors.New("pgwire: canceling statement due to user request")
	// errClientGone is the cause of a query context cancelled because
	// the client went away.
	errClientGone = errors.New("pgwire: client disconnected")
)

// SQLSTATE codes the server sends (Postgres's errcodes.txt).
const (
	codeSyntax              = "42601"
	codeUndefinedTable      = "42P01"
	codeUndefinedColumn     = "42703"
	codeUndefinedFunction   = "42883"
	codeUndefinedObject     = "42704"
	codeAmbiguousFunction   = "42725"
	codeDatatypeMismatch    = "42804"
	codeIndeterminateType   = "42P18"
	codeInvalidSchema       = "3F000"
	codeAccessRule          = "42000"
	codeInsufficientPriv    = "42501"
	codeReadOnlyTxn         = "25006"
	codeInFailedTxn         = "25P02"
	codeInvalidText         = "22P02"
	codeOutOfRange          = "22003"
	codeDivisionByZero      = "22012"
	codeQueryCanceled       = "57014"
	codeTooManyConnections  = "53300"
	codeOutOfMemory         = "53200"
	codeIOError             = "58030"
	codeInvalidPassword     = "28P01"
	codeProtocolViolation   = "08P01"
	codeFeatureUnsupported  = "0A000"
	codeSerialization       = "40001"
	codeIntegrity           = "23000"
	codeUniqueViolation     = "23505"
	codeNotNullViolation    = "23502"
	codeDuplicateStatement  = "42P05"
	codeDuplicateCursor     = "42P03"
	codeInvalidStatement    = "26000"
	codeInvalidCursor       = "34000"
	codeInvalidParamValue   = "22023"
	codeInternal            = "XX000"
	codeInvalidBinaryFormat = "22P03"
)

// pgError is one ErrorResponse.
type pgError struct {
	severity string // ERROR or FATAL
	code     string
	message  string
	detail   string
	hint     string
	position int // 1-based character position in the client's query; 0 for none
}

func (e *pgError) Error() string { return e.message }

func (e *pgError) response() *pgproto3.ErrorResponse {
	r := &pgproto3.ErrorResponse{
		Severity:            e.severity,
		SeverityUnlocalized: e.severity,
		Code:                e.code,
		Message:             e.message,
		Detail:              e.detail,
		Hint:                e.hint,
		Position:            int32(e.position),
	}
	if r.Severity == "" {
		r.Severity, r.SeverityUnlocalized = "ERROR", "ERROR"
	}
	return r
}

func newError(code, msg string) *pgError {
	return &pgError{severity: "ERROR", code: code, message: msg}
}

// duckPrefix is the "Parser Error: " that starts every DuckDB message.
var duckPrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z ]* Error: `)

// toPGError turns an error from running query (the statement text DuckDB
// saw) into an ErrorResponse: SQLSTATE from the DuckDB error type and
// message, the message without DuckDB's "LINE 1:" excerpt, and the
// position that excerpt points at, counted in query.
func toPGError(err error, query string) *pgError {
	var pe *pgError
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, errUserCancel) {
		return newError(codeQueryCanceled, "canceling statement due to user request")
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return newError(codeQueryCanceled, "canceling statement due to user request")
	}
	var de *duckdb.Error
	if !errors.As(err, &de) {
		if errors.Is(err, errEncode) {
			return newError(codeDatatypeMismatch, err.Error())
		}
		return newError(codeInternal, err.Error())
	}
	msg := duckPrefix.ReplaceAllString(de.Msg, "")
	msg, pos := cutExcerpt(msg, query, de.Type == duckdb.ErrorTypeParser)
	first, rest, _ := strings.Cut(msg, "\n")
	e := &pgError{severity: "ERROR", code: duckCode(de.Type, first), message: strings.TrimSpace(first), position: pos}
	var detail, hint []string
	for _, l := range strings.Split(rest, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case strings.HasPrefix(l, "Did you mean"):
			hint = append(hint, l)
		default:
			detail = append(detail, l)
		}
	}
	e.detail = strings.Join(detail, "\n")
	e.hint = strings.Join(hint, "\n")
	return e
}

// duckCode picks the SQLSTATE for a DuckDB error of type t whose message
// starts with msg.
func duckCode(t duckdb.ErrorType, msg string) string {
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "read-only") || strings.Contains(lower, "read only"):
		return codeReadOnlyTxn
	case strings.Contains(lower, "unrecognized configuration parameter"):
		return codeUndefinedObject
	}
	switch t {
	case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax:
		return codeSyntax
	case duckdb.ErrorTypeCatalog:
		switch {
		case strings.Contains(lower, "function"), strings.Contains(lower, "macro"):
			return codeUndefinedFunction
		case strings.HasPrefix(lower, "schema"):
			return codeInvalidSchema
		case strings.Contains(lower, "column"):
			return codeUndefinedColumn
		case strings.Contains(lower, "table"), strings.Contains(lower, "view"):
			return codeUndefinedTable
		}
		return codeUndefinedObject
	case duckdb.ErrorTypeBinder:
		switch {
		case strings.Contains(lower, "could not choose a best candidate"):
			return codeAmbiguousFunction
		case strings.Contains(lower, "function"):
			return codeUndefinedFunction
		case strings.Contains(lower, "referenced table"):
			return codeUndefinedTable
		case strings.Contains(lower, "column"):
			return codeUndefinedColumn
		case strings.Contains(lower, "cannot compare") || strings.Contains(lower, "explicit cast"):
			return codeDatatypeMismatch
		}
		return codeAccessRule
	case duckdb.ErrorTypeConversion, duckdb.ErrorTypeInvalidInput:
		return codeInvalidText
	case duckdb.ErrorTypeOutOfRange:
		return codeOutOfRange
	case duckdb.ErrorTypeDivideByZero:
		return codeDivisionByZero
	case duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidType:
		return codeDatatypeMismatch
	case duckdb.ErrorTypeParameterNotResolved:
		return codeIndeterminateType
	case duckdb.ErrorTypePermission:
		return codeInsufficientPriv
	case duckdb.ErrorTypeInterrupt:
		return codeQueryCanceled
	case duckdb.ErrorTypeTransaction:
		return codeSerialization
	case duckdb.ErrorTypeConstraint:
		switch {
		case strings.Contains(lower, "duplicate key"):
			return codeUniqueViolation
		case strings.Contains(lower, "not null"):
			return codeNotNullViolation
		}
		return codeIntegrity
	case duckdb.ErrorTypeOutOfMemory:
		return codeOutOfMemory
	case duckdb.ErrorTypeIO:
		return codeIOError
	case duckdb.ErrorTypeNotImplemented:
		return codeFeatureUnsupported
	case duckdb.ErrorTypeSettings, duckdb.ErrorTypeInvalidConfiguration:
		return codeInvalidParamValue
	}
	return codeInternal
}

// excerpt finds DuckDB's error excerpt at the end of a message:
//
//	LINE 2: ...some text around the error...
//	                         ^
var excerpt = regexp.MustCompile(`\n(LINE (\d+): )(.*)\n( *)\^\s*$`)

// nearToken is the token a syntax error names.
var nearToken = regexp.MustCompile(`at or near "((?:[^"]|"")*)"`)

// cutExcerpt removes the excerpt from msg and returns the 1-based
// character position in query it points at, or 0 when the excerpt is
// missing or does not match query.
//
// DuckDB (QueryErrorContext::Format) shows at most about 40 columns each
// side of the error, marking a cut with "...", and puts the caret under
// the error's first character, its column counted in display width. Each
// character is taken as one column wide here: a query with wide (East
// Asian) characters before the error gets a position a little off.
//
// The parser's error location is a count of characters which the excerpt
// treats as a byte offset (DuckDB 1.5): after a multi-byte character the
// caret sits early by the extra bytes. For parser errors (parser true)
// the byte offset of the caret is therefore taken as the character
// position, and the token the message names, searched for among the few
// characters the rounding leaves open, settles it.
func cutExcerpt(msg, query string, parser bool) (string, int) {
	m := excerpt.FindStringSubmatchIndex(msg)
	if m == nil {
		return msg, 0
	}
	indicator := msg[m[2]:m[3]]
	lineNo, _ := strconv.Atoi(msg[m[4]:m[5]])
	shown := msg[m[6]:m[7]]
	caret := m[9] - m[8]
	rest := strings.TrimRight(msg[:m[0]], "\n ")
	col := caret - len(indicator)
	if col < 0 || lineNo < 1 {
		return rest, 0
	}

	// The line lineNo: DuckDB counts lines at '\n' (a CR LF pair is one
	// line break).
	lineStart := 0
	for n := 1; n < lineNo; n++ {
		i := strings.IndexByte(query[lineStart:], '\n')
		if i < 0 {
			return rest, 0
		}
		lineStart += i + 1
	}
	line := query[lineStart:]
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = strings.TrimSuffix(line, "\r")

	// Where the shown text starts in the line.
	from := 0
	if cut, ok := strings.CutPrefix(shown, "..."); ok && !strings.HasPrefix(line, shown) {
		col -= 3
		core := cut
		if c, ok := strings.CutSuffix(core, "..."); ok && !strings.HasSuffix(line, core) {
			core = c
		}
		i := strings.Index(line, core)
		if i < 0 || col < 0 {
			return rest, 0
		}
		from = i
	} else {
		core := shown
		if c, ok := strings.CutSuffix(core, "..."); ok && !strings.HasPrefix(line, core) {
			core = c
		}
		if !strings.HasPrefix(line, core) {
			return rest, 0
		}
	}
	// col characters into the line from there.
	at := from
	for range col {
		if at >= len(line) {
			return rest, 0
		}
		_, size := utf8.DecodeRuneInString(line[at:])
		at += size
	}
	if !parser {
		return rest, utf8.RuneCountInString(query[:lineStart+at]) + 1
	}
	loc := lineStart + at // a character count, as the parser reported it
	if tok := nearToken.FindStringSubmatch(rest); tok != nil {
		word := strings.ReplaceAll(tok[1], `""`, `"`)
		for c := loc; c >= 0 && c >= loc-3; c-- {
			if runeSuffixHasPrefix(query, c, word) {
				return rest, c + 1
			}
		}
	}
	if loc > utf8.RuneCountInString(query) {
		return rest, 0
	}
	return rest, loc + 1
}

// runeSuffixHasPrefix says whether query, from its c-th character, starts
// with word.
func runeSuffixHasPrefix(query string, c int, word string) bool {
	for i := range query {
		if c == 0 {
			return strings.HasPrefix(query[i:], word)
		}
		c--
	}
	return false
}
