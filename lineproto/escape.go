package lineproto

// Text is what the encoder takes names and values as: a string (query's
// column names and symbols) or a byte slice (a parsed Line's), so
// that neither side converts, which would allocate.
type Text interface{ ~string | ~[]byte }

// The escape tables. nameEsc and strEsc map a byte to the character the
// encoder writes after a backslash for it, 0 for a byte written as it is;
// nameUnesc and strUnesc map the byte after a backslash to the byte the
// pair stands for, 0 when the pair is no escape (the backslash is then
// kept). They are the whole escaping rule, read-only after
// initialization. A NUL is never escaped, so 0 is free as "none".
var (
	nameEsc = [256]byte{
		',': ',', ' ': ' ', '=': '=', '\\': '\\', '\n': 'n', '\r': 'r',
	}
	strEsc = [256]byte{
		'"': '"', '\\': '\\', '\n': 'n', '\r': 'r',
	}
	nameUnesc = [256]byte{
		',': ',', ' ': ' ', '=': '=', '\\': '\\', 'n': '\n', 'r': '\r',
		'\n': '\n', '\r': '\r', // a QuestDB client's escaped raw break
	}
	strUnesc = [256]byte{
		'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t',
		'\n': '\n', '\r': '\r', // a QuestDB client's escaped raw break
	}
)

// AppendName appends s as a measurement, a tag key, a tag value or a
// field key: a backslash before ',', ' ', '=' and '\', and LF and CR
// written as \n and \r. It allocates nothing when dst has room.
func AppendName[T Text](dst []byte, s T) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		if e := nameEsc[s[i]]; e != 0 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', e)
			start = i + 1
		}
	}
	return append(dst, s[start:]...)
}

// AppendQuoted appends s as a string field value: in double quotes, with
// a backslash before '"' and '\', and LF and CR written as \n and \r.
func AppendQuoted[T Text](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		if e := strEsc[s[i]]; e != 0 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', e)
			start = i + 1
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// NameEscape reports whether a backslash followed by c is an escape in a
// name, and the byte the pair stands for. When it is not, a reader keeps
// both bytes.
func NameEscape(c byte) (byte, bool) {
	u := nameUnesc[c]
	return u, u != 0
}

// StringEscape is NameEscape for a quoted string value.
func StringEscape(c byte) (byte, bool) {
	u := strUnesc[c]
	return u, u != 0
}

// AppendUnescapedName appends the name s, as it stands in a line, with
// its escapes undone (see NameEscape). A backslash that ends s is kept.
func AppendUnescapedName(dst, s []byte) []byte { return unescape(dst, s, &nameUnesc) }

// AppendUnescapedString appends the inside of a quoted string value s
// (without its quotes) with its escapes undone (see StringEscape).
func AppendUnescapedString(dst, s []byte) []byte { return unescape(dst, s, &strUnesc) }

func unescape(dst, s []byte, table *[256]byte) []byte {
	start := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if u := table[s[i+1]]; u != 0 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, u)
			i++
			start = i + 1
		}
	}
	return append(dst, s[start:]...)
}
