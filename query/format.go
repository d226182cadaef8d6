package query

import "github.com/tickdb/tickdb/internal/enum"

// Format is an output format of the commands that print rows.
type Format uint8

const (
	// FormatTable is aligned, human-readable columns under a header line.
	FormatTable Format = iota
	// FormatCSV is comma-separated values with a header row.
	FormatCSV
	// FormatJSON is one JSON object per line (NDJSON), with no enclosing
	// array.
	FormatJSON
	// FormatILP is InfluxDB line protocol, one row per line.
	FormatILP
)

var formatNames = enum.New[Format](ErrBadQuery, "format", "table", "csv", "json", "ilp")

// ParseFormat parses "table", "csv", "json" or "ilp".
func ParseFormat(s string) (Format, error) { return formatNames.Parse(s) }

// String is the format's name as ParseFormat takes it.
func (f Format) String() string { return formatNames.String(f) }

// Set implements pflag.Value, so that a *Format can be a cobra flag.
func (f *Format) Set(s string) error { return formatNames.Set(f, s) }

// Type implements pflag.Value.
func (f *Format) Type() string { return formatNames.Type() }

// TsFormat is how the ts column is printed (ilp always prints ns).
type TsFormat uint8

const (
	// TsRFC3339 prints RFC 3339 in UTC with exactly nine fractional digits
	// (2006-01-02T15:04:05.000000000Z), so that the text sorts as the
	// time does.
	TsRFC3339 TsFormat = iota
	// TsNs prints integer nanoseconds since the Unix epoch.
	TsNs
)

var tsFormatNames = enum.New[TsFormat](ErrBadQuery, "ts format", "rfc3339", "ns")

// ParseTsFormat parses "rfc3339" or "ns".
func ParseTsFormat(s string) (TsFormat, error) { return tsFormatNames.Parse(s) }

// String is the ts format's name as ParseTsFormat takes it.
func (f TsFormat) String() string { return tsFormatNames.String(f) }

// Set implements pflag.Value, so that a *TsFormat can be a cobra flag.
func (f *TsFormat) Set(s string) error { return tsFormatNames.Set(f, s) }

// Type implements pflag.Value.
func (f *TsFormat) Type() string { return tsFormatNames.Type() }
