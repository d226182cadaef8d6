package ingest

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"

	"github.com/tickdb/tickdb/lineproto"
)

// A record is one parsed line on its way from an event loop (or an HTTP
// request) to the writer, encoded into a batch buffer so the hand-off
// copies bytes, not pointers, and allocates nothing:
//
//	<4b len> <4b conn> <8b line> <8b ts> <1b hasTs> <1b rejected> <2b ntags> <2b nfields> <1b reason> <1b pad>
//	<4b mlen> measurement
//	ntags   × (<4b klen> key <4b vlen> value)
//	nfields × (<4b klen> key <1b kind> <8b value> [value bytes])
//
// A string field's 8-byte value is its length, and its bytes follow. len
// counts the whole record. Names are already unescaped. The writer
// side decodes a record back into a Line whose slices point into the batch.
//
// A rejected record (rejected = 1) stands for a line the event loop could
// not parse: it has no tags or fields, only the reason and the
// measurement when it parsed. The writer counts it in order with the lines
// around it, so that its metric names the table when the table exists,
// also when the line that creates the table came just before it in the
// same batch.
const recHeader = 32

// recordSize is the encoded size of l.
func recordSize(l *lineproto.Line) int {
	n := recHeader + 4 + len(l.Measurement)
	for i := range l.Tags {
		n += 8 + len(l.Tags[i].Key) + len(l.Tags[i].Value)
	}
	for i := range l.Fields {
		n += 4 + len(l.Fields[i].Key) + 9
		if l.Fields[i].Kind == lineproto.KindString {
			n += len(l.Fields[i].S)
		}
	}
	return n
}

// appendRecord encodes l, read from connection conn at 1-based line number
// lineNo, onto dst: one grow, then stores at known offsets.
func appendRecord(dst []byte, l *lineproto.Line, conn uint32, lineNo uint64) []byte {
	n := recordSize(l)
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	b := dst[start:]
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(n))
	le.PutUint32(b[4:], conn)
	le.PutUint64(b[8:], lineNo)
	le.PutUint64(b[16:], uint64(l.Ts))
	b[24], b[25] = 0, 0
	if l.HasTs {
		b[24] = 1
	}
	le.PutUint16(b[26:], uint16(len(l.Tags)))
	le.PutUint16(b[28:], uint16(len(l.Fields)))
	b[30], b[31] = 0, 0
	p := put32(b, recHeader, l.Measurement)
	for i := range l.Tags {
		p = put32(b, p, l.Tags[i].Key)
		p = put32(b, p, l.Tags[i].Value)
	}
	for i := range l.Fields {
		f := &l.Fields[i]
		p = put32(b, p, f.Key)
		var v uint64
		switch f.Kind {
		case lineproto.KindFloat:
			v = math.Float64bits(f.F)
		case lineproto.KindInt, lineproto.KindUint:
			v = uint64(f.I)
		case lineproto.KindBool:
			if f.B {
				v = 1
			}
		case lineproto.KindString:
			v = uint64(len(f.S))
		}
		b[p] = byte(f.Kind)
		le.PutUint64(b[p+1:], v)
		p += 9
		if f.Kind == lineproto.KindString {
			p += copy(b[p:], f.S)
		}
	}
	return dst
}

// appendRejectRecord encodes a line that did not parse, with its
// measurement (nil when it did not parse either) and reason, onto dst.
func appendRejectRecord(dst []byte, meas []byte, r lineproto.Reason, conn uint32, lineNo uint64) []byte {
	n := recHeader + 4 + len(meas)
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	b := dst[start:]
	clear(b[:recHeader])
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(n))
	le.PutUint32(b[4:], conn)
	le.PutUint64(b[8:], lineNo)
	b[25], b[30] = 1, byte(r)
	put32(b, recHeader, meas)
	return dst
}

// recordRejected reports whether the record at the start of b is a
// rejected line, and its reason.
func recordRejected(b []byte) (lineproto.Reason, bool) { return lineproto.Reason(b[30]), b[25] != 0 }

