package load

// The ts cells of CSV files: integer ns, or the RFC 3339 shapes, parsed by
// hand in the common case (parseTimeFast) and by query.ParseTime else.

import (
	"fmt"
	"math"
	"strings"

	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/query"
)

// parseCSVTime reads a ts cell: integer ns, or a time query.ParseTime
// takes, the common RFC 3339 shapes without it. A bad cell gives a message.
func parseCSVTime(b []byte) (int64, string) {
	if c := b[0]; c >= '0' && c <= '9' || c == '-' || c == '+' {
		if ts, err := lineproto.ParseInt(b); err == nil {
			return ts, ""
		}
		if ts, ok := parseTimeFast(b); ok {
			return ts, ""
		}
	}
	ts, err := query.ParseTime(string(b))
	if err != nil {
		return 0, strings.TrimPrefix(err.Error(), query.ErrBadQuery.Error()+": ")
	}
	return ts, ""
}

// parseCSVTimeIn is parseCSVTime with integer cells counted in unit ns
// (Options.TsUnit; 1: ns). RFC 3339 cells say their own time.
func parseCSVTimeIn(b []byte, unit int64) (int64, string) {
	if c := b[0]; unit > 1 && (c >= '0' && c <= '9' || c == '-' || c == '+') {
		if v, err := lineproto.ParseInt(b); err == nil {
			if v > math.MaxInt64/unit || v < math.MinInt64/unit {
				return 0, fmt.Sprintf("%s in units of %d ns overflows i64 ns", snippet(b), unit)
			}
			return v * unit, ""
		}
	}
	return parseCSVTime(b)
}

// parseTimeFast parses the common RFC 3339 shapes by hand, as query.ParseTime
// would, at a fraction of time.Parse's cost: 2006-01-02T15:04:05, then an
// optional fraction of 1 to 9 digits after a '.', then Z, ±hh:mm or nothing
// (UTC); the T may be a t or a space and the Z a z. It reports false for
// anything else, and for years outside 1700..2200 (whose instants could
// leave int64 ns), leaving those to query.ParseTime.
func parseTimeFast(b []byte) (int64, bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	if c := b[10]; c != 'T' && c != 't' && c != ' ' {
		return 0, false
	}
	y := digits2(b[0:2])*100 + digits2(b[2:4])
	mo, d := digits2(b[5:7]), digits2(b[8:10])
	h, mi, s := digits2(b[11:13]), digits2(b[14:16]), digits2(b[17:19])
	if y < 1700 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59 {
		return 0, false // also when a "digit" was not one: digits2 gives a large number
	}
	i := 19
	var frac int64
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i]-'0' <= 9 {
			frac = frac*10 + int64(b[i]-'0')
			i++
		}
		nd := i - start
		if nd == 0 || nd > 9 {
			return 0, false
		}
		for range 9 - nd {
			frac *= 10
		}
	}
	off := 0
	if i < len(b) {
		switch b[i] {
		case 'Z', 'z':
			i++
		case '+', '-':
			if len(b)-i != 6 || b[i+3] != ':' {
				return 0, false
			}
			oh, om := digits2(b[i+1:i+3]), digits2(b[i+4:i+6])
			if oh > 23 || om > 59 {
				return 0, false
			}
			off = oh*3600 + om*60
			if b[i] == '-' {
				off = -off
			}
			i += 6
		default:
			return 0, false
		}
	}
	if i != len(b) {
		return 0, false
	}
	secs := daysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+s-off)
	return secs*1_000_000_000 + frac, true
}

// digits2 reads two ASCII digits, or gives 1000 when they are not digits.
func digits2(b []byte) int {
	d0, d1 := b[0]-'0', b[1]-'0'
	if d0 > 9 || d1 > 9 {
		return 1000
	}
	return int(d0)*10 + int(d1)
}

// daysIn is the number of days in month m of year y.
func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar (y > 0), by the era arithmetic of Howard
// Hinnant's "chrono-compatible low-level date algorithms".
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
