package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// Rows is a statement's result, read a row at a time: *sql.Rows' methods
// that a client of the engine uses, with the columns' DuckDB type names
// (sql.ColumnType.DatabaseTypeName) beside their names.
type Rows interface {
	Columns() ([]string, error)
	ColumnTypeNames() ([]string, error)
	Next() bool
	// Scan takes *any destinations, as database/sql would fill them from
	// duckdb-go (time.Time for every timestamp, int64 for BIGINT, ...).
	Scan(dest ...any) error
	Err() error
	Close() error
}

// duckdb-go (v2.10506.0) executes every statement to its end and holds
// the whole result before database/sql sees its first row: a query over
// 100 M rows holds them all in DuckDB's memory first. The engine runs the
// statements it can instead as DuckDB streaming results, on the session's
// own DuckDB connection through the C API (the mapping package that
// duckdb-go is built on): rows reach the client as DuckDB produces them,
// a chunk (2,048 rows) at a time, and a client that stops reading stops
// the query. A statement streams when it has no parameters and every
// result column is of a type decoded here (streamTypes: the numbers,
// strings, blobs, booleans, dates and timestamps); any other goes through
// duckdb-go.

// connField is the offset of duckdb.Conn's C connection (unexported),
// checked like chunk.go's fields.
var connField uintptr

func init() {
	t := reflect.TypeOf(duckdb.Conn{})
	c, ok := t.FieldByName("conn")
	if !ok || c.Type != reflect.TypeOf(mapping.Connection{}) {
		panic(fmt.Sprintf("engine: duckdb.Conn's layout is not the one this package reads (%v)", t))
	}
	connField = c.Offset
}

func rawConn(c *duckdb.Conn) mapping.Connection {
	return *(*mapping.Connection)(unsafe.Add(unsafe.Pointer(c), connField))
}

// streamTypes are the column types a streaming result decodes, with the
// names duckdb-go's DatabaseTypeName gives them.
var streamTypes = map[duckdb.Type]string{
	duckdb.TYPE_BOOLEAN: "BOOLEAN", duckdb.TYPE_TINYINT: "TINYINT", duckdb.TYPE_SMALLINT: "SMALLINT",
	duckdb.TYPE_INTEGER: "INTEGER", duckdb.TYPE_BIGINT: "BIGINT", duckdb.TYPE_UTINYINT: "UTINYINT",
	duckdb.TYPE_USMALLINT: "USMALLINT", duckdb.TYPE_UINTEGER: "UINTEGER", duckdb.TYPE_UBIGINT: "UBIGINT",
	duckdb.TYPE_FLOAT: "FLOAT", duckdb.TYPE_DOUBLE: "DOUBLE", duckdb.TYPE_VARCHAR: "VARCHAR", duckdb.TYPE_BLOB: "BLOB",
	duckdb.TYPE_DATE: "DATE", duckdb.TYPE_TIMESTAMP: "TIMESTAMP", duckdb.TYPE_TIMESTAMP_S: "TIMESTAMP_S",
	duckdb.TYPE_TIMESTAMP_MS: "TIMESTAMP_MS", duckdb.TYPE_TIMESTAMP_NS: "TIMESTAMP_NS", duckdb.TYPE_TIMESTAMP_TZ: "TIMESTAMPTZ",
}

// streamRows is a DuckDB streaming result.
type streamRows struct {
	ctx    context.Context
	stop   func() bool // ends the interrupt watch
	conn   mapping.Connection
	res    mapping.Result
	names  []string
	types  []duckdb.Type
	chunk  mapping.DataChunk
	size   int
	row    int // the current row of chunk (-1 before the first Next)
	vals   []any
	err    error
	closed bool
}

