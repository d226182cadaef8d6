package pgwire

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"
)

// COPY ... TO STDOUT is what psql's \copy sends; DuckDB's COPY writes
// files, so the server runs the query and sends the rows itself, in the
// text or CSV format of Postgres's COPY. COPY FROM STDIN is refused; COPY
// to or from a file goes to DuckDB.

// copySpec is a parsed COPY ... TO STDOUT.
type copySpec struct {
	query  string // the SELECT whose rows are copied
	offset int    // characters before query in the statement, for error positions
	csv    bool
	header bool
	delim  string
	null   string
	quote  byte
}

var (
	copyTable  = regexp.MustCompile(`(?is)^\s*COPY\s+((?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)(?:\s*\.\s*(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*))*)\s*(\(([^)]*)\))?\s*TO\s+STDOUT\b(.*)$`)
	copyStdin  = regexp.MustCompile(`(?is)\bFROM\s+STDIN\b`)
	copyStdout = regexp.MustCompile(`(?is)^\s*TO\s+STDOUT\b(.*)$`)
	copyOpt    = regexp.MustCompile(`(?is)(FORMAT\s+\w+|CSV|TEXT|BINARY|HEADER(?:\s+(?:TRUE|ON|1|FALSE|OFF|0|MATCH))?|DELIMITER\s+(?:AS\s+)?'(?:[^']|'')*'|NULL\s+(?:AS\s+)?'(?:[^']|'')*'|QUOTE\s+(?:AS\s+)?'(?:[^']|'')*')`)
)

// parseCopy reads COPY (query) TO STDOUT [options] and COPY table
// [(columns)] TO STDOUT [options]; ok false for any other COPY.
func parseCopy(stmt string) (copySpec, bool, *pgError) {
	if copyStdin.MatchString(stmt) {
		return copySpec{}, false, newError(codeFeatureUnsupported, "COPY FROM STDIN is not supported: the SQL interface is read-only")
	}
	spec := copySpec{delim: "\t", null: `\N`, quote: '"'}
	var opts string
	sc := scanner{src: stmt}
	sc.next() // COPY
	if sc.next() == tokOther && stmt[sc.start] == '(' {
		open := sc.pos
		depth := 1
		for depth > 0 {
			switch sc.next() {
			case tokEOF:
				return copySpec{}, false, nil
			case tokOther:
				switch stmt[sc.start] {
				case '(':
					depth++
				case ')':
					depth--
				}
			}
		}
		spec.query = stmt[open:sc.start]
		spec.offset = utf8.RuneCountInString(stmt[:open])
		m := copyStdout.FindStringSubmatch(stmt[sc.pos:])
		if m == nil {
			return copySpec{}, false, nil
		}
		opts = m[1]
	} else {
		m := copyTable.FindStringSubmatch(stmt)
		if m == nil {
			return copySpec{}, false, nil
		}
		cols := "*"
		if strings.TrimSpace(m[3]) != "" {
			cols = m[3]
		}
		spec.query = "SELECT " + cols + " FROM " + m[1]
		spec.offset = -1
		opts = m[4]
	}
	for _, o := range copyOpt.FindAllString(opts, -1) {
		word := strings.ToUpper(strings.Fields(o)[0])
		switch word {
		case "CSV":
			spec.csv = true
		case "FORMAT":
			switch strings.ToLower(strings.Fields(o)[1]) {
			case "csv":
				spec.csv = true
			case "binary":
				return copySpec{}, false, newError(codeFeatureUnsupported, "COPY TO STDOUT in binary format is not supported")
			}
		case "BINARY":
			return copySpec{}, false, newError(codeFeatureUnsupported, "COPY TO STDOUT in binary format is not supported")
		case "HEADER":
			f := strings.Fields(strings.ToLower(o))
			spec.header = len(f) == 1 || f[1] == "true" || f[1] == "on" || f[1] == "1" || f[1] == "match"
		case "DELIMITER":
			spec.delim = quotedArg(o)
		case "NULL":
			spec.null = quotedArg(o)
		case "QUOTE":
			if q := quotedArg(o); len(q) == 1 {
				spec.quote = q[0]
			}
		}
	}
	if spec.csv {
		if spec.delim == "\t" && !strings.Contains(strings.ToUpper(opts), "DELIMITER") {
			spec.delim = ","
		}
		if spec.null == `\N` && !strings.Contains(strings.ToUpper(opts), "NULL") {
			spec.null = ""
		}
	}
	if len(spec.delim) != 1 {
		return copySpec{}, false, newError(codeFeatureUnsupported, "COPY delimiter must be a single one-byte character")
	}
	return spec, true, nil
}

