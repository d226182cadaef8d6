package enum

import (
	"errors"
	"testing"
)

type color uint8

var errBad = errors.New("bad")

func TestNames(t *testing.T) {
	n := New[color](errBad, "ts format", "red", "green", "blue")
	for i, name := range []string{"red", "green", "blue"} {
		v, err := n.Parse(name)
		if err != nil || v != color(i) || n.String(v) != name {
			t.Errorf("Parse(%q) = %d, %v; String %q", name, v, err, n.String(v))
		}
	}
	_, err := n.Parse("Red")
	if !errors.Is(err, errBad) || err.Error() != `bad: unknown ts format "Red" (want red, green or blue)` {
		t.Errorf("Parse(Red): %v", err)
	}
	if s := n.String(7); s != "tsformat(7)" {
		t.Errorf("String(7) = %q", s)
	}
	if s := n.Type(); s != "red|green|blue" {
		t.Errorf("Type() = %q", s)
	}
	c := color(2)
	if err := n.Set(&c, "nope"); err == nil || c != 2 {
		t.Errorf("Set(nope): %v, left %d", err, c)
	}
	if err := n.Set(&c, "green"); err != nil || c != 1 {
		t.Errorf("Set(green): %v, %d", err, c)
	}
	two := New[color](errBad, "codec", "a", "b")
	if _, err := two.Parse("c"); err.Error() != `bad: unknown codec "c" (want a or b)` {
		t.Errorf("two names: %v", err)
	}
}
