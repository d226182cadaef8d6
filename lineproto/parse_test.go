package lineproto

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// lpTag, lpF, lpI, lpU and lpB build expected Line parts tersely.
func lpTag(k, v string) Tag { return Tag{Key: []byte(k), Value: []byte(v)} }
func lpF(k string, f float64) Field {
	return Field{Key: []byte(k), Kind: KindFloat, F: f}
}
func lpI(k string, i int64) Field { return Field{Key: []byte(k), Kind: KindInt, I: i} }
func lpU(k string, i int64) Field { return Field{Key: []byte(k), Kind: KindUint, I: i} }
func lpB(k string, b bool) Field  { return Field{Key: []byte(k), Kind: KindBool, B: b} }
func lpS(k, v string) Field       { return Field{Key: []byte(k), Kind: KindString, S: []byte(v)} }

// lpLine builds an expected Line. Any int64 is a timestamp, so hasTs says
// whether there is one.
func lpLine(m string, tags []Tag, fields []Field, ts int64, hasTs bool) Line {
	return Line{Measurement: []byte(m), Tags: tags, Fields: fields, Ts: ts, HasTs: hasTs}
}

// lpEqual compares two lines exactly: floats bitwise, except that any NaN
// equals any NaN (a NaN's payload is not part of the line protocol).
func lpEqual(a, b *Line) bool {
	if !bytes.Equal(a.Measurement, b.Measurement) || a.HasTs != b.HasTs || a.Ts != b.Ts ||
		len(a.Tags) != len(b.Tags) || len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Tags {
		if !bytes.Equal(a.Tags[i].Key, b.Tags[i].Key) || !bytes.Equal(a.Tags[i].Value, b.Tags[i].Value) {
			return false
		}
	}
	for i := range a.Fields {
		x, y := &a.Fields[i], &b.Fields[i]
		if !bytes.Equal(x.Key, y.Key) || x.Kind != y.Kind {
			return false
		}
		switch x.Kind {
		case KindFloat:
			if math.Float64bits(x.F) != math.Float64bits(y.F) && !(math.IsNaN(x.F) && math.IsNaN(y.F)) {
				return false
			}
		case KindInt, KindUint:
			if x.I != y.I {
				return false
			}
		case KindBool:
			if x.B != y.B {
				return false
			}
		case KindString:
			if !bytes.Equal(x.S, y.S) {
				return false
			}
		}
	}
	return true
}

// lpString renders a Line for failure messages, floats in exact hex.
func lpString(l *Line) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{m=%q", l.Measurement)
	for _, t := range l.Tags {
		fmt.Fprintf(&b, " tag %q=%q", t.Key, t.Value)
	}
	for _, f := range l.Fields {
		switch f.Kind {
		case KindFloat:
			fmt.Fprintf(&b, " %q=%v(%x)", f.Key, f.F, f.F)
		case KindInt, KindUint:
			fmt.Fprintf(&b, " %q=%d%s", f.Key, f.I, f.Kind)
		case KindBool:
			fmt.Fprintf(&b, " %q=%v", f.Key, f.B)
		case KindString:
			fmt.Fprintf(&b, " %q=string %q", f.Key, f.S)
		default:
			fmt.Fprintf(&b, " %q=?kind%d", f.Key, f.Kind)
		}
	}
	if l.HasTs {
		fmt.Fprintf(&b, " ts=%d", l.Ts)
	}
	return b.String() + "}"
}

// appendLine writes l through Encoder: the parse∘format round trip of
// these tests and the fuzz test (a Line that Parse gave back reads back the
// same), the way a caller holding a parsed Line writes it again. A
// KindUint value Parse never makes (negative) is written as an int.
func appendLine(dst []byte, l *Line) ([]byte, error) {
	var e Encoder[[]byte]
	e.Begin(dst, l.Measurement)
	for i := range l.Tags {
		e.Tag(l.Tags[i].Key, l.Tags[i].Value)
	}
	for i := range l.Fields {
		f := &l.Fields[i]
		switch f.Kind {
		case KindFloat:
			e.Float(f.Key, f.F)
		case KindInt:
			e.Int(f.Key, f.I)
		case KindUint:
			if f.I < 0 {
				e.Int(f.Key, f.I)
			} else {
				e.Uint(f.Key, uint64(f.I))
			}
		case KindBool:
			e.Bool(f.Key, f.B)
		case KindString:
			e.Str(f.Key, f.S)
		}
	}
	if l.HasTs {
		return e.End(l.Ts)
	}
	return e.EndNow()
}

// lpAppend is appendLine of a line it must take.
func lpAppend(t *testing.T, dst []byte, l *Line) []byte {
	t.Helper()
	out, err := appendLine(dst, l)
	if err != nil {
		t.Fatalf("appendLine(%s): %v", lpString(l), err)
	}
	return out
}

// lpMustParse parses one good line with a fresh parser.
func lpMustParse(t *testing.T, in string) Line {
	t.Helper()
	var p Parser
	var l Line
	ok, err := p.Parse([]byte(in), &l)
	if err != nil || !ok {
		t.Fatalf("Parse(%q) = %v, %v; want a good line", in, ok, err)
	}
	return l
}

