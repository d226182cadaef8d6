package export

import (
	"fmt"
	"runtime"

	"github.com/tickdb/tickdb/internal/enum"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
)

// Format is an export file format.
type Format uint8

const (
	// FormatParquet writes Apache Parquet files (the default).
	FormatParquet Format = iota
	// FormatCSV writes CSV files with a header row, ts first as RFC 3339
	// with nine fractional digits in UTC, the other columns in schema
	// order, as "tickdb query --format csv" prints them.
	FormatCSV
)

var formatNames = enum.New[Format](ErrBadOptions, "format", "parquet", "csv")

// ParseFormat parses "parquet" or "csv".
func ParseFormat(s string) (Format, error) { return formatNames.Parse(s) }

// String is the format's name as ParseFormat takes it.
func (f Format) String() string { return formatNames.String(f) }

// Set implements pflag.Value, so that a *Format can be a cobra flag.
func (f *Format) Set(s string) error { return formatNames.Set(f, s) }

// Type implements pflag.Value.
func (f *Format) Type() string { return formatNames.Type() }

// ext is the file name extension of the format.
func (f Format) ext() string { return "." + f.String() }

// Compression is the Parquet compression codec.
type Compression uint8

const (
	// CompressionZstd is zstd at its fastest level (the default).
	CompressionZstd Compression = iota
	// CompressionSnappy is snappy, for readers without zstd.
	CompressionSnappy
	// CompressionNone writes pages uncompressed.
	CompressionNone
)

var compressionNames = enum.New[Compression](ErrBadOptions, "compression", "zstd", "snappy", "none")

// ParseCompression parses "zstd", "snappy" or "none".
func ParseCompression(s string) (Compression, error) { return compressionNames.Parse(s) }

// String is the codec's name as ParseCompression takes it.
func (c Compression) String() string { return compressionNames.String(c) }

// Set implements pflag.Value.
func (c *Compression) Set(s string) error { return compressionNames.Set(c, s) }

// Type implements pflag.Value.
func (c *Compression) Type() string { return compressionNames.Type() }

// Defaults of Options.
const (
	// DefaultRowGroupRows is the rows per Parquet row group: about 1 M, as
	// pyarrow writes them, 10-40 MB of uncompressed values for a typical
	// tick table; large enough for good compression and scans, small
	// enough for DuckDB and Spark to split a file's work by row group.
	DefaultRowGroupRows = 1 << 20
	// DefaultFileRows is the most rows in one file: a busier date gets
	// several (part-00000, part-00001, ...), each a few hundred MB of
	// Parquet, the size Spark and Trino like to schedule.
	DefaultFileRows = 64 << 20
)

// Options are Run's settings; nil or a zero field means its default.
type Options struct {
	// Format is the file format, Parquet by default.
	Format Format
	// Compression is the Parquet codec, zstd by default (ignored for CSV).
	Compression Compression
	// From (inclusive) and To (exclusive) bound the rows by ts, each only
	// when its Has flag is set: without From the export starts at the
	// table's first row, without To it ends at the last row published
	// when Run starts.
	From, To       int64
	HasFrom, HasTo bool
	// RowGroupRows is the rows per Parquet row group (default
	// DefaultRowGroupRows).
	RowGroupRows int
	// FileRows is the most rows per file (default DefaultFileRows).
	//
	// In a table with late rows both are targets, not bounds: a file or
	// row group is cut at a row of the in-order walk (plan.go), and holds
	// a few rows more or fewer than that, the late rows that arrived
	// within about one late window of its cuts.
	FileRows int64
	// Table names the table in the files' metadata and in errors
	// (default: the base name of the reader's directory).
	Table string
	// Workers is the number of goroutines that build Parquet row groups
	// (default GOMAXPROCS, at most 8), each with a reader of its own.
	Workers int
	// Reader is the options of the workers' readers (nil: the defaults).
	Reader *reader.Options
	// Progress, when set, is called on Run's goroutine with the rows
	// written so far and the rows to write in all: once at the start (0
	// done), after each Parquet row group, every 64 Ki CSV rows, and once
	// at the end, with the rows written as both. The total is exact but
	// for an export of a table with late rows with From or To, where it
	// can be off by the late rows within about a late window of either.
	Progress func(done, total int64)
}

func (o *Options) withDefaults() (Options, error) {
	var v Options
	if o != nil {
		v = *o
	}
	if v.RowGroupRows == 0 {
		v.RowGroupRows = DefaultRowGroupRows
	}
	if v.FileRows == 0 {
		v.FileRows = DefaultFileRows
	}
	if v.Workers == 0 {
		v.Workers = min(runtime.GOMAXPROCS(0), 8)
	}
	switch {
	case v.Format > FormatCSV:
		return v, fmt.Errorf("%w: format %v", ErrBadOptions, v.Format)
	case v.Compression > CompressionNone:
		return v, fmt.Errorf("%w: compression %v", ErrBadOptions, v.Compression)
	case v.RowGroupRows < 0:
		return v, fmt.Errorf("%w: %d rows per row group", ErrBadOptions, v.RowGroupRows)
	case v.FileRows < 0:
		return v, fmt.Errorf("%w: %d rows per file", ErrBadOptions, v.FileRows)
	case v.Workers < 0:
		return v, fmt.Errorf("%w: %d workers", ErrBadOptions, v.Workers)
	case v.HasFrom && v.HasTo && v.From > v.To:
		return v, fmt.Errorf("%w: from %s is after to %s", ErrBadOptions, query.FormatNs(v.From), query.FormatNs(v.To))
	}
	return v, nil
}