// stream runs query (no parameters) on conn as a streaming result.
func stream(ctx context.Context, conn mapping.Connection, query string) (*streamRows, error) {
	var stmt mapping.PreparedStatement
	if mapping.Prepare(conn, query, &stmt) == mapping.StateError {
		err := duckError(mapping.PrepareError(stmt), duckdb.ErrorTypeInvalid)
		mapping.DestroyPrepare(&stmt)
		return nil, err
	}
	defer mapping.DestroyPrepare(&stmt)
	var pending mapping.PendingResult
	// Deprecated in DuckDB's C API, and still its only way to a streaming
	// result (duckdb_fetch_chunk then reads it).
	if bindings.PendingPreparedStreaming(stmt, &pending) == mapping.StateError {
		err := duckError(mapping.PendingError(pending), duckdb.ErrorTypeInvalid)
		mapping.DestroyPending(&pending)
		return nil, err
	}
	defer mapping.DestroyPending(&pending)
	r := &streamRows{ctx: ctx, conn: conn, row: -1}
	r.stop = context.AfterFunc(ctx, func() { mapping.Interrupt(conn) })
	if mapping.ExecutePending(pending, &r.res) == mapping.StateError {
		err := r.resultError()
		mapping.DestroyResult(&r.res)
		r.stop()
		return nil, err
	}
	n := int(mapping.ColumnCount(&r.res))
	for i := 0; i < n; i++ {
		r.names = append(r.names, mapping.ColumnName(&r.res, mapping.IdxT(i)))
		r.types = append(r.types, mapping.ColumnType(&r.res, mapping.IdxT(i)))
	}
	r.vals = make([]any, n)
	return r, nil
}

func duckError(msg string, t duckdb.ErrorType) error {
	return &duckdb.Error{Type: t, Msg: msg}
}

func (r *streamRows) resultError() error {
	if err := r.ctx.Err(); err != nil {
		return errors.Join(err, duckError(mapping.ResultError(&r.res), duckdb.ErrorType(mapping.ResultErrorType(&r.res))))
	}
	return duckError(mapping.ResultError(&r.res), duckdb.ErrorType(mapping.ResultErrorType(&r.res)))
}

func (r *streamRows) Columns() ([]string, error) { return r.names, nil }

func (r *streamRows) ColumnTypeNames() ([]string, error) {
	names := make([]string, len(r.types))
	for i, t := range r.types {
		names[i] = streamTypes[t]
	}
	return names, nil
}

func (r *streamRows) Next() bool {
	if r.closed || r.err != nil {
		return false
	}
	r.row++
	for r.row >= r.size {
		if r.chunk.Ptr != nil {
			mapping.DestroyDataChunk(&r.chunk)
		}
		r.chunk = mapping.FetchChunk(r.res)
		if r.chunk.Ptr == nil {
			if msg := mapping.ResultError(&r.res); msg != "" {
				r.err = r.resultError()
			} else if err := r.ctx.Err(); err != nil {
				r.err = err
			}
			r.size = 0
			return false
		}
		r.size, r.row = int(mapping.DataChunkGetSize(r.chunk)), 0
	}
	for i, t := range r.types {
		r.vals[i] = value(r.chunk, i, r.row, t)
	}
	return true
}

// value decodes row of vector i of chunk, of type t.
func value(chunk mapping.DataChunk, i, row int, t duckdb.Type) any {
	v := mapping.DataChunkGetVector(chunk, mapping.IdxT(i))
	if mask := mapping.VectorGetValidity(v); mask != nil && !mapping.ValidityRowIsValid(mask, mapping.IdxT(row)) {
		return nil
	}
	p := unsafe.Pointer(mapping.VectorGetData(v))
	switch t {
	case duckdb.TYPE_BOOLEAN:
		return elem[bool](p, row)
	case duckdb.TYPE_TINYINT:
		return elem[int8](p, row)
	case duckdb.TYPE_SMALLINT:
		return elem[int16](p, row)
	case duckdb.TYPE_INTEGER:
		return elem[int32](p, row)
	case duckdb.TYPE_BIGINT:
		return elem[int64](p, row)
	case duckdb.TYPE_UTINYINT:
		return elem[uint8](p, row)
	case duckdb.TYPE_USMALLINT:
		return elem[uint16](p, row)
	case duckdb.TYPE_UINTEGER:
		return elem[uint32](p, row)
	case duckdb.TYPE_UBIGINT:
		return elem[uint64](p, row)
	case duckdb.TYPE_FLOAT:
		return elem[float32](p, row)
	case duckdb.TYPE_DOUBLE:
		return elem[float64](p, row)
	case duckdb.TYPE_VARCHAR:
		return string(stringBytes(p, row))
	case duckdb.TYPE_BLOB:
		return append([]byte(nil), stringBytes(p, row)...)
	case duckdb.TYPE_DATE:
		return time.Unix(int64(elem[int32](p, row))*86400, 0).UTC()
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_TZ:
		return time.UnixMicro(elem[int64](p, row)).UTC()
	case duckdb.TYPE_TIMESTAMP_S:
		return time.Unix(elem[int64](p, row), 0).UTC()
	case duckdb.TYPE_TIMESTAMP_MS:
		return time.UnixMilli(elem[int64](p, row)).UTC()
	case duckdb.TYPE_TIMESTAMP_NS:
		return time.Unix(0, elem[int64](p, row)).UTC()
	}
	return nil
}

