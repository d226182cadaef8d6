//go:build linux

package scale

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints the results side by side, a column per workload.
func WriteTable(out io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(r *Result) string) {
		cells := []string{name}
		for i := range rs {
			cells = append(cells, f(&rs[i]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	row("workload", func(r *Result) string { return r.Workload.Name() })
	row("rows", func(r *Result) string { return count(int64(r.Rows)) })
	row("disk bytes/row (after stop)", func(r *Result) string { return perRow(r.Disk.Total, r.Rows) })
	row("  segments", func(r *Result) string { return perRow(r.Disk.Segments, r.Rows) })
	row("  post.idx", func(r *Result) string { return perRow(r.Disk.Post, r.Rows) })
	row("  sym.dat", func(r *Result) string { return perRow(r.Disk.Syms, r.Rows) })
	row("  ts.idx and other", func(r *Result) string { return perRow(r.Disk.TimeIdx+r.Disk.Other, r.Rows) })
	row("disk MiB after stop / while serving", func(r *Result) string {
		return fmt.Sprintf("%d / %d", r.Disk.Total>>20, r.DiskOpen>>20)
	})
	row("ingest rows/s, all", func(r *Result) string { return rate(r.Ingest) })
	row("  rows naming a new symbol", func(r *Result) string {
		if r.IngestNew.Rows < 10_000 {
			return "-" // (too few to time: the table's creation)
		}
		return rate(r.IngestNew)
	})
	row("  rows of known symbols", func(r *Result) string { return rate(r.IngestKnown) })
	row("serve RSS peak MiB (anon/file/shmem)", func(r *Result) string {
		m := r.Mem
		return fmt.Sprintf("%d (%d/%d/%d)", m.HWM>>20, m.Anon>>20, m.File>>20, m.Shmem>>20)
	})
	row("serve stop (SIGTERM to exit)", func(r *Result) string { return dur(r.Stop) })
	row("restart to a write visible", func(r *Result) string { return dur(r.Restart) })
	row("  to listening", func(r *Result) string { return dur(r.Listen) })
	row("serve RSS after restart MiB", func(r *Result) string { return fmt.Sprintf("%d", r.MemRestart.RSS>>20) })
	row("GET /latest one symbol (first)", func(r *Result) string {
		return fmt.Sprintf("%s (%s)", dur(r.LatestOne), dur(r.LatestOneFirst))
	})
	row("  the same of serve idle, restarted", func(r *Result) string { return dur(r.LatestOneIdle) })
	row("GET /latest all symbols (first)", func(r *Result) string {
		return fmt.Sprintf("%s (%s)", dur(r.LatestAll), dur(r.LatestAllFirst))
	})
	row("reader.LastSym one symbol, warm", func(r *Result) string { return dur(r.LibOne) })
	row("query.Latest all symbols, warm (first)", func(r *Result) string {
		return fmt.Sprintf("%s (%s)", dur(r.LibAll), dur(r.LibAllFirst))
	})
	return tw.Flush()
}

// WriteJSON prints the results for machines.
func WriteJSON(out io.Writer, rs []Result) error {
	e := json.NewEncoder(out)
	e.SetIndent("", "  ")
	return e.Encode(rs)
}

func perRow(b int64, rows uint64) string {
	if rows == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(b)/float64(rows))
}

func rate(r Rate) string {
	if r.Rows == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", r.PerSec())
}

// dur prints d with 3 significant digits.
func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