func TestParseGood(t *testing.T) {
	const ts = 1700000000123456789
	cases := []struct {
		name string
		in   string
		prec int64
		want Line
	}{
		{"typical tick", "trades,sym=AAPL,venue=XNAS price=189.25,size=100i,buy=t 1700000000123456789", 0,
			lpLine("trades", []Tag{lpTag("sym", "AAPL"), lpTag("venue", "XNAS")},
				[]Field{lpF("price", 189.25), lpI("size", 100), lpB("buy", true)}, ts, true)},
		{"no timestamp", "m f=1", 0, lpLine("m", nil, []Field{lpF("f", 1)}, 0, false)},
		{"no tags", "cpu usage=0.5 10", 0, lpLine("cpu", nil, []Field{lpF("usage", 0.5)}, 10, true)},
		{"extra spaces between sections", "m,a=b   f=1   7   ", 0,
			lpLine("m", []Tag{lpTag("a", "b")}, []Field{lpF("f", 1)}, 7, true)},
		{"leading blanks", " \t m f=1", 0, lpLine("m", nil, []Field{lpF("f", 1)}, 0, false)},
		{"trailing CR dropped", "m f=1 5\r", 0, lpLine("m", nil, []Field{lpF("f", 1)}, 5, true)},
		{"negative timestamp", "m f=1 -1000", 0, lpLine("m", nil, []Field{lpF("f", 1)}, -1000, true)},
		{"min timestamp", "m f=1 -9223372036854775808", 0, lpLine("m", nil, []Field{lpF("f", 1)}, math.MinInt64, true)},
		{"precision us", "m f=1 1700000000123456", 1000, lpLine("m", nil, []Field{lpF("f", 1)}, 1700000000123456000, true)},
		{"precision s", "m f=1 9223372036", 1e9, lpLine("m", nil, []Field{lpF("f", 1)}, 9223372036000000000, true)},
		{"precision s negative", "m f=1 -9223372036", 1e9, lpLine("m", nil, []Field{lpF("f", 1)}, -9223372036000000000, true)},
		{"measurement may hold '=' and '\"'", `a=b"c f=1`, 0, lpLine(`a=b"c`, nil, []Field{lpF("f", 1)}, 0, false)},

		// Floats in every spelling.
		{"float spellings", "m a=100,b=-1,c=1.5,d=.5,e=1.,f=1.5e-7,g=1E6,h=+1.5,i=-0,j=0.000001,k=1e+06,l=-.25E-2", 0,
			lpLine("m", nil, []Field{lpF("a", 100), lpF("b", -1), lpF("c", 1.5), lpF("d", .5), lpF("e", 1),
				lpF("f", 1.5e-7), lpF("g", 1e6), lpF("h", 1.5), lpF("i", math.Copysign(0, -1)), lpF("j", 1e-6),
				lpF("k", 1e6), lpF("l", -.25e-2)}, 0, false)},
		{"floats past the fast path", "m a=0.12345678901234567891,b=1e300,c=123456789012345678901234567890,d=4.9e-324,e=1e-400,f=1.7976931348623157e308", 0,
			lpLine("m", nil, []Field{lpF("a", 0.12345678901234567891), lpF("b", 1e300),
				lpF("c", 123456789012345678901234567890), lpF("d", 5e-324), lpF("e", 0), lpF("f", math.MaxFloat64)}, 0, false)},
		{"leading zeros", "m a=007,b=007i,c=0.0", 0, lpLine("m", nil, []Field{lpF("a", 7), lpI("b", 7), lpF("c", 0)}, 0, false)},
		{"NaN and infinities (QuestDB)", "m a=NaN,b=nan,c=Infinity,d=-Infinity,e=+infinity,f=inf,g=-INF", 0,
			lpLine("m", nil, []Field{lpF("a", math.NaN()), lpF("b", math.NaN()), lpF("c", math.Inf(1)),
				lpF("d", math.Inf(-1)), lpF("e", math.Inf(1)), lpF("f", math.Inf(1)), lpF("g", math.Inf(-1))}, 0, false)},

		// Integers.
		{"integers", "m a=-123i,b=0i,c=+5i,d=9223372036854775807i,e=-9223372036854775808i", 0,
			lpLine("m", nil, []Field{lpI("a", -123), lpI("b", 0), lpI("c", 5), lpI("d", math.MaxInt64), lpI("e", math.MinInt64)}, 0, false)},
		{"unsigned", "m a=7u,b=0u,c=9223372036854775807u", 0,
			lpLine("m", nil, []Field{lpU("a", 7), lpU("b", 0), lpU("c", math.MaxInt64)}, 0, false)},

		// Booleans, all ten spellings.
		{"booleans", "m a=t,b=T,c=true,d=True,e=TRUE,f=f,g=F,h=false,i=False,j=FALSE", 0,
			lpLine("m", nil, []Field{lpB("a", true), lpB("b", true), lpB("c", true), lpB("d", true), lpB("e", true),
				lpB("f", false), lpB("g", false), lpB("h", false), lpB("i", false), lpB("j", false)}, 0, false)},

		// Escapes.
		{"measurement escapes", `my\ meas\,ure\=x\\y f=1`, 0, lpLine(`my meas,ure=x\y`, nil, []Field{lpF("f", 1)}, 0, false)},
		{"tag escapes", `m,tag\ key\,\=x=New\ York,b=a\,b,c=x\=y,d=back\\slash f=1`, 0,
			lpLine("m", []Tag{lpTag("tag key,=x", "New York"), lpTag("b", "a,b"), lpTag("c", "x=y"), lpTag("d", `back\slash`)},
				[]Field{lpF("f", 1)}, 0, false)},
		{"field key escapes", `m field\ key\,\=\\=1i`, 0, lpLine("m", nil, []Field{lpI(`field key,=\`, 1)}, 0, false)},
		{"backslash before other bytes is kept", `m\a,t\x=v\y f\q=1`, 0,
			lpLine(`m\a`, []Tag{lpTag(`t\x`, `v\y`)}, []Field{lpF(`f\q`, 1)}, 0, false)},
		{"\\n and \\r are LF and CR (lineproto's line break)", `m\n,a\r=x\ny\rz f\n=1`, 0,
			lpLine("m\n", []Tag{lpTag("a\r", "x\ny\rz")}, []Field{lpF("f\n", 1)}, 0, false)},
		{"InfluxDB-style raw backslash", `m,path=back\slash f=1`, 0,
			lpLine("m", []Tag{lpTag("path", `back\slash`)}, []Field{lpF("f", 1)}, 0, false)},
		{"escaped CR and LF (QuestDB clients)", "m,a=x\\\ny\\\rz f=1", 0,
			lpLine("m", []Tag{lpTag("a", "x\ny\rz")}, []Field{lpF("f", 1)}, 0, false)},
		{"tab is an ordinary byte in values", "m,a=x\ty f=1", 0, lpLine("m", []Tag{lpTag("a", "x\ty")}, []Field{lpF("f", 1)}, 0, false)},
		{"UTF-8", "таблица,имя=значение f=1", 0, lpLine("таблица", []Tag{lpTag("имя", "значение")}, []Field{lpF("f", 1)}, 0, false)},
		// String fields: stored as symbols.
		{"string fields", `m,a=b note="hello, world = x",g=1,e="" 5`, 0,
			lpLine("m", []Tag{lpTag("a", "b")}, []Field{lpS("note", "hello, world = x"), lpF("g", 1), lpS("e", "")}, 5, true)},
		{"string escapes", `m s="say \"hi\", a\\b\nc\rd\te\x",t="\\"`, 0,
			lpLine("m", nil, []Field{lpS("s", "say \"hi\", a\\b\nc\rd\te\\x"), lpS("t", `\`)}, 0, false)},
		{"string with an escaped raw break (QuestDB clients)", "m s=\"a\\\nb\\\rc\" 7", 0,
			lpLine("m", nil, []Field{lpS("s", "a\nb\rc")}, 7, true)},
		{"string field alone after tags", `t,sym=S1 note="halted" 9`, 0,
			lpLine("t", []Tag{lpTag("sym", "S1")}, []Field{lpS("note", "halted")}, 9, true)},
		{"same key in two lines is no duplicate", "m,a=1,b=2 c=1,d=2", 0,
			lpLine("m", []Tag{lpTag("a", "1"), lpTag("b", "2")}, []Field{lpF("c", 1), lpF("d", 2)}, 0, false)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Parser{Precision: c.prec}
			l := Line{Tags: []Tag{lpTag("stale", "x")}, Fields: []Field{lpF("stale", 1)}, Ts: 99, HasTs: true}
			ok, err := p.Parse([]byte(c.in), &l)
			if err != nil || !ok {
				t.Fatalf("Parse(%q) = %v, %v; want ok", c.in, ok, err)
			}
			if !lpEqual(&l, &c.want) {
				t.Fatalf("Parse(%q)\n got %s\nwant %s", c.in, lpString(&l), lpString(&c.want))
			}
		})
	}
}

func TestParseSkipsBlankAndComment(t *testing.T) {
	for _, in := range []string{"", " ", "\t \t", "\r", "  \r", "# a comment", "   # indented comment", "#", "#m f=1"} {
		t.Run(strconv.Quote(in), func(t *testing.T) {
			var p Parser
			var l Line
			ok, err := p.Parse([]byte(in), &l)
			if ok || err != nil {
				t.Fatalf("Parse(%q) = %v, %v; want false, nil", in, ok, err)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		prec   int64
		reason Reason
		col    int
		msg    string // a substring the message must hold
	}{
		{"empty measurement", ",a=b f=1", 0, ReasonSyntax, 1, "empty measurement"},
		{"empty measurement after blanks", "  ,a=b f=1", 0, ReasonSyntax, 3, "empty measurement"},
		{"measurement only", "m", 0, ReasonNoField, 2, "no field after the measurement"},
		{"measurement and spaces", "m   ", 0, ReasonNoField, 5, "no field after the measurement"},
		{"tab is no separator", "m\tf=1", 0, ReasonNoField, 6, "no field after the measurement"},
		// A line of tags alone is no row, with or without a timestamp
		// (the QuestDB clients write it with one).
		{"tags only", "t,sym=S1", 0, ReasonNoField, 9, "no field after the tags: a line needs at least one field"},
		{"tags only, trailing spaces", "m,a=b   ", 0, ReasonNoField, 9, "no field after the tags"},
		{"tags only with timestamp", "t,sym=S1 1700000000000000000", 0, ReasonNoField, 10, `no field after the tags ("1700000000000000000" would be the timestamp)`},
		{"tags only with negative timestamp", "m,a=b -5", 0, ReasonNoField, 7, "no field after the tags"},
		{"tags only, escaped trailing CR", "m,a=x\\\r", 0, ReasonNoField, 8, "no field after the tags"},
		{"empty tag key", "m,=b f=1", 0, ReasonSyntax, 3, "empty tag key"},
		{"tag key without =", "m,a f=1", 0, ReasonSyntax, 4, `tag key "a" has no '='`},
		{"tag key at end", "m,a", 0, ReasonSyntax, 4, "has no '='"},
		{"empty tag value", "m,a= f=1", 0, ReasonSyntax, 5, `tag "a" has an empty value`},
		{"empty tag value at end", "m,a=", 0, ReasonSyntax, 5, "empty value"},
		{"raw = in tag value", "m,a=b=c f=1", 0, ReasonSyntax, 6, `unescaped '='`},
		{"escaped space swallows the separator", `m,a=b\ f=1`, 0, ReasonSyntax, 9, `unescaped '='`},
		{"trailing comma after tags", "m,a=b, f=1", 0, ReasonSyntax, 7, "empty tag key"},
		{"empty field key", "m =1", 0, ReasonSyntax, 3, "empty field key"},
		{"field key without =", "m f", 0, ReasonSyntax, 4, `field key "f" has no '='`},
		{"field key then space", "m f 1", 0, ReasonSyntax, 4, "has no '='"},
		{"word after tags is no timestamp", "m,a=b price", 0, ReasonSyntax, 12, `field key "price" has no '='`},
		{"empty field value", "m f=", 0, ReasonSyntax, 5, `field "f" has an empty value`},
		{"empty field value before comma", "m f=,g=1", 0, ReasonSyntax, 5, "empty value"},
		{"trailing comma after fields", "m f=1,", 0, ReasonSyntax, 7, "empty field key"},
		{"space after comma in fields", "m f=1, g=2", 0, ReasonSyntax, 7, "empty field key"},
		{"unterminated escape in measurement", `m\`, 0, ReasonEscape, 2, "escapes nothing"},
		{"unterminated escape in tag key", `m,a\`, 0, ReasonEscape, 4, "escapes nothing"},
		{"unterminated escape in tag value", `m,a=b\`, 0, ReasonEscape, 6, "escapes nothing"},
		{"unterminated escape in field key", `m f\`, 0, ReasonEscape, 4, "escapes nothing"},
		{"raw LF in a field value", "m f=1\nx=2", 0, ReasonSyntax, 6, "line break"},
		{"raw LF in a tag value", "m,a=b\nc f=1", 0, ReasonSyntax, 6, "line break"},
		{"raw CR in the measurement", "m\rx f=1", 0, ReasonSyntax, 2, "line break"},

		{"string field unterminated", `m f="abc`, 0, ReasonSyntax, 5, `the string value of field "f" has no closing quote`},
		{"string field ending in an escaped quote", `m f="ab\"`, 0, ReasonSyntax, 5, "no closing quote"},
		{"text after a string", `m f="ab"c,g=1`, 0, ReasonSyntax, 9, `unexpected text "c,g=1" after the string value of field "f"`},
		{"raw LF in a string", "m f=\"a\nb\"", 0, ReasonSyntax, 7, "line break inside the string value"},
		{"raw CR in a string", "m f=\"a\rb\" 5", 0, ReasonSyntax, 7, "line break inside the string value"},
		{"duplicate after a string with separators", `m a="x, y=1 z",a=1`, 0, ReasonDuplicate, 16, `field key "a" repeats`},

		{"not a value", "m f=abc", 0, ReasonValue, 5, `value "abc" is not a number`},
		{"yes is no boolean", "m f=yes", 0, ReasonValue, 5, "not a number"},
		{"tru is no boolean", "m f=tru", 0, ReasonValue, 5, "not a number"},
		{"truE is no boolean", "m f=truE", 0, ReasonValue, 5, "not a number"},
		{"tRUE is no boolean", "m f=tRUE", 0, ReasonValue, 5, "not a number"},
		{"i alone", "m f=i", 0, ReasonValue, 5, "not a number"},
		{"nanx", "m f=nanx", 0, ReasonValue, 5, "not a number"},
		{"-inf word prefix", "m f=-infinit", 0, ReasonValue, 5, "not a number"},
		{"two dots", "m f=1.2.3", 0, ReasonNumber, 5, `malformed number "1.2.3"`},
		{"exponent without digits", "m f=1e", 0, ReasonNumber, 5, "malformed number"},
		{"exponent sign without digits", "m f=1e+", 0, ReasonNumber, 5, "malformed number"},
		{"dot alone", "m f=.", 0, ReasonNumber, 5, "malformed number"},
		{"minus alone", "m f=-", 0, ReasonNumber, 5, "malformed number"},
		{"plus alone", "m f=+", 0, ReasonNumber, 5, "malformed number"},
		{"hex float", "m f=0x10", 0, ReasonNumber, 5, "malformed number"},
		{"underscores", "m f=1_000", 0, ReasonNumber, 5, "malformed number"},
		{"double sign", "m f=--1", 0, ReasonNumber, 5, "malformed number"},
		{"fractional exponent", "m f=1e5.5", 0, ReasonNumber, 5, "malformed number"},
		{"float overflow", "m f=1e309", 0, ReasonNumber, 5, `number "1e309" overflows f64`},
		{"negative float overflow", "m f=-1e309", 0, ReasonNumber, 5, "overflows f64"},
		{"fractional integer", "m f=1.5i", 0, ReasonNumber, 5, `malformed integer "1.5i"`},
		{"integer with a letter", "m f=12ai", 0, ReasonNumber, 5, "malformed integer"},
		{"sign-only integer", "m f=-i", 0, ReasonValue, 5, "not a number"},
		{"integer overflow", "m f=9223372036854775808i", 0, ReasonNumber, 5, "overflows i64"},
		{"negative integer overflow", "m f=-9223372036854775809i", 0, ReasonNumber, 5, "overflows i64"},
		{"long integer overflow", "m f=99999999999999999999999i", 0, ReasonNumber, 5, "overflows i64"},
		{"negative unsigned", "m f=-1u", 0, ReasonNumber, 5, "is negative"},
		{"negative zero unsigned", "m f=-0u", 0, ReasonNumber, 5, "is negative"},
		{"unsigned past int64", "m f=9223372036854775808u", 0, ReasonNumber, 5, `unsigned integer "9223372036854775808u" overflows i64`},
		{"max uint64", "m f=18446744073709551615u", 0, ReasonNumber, 5, "overflows i64"},
		{"malformed unsigned", "m f=1.0u", 0, ReasonNumber, 5, "malformed unsigned"},

		{"duplicate field", "m a=1,a=2", 0, ReasonDuplicate, 7, `field key "a" repeats`},
		{"duplicate tag", "m,a=x,a=y f=1", 0, ReasonDuplicate, 7, `tag key "a" repeats`},
		{"tag and field with one key", "m,a=x a=1", 0, ReasonDuplicate, 7, `field key "a" repeats`},
		{"duplicate after unescaping", `m,a\ b=x,a\ b=y f=1`, 0, ReasonDuplicate, 10, `tag key "a b" repeats`},
		{"duplicate in a wide line", "m " + lpWideFields(40, 3), 0, ReasonDuplicate, 3 + len(lpWideFields(39, -1)) + 1, `field key "f3" repeats`},

		{"letters in timestamp", "m f=1 12a", 0, ReasonTimestamp, 7, `malformed timestamp "12a"`},
		{"plus-signed timestamp", "m f=1 +12", 0, ReasonTimestamp, 7, "malformed timestamp"},
		{"fractional timestamp", "m f=1 1.5", 0, ReasonTimestamp, 7, "malformed timestamp"},
		{"minus-only timestamp", "m f=1 -", 0, ReasonTimestamp, 7, "malformed timestamp"},
		{"timestamp overflow", "m f=1 9223372036854775808", 0, ReasonTimestamp, 7, "overflows i64"},
		{"timestamp overflow after precision", "m f=1 9223372037", 1e9, ReasonTimestamp, 7, "times precision 1000000000 overflows"},
		{"negative timestamp overflow after precision", "m f=1 -9223372037", 1e9, ReasonTimestamp, 7, "overflows"},
		{"bad timestamp after tags", "m,a=b 12x", 0, ReasonNoField, 7, `no field after the tags ("12x" would be the timestamp)`},
		{"text after timestamp", "m f=1 123 x", 0, ReasonSyntax, 11, `unexpected text "x" after the timestamp`},
		{"second timestamp", "m f=1 123 456", 0, ReasonSyntax, 11, "after the timestamp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Parser{Precision: c.prec}
			var l Line
			ok, err := p.Parse([]byte(c.in), &l)
			if ok || err == nil {
				t.Fatalf("Parse(%q) = %v, %v; want a bad line", c.in, ok, err)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Parse(%q) error %T %v; want *LineError", c.in, err, err)
			}
			if !errors.Is(err, ErrBadLine) {
				t.Errorf("errors.Is(%v, ErrBadLine) = false", err)
			}
			if le.Reason != c.reason || le.Col != c.col || le.Line != 0 {
				t.Errorf("Parse(%q) = reason %s, col %d, line %d; want %s, col %d, line 0 (%v)",
					c.in, le.Reason, le.Col, le.Line, c.reason, c.col, err)
			}
			if !strings.Contains(le.Msg, c.msg) {
				t.Errorf("Parse(%q) message %q does not hold %q", c.in, le.Msg, c.msg)
			}
		})
	}
}

// lpWideFields returns "f0=0,f1=1,...,f{n-1}={n-1}", and with dup >= 0 a
// last field named f{dup} in place of f{n-1}.
func lpWideFields(n, dup int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("f%d=%d", i, i)
	}
	if dup >= 0 {
		parts[n-1] = fmt.Sprintf("f%d=%d", dup, n-1)
	}
	return strings.Join(parts, ",")
}

func TestParseMessageIsBounded(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	var p Parser
	var l Line
	_, err := p.Parse([]byte("m f="+long), &l)
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("error for a 10,000-byte value is %d bytes long; want a bounded quote: %v", len(err.Error()), err)
	}
}

func TestLineErrorFormat(t *testing.T) {
	for _, c := range []struct {
		e    LineError
		want string
	}{
		{LineError{Line: 3, Col: 17, Reason: ReasonSyntax, Msg: "boom"}, "line 3, byte 17: boom"},
		{LineError{Col: 17, Msg: "boom"}, "byte 17: boom"},
		{LineError{Line: 3, Msg: "boom"}, "line 3: boom"},
		{LineError{Msg: "boom"}, "boom"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q; want %q", got, c.want)
		}
	}
	var err error = &LineError{Reason: ReasonType}
	if !errors.Is(fmt.Errorf("wrapped: %w", err), ErrBadLine) {
		t.Error("a wrapped *LineError does not satisfy errors.Is(err, ErrBadLine)")
	}
}

func TestLineReasonAndKindNames(t *testing.T) {
	seen := map[string]bool{}
	for r := ReasonSyntax; r < numReasons; r++ {
		s := r.String()
		if s == "unknown" || seen[s] || strings.ToLower(s) != s || strings.ContainsAny(s, " -") {
			t.Errorf("Reason(%d).String() = %q; want a distinct snake_case label", r, s)
		}
		seen[s] = true
	}
	if Reason(0).String() != "unknown" || numReasons.String() != "unknown" {
		t.Error("out-of-range reasons must say unknown")
	}
	for k, want := range map[Kind]string{KindFloat: "float", KindInt: "integer", KindUint: "unsigned", KindBool: "boolean", KindString: "string"} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q; want %q", k, k.String(), want)
		}
	}
}

