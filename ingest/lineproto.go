package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Kind is a field value's type; it decides the column type a new table gets
// for the field and which columns the field may be written to.
type Kind uint8

// The field kinds. Uint values are kept in Field.I like ints (tickdb has no
// unsigned column), but the kind is kept apart so that a line formatted
// again says 123u where the client said 123u.
const (
	KindFloat Kind = iota + 1 // 1.5, 100, -1.5e-7, NaN, Infinity (no suffix): f64 column
	KindInt                   // 123i: i64 column
	KindUint                  // 123u, which must fit in int64: i64 column
	KindBool                  // t T true True TRUE f F false False FALSE: bool column
)

// String returns the line-protocol name of the kind, as used in messages.
func (k Kind) String() string {
	switch k {
	case KindFloat:
		return "float"
	case KindInt:
		return "integer"
	case KindUint:
		return "unsigned"
	case KindBool:
		return "boolean"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Tag is one tag of a line: it becomes a sym column.
type Tag struct{ Key, Value []byte }

// Field is one field of a line. Only the member that Kind names is set.
type Field struct {
	Key  []byte
	Kind Kind
	F    float64 // KindFloat
	I    int64   // KindInt and KindUint
	B    bool    // KindBool
}

// Line is one parsed line. Its byte slices point into the input line or into
// the Parser's scratch buffer and stay valid until the next Parse call on the
// same Parser (or until the caller changes the input), so a caller that
// keeps a Line past that copies it first. Parse reuses the capacity of Tags
// and Fields, which is what makes a Line reusable without allocation.
type Line struct {
	Measurement []byte
	Tags        []Tag
	Fields      []Field
	Ts          int64 // nanoseconds since the epoch (already multiplied by the Parser's precision), valid when HasTs
	HasTs       bool
}

// Reason is a bounded category of rejection. It is a metrics label, so the
// set stays small and fixed; the details go into LineError.Msg.
type Reason uint8

// The rejection reasons. The parser emits Syntax through Duplicate; the
// listener and the table layer emit the others.
const (
	ReasonSyntax        Reason = iota + 1 // malformed line: missing '=', empty name, stray text
	ReasonEscape                          // a backslash at the very end of the line, escaping nothing
	ReasonString                          // a quoted string field: tickdb has no string columns
	ReasonNumber                          // a malformed or out-of-range number
	ReasonValue                           // a field value that is no number, boolean or string
	ReasonTimestamp                       // a malformed or out-of-range timestamp
	ReasonDuplicate                       // a tag or field key given twice in one line
	ReasonTooLong                         // a line longer than the listener's limit
	ReasonName                            // a table or column name the store cannot take
	ReasonUnknownColumn                   // a tag or field the table does not have
	ReasonType                            // a field whose kind does not match its column
	ReasonOutOfOrder                      // a timestamp before the table's last row
	ReasonTableFull                       // the table cannot take more rows or columns
	numReasons                            // one past the last reason: sizes per-reason arrays
)

// String returns the reason as a snake_case metrics label.
func (r Reason) String() string {
	switch r {
	case ReasonSyntax:
		return "syntax"
	case ReasonEscape:
		return "escape"
	case ReasonString:
		return "string_field"
	case ReasonNumber:
		return "number"
	case ReasonValue:
		return "value"
	case ReasonTimestamp:
		return "timestamp"
	case ReasonDuplicate:
		return "duplicate"
	case ReasonTooLong:
		return "too_long"
	case ReasonName:
		return "name"
	case ReasonUnknownColumn:
		return "unknown_column"
	case ReasonType:
		return "type_mismatch"
	case ReasonOutOfOrder:
		return "out_of_order"
	case ReasonTableFull:
		return "table_full"
	}
	return "unknown"
}

// LineError is a rejected line: what (Reason, Msg) and where. Line is the
// 1-based line number, which Parse leaves 0 for the caller that counts lines
// to set; Col is the 1-based byte offset within the line where the problem
// is (0 when it is about the line as a whole). errors.Is(err, ErrBadLine)
// holds for every *LineError.
type LineError struct {
	Line   int
	Col    int
	Reason Reason
	Msg    string
}

// Error returns "line 3, byte 17: <msg>", leaving out the parts that are 0.
func (e *LineError) Error() string {
	s := ""
	if e.Line > 0 {
		s = "line " + strconv.Itoa(e.Line) + ", "
	}
	if e.Col > 0 {
		s += "byte " + strconv.Itoa(e.Col) + ", "
	}
	if s == "" {
		return e.Msg
	}
	return s[:len(s)-2] + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrBadLine) hold.
func (e *LineError) Unwrap() error { return ErrBadLine }

// ParsePrecision maps the HTTP precision parameter to a multiplier from the
// line's timestamp unit to nanoseconds. The empty string means nanoseconds,
// as in InfluxDB.
func ParsePrecision(s string) (int64, error) {
	switch s {
	case "", "n", "ns":
		return 1, nil
	case "u", "us":
		return 1_000, nil
	case "ms":
		return 1_000_000, nil
	case "s":
		return 1_000_000_000, nil
	}
	return 0, fmt.Errorf("ingest: precision %q: want one of n, ns, u, us, ms, s", s)
}

// Parser parses line-protocol lines, one at a time. A Parser is not safe for
// concurrent use: give each connection or goroutine its own. The zero value
// is ready to use.
type Parser struct {
	// Precision multiplies every timestamp to give nanoseconds (see
	// ParsePrecision); 0 (or less) means 1.
	Precision int64

	// scratch holds unescaped names and symbols. Parse sizes it to the line
	// before it appends anything, so appends never move it and the slices
	// handed out earlier in the same line stay valid.
	scratch []byte
	// keyCols holds the Col of every key of the current line (tags, then
	// fields), so that the duplicate check can say where the second one is.
	keyCols []int32
	// order is the duplicate check's sort buffer for wide lines.
	order []int32
}

// Byte classes for the scanners below. One table lookup per byte decides
// whether the byte can end the current token, which keeps the hot loops
// free of multi-way comparisons.
const (
	stopMeas  = 1 << iota // ends a measurement or needs a look: , space \ CR LF
	stopKey               // ends a tag key, tag value or field key: the above and =
	stopValue             // ends an unquoted field value: , space CR LF
	escapable             // may follow a backslash as an escape: , space = \ CR LF
)

var class = [256]uint8{
	',':  stopMeas | stopKey | stopValue | escapable,
	' ':  stopMeas | stopKey | stopValue | escapable,
	'=':  stopKey | escapable,
	'\\': stopMeas | stopKey | escapable,
	'\r': stopMeas | stopKey | stopValue | escapable,
	'\n': stopMeas | stopKey | stopValue | escapable,
}

// Parse parses one line (without its '\n'; a trailing '\r' is dropped). A
// blank line, a line of only spaces and tabs, or a comment line (first
// non-blank byte '#') gives ok=false and no error. A good line fills *l,
// reusing its Tags and Fields, and gives ok=true. A bad line gives a
// *LineError with Col set and Line left 0, and leaves *l unspecified.
//
// Escapes: in the measurement, tag keys, tag values and field keys a
// backslash before ',', ' ', '=', '\\', CR or LF stands for that byte; a
// backslash before any other byte is kept, both bytes. This reads the
// output of both InfluxDB's encoder (which never escapes a backslash) and
// the QuestDB clients (which always do); see lineproto_format.go.
func (p *Parser) Parse(line []byte, l *Line) (ok bool, err error) {
	n := len(line)
	if n > 0 && line[n-1] == '\r' && !escapedAt(line, n-1) {
		n--
		line = line[:n]
	}
	i := 0
	for i < n && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i == n || line[i] == '#' {
		return false, nil
	}
	if cap(p.scratch) < n {
		p.scratch = make([]byte, 0, max(n, 2*cap(p.scratch), 256))
	}
	p.scratch = p.scratch[:0]
	p.keyCols = p.keyCols[:0]
	l.Measurement = nil
	l.Tags = l.Tags[:0]
	l.Fields = l.Fields[:0]
	l.Ts, l.HasTs = 0, false

	// Measurement: up to an unescaped ',' (tags follow) or ' ' (fields).
	start := i
	end, esc := scanName(line, i, stopMeas)
	if err := nameEnd(line, end); err != nil {
		return false, err
	}
	if end == start {
		return false, badAt(start, ReasonSyntax, "empty measurement (table name)")
	}
	l.Measurement = p.token(line[start:end], esc)
	i = end

	// Tags.
	for i < n && line[i] == ',' {
		i++
		ks := i
		ke, kesc := scanName(line, i, stopKey)
		if err := nameEnd(line, ke); err != nil {
			return false, err
		}
		if ke == ks {
			return false, badAt(ks, ReasonSyntax, "empty tag key after ','")
		}
		if ke == n || line[ke] != '=' {
			return false, badAt(ke, ReasonSyntax, fmt.Sprintf("tag key %s has no '=' and value", snippet(line[ks:ke])))
		}
		vs := ke + 1
		ve, vesc := scanName(line, vs, stopKey)
		if err := nameEnd(line, ve); err != nil {
			return false, err
		}
		if ve < n && line[ve] == '=' {
			return false, badAt(ve, ReasonSyntax, fmt.Sprintf("unescaped '=' in the value of tag %s (write it as \\=)", snippet(line[ks:ke])))
		}
		if ve == vs {
			return false, badAt(vs, ReasonSyntax, fmt.Sprintf("tag %s has an empty value", snippet(line[ks:ke])))
		}
		p.keyCols = append(p.keyCols, int32(ks+1))
		l.Tags = append(l.Tags, Tag{Key: p.token(line[ks:ke], kesc), Value: p.token(line[vs:ve], vesc)})
		i = ve
	}

	// Fields, after one or more spaces.
	for i < n && line[i] == ' ' {
		i++
	}
	if i == n {
		if len(l.Tags) == 0 {
			return false, badAt(i, ReasonSyntax, "no tags or fields after the measurement")
		}
		return p.done(l)
	}
	for {
		ks := i
		ke, kesc := scanName(line, i, stopKey)
		if err := nameEnd(line, ke); err != nil {
			return false, err
		}
		if ke == ks {
			return false, badAt(ks, ReasonSyntax, "empty field key")
		}
		if ke == n || line[ke] != '=' {
			if len(l.Fields) == 0 && len(l.Tags) > 0 && (line[ks] == '-' || line[ks]-'0' <= 9) {
				// A symbol-only row with a timestamp, as the QuestDB
				// clients write it: the one token after the tags is the
				// timestamp, which QuestDB's server reads the same way.
				i = ks
				break
			}
			return false, badAt(ke, ReasonSyntax, fmt.Sprintf("field key %s has no '=' and value", snippet(line[ks:ke])))
		}
		vs := ke + 1
		if vs < n && line[vs] == '"' {
			return false, stringField(line, ks, ke, vs)
		}
		ve := vs
		for ve < n && class[line[ve]]&stopValue == 0 {
			ve++
		}
		if ve < n && (line[ve] == '\r' || line[ve] == '\n') {
			return false, badAt(ve, ReasonSyntax, "line break inside a line")
		}
		if ve == vs {
			return false, badAt(vs, ReasonSyntax, fmt.Sprintf("field %s has an empty value", snippet(line[ks:ke])))
		}
		f := Field{Key: p.token(line[ks:ke], kesc)}
		if r, msg := parseValue(line[vs:ve], &f); r != 0 {
			return false, badAt(vs, r, fmt.Sprintf("field %s: %s", snippet(line[ks:ke]), msg))
		}
		p.keyCols = append(p.keyCols, int32(ks+1))
		l.Fields = append(l.Fields, f)
		i = ve
		if i == n {
			return p.done(l)
		}
		if line[i] != ',' {
			break
		}
		i++
	}

	// Timestamp, optional, after one or more spaces; then only spaces.
	for i < n && line[i] == ' ' {
		i++
	}
	if i == n {
		return p.done(l)
	}
	ts := i
	for i < n && line[i] != ' ' {
		i++
	}
	if r, msg := p.parseTs(line[ts:i], l); r != 0 {
		return false, badAt(ts, r, msg)
	}
	for i < n && line[i] == ' ' {
		i++
	}
	if i < n {
		return false, badAt(i, ReasonSyntax, fmt.Sprintf("unexpected text %s after the timestamp", snippet(line[i:])))
	}
	return p.done(l)
}

// scanName returns the end of the name or tag value that starts at i: the
// index of the first unescaped byte whose class is in stop, or len(line).
// A backslash that ends the line is returned as the end, for nameEnd to
// report. esc says whether the token holds an escape to undo.
func scanName(line []byte, i int, stop uint8) (end int, esc bool) {
	for i < len(line) {
		c := line[i]
		if class[c]&stop == 0 {
			i++
			continue
		}
		if c != '\\' || i+1 == len(line) {
			return i, esc
		}
		if class[line[i+1]]&escapable != 0 {
			esc = true
			i += 2
		} else {
			i++
		}
	}
	return i, esc
}

// nameEnd reports the bad line that a name ending at end means: a
// backslash with nothing to escape, or a raw line break.
func nameEnd(line []byte, end int) error {
	if end == len(line) {
		return nil
	}
	switch line[end] {
	case '\\':
		return badAt(end, ReasonEscape, "backslash at the end of the line escapes nothing")
	case '\r', '\n':
		return badAt(end, ReasonSyntax, "line break inside a line (escape it as a backslash followed by the break)")
	}
	return nil
}

// escapedAt reports whether line[i] is preceded by an odd run of
// backslashes, that is whether it is escaped in a name or tag value. Parse
// asks this of a trailing CR, which a QuestDB client escapes when a symbol
// ends with one.
func escapedAt(line []byte, i int) bool {
	j := i
	for j > 0 && line[j-1] == '\\' {
		j--
	}
	return (i-j)%2 == 1
}

// token returns b, unescaped into the scratch buffer when esc says it holds
// an escape. It is small enough to inline, so a plain token costs nothing.
func (p *Parser) token(b []byte, esc bool) []byte {
	if !esc {
		return b
	}
	return p.unescape(b)
}

// unescape copies b into the scratch buffer without its escapes. The result
// is capped so that a caller's append cannot run into the next token.
func (p *Parser) unescape(b []byte) []byte {
	start := len(p.scratch)
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\\' && i+1 < len(b) && class[b[i+1]]&escapable != 0 {
			i++
			c = b[i]
		}
		p.scratch = append(p.scratch, c)
	}
	return p.scratch[start:len(p.scratch):len(p.scratch)]
}

