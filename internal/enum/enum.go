// Package enum names the values of tickdb's small enumerations (output
// formats, ts formats, codecs): parsing a name, printing a value and the
// pflag methods, defined once for query's and export's option types.
package enum

import (
	"fmt"
	"strings"
)

// Names is the names of the values 0, 1, ... of an enumeration T. The zero
// Names is empty; New makes one. It is immutable, safe for concurrent use.
type Names[T ~uint8] struct {
	what  string   // "format", "ts format": in messages
	names []string // by value
	err   error    // matched by every Parse error
}

// New returns the names of T's values 0, 1, ..., in that order. what
// names the kind in messages ("unknown format \"xml\""), and err is the
// sentinel Parse's errors wrap (query.ErrBadQuery, say).
func New[T ~uint8](err error, what string, names ...string) Names[T] {
	return Names[T]{what: what, names: names, err: err}
}

// Parse returns the value named s. Any other s is an error wrapping the
// sentinel, naming s and the names it takes: `unknown format "xml"
// (want table, csv, json or ilp)`.
func (n Names[T]) Parse(s string) (T, error) {
	for v, name := range n.names {
		if s == name {
			return T(v), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown %s %q (want %s)", n.err, n.what, s, n.list())
}

// list is the names as a sentence: "a, b or c".
func (n Names[T]) list() string {
	if len(n.names) < 2 {
		return strings.Join(n.names, "")
	}
	return strings.Join(n.names[:len(n.names)-1], ", ") + " or " + n.names[len(n.names)-1]
}

// String returns v's name, as Parse takes it; a value without one prints
// as the kind and number: "format(9)".
func (n Names[T]) String(v T) string {
	if int(v) < len(n.names) {
		return n.names[v]
	}
	return fmt.Sprintf("%s(%d)", strings.ReplaceAll(n.what, " ", ""), uint8(v))
}

// Set parses s into *p, leaving *p as it was on error: a pflag.Value's
// Set.
func (n Names[T]) Set(p *T, s string) error {
	v, err := n.Parse(s)
	if err == nil {
		*p = v
	}
	return err
}

// Type is the names joined by "|", a pflag.Value's Type ("table|csv").
func (n Names[T]) Type() string { return strings.Join(n.names, "|") }
