// Package textfmt formats numbers as tickdb's CLI and its messages print
// them.
package textfmt

import (
	"strconv"
	"strings"
)

// Commas formats n with thousands separators: 1,234,567.
func Commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