func elem[T any](p unsafe.Pointer, row int) T {
	return *(*T)(unsafe.Add(p, uintptr(row)*unsafe.Sizeof(*new(T))))
}

// stringBytes is the bytes of DuckDB string_t row at p: inline up to 12
// bytes, else a pointer into the vector's heap (valid with the chunk).
func stringBytes(p unsafe.Pointer, row int) []byte {
	s := unsafe.Add(p, uintptr(row)*16)
	n := *(*uint32)(s)
	if n <= 12 {
		return unsafe.Slice((*byte)(unsafe.Add(s, 4)), n)
	}
	return unsafe.Slice(*(**byte)(unsafe.Add(s, 8)), n)
}

func (r *streamRows) Scan(dest ...any) error {
	if r.row < 0 || r.row >= r.size {
		return errors.New("sql: Scan called without calling Next")
	}
	if len(dest) != len(r.vals) {
		return fmt.Errorf("sql: expected %d destination arguments in Scan, not %d", len(r.vals), len(dest))
	}
	for i, d := range dest {
		if err := assign(d, r.vals[i]); err != nil {
			return fmt.Errorf("sql: Scan of column %d (%s): %w", i, r.names[i], err)
		}
	}
	return nil
}

// assign stores v in the Scan destination d: *any, a sql.Scanner, or a
// pointer to a Go type v converts to without loss (the integers, floats,
// string, []byte, bool, time.Time).
func assign(d, v any) error {
	switch d := d.(type) {
	case *any:
		*d = v
		return nil
	case sql.Scanner:
		return d.Scan(v)
	}
	dv := reflect.ValueOf(d)
	if dv.Kind() != reflect.Pointer || dv.IsNil() {
		return fmt.Errorf("destination %T is not a pointer", d)
	}
	dst := dv.Elem()
	if dst.Kind() == reflect.Pointer { // **T: nil for NULL
		if v == nil {
			dst.SetZero()
			return nil
		}
		n := reflect.New(dst.Type().Elem())
		if err := assign(n.Interface(), v); err != nil {
			return err
		}
		dst.Set(n)
		return nil
	}
	if v == nil {
		return fmt.Errorf("NULL into %T", d)
	}
	src := reflect.ValueOf(v)
	switch {
	case src.Type().AssignableTo(dst.Type()):
		dst.Set(src)
	case src.CanInt() && dst.CanInt():
		dst.SetInt(src.Int())
		if dst.Int() != src.Int() {
			return fmt.Errorf("%v overflows %s", v, dst.Type())
		}
	case src.CanUint() && dst.CanInt() && src.Uint() <= 1<<63-1:
		dst.SetInt(int64(src.Uint()))
	case src.CanFloat() && dst.CanFloat():
		dst.SetFloat(src.Float())
	case src.CanInt() && dst.CanFloat():
		dst.SetFloat(float64(src.Int()))
	default:
		return fmt.Errorf("%T into %T", v, d)
	}
	return nil
}

func (r *streamRows) Err() error {
	if errors.Is(r.err, io.EOF) {
		return nil
	}
	return r.err
}

// Close ends the result; a statement still running is interrupted.
func (r *streamRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.chunk.Ptr != nil {
		mapping.DestroyDataChunk(&r.chunk)
	}
	mapping.DestroyResult(&r.res)
	r.stop()
	return nil
}
