package lineproto

import "strconv"

// Kind is a field value's type; it decides the column type a new table gets
// for the field and which columns the field may be written to.
type Kind uint8

// The field kinds. Uint values are kept in Field.I like ints (tickdb has no
// unsigned column), but the kind is kept apart so that a line formatted
// again says 123u where the client said 123u.
const (
	KindFloat  Kind = iota + 1 // 1.5, 100, -1.5e-7, NaN, Infinity (no suffix): f64 column
	KindInt                    // 123i: i64 column
	KindUint                   // 123u, which must fit in int64: i64 column
	KindBool                   // t T true True TRUE f F false False FALSE: bool column
	KindString                 // "quoted": sym column, like a tag
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
	case KindString:
		return "string"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Tag is one tag of a line: it becomes a sym column.
type Tag struct{ Key, Value []byte }

// Field is one field of a line. Only the member that Kind names is set.
// A string field's value (S, unquoted and unescaped) is stored like a
// tag's: in a sym column, through the table's dictionary.
type Field struct {
	Key  []byte
	Kind Kind
	F    float64 // KindFloat
	I    int64   // KindInt and KindUint
	B    bool    // KindBool
	S    []byte  // KindString
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

// AddTag extends l.Tags by one element, reusing its capacity, and returns
// it for the caller to fill; AddField does the same for l.Fields. They are
// how Parse and the other readers that fill a Line (load's CSV reader)
// grow it without allocating once it has room. Appending a Tag{...}
// literal instead builds it on the stack and copies it with 16-byte loads
// of 8-byte stores, which stalls store forwarding on every tag and field.
func (l *Line) AddTag() *Tag {
	if len(l.Tags) == cap(l.Tags) {
		l.Tags = append(l.Tags, Tag{})
	} else {
		l.Tags = l.Tags[:len(l.Tags)+1]
	}
	return &l.Tags[len(l.Tags)-1]
}

// AddField extends l.Fields by one element; see AddTag.
func (l *Line) AddField() *Field {
	if len(l.Fields) == cap(l.Fields) {
		l.Fields = append(l.Fields, Field{})
	} else {
		l.Fields = l.Fields[:len(l.Fields)+1]
	}
	return &l.Fields[len(l.Fields)-1]
}
