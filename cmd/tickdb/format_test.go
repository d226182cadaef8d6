package main

import (
	"bytes"
	"testing"
)

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "64K": 64 << 10, "16MiB": 16 << 20, "2g": 2 << 30, "1 MB": 1 << 20} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, int64(b), err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "K", "1.5M", "9999999999G"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, int64(b))
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{commas(0), "0"}, {commas(999), "999"}, {commas(1000), "1,000"}, {commas(-1234567), "-1,234,567"},
		{fmtNs(999), "999 ns"}, {fmtNs(1234), "1.23 µs"}, {fmtNs(25_300_000), "25.3 ms"}, {fmtNs(2e9), "2 s"},
		{fmtBytes(16 << 20), "16 MiB"}, {fmtBytes(1536), "1.5 KiB"}, {fmtBytes(10), "10 B"},
		{fmtRate(88e6), "88 M"}, {fmtRate(1500), "1.5 k"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	var b bytes.Buffer
	cells(&b, []int{-6, 6}, "µs", "→", "note")
	if got := b.String(); got != "µs          →  note\n" {
		t.Errorf("cells: %q", got)
	}
}