// stringField builds the rejection of a quoted string value that starts at
// vs. It finds the closing quote (skipping \" and \\) so that the message
// and column are about the whole value even when it holds spaces, commas
// or '=' that would otherwise read as separators.
func stringField(line []byte, ks, ke, vs int) error {
	key := snippet(line[ks:ke])
	j := vs + 1
	for j < len(line) && line[j] != '"' {
		if line[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(line) {
		return badAt(vs, ReasonString, fmt.Sprintf("field %s is a string with no closing quote; "+
			"tickdb stores no string columns: send the value as a tag instead (tags become sym columns)", key))
	}
	return badAt(vs, ReasonString, fmt.Sprintf("field %s is a string (%s); tickdb stores no string columns: "+
		"send the value as a tag instead (tags become sym columns)", key, snippet(line[vs:j+1])))
}

// parseValue parses an unquoted field value into f, or returns why it
// cannot: a reason and a message. The first byte picks the kind, so a
// number (the common case) costs no word comparisons.
func parseValue(v []byte, f *Field) (Reason, string) {
	switch v[0] {
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '.':
	case '+', '-':
		if len(v) > 1 && v[1]|0x20 == 'i' {
			return special(v, f)
		}
	case 't', 'T', 'f', 'F':
		switch string(v) {
		case "t", "T", "true", "True", "TRUE":
			f.Kind, f.B = KindBool, true
			return 0, ""
		case "f", "F", "false", "False", "FALSE":
			f.Kind, f.B = KindBool, false
			return 0, ""
		}
		return notAValue(v)
	default:
		return special(v, f)
	}
	switch v[len(v)-1] {
	case 'i':
		x, r := parseInt(v[:len(v)-1])
		switch r {
		case intSyntax:
			return ReasonNumber, fmt.Sprintf("malformed integer %s", snippet(v))
		case intRange:
			return ReasonNumber, fmt.Sprintf("integer %s overflows i64", snippet(v))
		}
		f.Kind, f.I = KindInt, x
		return 0, ""
	case 'u':
		if v[0] == '-' {
			return ReasonNumber, fmt.Sprintf("unsigned integer %s is negative", snippet(v))
		}
		x, r := parseInt(v[:len(v)-1])
		switch r {
		case intSyntax:
			return ReasonNumber, fmt.Sprintf("malformed unsigned integer %s", snippet(v))
		case intRange:
			return ReasonNumber, fmt.Sprintf("unsigned integer %s overflows i64", snippet(v))
		}
		f.Kind, f.I = KindUint, x
		return 0, ""
	}
	x, r := parseFloat(v)
	switch r {
	case intSyntax:
		return ReasonNumber, fmt.Sprintf("malformed number %s", snippet(v))
	case intRange:
		return ReasonNumber, fmt.Sprintf("number %s overflows f64", snippet(v))
	}
	f.Kind, f.F = KindFloat, x
	return 0, ""
}

// special parses the non-finite float spellings, or rejects v as no value.
func special(v []byte, f *Field) (Reason, string) {
	if x, ok := parseSpecialFloat(v); ok {
		f.Kind, f.F = KindFloat, x
		return 0, ""
	}
	return notAValue(v)
}

func notAValue(v []byte) (Reason, string) {
	return ReasonValue, fmt.Sprintf("value %s is not a number (1.5, 2i, 3u), a boolean (t, f, true, false) or a quoted string", snippet(v))
}

// parseSpecialFloat accepts the non-finite spellings that QuestDB's server
// and clients use (NaN, Infinity, -Infinity), in any case, and the shorter
// inf. InfluxDB rejects non-finite floats, so no InfluxDB client sends them.
func parseSpecialFloat(v []byte) (float64, bool) {
	if len(v) < 3 {
		return 0, false
	}
	sign := 1
	w := v
	switch w[0] {
	case '-':
		sign = -1
		w = w[1:]
	case '+':
		w = w[1:]
	case 'n', 'N':
		if len(w) == 3 && (w[1]|0x20) == 'a' && (w[2]|0x20) == 'n' {
			return math.NaN(), true
		}
		return 0, false
	}
	if asciiEqualFold(w, "inf") || asciiEqualFold(w, "infinity") {
		return math.Inf(sign), true
	}
	return 0, false
}

// asciiEqualFold reports whether b equals the lower-case ASCII word s,
// ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}

// Number parse results.
const (
	intOK = iota
	intSyntax
	intRange
)

// parseInt parses [+-]digits into an int64 by hand: strconv would need a
// string, and up to 19 digits (every int64, and a nanosecond timestamp)
// cannot wrap a uint64, so one range check at the end is enough.
func parseInt(b []byte) (int64, int) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, intSyntax
	}
	var u uint64
	if len(b) <= 19 {
		var ok bool
		if u, ok = parseDigits(b); !ok {
			return 0, intSyntax
		}
	} else {
		over := false
		for _, c := range b {
			d := c - '0'
			if d > 9 {
				return 0, intSyntax
			}
			if u > (1<<63)/10 {
				over = true // keep going: a syntax error after the digits wins
				continue
			}
			u = u*10 + uint64(d)
		}
		if over {
			return 0, intRange
		}
	}
	switch {
	case neg && u > 1<<63, !neg && u > math.MaxInt64:
		return 0, intRange
	case neg:
		return int64(-u), intOK // -(1<<63) wraps to MinInt64, as wanted
	}
	return int64(u), intOK
}

