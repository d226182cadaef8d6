package main

// Formatting helpers for the CLI's human-readable reports and flags.

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tickdb/tickdb/internal/textfmt"
)

// byteSize is a flag value in bytes that accepts K, M and G suffixes
// (powers of 1024, with or without "i" and "B").
type byteSize int64

func (b *byteSize) String() string { return fmtBytes(int64(*b)) }

func (b *byteSize) Type() string { return "size" }

func (b *byteSize) Set(s string) error {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mul := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mul, t = 1<<10, t[:n-1]
		case 'M':
			mul, t = 1<<20, t[:n-1]
		case 'G':
			mul, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || v <= 0 || v > math.MaxInt64/mul {
		return fmt.Errorf("%q is not a size (bytes, or a number with K, M or G)", s)
	}
	*b = byteSize(v * mul)
	return nil
}

// byteSizeZero is byteSize that also takes 0, for a flag whose 0 means
// none (--hot-bytes).
type byteSizeZero byteSize

func (b *byteSizeZero) String() string { return (*byteSize)(b).String() }

func (b *byteSizeZero) Type() string { return "size" }

func (b *byteSizeZero) Set(s string) error {
	if strings.TrimSpace(s) == "0" {
		*b = 0
		return nil
	}
	return (*byteSize)(b).Set(s)
}

// kv prints one "label  value  note" line of a report section.
func kv(out io.Writer, label, value, note string) {
	cells(out, []int{-32, 14}, "  "+label, value, note)
}

// cells prints one table line: each cell padded to its width (negative:
// left-aligned) in runes, not bytes, since "µs" and "→" are multi-byte;
// cells past the widths follow after two spaces; trailing blanks trimmed.
func cells(out io.Writer, widths []int, cs ...string) {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i >= len(widths) {
			if c != "" {
				b.WriteString(" " + c)
			}
			continue
		}
		w := widths[i]
		pad := strings.Repeat(" ", max(abs(w)-utf8.RuneCountInString(c), 0))
		if w < 0 {
			b.WriteString(c + pad)
		} else {
			b.WriteString(pad + c)
		}
	}
	fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// commas formats n with thousands separators.
func commas(n int64) string { return textfmt.Commas(n) }

// fmtNs formats a duration in ns with three significant digits.
func fmtNs(ns int64) string {
	switch v := float64(ns); {
	case ns < 1000:
		return fmt.Sprintf("%d ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.3g µs", v/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.3g ms", v/1e6)
	default:
		return fmt.Sprintf("%.3g s", v/1e9)
	}
}

// fmtRate formats a per-second rate with a k/M/G suffix.
func fmtRate(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3g G", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3g M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3g k", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

// fmtBytes formats a byte count in binary units.
func fmtBytes(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k && n%(k*k*k) == 0:
		return fmt.Sprintf("%d GiB", n/(k*k*k))
	case n >= k*k*k:
		return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
	case n >= k*k && n%(k*k) == 0:
		return fmt.Sprintf("%d MiB", n/(k*k))
	case n >= k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	case n >= k && n%k == 0:
		return fmt.Sprintf("%d KiB", n/k)
	case n >= k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d B", n)
}