func TestParseAllocsZero(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	lines := map[string]string{
		"tick":    "trades,sym=AAPL,venue=XNAS price=189.25,size=100i,buy=t 1700000000123456789",
		"escapes": `trades,sym=New\ York,venue=a\,b,note=x\=y,path=back\\slash price=1.5,size\ lots=2i 1700000000000000000`,
		"floats":  "q,sym=AAPL bid=189.25,ask=189.27,bsz=1.5e3,asz=0.000125,mid=-1234.5678,spr=1e-7,x=0.12345678901234567891,y=1e300,n=NaN,i=-Infinity",
		"ints":    "m a=-9223372036854775808i,b=9223372036854775807u,c=t,d=FALSE",
		"symbols": "m,a=b,c=d,e=f,g=h x=t 123",
		"strings": `m,a=b note="halted",why="say \"hi\"\nnow",x=1 123`,
		"wide":    "m " + lpWideFields(60, -1) + " 5",
		"us":      "m f=1 1700000000123456",
	}
	for name, in := range lines {
		t.Run(name, func(t *testing.T) {
			p := Parser{Precision: 1}
			if name == "us" {
				p.Precision = 1000
			}
			var l Line
			line := []byte(in)
			if ok, err := p.Parse(line, &l); !ok || err != nil {
				t.Fatalf("Parse(%q) = %v, %v", in, ok, err)
			}
			if n := testing.AllocsPerRun(200, func() { _, _ = p.Parse(line, &l) }); n != 0 {
				t.Fatalf("Parse(%q) allocates %v times per line; want 0", in, n)
			}
			dst := make([]byte, 0, 4*len(line)+64)
			if n := testing.AllocsPerRun(200, func() { dst, _ = appendLine(dst[:0], &l) }); n != 0 {
				t.Fatalf("appendLine allocates %v times per line into a big enough buffer; want 0", n)
			}
		})
	}
	t.Run("scratch grows to the longest line, then stays", func(t *testing.T) {
		var p Parser
		var l Line
		short := []byte(`m,a=x\ y f=1`)
		long := []byte(`m,a=` + strings.Repeat(`x\ y`, 100) + ` f=1`)
		_, _ = p.Parse(long, &l)
		if n := testing.AllocsPerRun(100, func() {
			_, _ = p.Parse(short, &l)
			_, _ = p.Parse(long, &l)
		}); n != 0 {
			t.Fatalf("alternating lines allocate %v times; want 0", n)
		}
	})
}

