package servers

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

// Both servers answer CSV with a header line: tickdb's /query, /bars and
// /latest with format=csv, ClickHouse's FORMAT CSVWithNames. Rows are
// ts,sym,price,size; bars ts,open,high,low,close,volume,count. ClickHouse
// quotes strings; tickdb quotes only what needs it. The checks below read
// either, after the timing: parsing is the client's work, not the
// server's.

// csvRows calls row with the fields of every line of body after the
// header, quotes stripped; it stops at row's first error.
func csvRows(body []byte, want int, row func(f [][]byte) error) error {
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		return fmt.Errorf("no header line in %q", clip(body))
	}
	body = body[nl+1:]
	f := make([][]byte, 0, want)
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		f = f[:0]
		for field := range bytes.SplitSeq(line, []byte{','}) {
			if len(field) >= 2 && field[0] == '"' && field[len(field)-1] == '"' {
				field = field[1 : len(field)-1]
			}
			f = append(f, field)
		}
		if len(f) != want {
			return fmt.Errorf("row %d: %d fields, want %d: %q", n, len(f), want, clip(line))
		}
		if err := row(f); err != nil {
			return fmt.Errorf("row %d: %w: %q", n, err, clip(line))
		}
	}
	return nil
}

// clip shortens b for an error message.
func clip(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

func atoi(b []byte) (int64, error) { return strconv.ParseInt(string(b), 10, 64) }

func atof(b []byte) (float64, error) { return strconv.ParseFloat(string(b), 64) }

// checkRows checks a window's or a scan's rows (ts,sym,price,size): every
// row of symbol name, in ts order, whose count and ts/price mix
// (suite.Answer) equal want's.
func checkRows(body []byte, name string, want suite.Answer) (int64, error) {
	var got suite.Answer
	prev := int64(minTs)
	err := csvRows(body, 4, func(f [][]byte) error {
		ts, err := atoi(f[0])
		if err != nil {
			return err
		}
		price, err := atof(f[2])
		if err != nil {
			return err
		}
		if string(f[1]) != name {
			return fmt.Errorf("symbol %q, want %q", f[1], name)
		}
		if ts < prev {
			return fmt.Errorf("ts %d after %d: not in time order", ts, prev)
		}
		prev = ts
		got.Add(ts, price)
		return nil
	})
	if err == nil && got != want {
		err = fmt.Errorf("%d rows (mix %#x), want %d rows (mix %#x)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	return got.Rows, err
}

// checkBars checks bars (ts,open,high,low,close,volume,count) against
// want, in order.
func checkBars(body []byte, want []bar) (int64, error) {
	var n int
	err := csvRows(body, 7, func(f [][]byte) error {
		if n >= len(want) {
			return fmt.Errorf("more than the %d bars expected", len(want))
		}
		w := &want[n]
		n++
		var v [7]float64
		for i, x := range f {
			var err error
			if v[i], err = atof(x); err != nil {
				return err
			}
		}
		if ts, err := atoi(f[0]); err != nil || ts != w.ts {
			return fmt.Errorf("bar ts %s, want %d", f[0], w.ts)
		}
		switch {
		case !slices.Contains(w.opens, v[1]):
			return fmt.Errorf("open %v, want one of %v", v[1], w.opens)
		case v[2] != w.high || v[3] != w.low:
			return fmt.Errorf("high, low %v, %v, want %v, %v", v[2], v[3], w.high, w.low)
		case !slices.Contains(w.closes, v[4]):
			return fmt.Errorf("close %v, want one of %v", v[4], w.closes)
		case v[5] != float64(w.volume) || v[6] != float64(w.count):
			return fmt.Errorf("volume, count %v, %v, want %d, %d", v[5], v[6], w.volume, w.count)
		}
		return nil
	})
	if err == nil && n != len(want) {
		err = fmt.Errorf("%d bars, want %d", n, len(want))
	}
	return int64(n), err
}

// checkLatest checks the newest row of every symbol (ts,sym,price,size),
// one row per symbol that has ticks, in any order.
func checkLatest(body []byte, names []string, want []latest) (int64, error) {
	index := make(map[string]int, len(names))
	for i, s := range names {
		index[s] = i
	}
	seen := make([]bool, len(names))
	var n int64
	err := csvRows(body, 4, func(f [][]byte) error {
		s, ok := index[string(f[1])]
		if !ok || len(want[s].price) == 0 || seen[s] {
			return fmt.Errorf("symbol %q: unknown, without ticks, or twice", f[1])
		}
		seen[s] = true
		n++
		w := &want[s]
		ts, err := atoi(f[0])
		if err != nil {
			return err
		}
		price, err := atof(f[2])
		if err != nil {
			return err
		}
		size, err := atoi(f[3])
		if err != nil {
			return err
		}
		if ts != w.ts {
			return fmt.Errorf("%s: ts %d, want %d", names[s], ts, w.ts)
		}
		for i := range w.price {
			if w.price[i] == price && w.size[i] == size {
				return nil
			}
		}
		return fmt.Errorf("%s: price %v size %d, not a tick at its last ts (%v, %v)", names[s], price, size, w.price, w.size)
	})
	if err == nil {
		for s := range want {
			if len(want[s].price) > 0 && !seen[s] {
				return n, fmt.Errorf("symbol %s missing", names[s])
			}
		}
	}
	return n, err
}
