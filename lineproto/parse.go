package lineproto

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
)

// Parser parses line-protocol lines, one at a time. A Parser is not safe for
// concurrent use: give each connection or goroutine its own. The zero value
// is ready to use.
type Parser struct {
	// Precision multiplies every timestamp to give nanoseconds: 1_000
	// for timestamps in microseconds, 1_000_000_000 for seconds; 0 (or
	// less) means 1.
	Precision int64

	// scratch holds unescaped names and symbols. Parse sizes it to the line
	// before it appends anything, so appends never move it and the slices
	// handed out earlier in the same line stay valid.
	scratch []byte
	// seen is a one-word Bloom filter of the current line's keys, and
	// maybeDup says whether a key hit a bit that was already set: only then
	// does the exact duplicate check run. The tag and field loops keep them
	// in locals and store them here when they finish.
	seen     uint64
	maybeDup bool
	// order is the duplicate check's sort buffer for wide lines.
	order []int32
}

// Byte classes for the scanners below. One table lookup per byte decides
// whether the byte can end the current token, which keeps the hot loops
// free of multi-way comparisons. Which bytes a backslash escapes is the
// package's one rule (NameEscape, escape.go), shared with the encoder.
const (
	stopMeas  = 1 << iota // ends a measurement or needs a look: , space \ CR LF
	stopKey               // ends a tag key, tag value or field key: the above and =
	stopValue             // ends an unquoted field value: , space CR LF
)

var class = [256]uint8{
	',':  stopMeas | stopKey | stopValue,
	' ':  stopMeas | stopKey | stopValue,
	'=':  stopKey,
	'\\': stopMeas | stopKey,
	'\r': stopMeas | stopKey | stopValue,
	'\n': stopMeas | stopKey | stopValue,
}

// Parse parses one line (without its '\n'; a trailing '\r' is dropped
// unless a backslash escapes it). A blank line, a line of only spaces and tabs, or a comment line (first
// non-blank byte '#') gives ok=false and no error. A good line fills *l,
// reusing its Tags and Fields, and gives ok=true. A bad line gives a
// *LineError with Col set and Line left 0, and leaves *l unspecified but
// for l.Measurement: the line's measurement when it parsed before the
// fault (so that a rejection can name its table), else nil.
//
// A line needs at least one field: a line of a measurement and tags
// alone, with or without a timestamp, is a bad line (ReasonNoField), as
// in InfluxDB.
//
// Escapes (the package's rule, escape.go): in the measurement, tag keys,
// tag values and field keys a backslash before ',', ' ', '=' or '\\'
// stands for that byte, \n and \r for LF and CR (what Encoder
// writes for a line break), and a backslash before a raw CR or LF for the
// break (what the QuestDB clients write); a backslash before any other
// byte is kept, both bytes. This reads the output of both InfluxDB's
// encoder (which never escapes a backslash) and the QuestDB clients (which
// always do); see parse_value.go.
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
	p.seen, p.maybeDup = 0, false
	l.Measurement = nil
	l.Tags = l.Tags[:0]
	l.Fields = l.Fields[:0]
	l.Ts, l.HasTs = 0, false

	// Measurement: up to an unescaped ',' (tags follow) or ' ' (fields).
	start := i
	end, esc := plainEnd(line, i, stopMeas), false
	if end < n && line[end] == '\\' {
		end, esc = scanEscaped(line, end, stopMeas)
	}
	if err := nameEnd(line, end); err != nil {
		return false, err
	}
	if end == start {
		return false, badAt(start, ReasonSyntax, "empty measurement (table name)")
	}
	l.Measurement = line[start:end]
	if esc {
		l.Measurement = p.unescape(l.Measurement)
	}
	if i, err = p.parseTags(line, end, l); err != nil {
		return false, err
	}
	for i < n && line[i] == ' ' {
		i++
	}
	if i == n {
		return false, noField(i, len(l.Tags) > 0)
	}
	if i, err = p.parseFields(line, i, l); err != nil {
		return false, err
	}

	// Timestamp, optional, after one or more spaces; then only spaces.
	for i < n && line[i] == ' ' {
		i++
	}
	if i == n {
		return p.done(line, l)
	}
	ts := i
	if i, err = p.parseTs(line, i, l); err != nil {
		return false, err
	}
	for i < n && line[i] == ' ' {
		i++
	}
	if i < n {
		return false, badAt(i, ReasonSyntax, fmt.Sprintf("unexpected text %s after the timestamp %s", snippet(line[i:]), snippet(line[ts:i])))
	}
	return p.done(line, l)
}

