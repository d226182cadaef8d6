package query

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The instants an int64 count of ns since the epoch can name.
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// Layouts ParseTime tries, after upper-casing (RFC 3339 allows "t" and
// "z"). Parsing accepts a fractional second after the seconds even though
// the layouts do not show one.
var timeLayouts = [...]string{
	time.RFC3339,                // 2024-01-02T15:04:05.123Z, 2024-01-02T15:04:05+02:00
	"2006-01-02 15:04:05Z07:00", // RFC 3339 §5.6 lets a space stand for the T
	"2006-01-02T15:04:05",       // no offset: UTC, as QuestDB and kdb+ read it
	"2006-01-02 15:04:05",
	time.DateOnly, // midnight UTC
}

// ParseTime parses a --from/--to value into ns since the Unix epoch: RFC
// 3339 with or without fractional seconds and with any offset (no offset
// means UTC), a bare date YYYY-MM-DD (midnight UTC), or an integer count of
// nanoseconds (an optional sign, then digits only: "20240102" is 20,240,102
// ns, not a date). The instant must lie within int64 nanoseconds
// (1677-09-21 to 2262-04-11). An integer that GuessUnit reads as seconds,
// milliseconds or microseconds (1796455100: 1.8 s after the epoch as ns,
// but today as seconds) is an error that says so and how to write the time
// meant, rather than a silent 1970; a time in those first weeks of 1970 is
// written in RFC 3339. Errors name the value and match ErrBadQuery.
func ParseTime(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty time (want RFC 3339, a date YYYY-MM-DD or integer ns since the epoch)", ErrBadQuery)
	}
	if isInteger(s) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: time %q: integer ns out of the int64 range", ErrBadQuery, s)
		}
		if u := GuessUnit(v, time.Now().UnixNano()); u != 0 {
			meant := v * int64(u)
			return 0, fmt.Errorf("%w: time %q is integer ns, %s; as %s it is %s: write %d (ns) or %s (or, for %s itself, that)",
				ErrBadQuery, s, FormatNs(v), UnitName(u), FormatNs(meant), meant, FormatNs(meant), FormatNs(v))
		}
		return v, nil
	}
	u := strings.ToUpper(s)
	var reason string
	for _, l := range timeLayouts {
		t, err := time.Parse(l, u)
		if err != nil {
			// A range message means the value has a layout's shape but
			// a field is wrong: "month out of range".
			var pe *time.ParseError
			if reason == "" && errors.As(err, &pe) && strings.HasSuffix(pe.Message, "out of range") {
				reason = strings.TrimPrefix(pe.Message, ": ")
			}
			continue
		}
		if t.Before(minTime) || t.After(maxTime) {
			return 0, fmt.Errorf("%w: time %q is outside the range of int64 ns since the epoch (%s to %s)",
				ErrBadQuery, s, minTime.Format(time.RFC3339Nano), maxTime.Format(time.RFC3339Nano))
		}
		return t.UnixNano(), nil
	}
	if reason != "" {
		return 0, fmt.Errorf("%w: time %q: %s", ErrBadQuery, s, reason)
	}
	return 0, fmt.Errorf("%w: time %q is not RFC 3339 (2024-01-02T15:04:05Z, 2024-01-02T15:04:05.5+02:00), a date (2024-01-02) or integer ns since the epoch", ErrBadQuery, s)
}

// isInteger reports whether s is an optional sign followed by digits.
func isInteger(s string) bool {
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// UnitWindow is how near the clock an integer timestamp must read, taken
// as seconds, milliseconds or microseconds, for GuessUnit to call it one of
// those: about 50 years either side. Taken as ns, any such value lies in
// the first weeks of 1970 (before about 1970-02-08), and the three
// readings never overlap (each unit is 1,000 times the next, the window's
// ends are far less than 1,000 times apart).
const UnitWindow = 50 * 8766 * time.Hour

// GuessUnit reports the unit a timestamp given as ns really seems to be
// in: time.Second, time.Millisecond or time.Microsecond when ns is
// positive and, multiplied by that unit, lies within UnitWindow of now
// (ns since the epoch); 0 otherwise. 5 or 1,000 ns read as 1970 in every
// unit and give 0.
func GuessUnit(ns, now int64) time.Duration {
	if ns <= 0 {
		return 0
	}
	lo, hi := now-int64(UnitWindow), now+int64(UnitWindow)
	for _, u := range [...]time.Duration{time.Second, time.Millisecond, time.Microsecond} {
		if ns > math.MaxInt64/int64(u) {
			continue
		}
		if v := ns * int64(u); v >= lo && v <= hi {
			return u
		}
	}
	return 0
}

// UnitName is a unit's name in messages: "seconds", "milliseconds",
// "microseconds" or "nanoseconds".
func UnitName(u time.Duration) string {
	switch u {
	case time.Second:
		return "seconds"
	case time.Millisecond:
		return "milliseconds"
	case time.Microsecond:
		return "microseconds"
	case time.Nanosecond:
		return "nanoseconds"
	}
	return u.String()
}

// FormatNs writes ns since the epoch as RFC 3339 in UTC with as many
// fractional digits as it needs.
func FormatNs(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// CheckRange is the error of a time range whose from (inclusive) lies
// after its to (exclusive), each bound only when its flag is set: it
// names both times, so that a swapped pair a person typed is an error
// rather than an empty answer. from == to is an empty range, not an
// error. It matches ErrBadQuery. The CLI and the HTTP API check their
// arguments with it; Run, Bars and AsOf themselves answer such a range
// with no rows, as any empty range, for programs that compute ranges.
func CheckRange(from int64, hasFrom bool, to int64, hasTo bool) error {
	if hasFrom && hasTo && from > to {
		return fmt.Errorf("%w: from %s is after to %s (from is inclusive, to exclusive: swap them?)",
			ErrBadQuery, FormatNs(from), FormatNs(to))
	}
	return nil
}
