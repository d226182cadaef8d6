package lineproto

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

func TestEncoderLines(t *testing.T) {
	var e Encoder[string]
	line := func(f func()) string {
		t.Helper()
		f()
		b, err := e.End(1700000000000000001)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range []struct {
		name string
		got  string
		want string
	}{
		{"tick", line(func() {
			e.Begin([]byte("old|"), "trades")
			e.Tag("sym", "AAPL")
			e.Float("price", 189.25)
			e.Int("size", -100)
			e.Uint("qty", math.MaxUint64)
			e.Bool("buy", true)
			e.Bool("sell", false)
		}), "old|trades,sym=AAPL price=189.25,size=-100i,qty=18446744073709551615u,buy=t,sell=f 1700000000000000001\n"},
		{"escapes", line(func() {
			e.Begin(nil, "my table,x=y")
			e.Tag("venue name", `a,b=c d\e"f`+"\n")
			e.Str("note", "say \"hi\"\n")
		}), `my\ table\,x\=y,venue\ name=a\,b\=c\ d\\e"f\n note="say \"hi\"\n" 1700000000000000001` + "\n"},
		{"floats", line(func() {
			e.Begin(nil, "f")
			for _, v := range []float64{100, 1.5e-7, 1e-6, 1500000, 1e21, 0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1)} {
				e.Float("v", v)
			}
		}), "f v=100,v=1.5e-07,v=0.000001,v=1500000,v=1e+21,v=0,v=-0,v=NaN,v=Infinity,v=-Infinity 1700000000000000001\n"},
		{"empty string field", line(func() {
			e.Begin(nil, "m")
			e.Str("s", "")
		}), `m s="" 1700000000000000001` + "\n"},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, c.got, c.want)
		}
	}
	e.Begin([]byte("x"), "m")
	e.Tag("sym", "A")
	e.Int("n", 1)
	if b, err := e.EndNow(); err != nil || string(b) != "xm,sym=A n=1i\n" {
		t.Errorf("EndNow = %q, %v", b, err)
	}
}

// A line the encoder cannot write so that it reads back as given is an
// error naming the fault, and leaves the buffer as it was.
func TestEncoderFaults(t *testing.T) {
	for _, c := range []struct {
		name string
		line func(e *Encoder[[]byte])
		err  error
		msg  string
	}{
		{"tags alone", func(e *Encoder[[]byte]) { e.Tag([]byte("sym"), []byte("A")) }, ErrNoField, "at least one field"},
		{"nothing", func(e *Encoder[[]byte]) {}, ErrNoField, "at least one field"},
		{"tag after field", func(e *Encoder[[]byte]) {
			e.Float([]byte("p"), 1)
			e.Tag([]byte("sym"), []byte("A"))
		}, ErrOrder, `tag "sym" comes after a field`},
		{"empty tag value", func(e *Encoder[[]byte]) {
			e.Tag([]byte("sym"), nil)
			e.Float([]byte("p"), 1)
		}, ErrName, `tag "sym" has an empty value`},
		{"empty tag key", func(e *Encoder[[]byte]) { e.Tag(nil, []byte("A")); e.Float([]byte("p"), 1) }, ErrName, "tag key is empty"},
		{"empty field key", func(e *Encoder[[]byte]) { e.Float(nil, 1) }, ErrName, "field key is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e Encoder[[]byte]
			e.Begin([]byte("kept\n"), []byte("m"))
			c.line(&e)
			b, err := e.End(5)
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) || string(b) != "kept\n" {
				t.Fatalf("End = %q, %v; want %q, an error %v saying %q", b, err, "kept\n", c.err, c.msg)
			}
		})
	}
	for _, m := range []string{"", "#comment", "\tm"} {
		var e Encoder[string]
		e.Begin(nil, m)
		e.Float("f", 1)
		if b, err := e.End(1); !errors.Is(err, ErrName) || len(b) != 0 {
			t.Errorf("measurement %q: End = %q, %v; want nothing and ErrName", m, b, err)
		}
	}
}