// parseTags parses the ",key=value" pairs that start at line[i] into l and
// returns the index after them. The loops of Parse live in functions of
// their own because one function with all of them spills its indexes to
// the stack inside the byte loops.
func (p *Parser) parseTags(line []byte, i int, l *Line) (int, error) {
	n := len(line)
	var seen uint64
	dup := false
	for i < n && line[i] == ',' {
		i++
		ks := i
		ke, kesc := plainEnd(line, i, stopKey), false
		if ke < n && line[ke] == '\\' {
			ke, kesc = scanEscaped(line, ke, stopKey)
		}
		if err := nameEnd(line, ke); err != nil {
			return 0, err
		}
		if ke == ks {
			return 0, badAt(ks, ReasonSyntax, "empty tag key after ','")
		}
		if ke == n || line[ke] != '=' {
			return 0, badAt(ke, ReasonSyntax, fmt.Sprintf("tag key %s has no '=' and value", snippet(line[ks:ke])))
		}
		vs := ke + 1
		ve, vesc := plainEnd(line, vs, stopKey), false
		if ve < n && line[ve] == '\\' {
			ve, vesc = scanEscaped(line, ve, stopKey)
		}
		if err := nameEnd(line, ve); err != nil {
			return 0, err
		}
		if ve < n && line[ve] == '=' {
			return 0, badAt(ve, ReasonSyntax, fmt.Sprintf("unescaped '=' in the value of tag %s (write it as \\=)", snippet(line[ks:ke])))
		}
		if ve == vs {
			return 0, badAt(vs, ReasonSyntax, fmt.Sprintf("tag %s has an empty value", snippet(line[ks:ke])))
		}
		key, val := line[ks:ke], line[vs:ve]
		if kesc {
			key = p.unescape(key)
		}
		if vesc {
			val = p.unescape(val)
		}
		bit := keyBit(key)
		dup = dup || seen&bit != 0
		seen |= bit
		t := l.AddTag()
		t.Key, t.Value = key, val
		i = ve
	}
	p.seen, p.maybeDup = seen, dup
	return i, nil
}

// parseFields parses the "key=value" pairs that start at line[i] into l
// and returns the index after them: the end of the line or a space.
func (p *Parser) parseFields(line []byte, i int, l *Line) (int, error) {
	n := len(line)
	seen, dup := p.seen, p.maybeDup
	for {
		ks := i
		ke, kesc := plainEnd(line, i, stopKey), false
		if ke < n && line[ke] == '\\' {
			ke, kesc = scanEscaped(line, ke, stopKey)
		}
		if err := nameEnd(line, ke); err != nil {
			return 0, err
		}
		if ke == ks {
			return 0, badAt(ks, ReasonSyntax, "empty field key")
		}
		if ke == n || line[ke] != '=' {
			if len(l.Fields) == 0 && len(l.Tags) > 0 && (line[ks] == '-' || line[ks]-'0' <= 9) {
				// A symbol-only row with its timestamp, as the QuestDB
				// clients write one: still no field.
				return 0, badAt(ks, ReasonNoField, fmt.Sprintf("no field after the tags (%s would be the timestamp): "+
					"a line needs at least one field, such as price=1.5, before its timestamp; tags alone make no row", snippet(line[ks:ke])))
			}
			return 0, badAt(ke, ReasonSyntax, fmt.Sprintf("field key %s has no '=' and value", snippet(line[ks:ke])))
		}
		vs := ke + 1
		key := line[ks:ke]
		if kesc {
			key = p.unescape(key)
		}
		bit := keyBit(key)
		dup = dup || seen&bit != 0
		seen |= bit
		f := l.AddField()
		f.Key, f.Kind, f.F, f.I, f.B, f.S = key, 0, 0, 0, false, nil
		var ve int
		if vs < n && line[vs] == '"' {
			var err error
			if ve, err = p.quoted(line, ks, ke, vs, f); err != nil {
				return 0, err
			}
		} else if ve = quickValue(line, vs, f); ve < 0 {
			ve = vs
			for ve < n && class[line[ve]]&stopValue == 0 {
				ve++
			}
			if ve < n && (line[ve] == '\r' || line[ve] == '\n') {
				return 0, badAt(ve, ReasonSyntax, "line break inside a line")
			}
			if ve == vs {
				return 0, badAt(vs, ReasonSyntax, fmt.Sprintf("field %s has an empty value", snippet(line[ks:ke])))
			}
			if r, msg := parseValue(line[vs:ve], f); r != 0 {
				return 0, badAt(vs, r, fmt.Sprintf("field %s: %s", snippet(line[ks:ke]), msg))
			}
		}
		if ve == n || line[ve] != ',' {
			p.seen, p.maybeDup = seen, dup
			return ve, nil
		}
		i = ve + 1
	}
}

