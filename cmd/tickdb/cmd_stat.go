package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

type statOpts struct {
	table  string
	format string
}

func newStatCmd(g *globals) *cobra.Command {
	o := &statOpts{}
	cmd := &cobra.Command{
		Use:   "stat [--format json]",
		Short: "Show each table's schema, rows, time range, segments, bytes and writer",
		Long: `stat reports every table of the database: its schema, published and
durable row counts, time range, segments, size on disk, symbols, out-of-order
rows, the writer that holds it (pid and state) if any, and the live
directory with the shared memory its live slots use now and at most (live
slots × segment file size), and its hot segments' copies.

It reads the control files without any lock, so it is safe while a writer
runs; the numbers are a snapshot. --format json prints
{"tables":[{"name":..,"rows":..,"bytes":..,...}]}, bytes being what the
table's files take on disk: the blocks allocated to them. Segment files
are created at their full size and filled as rows come (sparse), so the
sum of their sizes, logical_bytes, is far larger for a table with few
rows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runStat(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "table", "table (a report for people) or json")
	f.StringVar(&o.table, "table", "", "only this table (default: all)")
	return cmd
}

// tableStat is one table in stat's output; its JSON form is the
// contract of stat --format json. Times are ns since the epoch, with an
// RFC 3339 copy for people; both are left out of an empty table.
type tableStat struct {
	Name    string `json:"name"`
	Rows    uint64 `json:"rows"`
	Bytes   int64  `json:"bytes"`         // on-disk size: the blocks allocated to the table's files
	Logical int64  `json:"logical_bytes"` // the sum of their sizes, holes included (segments are preallocated, sparse)

	Schema      []statColumn `json:"schema"`
	FirstSeq    uint64       `json:"first_seq"` // first row not deleted by retention
	DurableRows uint64       `json:"durable_rows"`
	FirstTs     *int64       `json:"first_ts,omitempty"`
	LastTs      *int64       `json:"last_ts,omitempty"`
	FirstTime   string       `json:"first_time,omitempty"`
	LastTime    string       `json:"last_time,omitempty"`

	Segments     uint64 `json:"segments"`
	SealedSegs   uint64 `json:"sealed_segments"`
	SegmentRows  uint64 `json:"segment_rows"`
	SegmentBytes int64  `json:"segment_bytes"`
	Symbols      int    `json:"symbols"`    // the symbols with rows: the key (first) sym column's values, as latest lists them; -1: not counted (statMaxLookups)
	Dictionary   int    `json:"dictionary"` // the dictionary's entries, which every sym column shares (tickdb verify counts each column's values)
	OutOfOrder   uint64 `json:"out_of_order"`
	Late         uint64 `json:"late_rows"`
	LateWindowNs int64  `json:"late_window_ns"`

	Writer *statWriter `json:"writer,omitempty"` // nil: no writer has it open

	LiveDir      string `json:"live_dir"`
	LiveSlots    int    `json:"live_slots"`
	LiveBytes    int64  `json:"live_bytes"`     // shared memory the live slots hold now (allocated)
	LiveBytesMax int64  `json:"live_bytes_max"` // the bound: live_slots × segment_bytes
	HotBytes     int64  `json:"hot_bytes"`      // shared memory the hot segments' copies hold (allocated)

	Compressed *statCompressed `json:"compressed,omitempty"` // nil: no compressed segment

	// Lifecycle: where rows [first_seq, rows) are read from now.
	Lifecycle statLifecycle `json:"lifecycle"`

	// Archive is what the archive holds of the table, from the status
	// file a serve with --archive keeps (DB/archive-status.json); nil
	// without one.
	Archive *statArchive `json:"archive,omitempty"`

	Created string `json:"created"`
	Error   string `json:"error,omitempty"` // the table could not be read
}

// statArchive is a table's line of serve's archive status file.
type statArchive struct {
	Location string    `json:"location"`
	AsOf     time.Time `json:"as_of"` // when serve wrote it
	Pid      int       `json:"pid"`   // the serve that wrote it
	archive.TableStatus
}

// statLifecycle sorts a table's rows by where readers find them, newest
// first (docs/DESIGN.md, "Lifecycle").
type statLifecycle struct {
	Live       statTier `json:"live"`       // shared memory, not yet sealed and durable
	Hot        statTier `json:"hot"`        // sealed and durable, kept in shared memory
	Raw        statTier `json:"raw"`        // raw segment files on disk
	Historical statTier `json:"historical"` // compressed segment files on disk
}

type statTier struct {
	Segments uint64 `json:"segments"`
	Rows     uint64 `json:"rows"`
}

// statCompressed is what compaction made of the table's oldest segments:
// bytes before (raw rows) and after, overall and per column.
type statCompressed struct {
	Segments int            `json:"segments"`
	RawBytes int64          `json:"raw_bytes"`
	Bytes    int64          `json:"bytes"`
	Ratio    float64        `json:"ratio"` // raw_bytes / bytes
	Columns  []statColBytes `json:"columns"`
	// Clustered segments are in format version 2 (rows grouped by
	// symbol): their seq column (seq_bytes) is not a schema column, and
	// their sym column's bytes are the seq-order index's.
	Clustered int   `json:"clustered_segments"`
	SeqBytes  int64 `json:"seq_bytes"`
}

type statColBytes struct {
	Name     string  `json:"name"`
	RawBytes int64   `json:"raw_bytes"` // rows × the column's width
	Bytes    int64   `json:"bytes"`
	Ratio    float64 `json:"ratio"`
}

// statTimeLayout is RFC 3339 with all nine fractional digits, as query
// prints ts.
const statTimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

type statColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// statWriter is the writer recorded in the control file. Running is
// false when that process is gone without closing the table (a crash: the
// next writer recovers, readers keep reading).
type statWriter struct {
	Pid     int    `json:"pid"`
	State   string `json:"state"` // open or recovering
	Running bool   `json:"running"`
}

func runStat(cmd *cobra.Command, g *globals, o *statOpts) error {
	if o.format != "table" && o.format != "json" {
		return fmt.Errorf("--format %q: want table or json", o.format)
	}
	var names []string
	if o.table != "" {
		names = []string{o.table}
	} else {
		if a := archiveOf(g.db); a != nil {
			if _, err := archivedTables(a); err != nil {
				return err
			}
		} else if st, err := os.Stat(g.db); err != nil || !st.IsDir() {
			return fmt.Errorf("no database directory %s (--db)", g.db)
		}
		for _, n := range listTables(g.db) {
			// A table being created sits in a hidden temporary directory.
			if store.ValidTableName(n) == nil {
				names = append(names, n)
			}
		}
	}
	stats := make([]tableStat, 0, len(names))
	var failed []string
	var status *archive.StatusReport
	if archiveOf(g.db) == nil {
		var err error
		if status, err = archive.ReadStatus(filepath.Join(g.db, archive.StatusName)); err != nil {
			return err
		}
	}
	for _, n := range names {
		ts, err := statTable(g.db, n)
		if status != nil {
			for _, a := range status.Tables {
				if a.Table == n {
					ts.Archive = &statArchive{Location: status.Location, AsOf: status.Updated, Pid: status.Pid, TableStatus: a}
				}
			}
		}
		if err != nil {
			if o.table != "" {
				return err
			}
			ts.Error = err.Error()
			failed = append(failed, n)
		}
		stats = append(stats, ts)
	}
	out := cmd.OutOrStdout()
	if o.format == "json" {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(struct {
			Tables []tableStat `json:"tables"`
		}{stats}); err != nil {
			return err
		}
	} else {
		printStat(out, g.db, stats)
	}
	if len(failed) > 0 {
		return fmt.Errorf("stat: %d table(s) could not be read: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// statTable gathers one table's numbers. A table that opens but whose
// numbers cannot all be read still returns what was gathered.
func statTable(db, name string) (tableStat, error) {
	ts := tableStat{Name: name, Schema: []statColumn{}}
	r, err := openTable(db, name)
	if err != nil {
		return ts, err
	}
	defer r.Close()
	for _, c := range r.Schema().Cols {
		ts.Schema = append(ts.Schema, statColumn{c.Name, c.Type.String()})
	}
	if a := archiveOf(db); a != nil && a.archived(r) != nil {
		// An archive's table: the bytes its objects take there.
		ts.Bytes = a.archived(r).ArchivedBytes()
		ts.Logical = ts.Bytes
	} else {
		u, err := vfs.DirUsage(r.Dir())
		if err != nil {
			return ts, err
		}
		ts.Bytes, ts.Logical = u.Bytes, u.Logical
	}
	st, err := r.Stat()
	ts.Rows, ts.FirstSeq, ts.DurableRows = st.Rows, st.First, st.Durable
	ts.Segments, ts.SealedSegs = st.Segments, st.SealedSegs
	ts.SegmentRows, ts.SegmentBytes = st.SegmentRows, st.SegmentBytes
	ts.Dictionary, ts.OutOfOrder = st.Symbols, st.OutOfOrder
	ts.Symbols = st.Symbols
	if nsym := len(statSymCols(ts.Schema)); err == nil && nsym > 1 {
		// Other sym columns share the dictionary: count the key column's.
		ts.Symbols = -1
		if st.Symbols <= statMaxLookups {
			ts.Symbols, err = r.SymbolsWithRows(st.Symbols, nil)
		}
	}
	ts.Late, ts.LateWindowNs = st.Late, st.LateWindow
	ts.LiveDir, ts.LiveSlots = st.LiveDir, st.LiveSlots
	ts.LiveBytesMax = int64(st.LiveSlots) * st.SegmentBytes
	tier := func(t reader.Tier) statTier { return statTier{Segments: t.Segments, Rows: t.Rows} }
	ts.Lifecycle = statLifecycle{Live: tier(st.Live), Hot: tier(st.Hot), Raw: tier(st.Raw), Historical: tier(st.Historical)}
	if c := st.Compressed; c.Segments > 0 && c.Bytes > 0 {
		rows := c.RawBytes / int64(r.Schema().RowSize)
		sc := &statCompressed{Segments: c.Segments, RawBytes: c.RawBytes, Bytes: c.Bytes, Ratio: float64(c.RawBytes) / float64(c.Bytes),
			Clustered: c.Clustered, SeqBytes: c.SeqBytes}
		for i, col := range r.Schema().Cols {
			cb := statColBytes{Name: col.Name, RawBytes: rows * int64(col.Type.Width()), Bytes: c.ColBytes[i]}
			if cb.Bytes > 0 {
				cb.Ratio = float64(cb.RawBytes) / float64(cb.Bytes)
			}
			sc.Columns = append(sc.Columns, cb)
		}
		ts.Compressed = sc
	}
	if !st.Created.IsZero() {
		ts.Created = st.Created.UTC().Format(time.RFC3339)
	}
	if st.Rows > st.First && err == nil {
		first, last := st.FirstTs, st.LastTs
		ts.FirstTs, ts.LastTs = &first, &last
		ts.FirstTime = time.Unix(0, first).UTC().Format(statTimeLayout)
		ts.LastTime = time.Unix(0, last).UTC().Format(statTimeLayout)
	}
	if st.WriterState != reader.WriterClosed {
		ts.Writer = &statWriter{Pid: st.WriterPid, State: st.WriterState.String(), Running: pidRunning(st.WriterPid)}
	}
	if st.LiveDir != "" {
		// Only the slot files: a live directory inside the table's own
		// directory holds nothing else either, but say what is counted.
		for i := range st.LiveSlots {
			if fi, err := os.Stat(filepath.Join(st.LiveDir, format.SlotName(i))); err == nil {
				ts.LiveBytes += vfs.Allocated(fi)
			}
		}
		ents, _ := os.ReadDir(st.LiveDir)
		for _, e := range ents {
			_, _, hot := format.ParseHotName(e.Name())
			_, _, clu := format.ParseCluName(e.Name())
			if fi, err := e.Info(); err == nil && (hot || clu) {
				ts.HotBytes += vfs.Allocated(fi)
			}
		}
	}
	return ts, err
}

// statMaxLookups is the largest dictionary whose symbols stat counts, at
// µs each, when other sym columns share it (about 15 µs a symbol on the
// reference machine: a second and a half).
const statMaxLookups = 100_000

// statSymCols is the names of the sym columns of schema, the key one (the
// first) first.
func statSymCols(schema []statColumn) []string {
	var names []string
	for _, c := range schema {
		if c.Type == "sym" {
			names = append(names, c.Name)
		}
	}
	return names
}

// printStat prints the human report: one block per table, labels aligned.
func printStat(out io.Writer, db string, stats []tableStat) {
	abs, err := filepath.Abs(db)
	if err != nil {
		abs = db
	}
	fmt.Fprintf(out, "database %s: %d table(s)\n", abs, len(stats))
	for _, t := range stats {
		fmt.Fprintf(out, "\ntable %s\n", t.Name)
		if t.Error != "" && len(t.Schema) == 0 {
			kv(out, "error", t.Error, "")
			continue
		}
		cols := make([]string, len(t.Schema))
		for i, c := range t.Schema {
			cols[i] = c.Name + ":" + c.Type
		}
		statLine(out, "schema", strings.Join(cols, " "))
		statLine(out, "rows", commas(int64(t.Rows)), fmt.Sprintf("%s durable", commas(int64(t.DurableRows))))
		if t.FirstSeq > 0 {
			statLine(out, "first row", commas(int64(t.FirstSeq)), "older rows deleted by retention")
		}
		if t.FirstTs != nil {
			statLine(out, "time range", t.FirstTime+" .. "+t.LastTime)
		} else {
			statLine(out, "time range", "(no rows)")
		}
		statLine(out, "segments", commas(int64(t.Segments)),
			fmt.Sprintf("%s sealed; %s rows per %s file", commas(int64(t.SealedSegs)), commas(int64(t.SegmentRows)), fmtBytes(t.SegmentBytes)))
		sparse := ""
		if t.Logical > t.Bytes {
			sparse = ": sparse files, their holes take no disk"
		}
		statLine(out, "bytes on disk", commas(t.Bytes), fmt.Sprintf("%s allocated; logical size %s%s", fmtBytes(t.Bytes), fmtBytes(t.Logical), sparse))
		if c := t.Compressed; c != nil {
			statLine(out, "compressed", fmt.Sprintf("%d segments", c.Segments),
				fmt.Sprintf("%s raw → %s (%.1f×)", fmtBytes(c.RawBytes), fmtBytes(c.Bytes), c.Ratio))
			for _, col := range c.Columns {
				statLine(out, "  column "+col.Name, fmtBytes(col.Bytes), fmt.Sprintf("%s raw (%.1f×)", fmtBytes(col.RawBytes), col.Ratio))
			}
			if c.Clustered > 0 {
				statLine(out, "  seq (clustered)", fmtBytes(c.SeqBytes),
					fmt.Sprintf("%d of %d segments clustered by symbol; their sym bytes are the seq-order index", c.Clustered, c.Segments))
			}
		}
		for _, l := range []struct {
			name, why string
			t         statTier
		}{
			{"live", "shared memory; not yet sealed and durable", t.Lifecycle.Live},
			{"hot", "sealed and durable, kept in shared memory", t.Lifecycle.Hot},
			{"raw", "raw segment files on disk", t.Lifecycle.Raw},
			{"historical", "compressed segment files on disk", t.Lifecycle.Historical},
		} {
			if l.t.Rows > 0 {
				statLine(out, "  "+l.name, commas(int64(l.t.Rows))+" rows", fmt.Sprintf("%d segment(s): %s", l.t.Segments, l.why))
			}
		}
		if syms := statSymCols(t.Schema); len(syms) > 1 {
			// One dictionary serves every sym column: its size is not
			// the symbols' count (tickdb verify counts each column).
			if t.Symbols >= 0 {
				statLine(out, "symbols", commas(int64(t.Symbols)), fmt.Sprintf("column %s's values", syms[0]))
			} else {
				statLine(out, "symbols", "-", fmt.Sprintf("not counted past %s dictionary entries: tickdb verify counts column %s's values", commas(statMaxLookups), syms[0]))
			}
			statLine(out, "dictionary", commas(int64(t.Dictionary)),
				fmt.Sprintf("values of the sym columns %s together (tickdb verify counts each column)", strings.Join(syms, ", ")))
		} else {
			statLine(out, "symbols", commas(int64(t.Symbols)))
		}
		statLine(out, "late rows", commas(int64(t.Late))+" stored in ts order", "window "+time.Duration(t.LateWindowNs).String())
		statLine(out, "out-of-order rows", commas(int64(t.OutOfOrder)), "later than the window: rejected or restamped")
		switch w := t.Writer; {
		case w == nil:
			statLine(out, "writer", "none")
		case w.Running:
			statLine(out, "writer", fmt.Sprintf("pid %d", w.Pid), w.State)
		default:
			statLine(out, "writer", fmt.Sprintf("pid %d", w.Pid), w.State+", not running (crashed: the next writer recovers)")
		}
		statLine(out, "live dir", t.LiveDir)
		statLine(out, "shared memory", fmtBytes(t.LiveBytes+t.HotBytes),
			fmt.Sprintf("live slots %s, at most %s (%d × %s); hot copies %s", fmtBytes(t.LiveBytes), fmtBytes(t.LiveBytesMax), t.LiveSlots, fmtBytes(t.SegmentBytes), fmtBytes(t.HotBytes)))
		if a := t.Archive; a != nil {
			printStatArchive(out, a)
		}
		statLine(out, "created", t.Created)
		if t.Error != "" {
			statLine(out, "error", t.Error)
		}
	}
}

// statLine prints "  label  value  note" with the labels aligned.
func statLine(out io.Writer, label, value string, note ...string) {
	cells(out, []int{-20}, append([]string{"  " + label, value}, note...)...)
}

// printStatArchive prints what the archive holds of a table and its lag.
func printStatArchive(out io.Writer, a *statArchive) {
	note := fmt.Sprintf("rows below %s; as of %s (serve pid %d)", commas(int64(a.ArchivedRows)), a.AsOf.Format(time.RFC3339), a.Pid)
	statLine(out, "archive", a.Location, note)
	lag := "none: every compressed segment is up"
	if a.PendingSegs > 0 {
		lag = fmt.Sprintf("%d compressed segment(s), %s, not up yet", a.PendingSegs, fmtBytes(a.PendingBytes))
	}
	statLine(out, "  archive lag", lag)
	if !a.LastSync.IsZero() {
		statLine(out, "  last caught up", a.LastSync.UTC().Format(time.RFC3339))
	}
	if a.Err != "" {
		statLine(out, "  archive error", fmt.Sprintf("%d attempt(s) failed", a.Failures), a.Err)
	}
}
