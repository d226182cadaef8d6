package export

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/tickdb/tickdb/store"
)

// Parquet writer settings.
const (
	// parquetPageBuffer is the page size the column writers aim at (the
	// library's default): pages of about 256 KiB before compression.
	parquetPageBuffer = 256 << 10
	// parquetWriteBuffer buffers the file's output between flushes.
	parquetWriteBuffer = 1 << 20
	// parquetSchemaName is the name of the Parquet schema's root (its
	// "message").
	parquetSchemaName = "tickdb"
)

// parquetNode is the Parquet node of one tickdb column type: ts a required
// INT64 TIMESTAMP(NANOS, isAdjustedToUTC=false); sym a required
// dictionary-encoded BYTE_ARRAY STRING; f64 an optional DOUBLE (NaN is
// written as null); i64 a required INT64; bool a required BOOLEAN.
//
// ts holds UTC ns since the epoch, yet is annotated isAdjustedToUTC=false
// ("local" semantics): DuckDB reads a UTC-adjusted NANOS timestamp as
// TIMESTAMP WITH TIME ZONE, a µs type, and drops the last three digits,
// but reads this one as TIMESTAMP_NS with all nine; pyarrow/pandas read
// it as timestamp[ns] (naive) and Spark, where it reads NANOS at all, as
// a long. docs/DESIGN.md ("Export") has the table per reader.
//
// ts is DELTA_BINARY_PACKED: non-decreasing timestamps a few µs apart
// pack into a byte or two each, which spares the codec most of the
// column: on the benchmark ticks, 5.7 instead of 6.2 bytes/row and about
// 15% less CPU per row with zstd, 6.7 instead of 9.8 bytes/row with
// snappy. The i64 columns stay PLAIN: sizes
// and counts are not ordered, and zstd finds their repeats better than
// delta packing does (6.2 bytes/row with delta).
func parquetNode(t store.ColType) parquet.Node {
	switch t {
	case store.TypeTs:
		return parquet.Encoded(parquet.TimestampAdjusted(parquet.Nanosecond, false), &parquet.DeltaBinaryPacked)
	case store.TypeSym:
		return parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
	case store.TypeF64:
		return parquet.Optional(parquet.Leaf(parquet.DoubleType))
	case store.TypeI64:
		return parquet.Leaf(parquet.Int64Type)
	case store.TypeBool:
		return parquet.Leaf(parquet.BooleanType)
	}
	return nil // NewSchema admits no other type
}

// newParquetSchema is the Parquet schema of s: one top-level column per
// tickdb column, same names, same order.
func newParquetSchema(s *store.Schema) *parquet.Schema {
	g := make(orderedGroup, len(s.Cols))
	for i, c := range s.Cols {
		g[i] = &orderedField{Node: parquetNode(c.Type), name: c.Name, index: i}
	}
	return parquet.NewSchema(parquetSchemaName, g)
}

// ParquetSchema returns the Parquet schema that Run writes for a table of
// schema s, in Parquet's message notation.
func ParquetSchema(s *store.Schema) string {
	return newParquetSchema(s).String()
}

// orderedGroup is a Parquet group whose fields keep the order they are
// given in. parquet.Group is a map and sorts its fields by name, but a
// table's columns must come out in schema order, ts first.
type orderedGroup []parquet.Field

func (g orderedGroup) ID() int                     { return 0 }
func (g orderedGroup) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Fields() []parquet.Field     { return g }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }
func (g orderedGroup) String() string              { return printNode(g) }
func (g orderedGroup) GoType() reflect.Type        { return goStructOf(g) }

// orderedField is one field of an orderedGroup.
type orderedField struct {
	parquet.Node
	name  string
	index int
}

func (f *orderedField) Name() string { return f.name }

// Value is the field in a value of the group's GoType.
func (f *orderedField) Value(v reflect.Value) reflect.Value { return v.Field(f.index) }

func printNode(n parquet.Node) string {
	var b strings.Builder
	_ = parquet.PrintSchema(&b, "", n)
	return b.String()
}

