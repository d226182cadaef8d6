package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/lineproto"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Format is the syntax of a file.
type Format uint8

// The formats.
const (
	ILP Format = iota + 1 // InfluxDB/QuestDB line protocol, timestamps in ns
	CSV                   // CSV with a header row: ts plus columns (see the package doc)
)

// String returns "ilp" or "csv", as the CLI's --format spells them.
func (f Format) String() string {
	switch f {
	case ILP:
		return "ilp"
	case CSV:
		return "csv"
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// FormatOf returns the format a file's extension names: .ilp, .lp and
// .txt are ILP, .csv is CSV (in any case); ok is false for any other.
func FormatOf(path string) (f Format, ok bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return CSV, true
	case ".ilp", ".lp", ".txt":
		return ILP, true
	}
	return 0, false
}

// Options configures a Loader. The zero value of every field but DB is
// the documented default.
type Options struct {
	// DB is the database directory.
	DB string
	// LiveRoot, when set, holds each table's live segments in
	// LiveRoot/<table> (default: the writer's, /dev/shm).
	LiveRoot string
	// Writer is every table's writer options (LateWindow: how far behind
	// its table's newest row a row may be and still be stored, as a late
	// row; 0: such a row is a bad line).
	Writer writer.Options
	// MaxFuture is how far ahead of the clock (the time a file's load
	// began) a row may be: default ingest.DefaultMaxFuture (a minute);
	// ingest.MaxFutureOff or any negative value: no limit. A row further
	// ahead is a bad line (reason future).
	MaxFuture time.Duration
	// TsUnit is the unit of ILP timestamps and of integer CSV ts cells:
	// time.Nanosecond (default), Microsecond, Millisecond or Second.
	TsUnit time.Duration
	// Allow1970 stores timestamps that read as the first weeks of 1970 in
	// ns but as now in another unit; without it they are bad lines (reason
	// ts_unit) naming the unit to give (ingest.Options.Allow1970).
	Allow1970 bool
	// Table is the table CSV rows go to (a CSV file needs it). For ILP,
	// when set, it replaces every line's measurement.
	Table string
	// SkipBad stores a file's good lines and skips its bad ones, counting
	// them in Stats.Skipped. Without it a file is all or nothing: it is
	// checked whole first, and one with a bad line stores nothing.
	SkipBad bool
	// Report, when set, is called with each bad line, in file order: file
	// is the name given to File, err a *lineproto.LineError (errors.Is
	// lineproto.ErrBadLine) with its Line, and Col where known, set.
	Report func(file string, err error)
	// Progress, when set, is called as a pass over a file starts, after
	// each chunk it reads, and when it ends (Done).
	Progress func(Progress)
	// Logger, when set, receives the tables' open and close lines and the
	// error naming a table that already holds a row more than MaxFuture
	// ahead of the clock (its lines are then refused).
	Logger *slog.Logger
}

// Progress is where a pass over a file is.
type Progress struct {
	File  string // the name given to File
	Store bool   // the store pass; false for the check pass before it
	Size  int64  // bytes the pass reads (the file but a CSV header); -1 when unknown
	Read  int64  // bytes read so far
	Done  bool   // the pass ended
}

// Stats counts what a Loader stored.
type Stats struct {
	Files   int              // files stored: whole, or their good lines under SkipBad
	Rows    int64            // rows stored
	Skipped int64            // bad lines skipped under SkipBad
	Tables  map[string]int64 // rows stored, by table
}

// Loader loads files into the tables of one database, one file at a time,
// through one ingest.Loader: the table rules of `tickdb serve`. Tables
// stay open from one file to the next and are closed by Close.
//
// A Loader is for one goroutine (it runs one producer goroutine of its
// own during File).
type Loader struct {
	o       Options
	ld      *ingest.Loader
	table   []byte // o.Table, for ILP lines
	batches []*batch
	st      Stats
}

// New returns a Loader on o.DB. Tables that exist are opened when first
// named.
func New(o *Options) *Loader {
	ld := &Loader{
		o: *o,
		ld: ingest.NewLoader(&ingest.Options{DB: o.DB, LiveRoot: o.LiveRoot, Writer: o.Writer,
			MaxFuture: o.MaxFuture, TsUnit: o.TsUnit, Allow1970: o.Allow1970, Logger: o.Logger}),
		st: Stats{Tables: map[string]int64{}},
	}
	if o.Table != "" {
		ld.table = []byte(o.Table)
	}
	return ld
}

// file is one file being loaded.
type file struct {
	ctx  context.Context
	f    *os.File
	name string
	prep *csvPrep // CSV only
	now  int64    // the time of the file's rows without one
}

// csvPrep is what the start of a CSV file gives: the header's bytes and
// the schema its cells are read by.
type csvPrep struct {
	header []byte
	schema *store.Schema
	create bool // the file creates the table
}

// File loads the file at path, in format; name is what messages call
// it (the path, or "stdin" for a copy of it). Without SkipBad it reads the
// file twice: a check pass that stores nothing and then, only if every
// line passed, a store pass. A row without a time gets the time File
// began (one time for the whole file), or its table's last row's time
// when that is later.
//
// A file that stores nothing because of bad input (a bad CSV header, or
// bad lines without SkipBad) gives a *FileError, and the Loader goes on
// with the next file. Any other error stops the load where it is: a read
// or write failure, a record longer than 64 MiB, ctx done; the rows
// stored before it stay stored.
func (ld *Loader) File(ctx context.Context, path, name string, format Format) error {
	if format == CSV && ld.o.Table == "" {
		return fmt.Errorf("load: %s: CSV needs Options.Table (the table to store the rows in)", name)
	}
	if format != CSV && format != ILP {
		return fmt.Errorf("load: %s: unknown %v", name, format)
	}
	switch ld.o.TsUnit {
	case 0, time.Nanosecond, time.Microsecond, time.Millisecond, time.Second:
	default:
		return fmt.Errorf("load: TsUnit %v: want time.Second, Millisecond, Microsecond or Nanosecond", ld.o.TsUnit)
	}
	osf, err := os.Open(path)
	if err != nil {
		return err
	}
	defer osf.Close()
	f := &file{ctx: ctx, f: osf, name: name, now: time.Now().UnixNano()}
	if format == CSV {
		if f.prep, err = ld.prepareCSV(f); err != nil {
			if errors.Is(err, lineproto.ErrBadLine) {
				return &FileError{File: name, Header: err}
			}
			return err
		}
	}
	if !ld.o.SkipBad {
		bad, err := ld.pass(f, false)
		if err != nil {
			return err
		}
		if bad > 0 {
			return &FileError{File: name, Bad: bad}
		}
	}
	if _, err = ld.pass(f, true); err == nil {
		ld.st.Files++
	}
	return err
}

// prepareCSV reads the header row and types its columns: by the schema of
// the table, or, for a table the file creates, from the first rows.
func (ld *Loader) prepareCSV(f *file) (*csvPrep, error) {
	p := newCSVParser(ld.o.Table)
	buf := make([]byte, 0, 64<<10)
	atEOF := false
	more := func() error {
		if len(buf) == cap(buf) {
			if cap(buf) >= maxRecord {
				return fmt.Errorf("%s: no whole header row and first rows in the first %d MiB", f.name, maxRecord>>20)
			}
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := io.ReadFull(f.f, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			atEOF = true
			return nil
		}
		return err
	}
	if err := more(); err != nil {
		return nil, err
	}
	var h int
	for {
		var err error
		if h, err = p.Header(buf, atEOF); err != nil {
			return nil, err
		}
		if h > 0 {
			break
		}
		if err := more(); err != nil {
			return nil, err
		}
	}
	prep := &csvPrep{header: bytes.Clone(buf[:h])}
	if reader.Exists(ld.o.DB, ld.o.Table) {
		r, err := reader.Open(ld.o.DB, ld.o.Table, nil)
		if err != nil {
			return nil, err
		}
		prep.schema = r.Schema()
		r.Close()
		if err := p.UseSchema(prep.schema); err != nil {
			return nil, err
		}
		return prep, nil
	}
	for !p.Infer(buf[h:], atEOF) {
		if err := more(); err != nil {
			return nil, err
		}
	}
	var err error
	prep.schema, err = p.Schema()
	prep.create = true
	return prep, err
}

// Stats returns what the Loader has stored so far.
func (ld *Loader) Stats() Stats {
	st := ld.st
	st.Tables = make(map[string]int64, len(ld.st.Tables))
	for name, n := range ld.st.Tables {
		st.Tables[name] = n
	}
	return st
}

// Close publishes, makes every stored row durable and closes the tables.
func (ld *Loader) Close() error { return ld.ld.Close() }
