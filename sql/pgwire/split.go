package pgwire

import (
	"strings"
	"unicode/utf8"
)

// A Query message may hold several statements separated by semicolons,
// and Postgres answers each in turn. DuckDB's own splitting happens inside
// the driver, which returns the last statement's rows only, so the server
// splits the text itself, with the lexical rules both dialects share:
// 'strings' (with '' inside, and backslash escapes in E'...'), "quoted
// identifiers", $tag$dollar quotes$tag$, -- line comments and nested
// /* block comments */. $1 is a parameter, never a dollar quote.

// sqlPiece is one statement of a query string.
type sqlPiece struct {
	text   string // the statement, without its semicolon
	offset int    // characters (not bytes) before it in the query string
}

// splitStatements cuts query at the semicolons outside quotes and
// comments. Pieces with nothing but blanks and comments are dropped, so an
// empty result means an empty query.
func splitStatements(query string) []sqlPiece {
	var out []sqlPiece
	start := 0
	sc := scanner{src: query}
	for {
		tok := sc.next()
		if tok == tokEOF || tok == tokSemicolon {
			end := sc.pos
			if tok == tokSemicolon {
				end--
			}
			if text := query[start:end]; !blankSQL(text) {
				out = append(out, sqlPiece{text: text, offset: utf8.RuneCountInString(query[:start])})
			}
			if tok == tokEOF {
				return out
			}
			start = sc.pos
		}
	}
}

// blankSQL says whether s holds only white space and comments.
func blankSQL(s string) bool {
	sc := scanner{src: s}
	return sc.next() == tokEOF
}

// maxParam is the highest $n in s, outside quotes and comments.
func maxParam(s string) int {
	sc := scanner{src: s}
	n := 0
	for {
		switch sc.next() {
		case tokEOF:
			return n
		case tokParam:
			if sc.param > n {
				n = sc.param
			}
		}
	}
}

// keywords returns up to n leading words of s, upper-cased, skipping
// comments and white space; an opening parenthesis counts as a word.
func keywords(s string, n int) []string {
	sc := scanner{src: s}
	var out []string
	for len(out) < n {
		tok := sc.next()
		switch tok {
		case tokWord:
			out = append(out, strings.ToUpper(s[sc.start:sc.pos]))
		case tokOther:
			out = append(out, s[sc.start:sc.pos])
		default:
			return out
		}
	}
	return out
}

// hasWord says whether the bare word w (upper case) appears in s outside
// quotes and comments, e.g. RETURNING.
func hasWord(s, w string) bool {
	sc := scanner{src: s}
	for {
		switch sc.next() {
		case tokEOF:
			return false
		case tokWord:
			if strings.EqualFold(s[sc.start:sc.pos], w) {
				return true
			}
		}
	}
}

type token int

const (
	tokEOF token = iota
	tokSemicolon
	tokWord   // identifier or keyword
	tokQuoted // a string, quoted identifier or dollar-quoted string
	tokParam  // $n
	tokOther  // any other character
)

// scanner walks SQL text token by token. An unterminated quote or
// comment runs to the end of the text, as it does for the server that
// will reject it.
type scanner struct {
	src        string
	pos, start int
	param      int // the number of the last tokParam
}

func (s *scanner) next() token {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		s.start = s.pos
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			s.pos++
		case c == '-' && strings.HasPrefix(s.src[s.pos:], "--"):
			if i := strings.IndexByte(s.src[s.pos:], '\n'); i >= 0 {
				s.pos += i + 1
			} else {
				s.pos = len(s.src)
			}
		case c == '/' && strings.HasPrefix(s.src[s.pos:], "/*"):
			s.skipBlockComment()
		case c == ';':
			s.pos++
			return tokSemicolon
		case c == '\'':
			s.skipQuoted('\'', false)
			return tokQuoted
		case c == '"':
			s.skipQuoted('"', false)
			return tokQuoted
		case (c == 'E' || c == 'e') && s.pos+1 < len(s.src) && s.src[s.pos+1] == '\'':
			s.pos++
			s.skipQuoted('\'', true)
			return tokQuoted
		case c == '$':
			return s.dollar()
		case isWordByte(c):
			for s.pos < len(s.src) && (isWordByte(s.src[s.pos]) || s.src[s.pos] == '$' || isDigit(s.src[s.pos])) {
				s.pos++
			}
			return tokWord
		default:
			_, size := utf8.DecodeRuneInString(s.src[s.pos:])
			s.pos += size
			return tokOther
		}
	}
	s.start = s.pos
	return tokEOF
}

func (s *scanner) skipBlockComment() {
	depth := 0
	for s.pos < len(s.src) {
		switch {
		case strings.HasPrefix(s.src[s.pos:], "/*"):
			depth++
			s.pos += 2
		case strings.HasPrefix(s.src[s.pos:], "*/"):
			depth--
			s.pos += 2
			if depth == 0 {
				return
			}
		default:
			s.pos++
		}
	}
}

// skipQuoted skips a quoted token from its opening quote; a doubled quote
// stands for one, and in E'...' a backslash escapes the next byte.
func (s *scanner) skipQuoted(q byte, backslash bool) {
	s.pos++
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case backslash && c == '\\':
			s.pos += 2
		case c == q:
			if s.pos+1 < len(s.src) && s.src[s.pos+1] == q {
				s.pos += 2
				continue
			}
			s.pos++
			return
		default:
			s.pos++
		}
	}
	s.pos = len(s.src)
}

// dollar reads $n (a parameter), or $tag$...$tag$ (a string).
func (s *scanner) dollar() token {
	i := s.pos + 1
	if i < len(s.src) && isDigit(s.src[i]) {
		n := 0
		for i < len(s.src) && isDigit(s.src[i]) {
			if n < 1<<20 {
				n = n*10 + int(s.src[i]-'0')
			}
			i++
		}
		s.pos, s.param = i, n
		return tokParam
	}
	for i < len(s.src) && (isWordByte(s.src[i]) || isDigit(s.src[i])) {
		i++
	}
	if i >= len(s.src) || s.src[i] != '$' {
		s.pos++
		return tokOther
	}
	tag := s.src[s.pos : i+1]
	if end := strings.Index(s.src[i+1:], tag); end >= 0 {
		s.pos = i + 1 + end + len(tag)
	} else {
		s.pos = len(s.src)
	}
	return tokQuoted
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