// TestParseSlicesStayValid checks that every slice of a Line still holds
// its value after the whole line is parsed, i.e. that unescaping a later
// token never moves or overwrites an earlier one.
func TestParseSlicesStayValid(t *testing.T) {
	var p Parser
	var l Line
	in := []byte(`m\ 1,k\ 1=v\ 1,k\ 2=v\ 2 f\ 1=1,f\ 2=2`)
	if ok, err := p.Parse(in, &l); !ok || err != nil {
		t.Fatal(ok, err)
	}
	want := lpLine("m 1", []Tag{lpTag("k 1", "v 1"), lpTag("k 2", "v 2")}, []Field{lpF("f 1", 1), lpF("f 2", 2)}, 0, false)
	if !lpEqual(&l, &want) {
		t.Fatalf("got %s\nwant %s", lpString(&l), lpString(&want))
	}
	// A caller's append to a returned slice must not reach the next token.
	_ = append(l.Tags[0].Key, "XXXX"...)
	if !lpEqual(&l, &want) {
		t.Fatalf("append to one token changed another: %s", lpString(&l))
	}
}

func TestAppendParsedLine(t *testing.T) {
	cases := []struct {
		name string
		l    Line
		want string
	}{
		{"typical", lpLine("trades", []Tag{lpTag("sym", "AAPL")}, []Field{lpF("price", 189.25), lpI("size", 100), lpB("buy", true)}, 1700000000123456789, true),
			"trades,sym=AAPL price=189.25,size=100i,buy=t 1700000000123456789\n"},
		{"floats", lpLine("m", nil, []Field{lpF("a", 100), lpF("b", 1.5e-5), lpF("c", 1e6), lpF("d", math.Copysign(0, -1)), lpF("e", 1e21),
			lpF("f", math.NaN()), lpF("g", math.Inf(1)), lpF("h", math.Inf(-1)), lpF("i", 1e-7)}, 0, false),
			"m a=100,b=0.000015,c=1000000,d=-0,e=1e+21,f=NaN,g=Infinity,h=-Infinity,i=1e-07\n"},
		{"ints and bools", lpLine("m", nil, []Field{lpI("a", -5), lpU("b", 7), lpB("d", false)}, -3, true),
			"m a=-5i,b=7u,d=f -3\n"},
		{"escapes, line breaks as \\n and \\r", lpLine("my table=x", []Tag{lpTag("city name", "New York"), lpTag("p", "a,b"), lpTag("e", "x=y"), lpTag("b", `back\slash`), lpTag("n", "x\ny\rz")}, []Field{lpF("f", 1)}, 0, false),
			`my\ table\=x,city\ name=New\ York,p=a\,b,e=x\=y,b=back\\slash,n=x\ny\rz f=1` + "\n"},
	}
	t.Run("negative uint is written as an int", func(t *testing.T) {
		l := lpLine("m", nil, []Field{lpU("c", -1)}, 0, false)
		if got := string(lpAppend(t, nil, &l)); got != "m c=-1i\n" {
			t.Fatalf("appendLine = %q; want %q", got, "m c=-1i\n")
		}
	})
	t.Run("a line Parse would not give back is an error", func(t *testing.T) {
		for _, l := range []Line{
			lpLine("m", []Tag{lpTag("a", "b")}, nil, 5, true),
			lpLine("", nil, []Field{lpF("f", 1)}, 0, false),
			lpLine("m", []Tag{lpTag("a", "")}, []Field{lpF("f", 1)}, 0, false),
		} {
			if got, err := appendLine([]byte("kept"), &l); err == nil || string(got) != "kept" {
				t.Errorf("appendLine(%s) = %q, %v; want %q and an error", lpString(&l), got, err, "kept")
			}
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := lpAppend(t, []byte("prefix|"), &c.l)
			if string(got) != "prefix|"+c.want {
				t.Fatalf("appendLine = %q; want %q", got, "prefix|"+c.want)
			}
			back := lpMustParse(t, strings.TrimSuffix(c.want, "\n"))
			if !lpEqual(&back, &c.l) {
				t.Fatalf("parsed back %s\nwant %s", lpString(&back), lpString(&c.l))
			}
		})
	}
}

