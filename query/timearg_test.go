package query_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/query"
)

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"2023-11-14T22:13:20Z", T0},
		{"2023-11-14T22:13:20.5Z", T0 + 500_000_000},
		{"2023-11-14T22:13:20.000000001Z", T0 + 1},
		{"2023-11-14T22:13:20.123456789Z", T0 + 123_456_789},
		{"2023-11-15T00:13:20+02:00", T0},
		{"2023-11-14T17:13:20.25-05:00", T0 + 250_000_000},
		{"2023-11-14t22:13:20z", T0},
		{"2023-11-14 22:13:20Z", T0},
		{"2023-11-14T22:13:20", T0},
		{"2023-11-14 22:13:20.5", T0 + 500_000_000},
		{"2023-11-14", T0 - (22*3600+13*60+20)*1_000_000_000},
		{"1970-01-01", 0},
		{"1969-12-31T23:59:59.999999999Z", -1},
		{"1700000000000000000", T0},
		{"0", 0},
		{"-1", -1},
		{"+5", 5},
		{"9223372036854775807", 1<<63 - 1},
		{"-9223372036854775808", -1 << 63},
		{"2262-04-11T23:47:16.854775807Z", 1<<63 - 1},
		{"1677-09-21T00:12:43.145224192Z", -1 << 63},
	} {
		got, err := query.ParseTime(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, msg string }{
		{"", "empty time"},
		{"yesterday", `time "yesterday" is not RFC 3339`},
		{"2023-13-01", `time "2023-13-01": month out of range`},
		{"2023-11-14T25:00:00Z", `time "2023-11-14T25:00:00Z": hour out of range`},
		{"2023-02-30", `time "2023-02-30": day out of range`},
		{"2023-11-14T22:13:20Zjunk", `time "2023-11-14T22:13:20Zjunk" is not RFC 3339`},
		{"2023-11-14T22:13", `time "2023-11-14T22:13" is not RFC 3339`},
		{"99999999999999999999", `time "99999999999999999999": integer ns out of the int64 range`},
		{"2300-01-01", `time "2300-01-01" is outside the range of int64 ns`},
		{"1600-01-01T00:00:00Z", `time "1600-01-01T00:00:00Z" is outside the range of int64 ns`},
		{"1e9", `time "1e9" is not RFC 3339`},
		{"-", `time "-" is not RFC 3339`},
		{" 5", `time " 5" is not RFC 3339`},
		{"17000000000.5", `time "17000000000.5" is not RFC 3339`},
	} {
		got, err := query.ParseTime(c.in)
		if err == nil {
			t.Errorf("ParseTime(%q) = %d, want an error", c.in, got)
			continue
		}
		if !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ParseTime(%q): %v; want ErrBadQuery with %q", c.in, err, c.msg)
		}
	}
}

func TestParseFormats(t *testing.T) {
	for _, s := range []string{"table", "csv", "json", "ilp"} {
		f, err := query.ParseFormat(s)
		if err != nil || f.String() != s {
			t.Errorf("ParseFormat(%q) = %v, %v", s, f, err)
		}
	}
	for _, s := range []string{"rfc3339", "ns"} {
		f, err := query.ParseTsFormat(s)
		if err != nil || f.String() != s {
			t.Errorf("ParseTsFormat(%q) = %v, %v", s, f, err)
		}
	}
	if _, err := query.ParseFormat("xml"); !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), `unknown format "xml" (want table, csv, json or ilp)`) {
		t.Errorf("ParseFormat(xml): %v", err)
	}
	if _, err := query.ParseFormat("CSV"); err == nil {
		t.Error("ParseFormat(CSV): no error")
	}
	if _, err := query.ParseTsFormat("ms"); !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), `unknown ts format "ms" (want rfc3339 or ns)`) {
		t.Errorf("ParseTsFormat(ms): %v", err)
	}
	// Usable as cobra/pflag flag values.
	var f query.Format
	var tsf query.TsFormat
	if f.String() != "table" || tsf.String() != "rfc3339" {
		t.Errorf("zero values: %v %v", f, tsf)
	}
	if err := f.Set("ilp"); err != nil || f != query.FormatILP || f.Type() == "" {
		t.Errorf("Set(ilp): %v %v", f, err)
	}
	if err := tsf.Set("bad"); err == nil || tsf != query.TsRFC3339 {
		t.Errorf("Set(bad): %v %v", tsf, err)
	}
}

// GuessUnit reads a seconds, ms or µs count of about now as that unit,
// and nothing else: not 1970 in every unit, not real ns, not negatives.
func TestGuessUnit(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	ns := now.UnixNano()
	for _, c := range []struct {
		v    int64
		want time.Duration
	}{
		{now.Unix(), time.Second}, {now.UnixMilli(), time.Millisecond}, {now.UnixMicro(), time.Microsecond},
		{time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Second},           // within 50 years before
		{time.Date(2070, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(), time.Microsecond}, // within 50 years after
		{time.Date(1970, 6, 1, 0, 0, 0, 0, time.UTC).Unix(), 0},                     // more than 50 years before
		{0, 0}, {5, 0}, {1000, 0}, {-now.Unix(), 0}, {ns, 0}, {1 << 62, 0}, {math.MaxInt64, 0},
	} {
		if got := query.GuessUnit(c.v, ns); got != c.want {
			t.Errorf("GuessUnit(%d) = %v, want %v", c.v, got, c.want)
		}
	}
	// ParseTime says so for a bare integer, and how to write it.
	_, err := query.ParseTime(fmt.Sprint(time.Now().Unix()))
	if err == nil || !errors.Is(err, query.ErrBadQuery) || !strings.Contains(err.Error(), "as seconds it is") {
		t.Errorf("ParseTime of seconds: %v", err)
	}
}