// noField is the rejection of a line that ends (at index i) before its
// first field, with or without tags. The line protocol needs at least one
// field, and InfluxDB rejects such a line: a row of tags alone, stamped
// with the server's clock, would also make every later line of a feed
// with older timestamps a late row.
func noField(i int, tags bool) *LineError {
	if tags {
		return badAt(i, ReasonNoField, "no field after the tags: a line needs at least one field, such as price=1.5; tags alone make no row")
	}
	return badAt(i, ReasonNoField, "no field after the measurement: a line needs at least one field, such as price=1.5, after a space")
}

// plainEnd returns the index of the first byte at or after line[i] whose
// class is in stop (stopMeas or stopKey), or len(line). It is the whole
// scan of a name without a backslash; the rare name with one goes on in
// scanEscaped.
//
// It tests eight bytes at a time (SWAR): most names are a few bytes long,
// and a byte loop pays a mispredicted exit per name, which on a line of a
// dozen names costs more than the bytes themselves. Bytes below 0x21 are
// only candidates (space, CR and LF stop a name; tab and other control
// bytes do not), so a candidate is confirmed through the class table.
func plainEnd(line []byte, i int, stop uint8) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i+8 <= len(line) {
		x := binary.LittleEndian.Uint64(line[i:])
		// Per byte, the high bit marks the first byte < 0x21 or equal to
		// ',' or '\\' (or '=' for keys); bits above the first may be wrong,
		// which TrailingZeros64 does not look at.
		m := (x - 0x21*ones) &^ x
		t := x ^ ','*ones
		m |= (t - ones) &^ t
		t = x ^ '\\'*ones
		m |= (t - ones) &^ t
		if stop == stopKey {
			t = x ^ '='*ones
			m |= (t - ones) &^ t
		}
		if m &= highs; m == 0 {
			i += 8
			continue
		}
		j := i + bits.TrailingZeros64(m)>>3
		if class[line[j]]&stop != 0 {
			return j
		}
		i = j + 1
	}
	for j, c := range line[i:] {
		if class[c]&stop != 0 {
			return i + j
		}
	}
	return len(line)
}