// lpInfluxCase is one line written with InfluxDB's own encoder.
type lpInfluxCase struct {
	m      string
	tags   [][2]string // sorted by key: the encoder insists
	fields []lpInfluxField
	ts     int64
}

type lpInfluxField struct {
	key string
	v   any // float64, int64, uint64, bool or string
}

// TestLineInfluxEncoderRoundTrip writes lines with the real InfluxDB
// encoder (github.com/influxdata/line-protocol/v2 v2.2.1) and checks that
// Parse reads exactly the values that went in, and that InfluxDB's decoder
// reads appendLine's output back to the same values.
func TestLineInfluxEncoderRoundTrip(t *testing.T) {
	cases := map[string]lpInfluxCase{
		"tricky names and symbols": {
			m: "my meas,ure=x",
			tags: [][2]string{{"city", "New York"}, {"expr", "x=y"}, {"k,= x", "w"}, {"pair", "a,b"},
				{"path", `back\slash`}, {"tag key", "v v"}},
			fields: []lpInfluxField{{"price", 100.0}, {"tiny", 1.5e-7}, {"big", 1e6}, {"size", int64(123)},
				{"neg", int64(-123)}, {"qty", uint64(7)}, {"buy", true}, {"sell", false}, {"field key", 1.25}, {"f,=", 2.5}},
			ts: 1700000000123456789,
		},
		"symbols with separators": {
			m:      "trades",
			tags:   [][2]string{{"city", "New York"}, {"expr", "x=y"}, {"pair", "a,b"}, {"venue name", "x, y=z"}},
			fields: []lpInfluxField{{"price", 100.0}, {"tiny", 1.5e-7}, {"size", int64(123)}, {"qty", uint64(7)}, {"buy", true}, {"bid px=", false}},
			ts:     1700000000123456789,
		},
		"raw backslash in names": {
			m:      `back\slash`,
			tags:   [][2]string{{`t\k`, `v\x`}},
			fields: []lpInfluxField{{`f\k`, 1.0}},
			ts:     1,
		},
		"float edges": {
			m: "f",
			fields: []lpInfluxField{{"max", math.MaxFloat64}, {"min", math.SmallestNonzeroFloat64}, {"negz", math.Copysign(0, -1)},
				{"third", 0.1 + 0.2}, {"big", 1e21}, {"pi", math.Pi}, {"neg", -1234.5678}, {"small", 1e-300}},
		},
		"int edges": {
			m:      "i",
			fields: []lpInfluxField{{"min", int64(math.MinInt64)}, {"max", int64(math.MaxInt64)}, {"umax", uint64(math.MaxInt64)}, {"zero", uint64(0)}},
			ts:     -1,
		},
		"strings": {
			m:      "s",
			tags:   [][2]string{{"sym", "A"}},
			fields: []lpInfluxField{{"note", "say \"hi\", x=1 y"}, {"lines", "a\nb\rc\td\\e"}, {"empty", ""}, {"price", 1.5}},
			ts:     5,
		},
		"UTF-8": {
			m:      "таблица",
			tags:   [][2]string{{"имя", "значение раз,два=три"}},
			fields: []lpInfluxField{{"поле", true}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var enc lineprotocol.Encoder
			enc.StartLine(c.m)
			want := Line{Measurement: []byte(c.m)}
			for _, tag := range c.tags {
				enc.AddTag(tag[0], tag[1])
				want.Tags = append(want.Tags, lpTag(tag[0], tag[1]))
			}
			for _, f := range c.fields {
				enc.AddField(f.key, lineprotocol.MustNewValue(f.v))
				switch v := f.v.(type) {
				case float64:
					want.Fields = append(want.Fields, lpF(f.key, v))
				case int64:
					want.Fields = append(want.Fields, lpI(f.key, v))
				case uint64:
					want.Fields = append(want.Fields, lpU(f.key, int64(v)))
				case bool:
					want.Fields = append(want.Fields, lpB(f.key, v))
				case string:
					want.Fields = append(want.Fields, lpS(f.key, v))
				}
			}
			var at time.Time
			if c.ts != 0 {
				at = time.Unix(0, c.ts)
				want.Ts, want.HasTs = c.ts, true
			}
			enc.EndLine(at)
			if err := enc.Err(); err != nil {
				t.Fatal(err)
			}
			encoded := enc.Bytes()
			got := lpMustParse(t, strings.TrimSuffix(string(encoded), "\n"))
			if !lpEqual(&got, &want) {
				t.Fatalf("InfluxDB wrote %q\nParse read %s\n      want %s", encoded, lpString(&got), lpString(&want))
			}

			// InfluxDB reads our output back, where the names need no
			// backslash and the measurement has no '=' (see the escaping
			// notes in parse_value.go).
			ours := lpAppend(t, nil, &got)
			if bytes.ContainsRune(ours, '\\') && (strings.Contains(c.m, "=") || lpHasBackslash(&got)) {
				return
			}
			back := lpInfluxDecode(t, ours)
			if !lpEqual(&back, &want) {
				t.Fatalf("we wrote %q\nInfluxDB read %s\n        want %s", ours, lpString(&back), lpString(&want))
			}
		})
	}

	t.Run("uint64 past int64 is a bad line", func(t *testing.T) {
		var enc lineprotocol.Encoder
		enc.StartLine("m")
		enc.AddField("u", lineprotocol.UintValue(math.MaxUint64))
		enc.EndLine(time.Time{})
		var p Parser
		var l Line
		_, err := p.Parse(bytes.TrimSuffix(enc.Bytes(), []byte("\n")), &l)
		var le *LineError
		if !errors.As(err, &le) || le.Reason != ReasonNumber || !strings.Contains(le.Msg, "overflows i64") {
			t.Fatalf("Parse(%q) = %v; want ReasonNumber overflows i64", enc.Bytes(), err)
		}
	})

	t.Run("the one ambiguous case reads the QuestDB way", func(t *testing.T) {
		// InfluxDB writes the symbol a\,b as a\\,b; a QuestDB client
		// writes the same bytes for a tag ending in a backslash followed
		// by another tag. Parse follows QuestDB (and InfluxDB's 1.x docs):
		// \\ is one backslash, so the comma separates.
		var enc lineprotocol.Encoder
		enc.StartLine("m")
		enc.AddTag("a", `x\,b`)
		enc.AddField("f", lineprotocol.MustNewValue(1.0))
		enc.EndLine(time.Time{})
		if got := string(enc.Bytes()); got != "m,a=x\\\\,b f=1\n" {
			t.Fatalf("InfluxDB encoder wrote %q; the premise of this test changed", got)
		}
		var p Parser
		var l Line
		_, err := p.Parse(bytes.TrimSuffix(enc.Bytes(), []byte("\n")), &l)
		var le *LineError
		if !errors.As(err, &le) || le.Reason != ReasonSyntax {
			t.Fatalf("Parse = %v; want the tag split at the comma and rejected as a syntax error", err)
		}
	})
}

