package ingest

import (
	"bytes"
	"errors"
	"testing"
)

// lpFuzzSeeds start FuzzParse off at the corners of the grammar; more seeds,
// and anything the fuzzer finds, live under testdata/fuzz/FuzzParse.
var lpFuzzSeeds = []string{
	"trades,sym=AAPL,venue=XNAS price=189.25,size=100i,buy=t 1700000000123456789",
	`trades,city=New\ York,pair=a\,b,expr=x\=y,path=back\\slash price=100,tiny=1.5E-07,big=1E+06,size=123i,buy=t,sell=f 1700000000123456789`,
	`my\ meas\,ure=x,k\,\=\ x=w,path=back\slash f\,\==2.5,qty=7u,b=false -1`,
	"m,a=x\\\ny\\\rz f=1",
	"m,a=x\\\r",
	"m,a=b 123",
	"m nan=NaN,pinf=Infinity,ninf=-Infinity,z=-0,e=1e-400,big=1e308",
	"m a=9223372036854775807i,b=-9223372036854775808i,c=9223372036854775807u",
	`m f="a \"quoted\" string, with = signs",g=1`,
	"m a=1,a=2",
	"# comment",
	"   ",
	`m\`,
	"m f=1 9223372036854775807",
	"m f=0.12345678901234567891,g=.5,h=1.,i=+1.5",
	"таблица,имя=значение поле=t",
}

// FuzzParse checks that no input panics the parser, that every rejection
// is a well-formed *LineError, and that every accepted line survives
// format then parse unchanged (floats bitwise, NaN equal to NaN) and
// formats to the same bytes the second time.
//
// Run: go test ./ingest -run '^$' -fuzz FuzzParse -fuzztime 60s
func FuzzParse(f *testing.F) {
	for _, s := range lpFuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// A precision that overflows easily must not panic either.
		var ps Parser
		ps.Precision = 1_000_000_000
		var ls Line
		_, _ = ps.Parse(in, &ls)

		var p Parser
		var l Line
		ok, err := p.Parse(in, &l)
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, ErrBadLine) {
				t.Fatalf("Parse(%q) error %T %v; want a *LineError", in, err, err)
			}
			if ok || le.Reason < ReasonSyntax || le.Reason > ReasonDuplicate || le.Col < 1 || le.Col > len(in)+1 || le.Line != 0 || le.Msg == "" {
				t.Fatalf("Parse(%q) = %v, %+v; want ok=false, a parser reason, 1 <= Col <= %d, Line 0 and a message", in, ok, *le, len(in)+1)
			}
			return
		}
		if !ok {
			return
		}
		if len(l.Measurement) == 0 || len(l.Tags)+len(l.Fields) == 0 {
			t.Fatalf("Parse(%q) accepted %s", in, lpString(&l))
		}
		out := AppendLine(nil, &l)
		if len(out) == 0 || out[len(out)-1] != '\n' {
			t.Fatalf("AppendLine(%s) = %q; want a line ending in \\n", lpString(&l), out)
		}
		var p2 Parser
		var l2 Line
		ok2, err2 := p2.Parse(out[:len(out)-1], &l2)
		if !ok2 || err2 != nil {
			t.Fatalf("Parse(%q) = %s\nAppendLine = %q\nwhich Parse rejects: %v, %v", in, lpString(&l), out, ok2, err2)
		}
		if !lpEqual(&l, &l2) {
			t.Fatalf("Parse(%q) = %s\nAppendLine = %q\nwhich parses to %s", in, lpString(&l), out, lpString(&l2))
		}
		if out2 := AppendLine(nil, &l2); !bytes.Equal(out, out2) {
			t.Fatalf("formatting twice differs: %q then %q", out, out2)
		}
	})
}
