package engine

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// The table function fills DuckDB's output vectors in place, a column at a
// time (a copy of tickdb's column vectors), instead of one value per call
// through duckdb-go's generic setters (an interface conversion and a type
// switch per value: several times the cost of the whole scan). duckdb-go
// hands FillChunk a DataChunk whose C chunk and projection are unexported;
// rawChunk reads them, and checks at start-up that the layout is the one
// this code was written for (a duckdb-go upgrade that changes it fails
// loudly here, not with corrupt results).

var (
	chunkField      uintptr // offset of DataChunk.chunk (a mapping.DataChunk)
	projectionField uintptr // offset of DataChunk.projection ([]int)
)

func init() {
	t := reflect.TypeOf(duckdb.DataChunk{})
	c, ok1 := t.FieldByName("chunk")
	p, ok2 := t.FieldByName("projection")
	if !ok1 || !ok2 || c.Type != reflect.TypeOf(mapping.DataChunk{}) || p.Type != reflect.TypeOf([]int(nil)) {
		panic(fmt.Sprintf("engine: duckdb.DataChunk's layout is not the one this package reads (%v)", t))
	}
	chunkField, projectionField = c.Offset, p.Offset
}

// rawChunk returns FillChunk's C data chunk and its projection: for each
// column of the table function, its vector's index in the chunk, or -1 when
// the query does not read it (nil: every column, in order).
func rawChunk(ch *duckdb.DataChunk) (mapping.DataChunk, []int) {
	base := unsafe.Pointer(ch)
	return *(*mapping.DataChunk)(unsafe.Add(base, chunkField)), *(*[]int)(unsafe.Add(base, projectionField))
}

// vectorData returns vector i of chunk as a slice of n elements of T.
func vectorData[T any](chunk mapping.DataChunk, i, n int) []T {
	v := mapping.DataChunkGetVector(chunk, mapping.IdxT(i))
	return unsafe.Slice((*T)(mapping.VectorGetData(v)), n)
}

// setNull marks row of vector i of chunk NULL.
func setNull(chunk mapping.DataChunk, i, row int) {
	v := mapping.DataChunkGetVector(chunk, mapping.IdxT(i))
	mapping.VectorEnsureValidityWritable(v)
	mapping.ValiditySetRowInvalid(mapping.VectorGetValidity(v), mapping.IdxT(row))
}

// duckString is DuckDB's string_t: a length, then up to 12 bytes inline,
// or a 4-byte prefix and a pointer for longer strings.
type duckString [16]byte

// inlineString encodes s inline, if it fits (12 bytes or fewer).
func inlineString(s string) (duckString, bool) {
	var d duckString
	if len(s) > 12 {
		return d, false
	}
	*(*uint32)(unsafe.Pointer(&d[0])) = uint32(len(s))
	copy(d[4:], s)
	return d, true
}

type mappingChunk = mapping.DataChunk

// assignString sets row of vector i of chunk to s, copied into the
// vector's own memory (for strings too long to inline).
func assignString(chunk mapping.DataChunk, i, row int, s string) {
	v := mapping.DataChunkGetVector(chunk, mapping.IdxT(i))
	mapping.VectorAssignStringElement(v, mapping.IdxT(row), s)
}