func lpHasBackslash(l *Line) bool {
	if bytes.IndexByte(l.Measurement, '\\') >= 0 {
		return true
	}
	for _, t := range l.Tags {
		if bytes.IndexByte(t.Key, '\\') >= 0 || bytes.IndexByte(t.Value, '\\') >= 0 {
			return true
		}
	}
	for _, f := range l.Fields {
		if bytes.IndexByte(f.Key, '\\') >= 0 {
			return true
		}
	}
	return false
}

// lpInfluxDecode reads one line with InfluxDB's decoder into a Line.
func lpInfluxDecode(t *testing.T, b []byte) Line {
	t.Helper()
	dec := lineprotocol.NewDecoderWithBytes(b)
	if !dec.Next() {
		t.Fatalf("InfluxDB decoder found no line in %q", b)
	}
	m, err := dec.Measurement()
	if err != nil {
		t.Fatalf("InfluxDB decoder, %q: %v", b, err)
	}
	l := Line{Measurement: slices.Clone(m)}
	for {
		k, v, err := dec.NextTag()
		if err != nil {
			t.Fatalf("InfluxDB decoder, %q: %v", b, err)
		}
		if k == nil {
			break
		}
		l.Tags = append(l.Tags, Tag{Key: slices.Clone(k), Value: slices.Clone(v)})
	}
	for {
		k, v, err := dec.NextField()
		if err != nil {
			t.Fatalf("InfluxDB decoder, %q: %v", b, err)
		}
		if k == nil {
			break
		}
		f := Field{Key: slices.Clone(k)}
		switch v.Kind() {
		case lineprotocol.Float:
			f.Kind, f.F = KindFloat, v.FloatV()
		case lineprotocol.Int:
			f.Kind, f.I = KindInt, v.IntV()
		case lineprotocol.Uint:
			f.Kind, f.I = KindUint, int64(v.UintV())
		case lineprotocol.Bool:
			f.Kind, f.B = KindBool, v.BoolV()
		case lineprotocol.String:
			f.Kind, f.S = KindString, []byte(v.StringV())
		default:
			t.Fatalf("InfluxDB decoder read a %v field from %q", v.Kind(), b)
		}
		l.Fields = append(l.Fields, f)
	}
	ts, err := dec.TimeBytes()
	if err != nil {
		t.Fatalf("InfluxDB decoder, %q: %v", b, err)
	}
	if ts != nil {
		l.Ts, _ = strconv.ParseInt(string(ts), 10, 64)
		l.HasTs = true
	}
	return l
}

