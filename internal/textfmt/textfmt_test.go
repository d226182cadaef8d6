package textfmt

import "testing"

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", -1000: "-1,000", 1234567: "1,234,567",
		-999999: "-999,999", 9223372036854775807: "9,223,372,036,854,775,807", -9223372036854775808: "-9,223,372,036,854,775,808",
	} {
		if got := Commas(n); got != want {
			t.Errorf("Commas(%d) = %q, want %q", n, got, want)
		}
	}
}