// parseDigits parses up to 19 decimal digits. It takes eight at a time as
// one little-endian word (SWAR): a nanosecond timestamp is 19 digits, and
// a digit-at-a-time loop is a 19-step chain of dependent multiply-adds.
func parseDigits(b []byte) (uint64, bool) {
	var u uint64
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// Every byte is '0'..'9' exactly when its high nibble is 3 and
		// adding 6 leaves the high nibble alone.
		if (x&0xF0F0F0F0F0F0F0F0)|((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 != 0x3333333333333333 {
			return 0, false
		}
		x -= 0x3030303030303030
		x = x*10 + x>>8                                 // pairs: byte 2k holds digits 2k,2k+1
		x = ((x&0x000000FF000000FF)*(100+1000000<<32) + // 4-digit groups, then
			(x>>16&0x000000FF000000FF)*(1+10000<<32)) >> 32 // the two groups into 8 digits
		u = u*100_000_000 + x
		b = b[8:]
	}
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		u = u*10 + uint64(d)
	}
	return u, true
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat parses a decimal float, [+-](digits[.[digits]]|.digits)
// [(e|E)[+-]digits], the spelling every InfluxDB and QuestDB client uses.
//
// It checks the syntax itself, so that strconv's extras (hex floats,
// underscores) stay out, and then takes the exact fast path when the
// mantissa fits in 53 bits and the power of ten in 22: both are then exact
// float64 values and one IEEE multiplication or division rounds correctly.
// Everything else goes to strconv.ParseFloat, whose string(b) argument does
// not escape and so costs no allocation.
func parseFloat(b []byte) (float64, int) {
	i, neg := 0, false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		i = 1
	}
	var mant uint64
	exp, nd, digits := 0, 0, 0 // nd counts significant digits kept in mant
	slow := false
	for ; i < len(b) && b[i]-'0' <= 9; i++ {
		digits++
		if nd < 19 {
			mant = mant*10 + uint64(b[i]-'0')
			if mant != 0 {
				nd++
			}
		} else {
			slow = true
		}
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i]-'0' <= 9; i++ {
			digits++
			if nd < 19 {
				mant = mant*10 + uint64(b[i]-'0')
				exp--
				if mant != 0 {
					nd++
				}
			} else {
				slow = true
			}
		}
	}
	if digits == 0 {
		return 0, intSyntax
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i == len(b) {
			return 0, intSyntax
		}
		e := 0
		for ; i < len(b) && b[i]-'0' <= 9; i++ {
			if e < 100_000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(b) {
		return 0, intSyntax
	}
	if !slow && mant <= 1<<53 && exp >= -22 && exp <= 22 {
		f := float64(mant)
		if exp < 0 {
			f /= pow10[-exp]
		} else {
			f *= pow10[exp]
		}
		if neg {
			f = -f
		}
		return f, intOK
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, intRange
		}
		return 0, intSyntax
	}
	return f, intOK
}

