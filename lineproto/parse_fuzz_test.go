package lineproto

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
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
// Run: go test ./lineproto -run '^$' -fuzz FuzzParse -fuzztime 60s
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
			if ok || le.Reason < ReasonSyntax || le.Reason > ReasonNoField || le.Col < 1 || le.Col > len(in)+1 || le.Line != 0 || le.Msg == "" {
				t.Fatalf("Parse(%q) = %v, %+v; want ok=false, a parser reason, 1 <= Col <= %d, Line 0 and a message", in, ok, *le, len(in)+1)
			}
			return
		}
		if !ok {
			return
		}
		if len(l.Measurement) == 0 || len(l.Fields) == 0 {
			t.Fatalf("Parse(%q) accepted %s", in, lpString(&l))
		}
		out, err := appendLine(nil, &l)
		if err != nil || len(out) == 0 || out[len(out)-1] != '\n' {
			t.Fatalf("appendLine(%s) = %q, %v; want a line ending in \\n", lpString(&l), out, err)
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
		if out2, _ := appendLine(nil, &l2); !bytes.Equal(out, out2) {
			t.Fatalf("formatting twice differs: %q then %q", out, out2)
		}
	})
}

// The randomized property tests of the hand-written fast paths, each
// against a plain reference, with fixed seeds.

// TestParseFloatMatchesStrconv checks the hand-written fast path against
// strconv, bitwise, on random decimal spellings (fixed seed).
func TestParseFloatMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b []byte
	for n := 0; n < 200_000; n++ {
		b = b[:0]
		if rng.IntN(3) == 0 {
			b = append(b, '-')
		}
		digits := 1 + rng.IntN(20)
		dot := rng.IntN(digits + 2)
		for i := range digits {
			if i == dot {
				b = append(b, '.')
			}
			b = append(b, byte('0'+rng.IntN(10)))
		}
		if dot == digits {
			b = append(b, '.')
		}
		if rng.IntN(2) == 0 {
			b = append(b, "eE"[rng.IntN(2)])
			b = strconv.AppendInt(b, int64(rng.IntN(70)-35), 10)
		}
		want, werr := strconv.ParseFloat(string(b), 64)
		got, r := parseFloat(b)
		if werr != nil || r != intOK || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseFloat(%q) = %v (%x), %d; strconv gives %v (%x), %v", b, got, got, r, want, want, werr)
		}
	}
}

// TestParseIntMatchesStrconv checks the hand-written integer parser, and
// its eight-digits-at-a-time path, against strconv on every length.
func TestParseIntMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var b []byte
	for n := 0; n < 200_000; n++ {
		b = b[:0]
		switch rng.IntN(4) {
		case 0:
			b = append(b, '-')
		case 1:
			b = append(b, '+')
		}
		digits := 1 + rng.IntN(21)
		for range digits {
			b = append(b, byte('0'+rng.IntN(10)))
		}
		if rng.IntN(8) == 0 { // a non-digit somewhere, often inside an 8-byte word
			b[rng.IntN(len(b))] = "x/:. \x00\xff9"[rng.IntN(8)]
		}
		want, werr := strconv.ParseInt(string(b), 10, 64)
		got, r := parseInt(b)
		var ne *strconv.NumError
		switch {
		case werr == nil:
			if r != intOK || got != want {
				t.Fatalf("parseInt(%q) = %d, %d; want %d", b, got, r, want)
			}
		case errors.As(werr, &ne) && ne.Err == strconv.ErrRange && !bytes.ContainsFunc(b[1:], func(r rune) bool { return r < '0' || r > '9' }):
			if r != intRange {
				t.Fatalf("parseInt(%q) = %d, %d; want a range error", b, got, r)
			}
		default: // strconv stops at an overflow before a later bad byte; either error will do
			if r == intOK {
				t.Fatalf("parseInt(%q) = %d, ok; want an error", b, got)
			}
		}
	}
}