// put32 stores len(v) and v at b[p:] and returns the offset past them.
func put32(b []byte, p int, v []byte) int {
	binary.LittleEndian.PutUint32(b[p:], uint32(len(v)))
	return p + 4 + copy(b[p+4:], v)
}

// recordMeta is what the writer keeps of a record besides its Line: where
// it came from, for counting and logging a rejection.
type recordMeta struct {
	conn   uint32
	lineNo uint64
}

// decodeRecord decodes the record at the start of b into l (reusing its
// slices; they point into b) and returns the record's length. Records are
// written by appendRecord in this process, so b is trusted.
func decodeRecord(b []byte, l *lineproto.Line, m *recordMeta) int {
	le := binary.LittleEndian
	n := int(le.Uint32(b))
	m.conn = le.Uint32(b[4:])
	m.lineNo = le.Uint64(b[8:])
	l.Ts = int64(le.Uint64(b[16:]))
	l.HasTs = b[24] != 0
	ntags := int(le.Uint16(b[26:]))
	nfields := int(le.Uint16(b[28:]))
	p := recHeader
	l.Measurement, p = take32(b, p)
	l.Tags = l.Tags[:0]
	for range ntags {
		var k, v []byte
		k, p = take32(b, p)
		v, p = take32(b, p)
		l.Tags = append(l.Tags, lineproto.Tag{Key: k, Value: v})
	}
	l.Fields = l.Fields[:0]
	for range nfields {
		var f lineproto.Field
		f.Key, p = take32(b, p)
		f.Kind = lineproto.Kind(b[p])
		v := le.Uint64(b[p+1:])
		p += 9
		switch f.Kind {
		case lineproto.KindFloat:
			f.F = math.Float64frombits(v)
		case lineproto.KindInt, lineproto.KindUint:
			f.I = int64(v)
		case lineproto.KindBool:
			f.B = v != 0
		case lineproto.KindString:
			f.S = b[p : p+int(v) : p+int(v)]
			p += int(v)
		}
		l.Fields = append(l.Fields, f)
	}
	return n
}

func take32(b []byte, p int) ([]byte, int) {
	n := int(binary.LittleEndian.Uint32(b[p:]))
	p += 4
	return b[p : p+n : p+n], p + n
}

// recordLen is the length of the record at the start of b.
func recordLen(b []byte) int { return int(binary.LittleEndian.Uint32(b)) }

// recordTs is a record's timestamp and whether the line had one.
func recordTs(b []byte) (int64, bool) { return int64(binary.LittleEndian.Uint64(b[16:])), b[24] != 0 }

// recordMeasurement is a record's table name.
func recordMeasurement(b []byte) []byte {
	m, _ := take32(b, recHeader)
	return m
}

// recordTag is the value of the record's tag k (in its order), or nil
// when it has fewer tags or is a rejected line.
func recordTag(b []byte, k int) []byte {
	if b[25] != 0 || k >= int(binary.LittleEndian.Uint16(b[26:])) {
		return nil
	}
	p := recHeader + 4 + int(binary.LittleEndian.Uint32(b[recHeader:]))
	for range k {
		p += 4 + int(binary.LittleEndian.Uint32(b[p:]))
		p += 4 + int(binary.LittleEndian.Uint32(b[p:]))
	}
	p += 4 + int(binary.LittleEndian.Uint32(b[p:]))
	v, _ := take32(b, p)
	return v
}

// lineEnd is the index of the first '\n' in b that ends a line, or -1. A
// '\n' after an odd run of backslashes is escaped (QuestDB's clients write
// a line break in a symbol that way) and belongs to the line.
func lineEnd(b []byte) int { return lineEndAt(b, 0) }

// lineEndAt is lineEnd from offset from: the index in b of the first line
// end at or after from, or -1. The bytes before from hold no line end
// (they were scanned), but the backslashes before a '\n' are counted
// from the start of b.
func lineEndAt(b []byte, from int) int {
	for {
		i := bytes.IndexByte(b[from:], '\n')
		if i < 0 {
			return -1
		}
		i += from
		k := i
		for k > 0 && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i
		}
		from = i + 1
	}
}