// What InfluxDB's own decoder (github.com/influxdata/line-protocol/v2
// v2.2.1) reads from the encoder's lines for symbols with every byte the
// rule escapes: it accepts each line; it reads spaces, commas, equals
// signs and quotes exactly, and a line break or a backslash as the
// escape's two characters (it has no escape for either in a tag).
func TestEncoderInfluxDBAccepts(t *testing.T) {
	for _, c := range []struct{ sym, influx string }{
		{"New York, NY", "New York, NY"},
		{"a=b c", "a=b c"},
		{`say "hi"`, `say "hi"`},
		{`back\slash`, `back\\slash`},
		{"two\nlines", `two\nlines`},
		{"cr\rlf\n", `cr\rlf\n`},
		{`a,b=c d\e"f` + "\n", `a,b=c d\\e"f\n`},
	} {
		var e Encoder[string]
		e.Begin(nil, "trades")
		e.Tag("sym", c.sym)
		e.Float("price", 1.5)
		e.Str("note", c.sym)
		b, err := e.End(1700000000000000000)
		if err != nil {
			t.Fatal(err)
		}
		dec := lineprotocol.NewDecoderWithBytes(b)
		if !dec.Next() {
			t.Fatalf("%q: InfluxDB found no line", b)
		}
		m, err := dec.Measurement()
		if err != nil || string(m) != "trades" {
			t.Fatalf("%q: measurement %q, %v", b, m, err)
		}
		k, v, err := dec.NextTag()
		if err != nil || string(k) != "sym" || string(v) != c.influx {
			t.Errorf("%q: InfluxDB read tag %q=%q, %v; want sym=%q", b, k, v, err, c.influx)
		}
		var fields []string
		for {
			k, v, err := dec.NextField()
			if err != nil {
				t.Fatalf("%q: InfluxDB: %v", b, err)
			}
			if k == nil {
				break
			}
			fields = append(fields, string(k)+"="+v.String())
			if string(k) == "note" && v.StringV() != c.sym {
				t.Errorf("%q: InfluxDB read the string %q; want %q", b, v.StringV(), c.sym)
			}
		}
		if len(fields) != 2 {
			t.Errorf("%q: InfluxDB read fields %q", b, fields)
		}
		if ts, err := dec.Time(lineprotocol.Nanosecond, time.Time{}); err != nil || ts.UnixNano() != 1700000000000000000 {
			t.Errorf("%q: InfluxDB read time %v, %v", b, ts, err)
		}
	}
}

// A symbol ending in a backslash is the one InfluxDB cannot read back
// (its own encoder refuses to write one): its decoder rejects the line.
func TestEncoderInfluxDBRejectsTrailingBackslash(t *testing.T) {
	var e Encoder[string]
	e.Begin(nil, "trades")
	e.Tag("sym", `ends\`)
	e.Float("price", 1.5)
	b, err := e.End(1)
	if err != nil || string(b) != `trades,sym=ends\\ price=1.5 1`+"\n" {
		t.Fatalf("End = %q, %v", b, err)
	}
	dec := lineprotocol.NewDecoderWithBytes(b)
	dec.Next()
	if _, err := dec.Measurement(); err != nil {
		t.Fatal(err)
	}
	if k, v, err := dec.NextTag(); err == nil {
		if _, _, err = dec.NextTag(); err == nil {
			t.Fatalf("%q: InfluxDB read tag %q=%q and no error; the docs say it rejects the line", b, k, v)
		}
	}
}

func TestEncoderAllocsZero(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	buf := make([]byte, 0, 1024)
	var es Encoder[string]
	if n := testing.AllocsPerRun(200, func() {
		es.Begin(buf[:0], "trades")
		es.Tag("sym", "New York, NY\n")
		es.Float("price", 189.25)
		es.Float("tiny", 1.5e-300)
		es.Int("size", 100)
		es.Uint("qty", 7)
		es.Bool("buy", true)
		es.Str("note", `say "hi"`)
		buf, _ = es.End(1700000000000000001)
	}); n != 0 {
		t.Errorf("Encoder[string] allocates %v times per line; want 0", n)
	}
	var eb Encoder[[]byte]
	meas, key, sym := []byte("trades"), []byte("sym"), []byte(`a,b=c d\e"f`)
	if n := testing.AllocsPerRun(200, func() {
		eb.Begin(buf[:0], meas)
		eb.Tag(key, sym)
		eb.Float(key[:2], 1.5)
		buf, _ = eb.EndNow()
	}); n != 0 {
		t.Errorf("Encoder[[]byte] allocates %v times per line; want 0", n)
	}
}