// scanEscaped continues the scan of a name from a backslash at line[i]
// (plainEnd stops at backslashes) and returns the end of the name: the
// index of the first unescaped byte whose class is in stop, or len(line).
// A backslash that ends the line is returned as the end, for nameEnd to
// report. esc says whether the name holds an escape to undo, that is a
// backslash before a byte that NameEscape accepts.
func scanEscaped(line []byte, i int, stop uint8) (end int, esc bool) {
	for {
		if i+1 == len(line) {
			return i, esc // a trailing backslash: nameEnd reports it
		}
		if _, ok := NameEscape(line[i+1]); ok {
			esc = true
			i += 2
		} else {
			i++
		}
		i = plainEnd(line, i, stop)
		if i == len(line) || line[i] != '\\' {
			return i, esc
		}
	}
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
		return badAt(end, ReasonSyntax, `line break inside a line (write it as \n or \r)`)
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

// unescape copies the name b into the scratch buffer without its escapes.
// The result is capped so that a caller's append cannot run into the next
// token.
func (p *Parser) unescape(b []byte) []byte {
	start := len(p.scratch)
	p.scratch = AppendUnescapedName(p.scratch, b)
	return p.scratch[start:len(p.scratch):len(p.scratch)]
}

// quoted parses the string value that starts with the quote at line[vs]
// into f (unescaped by lineproto's string rule) and returns the index
// after its closing quote, which must end the value. ks and ke bound the
// field's key, for messages. A backslash always takes the byte after it
// along (\" does not close the string), and a raw line break is a bad
// line: the listener splits lines there, so a client must escape it.
func (p *Parser) quoted(line []byte, ks, ke, vs int, f *Field) (int, error) {
	n := len(line)
	j, esc := vs+1, false
	for j < n && line[j] != '"' {
		switch line[j] {
		case '\\':
			if j+1 < n {
				_, ok := StringEscape(line[j+1])
				esc = esc || ok
			}
			j += 2
			continue
		case '\r', '\n':
			return 0, badAt(j, ReasonSyntax, fmt.Sprintf(`line break inside the string value of field %s (write it as \n or \r)`, snippet(line[ks:ke])))
		}
		j++
	}
	if j >= n {
		return 0, badAt(vs, ReasonSyntax, fmt.Sprintf("the string value of field %s has no closing quote", snippet(line[ks:ke])))
	}
	v := line[vs+1 : j]
	if esc {
		start := len(p.scratch)
		p.scratch = AppendUnescapedString(p.scratch, v)
		v = p.scratch[start:len(p.scratch):len(p.scratch)]
	}
	f.Kind, f.S = KindString, v
	if j++; !valueEnds(line, j) {
		return 0, badAt(j, ReasonSyntax, fmt.Sprintf("unexpected text %s after the string value of field %s", snippet(line[j:]), snippet(line[ks:ke])))
	}
	return j, nil
}

// parseTs parses the timestamp that starts at line[i] into l, scaled to
// nanoseconds, and returns the index after it. It scans and converts in one
// pass, eight digits at a time, since the 19-digit timestamp is the longest
// token of a typical line.
func (p *Parser) parseTs(line []byte, i int, l *Line) (int, error) {
	start := i
	neg := line[i] == '-'
	if neg {
		i++
	}
	ds := i
	var u uint64
	for k := 0; k < 2 && i+8 <= len(line); k++ { // 16 digits; three more still fit a uint64
		x := binary.LittleEndian.Uint64(line[i:])
		if !eightDigits(x) {
			break
		}
		u = u*100_000_000 + eightDigitsValue(x)
		i += 8
	}
	for i < len(line) && line[i]-'0' <= 9 && i-ds < 19 {
		u = u*10 + uint64(line[i]-'0')
		i++
	}
	if i < len(line) && line[i] != ' ' {
		// A 20th digit (maybe after leading zeros) or a stray byte: the
		// general parser sorts out which.
		end := i
		for end < len(line) && line[end] != ' ' {
			end++
		}
		ts, r := parseInt(line[start:end])
		if r == intOK && line[start] != '+' {
			return p.setTs(line[start:end], ts, start, end, l)
		}
		if r != intRange || line[start] == '+' {
			return 0, badAt(start, ReasonTimestamp, fmt.Sprintf("malformed timestamp %s (want an integer)", snippet(line[start:end])))
		}
		return 0, badAt(start, ReasonTimestamp, fmt.Sprintf("timestamp %s overflows i64", snippet(line[start:end])))
	}
	if i == ds {
		return 0, badAt(start, ReasonTimestamp, fmt.Sprintf("malformed timestamp %s (want an integer)", snippet(line[start:i])))
	}
	if neg && u > 1<<63 || !neg && u > math.MaxInt64 {
		return 0, badAt(start, ReasonTimestamp, fmt.Sprintf("timestamp %s overflows i64", snippet(line[start:i])))
	}
	ts := int64(u)
	if neg {
		ts = int64(-u) // -(1<<63) wraps to MinInt64, as wanted
	}
	return p.setTs(line[start:i], ts, start, i, l)
}

// setTs scales ts by the precision into l and returns end.
func (p *Parser) setTs(tok []byte, ts int64, start, end int, l *Line) (int, error) {
	if m := p.Precision; m > 1 {
		scaled := ts * m
		if scaled/m != ts {
			return 0, badAt(start, ReasonTimestamp, fmt.Sprintf("timestamp %s times precision %d overflows i64 nanoseconds", snippet(tok), m))
		}
		ts = scaled
	}
	l.Ts, l.HasTs = ts, true
	return end, nil
}

// done ends a good line: it is good unless it repeats a key, which only a
// line whose Bloom filter saw a repeated bit can.
func (p *Parser) done(line []byte, l *Line) (bool, error) {
	if p.maybeDup {
		if err := p.checkDuplicates(line, l); err != nil {
			return false, err
		}
	}
	return true, nil
}

// keyBit hashes a key's length and first and last bytes to one bit of a
// 64-bit Bloom filter. Equal keys get equal bits; distinct keys of a
// typical line get distinct bits, and when they do not the exact check
// below runs, so the hash only needs to be cheap.
func keyBit(k []byte) uint64 {
	return 1 << ((uint(k[0]) + 3*uint(k[len(k)-1]) + 7*uint(len(k))) & 63)
}

// dupQuadratic is the key count up to which checkDuplicates compares every
// pair: for the few keys of a typical tick line that is faster than
// sorting, and sorting keeps a hostile wide line from costing n² compares.
const dupQuadratic = 24

// lineKey returns key i of a line, counting tags first, then fields.
func lineKey(tags []Tag, fields []Field, i int) []byte {
	if i < len(tags) {
		return tags[i].Key
	}
	return fields[i-len(tags)].Key
}

// checkDuplicates rejects a line that names a key twice, among tags and
// fields together: both become columns of the same table.
func (p *Parser) checkDuplicates(line []byte, l *Line) error {
	tags, fields := l.Tags, l.Fields
	var second int // the earliest key that repeats an earlier one, or -1
	if len(tags)+len(fields) <= dupQuadratic {
		second = firstRepeat(tags, fields)
	} else {
		second = p.firstRepeatSorted(tags, fields)
	}
	if second < 0 {
		return nil
	}
	what := "tag"
	if second >= len(tags) {
		what = "field"
	}
	return &LineError{Col: keyStart(line, second) + 1, Reason: ReasonDuplicate,
		Msg: fmt.Sprintf("%s key %s repeats an earlier tag or field key of the line", what, snippet(lineKey(tags, fields, second)))}
}

// keyStart returns the index in line of key k (tags first, then fields) of
// a line that parsed. Only a duplicate's error needs a key's position, so
// it is found again here rather than recorded for every key.
func keyStart(line []byte, k int) int {
	next := func(i int, stop uint8) int { // the end of the name at line[i]
		end := plainEnd(line, i, stop)
		if end < len(line) && line[end] == '\\' {
			end, _ = scanEscaped(line, end, stop)
		}
		return end
	}
	i := 0
	for line[i] == ' ' || line[i] == '\t' {
		i++
	}
	i = next(i, stopMeas)
	for line[i] == ',' { // tags: the line has k+1 keys, so it goes on
		if k == 0 {
			return i + 1
		}
		k--
		i = next(next(i+1, stopKey)+1, stopKey)
	}
	for line[i] == ' ' {
		i++
	}
	for ; k > 0; k-- { // fields: key, '=', value, ','
		i = next(i, stopKey) + 1
		if line[i] == '"' { // a string: up to its closing quote
			for i++; line[i] != '"'; i++ {
				if line[i] == '\\' {
					i++
				}
			}
			i++
		}
		for class[line[i]]&stopValue == 0 {
			i++
		}
		i++
	}
	return i
}

// firstRepeat returns the index (tags first, then fields) of the first key
// equal to an earlier one, or -1, comparing every pair.
func firstRepeat(tags []Tag, fields []Field) int {
	n := len(tags) + len(fields)
	for j := 1; j < n; j++ {
		k := lineKey(tags, fields, j)
		for i := range j {
			if bytes.Equal(lineKey(tags, fields, i), k) {
				return j
			}
		}
	}
	return -1
}

// firstRepeatSorted is firstRepeat for wide lines: it sorts key indexes by
// key, in the Parser's reused buffer, and looks at neighbours.
func (p *Parser) firstRepeatSorted(tags []Tag, fields []Field) int {
	p.order = p.order[:0]
	for i := range int32(len(tags) + len(fields)) {
		p.order = append(p.order, i)
	}
	slices.SortFunc(p.order, func(a, b int32) int {
		if c := bytes.Compare(lineKey(tags, fields, int(a)), lineKey(tags, fields, int(b))); c != 0 {
			return c
		}
		return int(a - b)
	})
	second := -1
	for k := 1; k < len(p.order); k++ {
		j := int(p.order[k])
		if bytes.Equal(lineKey(tags, fields, int(p.order[k-1])), lineKey(tags, fields, j)) && (second < 0 || j < second) {
			second = j
		}
	}
	return second
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