// parseTs parses the timestamp token and scales it to nanoseconds.
func (p *Parser) parseTs(b []byte, l *Line) (Reason, string) {
	if b[0] == '+' {
		return ReasonTimestamp, fmt.Sprintf("malformed timestamp %s (want an integer)", snippet(b))
	}
	ts, r := parseInt(b)
	switch r {
	case intSyntax:
		return ReasonTimestamp, fmt.Sprintf("malformed timestamp %s (want an integer)", snippet(b))
	case intRange:
		return ReasonTimestamp, fmt.Sprintf("timestamp %s overflows i64", snippet(b))
	}
	if m := p.Precision; m > 1 {
		scaled := ts * m
		if scaled/m != ts {
			return ReasonTimestamp, fmt.Sprintf("timestamp %s times precision %d overflows i64 nanoseconds", snippet(b), m)
		}
		ts = scaled
	}
	l.Ts, l.HasTs = ts, true
	return 0, ""
}

// done ends a good line: it is good unless it repeats a key.
func (p *Parser) done(l *Line) (bool, error) {
	if err := p.checkDuplicates(l); err != nil {
		return false, err
	}
	return true, nil
}

// dupQuadratic is the key count up to which checkDuplicates compares every
// pair: for the few keys of a typical tick line that is faster than
// sorting, and sorting keeps a hostile wide line from costing n² compares.
const dupQuadratic = 24

