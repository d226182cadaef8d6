package query

import "fmt"

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

var formatNames = [...]string{FormatTable: "table", FormatCSV: "csv", FormatJSON: "json", FormatILP: "ilp"}

// ParseFormat parses "table", "csv", "json" or "ilp".
func ParseFormat(s string) (Format, error) {
	for f, n := range formatNames {
		if s == n {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown format %q (want table, csv, json or ilp)", ErrBadQuery, s)
}

// String is the format's name as ParseFormat takes it.
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// Set implements pflag.Value, so that a *Format can be a cobra flag.
func (f *Format) Set(s string) error {
	v, err := ParseFormat(s)
	if err == nil {
		*f = v
	}
	return err
}

// Type implements pflag.Value.
func (f *Format) Type() string { return "table|csv|json|ilp" }

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

var tsFormatNames = [...]string{TsRFC3339: "rfc3339", TsNs: "ns"}

// ParseTsFormat parses "rfc3339" or "ns".
func ParseTsFormat(s string) (TsFormat, error) {
	for f, n := range tsFormatNames {
		if s == n {
			return TsFormat(f), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown ts format %q (want rfc3339 or ns)", ErrBadQuery, s)
}

// String is the ts format's name as ParseTsFormat takes it.
func (f TsFormat) String() string {
	if int(f) < len(tsFormatNames) {
		return tsFormatNames[f]
	}
	return fmt.Sprintf("tsformat(%d)", uint8(f))
}

// Set implements pflag.Value, so that a *TsFormat can be a cobra flag.
func (f *TsFormat) Set(s string) error {
	v, err := ParseTsFormat(s)
	if err == nil {
		*f = v
	}
	return err
}

// Type implements pflag.Value.
func (f *TsFormat) Type() string { return "rfc3339|ns" }
