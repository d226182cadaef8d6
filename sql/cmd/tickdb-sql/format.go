package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tickdb/tickdb/sql/engine"
)

// rowWriter prints a result's rows as it reads them, in one of the tickdb
// CLI's formats: table, csv or json (one object per line). Values print as
// the tickdb CLI prints them: timestamps in RFC 3339 with nine fractional
// digits (UTC), floats in the shortest form that reads back the same,
// NULL as an empty field (table, csv) or null (json).
type rowWriter struct {
	format string
	w      *bufio.Writer
}

func newWriter(format string, w io.Writer) (*rowWriter, error) {
	switch format {
	case "table", "csv", "json":
		return &rowWriter{format: format, w: bufio.NewWriterSize(w, 64<<10)}, nil
	}
	return nil, fmt.Errorf("--format %q: want table, csv or json", format)
}

// tableFlush is how many rows the table format aligns at a time: a result
// of any size streams, its columns aligned within each group.
const tableFlush = 1000

func (wr *rowWriter) write(rows engine.Rows) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	fields := make([]string, len(cols))
	var (
		cw *csv.Writer
		tw *tabwriter.Writer
	)
	switch wr.format {
	case "csv":
		cw = csv.NewWriter(wr.w)
		if err := cw.Write(cols); err != nil {
			return err
		}
	case "table":
		tw = tabwriter.NewWriter(wr.w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		switch wr.format {
		case "csv":
			for i, v := range vals {
				fields[i], _ = text(v)
			}
			if err := cw.Write(fields); err != nil {
				return err
			}
		case "table":
			for i, v := range vals {
				fields[i], _ = text(v)
			}
			fmt.Fprintln(tw, strings.Join(fields, "\t"))
			if n++; n%tableFlush == 0 {
				if err := tw.Flush(); err != nil {
					return err
				}
			}
		case "json":
			wr.w.WriteByte('{')
			for i, v := range vals {
				if i > 0 {
					wr.w.WriteByte(',')
				}
				k, _ := json.Marshal(cols[i])
				wr.w.Write(k)
				wr.w.WriteByte(':')
				wr.w.WriteString(jsonValue(v))
			}
			wr.w.WriteString("}\n")
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if cw != nil {
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return wr.w.Flush()
}

// tsLayout is how the tickdb CLI prints ts: RFC 3339 in UTC with nine
// fractional digits (fixed width, so it sorts).
const tsLayout = "2006-01-02T15:04:05.000000000Z07:00"

// text is a value as the CLI prints it; false for NULL.
func text(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case time.Time:
		return v.UTC().Format(tsLayout), true
	case float64:
		return formatFloat(v), true
	case float32:
		return formatFloat(float64(v)), true
	case []byte:
		return string(v), true
	case string:
		return v, true
	}
	return fmt.Sprint(v), true
}

func formatFloat(f float64) string {
	if a := math.Abs(f); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// jsonValue is v as a JSON value: numbers and booleans bare, NaN and ±Inf
// and NULL null, everything else a string.
func jsonValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case int8, int16, int32, int64, uint8, uint16, uint32, uint64, int, uint:
		return fmt.Sprint(x)
	case float64, float32:
		f := x.(float64)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "null"
		}
		return formatFloat(f)
	}
	s, _ := text(v)
	b, _ := json.Marshal(s)
	return string(b)
}