// checkDuplicates rejects a line that names a key twice, among tags and
// fields together: both become columns of the same table.
func (p *Parser) checkDuplicates(l *Line) error {
	tags, fields := l.Tags, l.Fields
	nt := len(tags)
	n := nt + len(fields)
	second := -1 // the earliest key that repeats an earlier one
	if n <= dupQuadratic {
		second = firstRepeat(tags, fields)
	} else {
		second = p.firstRepeatSorted(tags, fields)
	}
	if second < 0 {
		return nil
	}
	what, key := "tag", []byte(nil)
	if second < nt {
		key = tags[second].Key
	} else {
		what, key = "field", fields[second-nt].Key
	}
	return &LineError{Col: int(p.keyCols[second]), Reason: ReasonDuplicate,
		Msg: fmt.Sprintf("%s key %s repeats an earlier tag or field key of the line", what, snippet(key))}
}

// firstRepeat returns the index (tags first, then fields) of the first key
// equal to an earlier one, or -1, comparing every pair.
func firstRepeat(tags []Tag, fields []Field) int {
	for j := 1; j < len(tags); j++ {
		k := tags[j].Key
		for i := range j {
			if string(tags[i].Key) == string(k) {
				return j
			}
		}
	}
	for j := range fields {
		k := fields[j].Key
		for i := range tags {
			if string(tags[i].Key) == string(k) {
				return len(tags) + j
			}
		}
		for i := range j {
			if string(fields[i].Key) == string(k) {
				return len(tags) + j
			}
		}
	}
	return -1
}

