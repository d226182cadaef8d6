package query

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tickdb/tickdb/internal/textfmt"
	"github.com/tickdb/tickdb/reader"
)

// nearSyms is how many near names UnknownSym lists.
const nearSyms = 3

// UnknownSym explains an answer that is empty because sym is not a
// symbol of r's table: it returns "" when sym is "" or in the table's
// dictionary (or the table has no sym column: the query's own error says
// so), otherwise a sentence that names the symbol and the table and lists
// the nearest symbol names (edit distance, case folded, at most three), as
// an unknown table's error lists the tables:
//
//	no symbol "AAPX" in table trades; nearest: AAPL, AAPM
//
// Symbols match exactly, case and all. It reads the whole dictionary, so
// it is for the one call after a query, not per row.
func UnknownSym(r *reader.Reader, table, sym string) string {
	if sym == "" || r.Schema().SymCol < 0 {
		return ""
	}
	if _, ok := r.SymbolID([]byte(sym)); ok {
		return ""
	}
	n := r.Symbols()
	msg := fmt.Sprintf("no symbol %q in table %s", sym, table)
	if n == 0 {
		return msg + "; it has no symbols yet"
	}
	names := make([]string, 0, n)
	for id := range uint32(n) {
		if s, err := r.SymbolName(id); err == nil {
			names = append(names, s)
		}
	}
	near := textfmt.Nearest(sym, names, nearSyms)
	if len(near) == 0 {
		return fmt.Sprintf("%s; none of its %s symbols is close", msg, textfmt.Commas(int64(n)))
	}
	q := make([]string, len(near))
	for i, s := range near {
		q[i] = quoteSym(s)
	}
	return msg + "; nearest: " + strings.Join(q, ", ")
}

// quoteSym prints a symbol bare when that reads unambiguously in a
// comma-separated list, quoted otherwise (a symbol may hold spaces and
// commas).
func quoteSym(s string) string {
	if s == "" || strings.ContainsAny(s, ", \"\\;") || strconv.Quote(s) != `"`+s+`"` {
		return strconv.Quote(s)
	}
	return s
}