// quotedArg is the 'value' of an option, with ” unescaped.
func quotedArg(o string) string {
	i, j := strings.IndexByte(o, '\''), strings.LastIndexByte(o, '\'')
	if i < 0 || j <= i {
		return ""
	}
	return strings.ReplaceAll(o[i+1:j], "''", "'")
}

// copy answers a COPY statement: TO STDOUT here, anything else by DuckDB.
func (c *conn) copy(p *plan) *pgError {
	spec, ok, e := parseCopy(p.client)
	if e != nil {
		return e
	}
	if !ok {
		pt := &portal{plan: *p}
		defer pt.close()
		if e := pt.start(c.ctx, c); e != nil {
			return e
		}
		return pt.stream(c, 0)
	}
	sub := planFor(spec.query)
	if sub.sql == "" {
		return newError(codeSyntax, "COPY query is empty")
	}
	sub.kind = kindRows
	pt := &portal{plan: sub}
	defer pt.close()
	if e := pt.start(c.ctx, c); e != nil {
		if e.position > 0 && spec.offset >= 0 && !sub.rewritten {
			e.position += spec.offset
		} else {
			e.position = 0
		}
		return e
	}
	formats := make([]uint16, len(pt.cols))
	c.out.send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: formats})
	var line []byte
	send := func() {
		line = append(line, '\n')
		c.out.send(&pgproto3.CopyData{Data: line})
		line = line[:0]
	}
	if spec.header {
		for i, col := range pt.cols {
			if i > 0 {
				line = append(line, spec.delim...)
			}
			line = spec.appendField(line, []byte(col.name), false)
		}
		send()
	}
	stop := c.run(pt.cancel)
	defer stop()
	var n int64
	var val []byte
	for pt.rows.Next() {
		if err := pt.rows.Scan(pt.ptrs...); err != nil {
			return pt.error(err)
		}
		for i, col := range pt.cols {
			if i > 0 {
				line = append(line, spec.delim...)
			}
			v := pt.vals[i]
			if v == nil {
				line = append(line, spec.null...)
				continue
			}
			var err error
			if val, err = appendText(val[:0], col.typ.oid, col.shape, v); err != nil {
				return toPGError(err, "")
			}
			line = spec.appendField(line, val, true)
		}
		send()
		n++
		if c.out.err != nil {
			return pt.error(c.out.err)
		}
	}
	if err := pt.rows.Err(); err != nil {
		return pt.error(err)
	}
	c.out.send(&pgproto3.CopyDone{})
	c.out.send(&pgproto3.CommandComplete{CommandTag: []byte("COPY " + itoa(n))})
	return nil
}

// appendField appends one value: in CSV quoted when it holds the
// delimiter, the quote, a line break, or equals the NULL string; in text
// format with backslash escapes.
func (s *copySpec) appendField(dst, v []byte, value bool) []byte {
	if s.csv {
		need := len(v) == 0 && value && s.null == "" || string(v) == s.null && value
		for _, b := range v {
			if b == s.delim[0] || b == s.quote || b == '\n' || b == '\r' {
				need = true
				break
			}
		}
		if !need {
			return append(dst, v...)
		}
		dst = append(dst, s.quote)
		for _, b := range v {
			if b == s.quote {
				dst = append(dst, s.quote)
			}
			dst = append(dst, b)
		}
		return append(dst, s.quote)
	}
	for _, b := range v {
		switch b {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if b == s.delim[0] {
				dst = append(dst, '\\')
			}
			dst = append(dst, b)
		}
	}
	return dst
}
