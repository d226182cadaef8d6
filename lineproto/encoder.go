package lineproto

import (
	"math"
	"strconv"
)

// Encoder writes line-protocol lines at the end of a caller's buffer, one
// line at a time: Begin with the measurement, Tag for each tag, then the
// field methods (Float, Int, Uint, Bool, Str), then End with the
// timestamp or EndNow without one. It allocates nothing beyond the
// buffer's growth, so a caller that reuses a buffer with room allocates
// nothing per line.
//
// Tag and the field methods return nothing: the first fault (an empty
// name, a tag after a field) is kept and End reports it, having cut the
// line out of the buffer. End also refuses a line with no field
// (ErrNoField). So a line in the buffer is always one that Parser
// reads back to the same names and values.
//
// Numbers: a float is written in the shortest form that reads back to the
// same float64, plain decimal for magnitudes in [1e-6, 1e21) and exponent
// form outside (and for 0), and NaN, Infinity and -Infinity as QuestDB
// spells them (InfluxDB has no spelling for them and rejects such a line:
// leave a missing value out instead); an int as 123i, a uint as 123u, a
// bool as t or f, the timestamp as integer nanoseconds.
//
// The zero value is ready to use. An Encoder is for one goroutine.
type Encoder[T Text] struct {
	buf    []byte
	start  int // len(buf) at Begin: where the line starts
	fields int // fields written so far
	err    error
}

// Begin starts a line with measurement m at the end of dst.
func (e *Encoder[T]) Begin(dst []byte, m T) {
	e.buf, e.start, e.fields, e.err = dst, len(dst), 0, nil
	switch {
	case len(m) == 0:
		e.err = nameError(ErrName, "measurement", "", "is empty")
		return
	case m[0] == '#' || m[0] == '\t':
		e.err = nameError(ErrName, "measurement", string(m), "starts with '#' or a tab (the line would read as a comment or lose the tab)")
		return
	}
	e.buf = AppendName(e.buf, m)
}

// Tag appends the tag key=value. Tags come before every field, and
// neither key nor value may be empty (leave out a tag that has no value).
func (e *Encoder[T]) Tag(key, value T) {
	switch {
	case e.err != nil:
		return
	case e.fields > 0:
		e.err = nameError(ErrOrder, "tag", string(key), "comes after a field")
		return
	case len(key) == 0:
		e.err = nameError(ErrName, "tag key", "", "is empty")
		return
	case len(value) == 0:
		e.err = nameError(ErrName, "tag", string(key), "has an empty value (leave the tag out instead)")
		return
	}
	e.buf = append(e.buf, ',')
	e.buf = AppendName(e.buf, key)
	e.buf = append(e.buf, '=')
	e.buf = AppendName(e.buf, value)
}

// key appends the separator before a field and its key, and reports
// whether the value is to follow.
func (e *Encoder[T]) key(k T) bool {
	if e.err != nil {
		return false
	}
	if len(k) == 0 {
		e.err = nameError(ErrName, "field key", "", "is empty")
		return false
	}
	sep := byte(',')
	if e.fields == 0 {
		sep = ' '
	}
	e.fields++
	e.buf = append(e.buf, sep)
	e.buf = AppendName(e.buf, k)
	e.buf = append(e.buf, '=')
	return true
}

// Float appends the float field key=v.
func (e *Encoder[T]) Float(key T, v float64) {
	if e.key(key) {
		e.buf = appendFloat(e.buf, v)
	}
}

// Int appends the integer field key=vi.
func (e *Encoder[T]) Int(key T, v int64) {
	if e.key(key) {
		e.buf = strconv.AppendInt(e.buf, v, 10)
		e.buf = append(e.buf, 'i')
	}
}

// Uint appends the unsigned field key=vu. tickdb reads one past
// math.MaxInt64 as a bad line (it has no unsigned column).
func (e *Encoder[T]) Uint(key T, v uint64) {
	if e.key(key) {
		e.buf = strconv.AppendUint(e.buf, v, 10)
		e.buf = append(e.buf, 'u')
	}
}

// Bool appends the boolean field key=t or key=f.
func (e *Encoder[T]) Bool(key T, v bool) {
	if e.key(key) {
		c := byte('f')
		if v {
			c = 't'
		}
		e.buf = append(e.buf, c)
	}
}

// Str appends the string field key="v" (quoted and escaped; tickdb stores
// it as a symbol). v may be empty.
func (e *Encoder[T]) Str(key, v T) {
	if e.key(key) {
		e.buf = AppendQuoted(e.buf, v)
	}
}

// End ends the line with timestamp ts (nanoseconds) and its '\n', and
// returns the buffer. On a fault it returns the buffer as it was before
// Begin, and the fault.
func (e *Encoder[T]) End(ts int64) ([]byte, error) {
	if e.err == nil && e.fields > 0 {
		e.buf = append(e.buf, ' ')
		e.buf = strconv.AppendInt(e.buf, ts, 10)
	}
	return e.end()
}

// EndNow ends the line without a timestamp (the server stamps it), like
// End otherwise.
func (e *Encoder[T]) EndNow() ([]byte, error) { return e.end() }

func (e *Encoder[T]) end() ([]byte, error) {
	b, err := e.buf, e.err
	e.buf, e.err = nil, nil
	if err == nil && e.fields == 0 {
		err = ErrNoField
	}
	if err != nil {
		return b[:e.start], err
	}
	return append(b, '\n'), nil
}

// appendFloat appends v so that it reads back as the same float64.
func appendFloat(dst []byte, v float64) []byte {
	switch a := math.Abs(v); {
	case a >= 1e-6 && a < 1e21:
		return strconv.AppendFloat(dst, v, 'f', -1, 64)
	case a < math.Inf(1):
		return strconv.AppendFloat(dst, v, 'g', -1, 64)
	case v > 0:
		return append(dst, "Infinity"...)
	case v < 0:
		return append(dst, "-Infinity"...)
	}
	return append(dst, "NaN"...)
}
