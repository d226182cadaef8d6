package ingest

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/tickdb/tickdb/lineproto"
)

// A record decodes to the Line it was encoded from, and fillRecord's
// reading of the header agrees with decodeRecord's.
func TestRecordRoundTrip(t *testing.T) {
	lines := []lineproto.Line{
		{Measurement: []byte("t"), Fields: []lineproto.Field{{Key: []byte("v"), Kind: lineproto.KindFloat, F: 1.5}}},
		{Measurement: []byte("trades"), Tags: []lineproto.Tag{{Key: []byte("sym"), Value: []byte("New York")}, {Key: []byte("venue"), Value: []byte("")}},
			Fields: []lineproto.Field{{Key: []byte("px"), Kind: lineproto.KindFloat, F: math.Inf(-1)}, {Key: []byte("n"), Kind: lineproto.KindInt, I: -7},
				{Key: []byte("u"), Kind: lineproto.KindUint, I: math.MaxInt64}, {Key: []byte("ok"), Kind: lineproto.KindBool, B: true}},
			Ts: -5, HasTs: true},
		{Measurement: []byte("only_tags"), Tags: []lineproto.Tag{{Key: []byte("a"), Value: []byte("b")}}, Ts: 1 << 62, HasTs: true},
		{Measurement: []byte("strings"), Tags: []lineproto.Tag{{Key: []byte("sym"), Value: []byte("A")}},
			Fields: []lineproto.Field{{Key: []byte("note"), Kind: lineproto.KindString, S: []byte("say \"hi\"\n")}, {Key: []byte("px"), Kind: lineproto.KindFloat, F: 2},
				{Key: []byte("empty"), Kind: lineproto.KindString, S: []byte{}}, {Key: []byte("b"), Kind: lineproto.KindBool}}},
	}
	var buf []byte
	for i := range lines {
		buf = appendRecord(buf, &lines[i], uint32(i+7), uint64(i+100))
	}
	var got lineproto.Line
	var m recordMeta
	for i, p := 0, 0; p < len(buf); i++ {
		n := decodeRecord(buf[p:], &got, &m)
		if n != recordLen(buf[p:]) || n != recordSize(&lines[i]) {
			t.Fatalf("record %d: length %d, header %d, size %d", i, n, recordLen(buf[p:]), recordSize(&lines[i]))
		}
		want := lines[i]
		norm := func(l *lineproto.Line) lineproto.Line {
			c := *l
			if len(c.Tags) == 0 {
				c.Tags = nil
			}
			if len(c.Fields) == 0 {
				c.Fields = nil
			}
			return c
		}
		if !reflect.DeepEqual(norm(&got), norm(&want)) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, got, want)
		}
		if m.conn != uint32(i+7) || m.lineNo != uint64(i+100) {
			t.Fatalf("record %d: meta %+v", i, m)
		}
		if _, rej := recordRejected(buf[p:]); rej {
			t.Fatalf("record %d reads as a rejected line", i)
		}
		if ts, has := recordTs(buf[p:]); ts != want.Ts || has != want.HasTs {
			t.Fatalf("record %d: recordTs %d %v", i, ts, has)
		}
		if string(recordMeasurement(buf[p:])) != string(want.Measurement) {
			t.Fatalf("record %d: measurement %q", i, recordMeasurement(buf[p:]))
		}
		p += n
	}
}

func TestLineEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", -1},
		{"abc", -1},
		{"abc\n", 3},
		{"a,s=x\\\ny v=1\nnext", 12}, // escaped line break in a symbol
		{"a,s=x\\\\\nnext", 7},       // an escaped backslash, then the end
		{"a,s=x\\\\\\\nb\n", 10},     // three backslashes: escaped
		{"\\\n", -1},
	} {
		if got := lineEnd([]byte(tc.in)); got != tc.want {
			t.Errorf("lineEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// A rejected record carries its measurement and reason, and is told apart
// from the records around it.
func TestRejectRecord(t *testing.T) {
	good := lineproto.Line{Measurement: []byte("t"), Fields: []lineproto.Field{{Key: []byte("v"), Kind: lineproto.KindFloat, F: 1}}}
	buf := appendRecord(nil, &good, 1, 1)
	buf = appendRejectRecord(buf, []byte("t"), lineproto.ReasonNoField, 1, 2)
	buf = appendRejectRecord(buf, nil, lineproto.ReasonSyntax, 1, 3)
	buf = appendRecord(buf, &good, 1, 4)
	var got []string
	for p := 0; p < len(buf); p += recordLen(buf[p:]) {
		r, rej := recordRejected(buf[p:])
		got = append(got, fmt.Sprintf("%v %s %q", rej, r, recordMeasurement(buf[p:])))
	}
	want := []string{`false unknown "t"`, `true no_field "t"`, `true syntax ""`, `false unknown "t"`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records %q, want %q", got, want)
	}
}