// TestParseQuickValueAgrees checks the one-pass value parser against the
// general one on random values of the forms it takes, and of forms near
// them that it must hand over.
func TestParseQuickValueAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var b []byte
	for n := 0; n < 200_000; n++ {
		b = b[:0]
		if rng.IntN(3) == 0 {
			b = append(b, "-+"[rng.IntN(2)])
		}
		for range rng.IntN(20) {
			b = append(b, byte('0'+rng.IntN(10)))
		}
		switch rng.IntN(6) {
		case 0:
			b = append(b, 'i')
		case 1:
			b = append(b, 'u')
		case 2, 3:
			b = append(b, '.')
			for range rng.IntN(10) {
				b = append(b, byte('0'+rng.IntN(10)))
			}
		case 4:
			b = append(b, "tfTe."[rng.IntN(5)])
		}
		end := len(b)
		b = append(b, ",  "[rng.IntN(3)], 'x')
		var quick, full Field
		ve := quickValue(b, 0, &quick)
		if ve < 0 {
			continue
		}
		if ve != end {
			t.Fatalf("quickValue(%q) ends at %d; want %d", b, ve, end)
		}
		if r, msg := parseValue(b[:end], &full); r != 0 {
			t.Fatalf("quickValue(%q) accepted what parseValue rejects: %s", b[:end], msg)
		}
		ql, fl := Line{Fields: []Field{quick}}, Line{Fields: []Field{full}}
		if !lpEqual(&ql, &fl) {
			t.Fatalf("value %q: quickValue %s, parseValue %s", b[:end], lpString(&ql), lpString(&fl))
		}
	}
}

// TestParsePlainEndMatchesByteLoop checks the eight-bytes-at-a-time name
// scanner against a plain byte loop, on random lines made of the bytes
// that matter to it: separators, near misses (tab, other control bytes,
// '<', '>', '!'), UTF-8 and letters.
func TestParsePlainEndMatchesByteLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	alphabet := []byte(",= \\\r\n\t\x00\x1f!<>+-.:;_azAZ09\x7f\x80\xd0\xb8\xff")
	line := make([]byte, 0, 40)
	for n := 0; n < 300_000; n++ {
		line = line[:0]
		for range rng.IntN(40) {
			if rng.IntN(3) == 0 {
				line = append(line, alphabet[rng.IntN(len(alphabet))])
			} else {
				line = append(line, byte('a'+rng.IntN(26)))
			}
		}
		for _, stop := range []uint8{stopMeas, stopKey} {
			for i := 0; i <= len(line); i++ {
				want := len(line)
				for j := i; j < len(line); j++ {
					if class[line[j]]&stop != 0 {
						want = j
						break
					}
				}
				if got := plainEnd(line, i, stop); got != want {
					t.Fatalf("plainEnd(%q, %d, %b) = %d; want %d", line, i, stop, got, want)
				}
			}
		}
	}
}

// ParseInt and ParseFloat, the number spellings for other readers (load's
// CSV cells), take what the field parser takes and say why not otherwise.
func TestParseNumbersExported(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  error
	}{
		{"0", 0, nil}, {"-9223372036854775808", math.MinInt64, nil}, {"+12", 12, nil},
		{"9223372036854775808", 0, strconv.ErrRange}, {"1_000", 0, strconv.ErrSyntax},
		{"0x10", 0, strconv.ErrSyntax}, {"", 0, strconv.ErrSyntax}, {"1.5", 0, strconv.ErrSyntax},
	} {
		if got, err := ParseInt([]byte(c.in)); got != c.want || err != c.err {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, got, err, c.want, c.err)
		}
	}
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1.5", 1.5, true}, {"-2.5e-3", -2.5e-3, true}, {".5", 0.5, true}, {"1e400", 0, false},
		{"NaN", math.NaN(), true}, {"-Infinity", math.Inf(-1), true}, {"inf", math.Inf(1), true},
		{"0x1p3", 0, false}, {"1_0", 0, false}, {"", 0, false}, {"abc", 0, false},
	} {
		got, err := ParseFloat([]byte(c.in))
		if (err == nil) != c.ok || c.ok && math.Float64bits(got) != math.Float64bits(c.want) && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v (ok %v)", c.in, got, err, c.want, c.ok)
		}
		if err != nil && err != strconv.ErrSyntax {
			t.Errorf("ParseFloat(%q) error %v; want strconv.ErrSyntax", c.in, err)
		}
	}
	if testutil.Race {
		return
	}
	b := []byte("-123456789.125")
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseFloat(b); _, _ = ParseInt(b[:10]) }); n != 0 {
		t.Errorf("ParseFloat and ParseInt allocate %v times; want 0", n)
	}
}
