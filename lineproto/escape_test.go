package lineproto

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestAppendName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"AAPL", "AAPL"},
		{"", ""},
		{"New York, NY", `New\ York\,\ NY`},
		{"a=b", `a\=b`},
		{`back\slash`, `back\\slash`},
		{`ends\`, `ends\\`},
		{`q"uo"te`, `q"uo"te`},
		{"two\nlines\r\n", `two\nlines\r\n`},
		{"tab\tstays", "tab\tstays"},
		{"Zürich €", `Zürich\ €`},
		{`a,b=c d\e"f` + "\n", `a\,b\=c\ d\\e"f\n`},
	} {
		if got := string(AppendName([]byte("x|"), c.in)); got != "x|"+c.want {
			t.Errorf("AppendName(%q) = %q; want %q", c.in, got, "x|"+c.want)
		}
		if got := string(AppendName(nil, []byte(c.in))); got != c.want {
			t.Errorf("AppendName([]byte %q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestAppendQuoted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"halted", `"halted"`},
		{`say "hi", x=1 y`, `"say \"hi\", x=1 y"`},
		{`back\slash\`, `"back\\slash\\"`},
		{"a\nb\rc\td", `"a\nb\rc` + "\t" + `d"`},
	} {
		if got := string(AppendQuoted(nil, c.in)); got != c.want {
			t.Errorf("AppendQuoted(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// The readers undo the writers' escapes and the clients' other spellings;
// a backslash before any other byte stays.
func TestUnescape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`New\ York\,\ NY`, "New York, NY"},
		{`a\=b\\c`, `a=b\c`},
		{`two\nlines\r`, "two\nlines\r"},
		{"quest\\\ndb\\\r", "quest\ndb\r"}, // a QuestDB client's escaped raw breaks
		{`back\slash`, `back\slash`},       // InfluxDB's raw backslash
		{`keep\"quote\t`, `keep\"quote\t`},
		{`ends\`, `ends\`},
		{`\\\\`, `\\`},
	} {
		if got := string(AppendUnescapedName(nil, []byte(c.in))); got != c.want {
			t.Errorf("AppendUnescapedName(%q) = %q; want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`say \"hi\"`, `say "hi"`},
		{`a\\b\nc\rd\te`, "a\\b\nc\rd\te"},
		{"quest\\\ndb", "quest\ndb"},
		{`keep\,\ \=\x`, `keep\,\ \=\x`},
	} {
		if got := string(AppendUnescapedString(nil, []byte(c.in))); got != c.want {
			t.Errorf("AppendUnescapedString(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// Whatever the bytes, unescaping what the writer wrote gives them back:
// the writer escapes every byte the reader would read as an escape.
func TestEscapeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	alphabet := []byte("ab ,=\\\"\n\rnrt\t#é")
	for range 20_000 {
		in := make([]byte, rng.IntN(12))
		for i := range in {
			if rng.IntN(8) == 0 {
				in[i] = byte(rng.IntN(256))
			} else {
				in[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		name := AppendName(nil, in)
		if got := AppendUnescapedName(nil, name); !bytes.Equal(got, in) {
			t.Fatalf("name %q: written %q, read back %q", in, name, got)
		}
		if bytes.ContainsAny(name, "\r\n") {
			t.Fatalf("name %q written with a raw line break: %q", in, name)
		}
		q := AppendQuoted(nil, in)
		if got := AppendUnescapedString(nil, q[1:len(q)-1]); !bytes.Equal(got, in) {
			t.Fatalf("string %q: written %q, read back %q", in, q, got)
		}
		if bytes.ContainsAny(q, "\r\n") {
			t.Fatalf("string %q written with a raw line break: %q", in, q)
		}
	}
}

func TestEscapeTablesAgree(t *testing.T) {
	for c := range 256 {
		if e := nameEsc[c]; e != 0 {
			if u, ok := NameEscape(e); !ok || u != byte(c) {
				t.Errorf("name: %q is written as \\%c, which reads back as %q, %v", byte(c), e, u, ok)
			}
		}
		if e := strEsc[c]; e != 0 {
			if u, ok := StringEscape(e); !ok || u != byte(c) {
				t.Errorf("string: %q is written as \\%c, which reads back as %q, %v", byte(c), e, u, ok)
			}
		}
	}
}

func FuzzEscapeRoundTrip(f *testing.F) {
	f.Add([]byte(`a,b=c d\e"f` + "\n\r"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if got := AppendUnescapedName(nil, AppendName(nil, in)); !bytes.Equal(got, in) {
			t.Fatalf("name %q reads back as %q", in, got)
		}
		q := AppendQuoted(nil, in)
		if got := AppendUnescapedString(nil, q[1:len(q)-1]); !bytes.Equal(got, in) {
			t.Fatalf("string %q reads back as %q", in, got)
		}
	})
}