// goStructOf is the Go struct type of g's rows (fields F0, F1, ... tagged
// with the column names). The export writes columns directly and never
// uses it; it is there to complete parquet.Node.
func goStructOf(g orderedGroup) reflect.Type {
	fields := make([]reflect.StructField, len(g))
	for i, f := range g {
		fields[i] = reflect.StructField{
			Name: fmt.Sprintf("F%d", i),
			Type: f.GoType(),
			Tag:  reflect.StructTag(fmt.Sprintf("parquet:%q", f.Name())),
		}
	}
	return reflect.StructOf(fields)
}

// codec is the Parquet compression codec of c.
func (c Compression) codec() compress.Codec {
	switch c {
	case CompressionSnappy:
		return &snappy.Codec{}
	case CompressionNone:
		return &parquet.Uncompressed
	}
	// zstd's fastest level: on the benchmark ticks its files are 10%
	// larger than the default level's (5.7 against 5.1 bytes/row) for
	// about 15% less CPU per exported row.
	return &zstd.Codec{Level: zstd.SpeedFastest}
}

// newParquetWriter starts a Parquet file on out. Its row groups are
// built with BeginRowGroup, on any goroutine, and committed in order.
func newParquetWriter(out io.Writer, s *store.Schema, ps *parquet.Schema, o *Options, meta map[string]string) *parquet.GenericWriter[any] {
	opts := []parquet.WriterOption{
		ps,
		parquet.Compression(o.Compression.codec()),
		parquet.PageBufferSize(parquetPageBuffer),
		parquet.WriteBufferSize(parquetWriteBuffer),
		// Version 1 data pages: what pyarrow and Spark write by default, so
		// the oldest readers take the files too.
		parquet.DataPageVersion(1),
	}
	// No min/max for the sym columns, in page headers or the column
	// index: working them out compares every value's string, a tenth of
	// the export's CPU, and a time-ordered table has every symbol in
	// every page and row group, so no reader could skip one by them.
	for _, c := range s.Cols {
		if c.Type == store.TypeSym {
			opts = append(opts, parquet.SkipPageBounds(c.Name), parquet.SkipPageStatistics(c.Name))
		}
	}
	for k, v := range meta {
		opts = append(opts, parquet.KeyValueMetadata(k, v))
	}
	// The options are fixed and valid: NewGenericWriter, which panics on
	// a bad one, does not here.
	return parquet.NewGenericWriter[any](out, opts...)
}

// rowGroupFiller writes rows into Parquet row groups: one column of a
// batch at a time, as parquet.Values in a preallocated slice, straight
// into the row group's column writers. One per worker goroutine.
type rowGroupFiller struct {
	schema *store.Schema
	syms   symCache
	vals   []parquet.Value
}

func newRowGroupFiller(s *store.Schema, syms symCache) *rowGroupFiller {
	return &rowGroupFiller{schema: s, syms: syms, vals: make([]parquet.Value, batchRows)}
}

// write appends n rows (n <= batchRows) laid end to end in rows to the
// row group whose column writers are cols.
func (p *rowGroupFiller) write(cols []*parquet.ColumnWriter, rows []byte, n int) error {
	rs := p.schema.RowSize
	vals := p.vals[:n]
	for ci := range p.schema.Cols {
		c := p.schema.ColAt(ci)
		off := c.Off
		// A column writer reads the values' levels, never their column
		// index, and a required column's levels are 0: only the optional
		// f64 columns need Level (which does not inline).
		switch c.Type {
		case store.TypeTs, store.TypeI64:
			for i := range vals {
				vals[i] = parquet.Int64Value(int64(le.Uint64(rows[i*rs+off:])))
			}
		case store.TypeF64:
			for i := range vals {
				v := math.Float64frombits(le.Uint64(rows[i*rs+off:]))
				if v != v { // NaN: a missing value
					vals[i] = parquet.NullValue()
				} else {
					vals[i] = parquet.DoubleValue(v).Level(0, 1, ci)
				}
			}
		case store.TypeSym:
			for i := range vals {
				name, err := p.syms.name(le.Uint32(rows[i*rs+off:]))
				if err != nil {
					return err
				}
				vals[i] = parquet.ByteArrayValue(name)
			}
		case store.TypeBool:
			for i := range vals {
				vals[i] = parquet.BooleanValue(rows[i*rs+off] != 0)
			}
		}
		if _, err := cols[ci].WriteRowValues(vals); err != nil {
			return fmt.Errorf("column %s: %w", p.schema.Cols[ci].Name, err)
		}
	}
	return nil
}