// firstRepeatSorted is firstRepeat for wide lines: it sorts key indexes by
// key, in the Parser's reused buffer, and looks at neighbours.
func (p *Parser) firstRepeatSorted(tags []Tag, fields []Field) int {
	nt := len(tags)
	key := func(i int32) []byte {
		if int(i) < nt {
			return tags[i].Key
		}
		return fields[int(i)-nt].Key
	}
	p.order = p.order[:0]
	for i := range int32(nt + len(fields)) {
		p.order = append(p.order, i)
	}
	slices.SortFunc(p.order, func(a, b int32) int {
		if c := bytes.Compare(key(a), key(b)); c != 0 {
			return c
		}
		return int(a - b)
	})
	second := int32(-1)
	for k := 1; k < len(p.order); k++ {
		if j := p.order[k]; bytes.Equal(key(p.order[k-1]), key(j)) && (second < 0 || j < second) {
			second = j
		}
	}
	return int(second)
}

// badAt builds a *LineError for the byte at index i.
func badAt(i int, r Reason, msg string) *LineError {
	return &LineError{Col: i + 1, Reason: r, Msg: msg}
}

// snippetMax bounds the bytes of input that one message quotes, so that a
// hostile line cannot make its error (and log line) as long as itself.
const snippetMax = 40

// snippet quotes b for a message, cut to snippetMax bytes.
func snippet(b []byte) string {
	if len(b) > snippetMax {
		return strconv.Quote(string(b[:snippetMax])) + "..."
	}
	return strconv.Quote(string(b))
}