// lpGolden is what one data line of a golden file must parse to: a Line,
// or a rejection for a reason.
type lpGolden struct {
	want   Line
	reject Reason
}

// TestLineQuestDBClientGolden parses the byte fixtures under
// testdata/golden, which mirror what the QuestDB clients write (each file
// names the client, version and source file it was taken from), line by
// line, comments included.
func TestLineQuestDBClientGolden(t *testing.T) {
	const ts = 1700000000123456789
	symbols := []Tag{lpTag("city", "New York"), lpTag("pair", "a,b"), lpTag("expr", "x=y"), lpTag("path", `back\slash`)}
	tick := []Field{lpF("price", 100), lpF("tiny", 1.5e-7), lpF("big", 1e6), lpI("size", 123), lpB("buy", true), lpB("sell", false)}
	specials := []Field{lpF("nan", math.NaN()), lpF("pinf", math.Inf(1)), lpF("ninf", math.Inf(-1)), lpF("neg", -42.3),
		lpF("max", math.MaxFloat64), lpF("min", math.SmallestNonzeroFloat64), lpF("e99", 4.2e99)}
	ints := []Field{lpI("min", math.MinInt64), lpI("max", math.MaxInt64), lpI("zero", 0)}
	doubles := func(negZero bool) Line {
		z := 0.0
		if negZero {
			z = math.Copysign(0, -1)
		}
		return lpLine("doubles", nil, []Field{lpF("d0", 0), lpF("dm0", z), lpF("d1", 1), lpF("dE100", 1e100),
			lpF("d0000001", 1e-6), lpF("dN0000001", -1e-6)}, 0, false)
	}
	files := map[string][]lpGolden{
		"questdb-go-client.ilp": {
			{want: lpLine("trades", symbols, tick, ts, true)},
			{reject: ReasonNoField}, // symbols alone
			{reject: ReasonNoField},
			{want: lpLine("q", []Tag{lpTag("venue name", "x y")}, []Field{lpF("bid px=", 1.25)}, 0, false)},
			{want: lpLine("f", nil, specials, 1700000000000000000, true)},
			{want: lpLine("i", nil, ints, 0, false)},
			{want: lpLine("trades", []Tag{lpTag("sym", "AAPL")}, []Field{lpS("note", "hello, world"), lpF("price", 1.5)}, 0, false)},
		},
		"questdb-rust-client.ilp": {
			{want: lpLine("trades", symbols, tick, ts, true)},
			{reject: ReasonNoField},
			{want: lpLine("q", []Tag{lpTag("venue name", "x y")}, []Field{lpF("bid px=", 1.25)}, 0, false)},
			{want: lpLine("f", nil, specials, 1700000000000000000, true)},
			{want: lpLine("i", nil, ints, 0, false)},
		},
		"questdb-client-interop.ilp": {
			{want: lpLine("test_table", []Tag{lpTag("sym_col", "sym_val")},
				[]Field{lpS("str_col", "foo bar baz"), lpI("long_col", 42), lpF("double_col", 42.5), lpB("bool_col", true)}, 0, false)},
			{want: doubles(true)},
			{want: doubles(true)},
			{want: doubles(false)},
			{want: lpLine("test 1=2", nil, []Field{lpI("a_col", 42)}, 0, false)},
			{want: lpLine("foobar.csv", nil, []Field{lpB("a_col", false)}, 0, false)},
		},
	}
	for name, wants := range files {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "golden", name))
			if err != nil {
				t.Fatal(err)
			}
			var p Parser
			var l Line
			n := 0
			for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
				ok, err := p.Parse(line, &l)
				if !ok && err == nil {
					continue // comment or blank
				}
				if n == len(wants) {
					t.Fatalf("line %d: more data lines than expectations: %q", i+1, line)
				}
				w := wants[n]
				n++
				if w.reject != 0 {
					var le *LineError
					if !errors.As(err, &le) || le.Reason != w.reject {
						t.Errorf("line %d %q: got %v, %v; want a rejection for %s", i+1, line, ok, err, w.reject)
					}
					continue
				}
				if err != nil {
					t.Errorf("line %d %q: %v", i+1, line, err)
					continue
				}
				if !lpEqual(&l, &w.want) {
					t.Errorf("line %d %q:\n got %s\nwant %s", i+1, line, lpString(&l), lpString(&w.want))
				}
				// What we write back reads the same (tail
				// --format ilp into QuestDB relies on it).
				again := lpMustParse(t, strings.TrimSuffix(string(lpAppend(t, nil, &l)), "\n"))
				if !lpEqual(&again, &w.want) {
					t.Errorf("line %d: appendLine round trip gives %s", i+1, lpString(&again))
				}
			}
			if n != len(wants) {
				t.Fatalf("%d data lines; want %d", n, len(wants))
			}
		})
	}
}

// TestLineQuestDBInteropLineFeeds holds the interop cases whose values
// hold line feeds, verbatim from questdb/questdb-client-test
// ilp-client-interop-test.json at commit 112ca7708857d89702cd9a75352be2fb4b132682
// (result.line of "escaped chars in symbol", "escaped chars mixed with
// UTF-8 in symbol" and "escaped chars in string column"). A listener only
// hands such a line to Parse whole if it does not split at a line feed
// that a backslash escapes. The two symbol cases are rows of symbols
// alone, which tickdb rejects (no field); with a field added, their
// escapes read as the client meant them.
func TestLineQuestDBInteropLineFeeds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Line
	}{
		{"test_table,name\\ 1\\=2=value\\ 1\\,2\\=3\\\n4\\\r5\"6\\\\7",
			lpLine("test_table", []Tag{lpTag("name 1=2", "value 1,2=3\n4\r5\"6\\7")}, []Field{lpI("f", 1)}, 0, false)},
		{"таблица,имя\\ раз\\=два=значение\\ раз\\,два\\=три\\\nчетыре\\\rпять\"шесть\\\\семь",
			lpLine("таблица", []Tag{lpTag("имя раз=два", "значение раз,два=три\nчетыре\rпять\"шесть\\семь")}, []Field{lpI("f", 1)}, 0, false)},
	} {
		var p Parser
		var l Line
		_, err := p.Parse([]byte(c.in), &l)
		var le *LineError
		if !errors.As(err, &le) || le.Reason != ReasonNoField || le.Col != len(c.in)+1 {
			t.Errorf("Parse(%q) = %v; want ReasonNoField at byte %d", c.in, err, len(c.in)+1)
		}
		got := lpMustParse(t, c.in+" f=1i")
		if !lpEqual(&got, &c.want) {
			t.Errorf("got %s\nwant %s", lpString(&got), lpString(&c.want))
		}
	}
	got := lpMustParse(t, "test_table name\\ 1\\=2=\"value 1,2=3\\\n4\\\r5\\\"6\\\\7\"")
	want := lpLine("test_table", nil, []Field{lpS("name 1=2", "value 1,2=3\n4\r5\"6\\7")}, 0, false)
	if !lpEqual(&got, &want) {
		t.Errorf("string column: got %s\nwant %s", lpString(&got), lpString(&want))
	}
}

// A bad line keeps its measurement in the Line when it parsed, so that the
// rejection can name the table; nil when it did not.
func TestParseBadKeepsMeasurement(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"t,sym=S1", "t"},
		{`my\ t,sym=S1 5`, "my t"},
		{"t f=abc", "t"},
		{",a=b f=1", ""},
		{`t\`, ""},
	} {
		var p Parser
		l := Line{Measurement: []byte("stale")}
		if _, err := p.Parse([]byte(c.in), &l); err == nil || string(l.Measurement) != c.want {
			t.Errorf("Parse(%q) = %v, measurement %q; want an error and %q", c.in, err, l.Measurement, c.want)
		}
	}
}
