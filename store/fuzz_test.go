package store_test

import (
	"errors"
	"math"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// Fuzz targets for every decoder of untrusted bytes. Seeds live in
// testdata/fuzz/<FuzzName>/ and in the f.Add calls; run one with e.g.
//
//	go test ./store -run '^$' -fuzz '^FuzzUnmarshalSchema$' -fuzztime 20s

func FuzzUnmarshalSchema(f *testing.F) {
	for _, tc := range layoutCases {
		s := store.MustSchema(tc.cols...)
		b := make([]byte, s.SchemaBytes())
		s.MarshalSchema(b)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 16, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := store.UnmarshalSchema(b)
		if err != nil {
			if !errors.Is(err, store.ErrSchema) {
				t.Fatalf("error %v is not ErrSchema", err)
			}
			return
		}
		// Whatever decodes is a valid schema and re-encodes to itself.
		if s.Cols[0] != (store.Column{Name: "ts", Type: store.TypeTs}) || s.RowSize%8 != 0 || s.RowSize < 16 {
			t.Fatalf("decoded a malformed schema %s (row %d)", s, s.RowSize)
		}
		if s.SchemaBytes() > len(b) {
			t.Fatalf("decoded %d bytes of schema from %d", s.SchemaBytes(), len(b))
		}
		out := make([]byte, s.SchemaBytes())
		s.MarshalSchema(out)
		s2, err := store.UnmarshalSchema(out)
		if err != nil || !s2.Equal(s) || s2.RowSize != s.RowSize {
			t.Fatalf("re-encoded schema %s decodes to %v, %v", s, s2, err)
		}
		for i := range s.Cols {
			if s.ColAt(i) != s2.ColAt(i) {
				t.Fatalf("column %d moved", i)
			}
		}
	})
}

// FuzzRowRoundTrip encodes values into a row of a schema chosen by the
// fuzzer, seals it, and decodes them back.
func FuzzRowRoundTrip(f *testing.F) {
	f.Add(int64(1_700_000_000_000_000_000), uint32(3), math.Float64bits(101.5), int64(300), true, uint8(0), uint64(0))
	f.Add(int64(math.MinInt64), uint32(math.MaxUint32), math.Float64bits(math.NaN()), int64(-1), false, uint8(3), uint64(math.MaxUint64))
	f.Add(int64(0), uint32(0), uint64(0), int64(0), false, uint8(7), uint64(128))
	f.Fuzz(func(t *testing.T, ts int64, sym uint32, px uint64, size int64, flag bool, shape uint8, seq uint64) {
		// shape picks which optional columns exist, so layouts vary.
		cols := []store.Column{{Name: "ts", Type: store.TypeTs}}
		if shape&1 != 0 {
			cols = append(cols, store.Column{Name: "flag", Type: store.TypeBool})
		}
		if shape&2 != 0 {
			cols = append(cols, store.Column{Name: "sym", Type: store.TypeSym})
		}
		cols = append(cols, store.Column{Name: "price", Type: store.TypeF64})
		if shape&4 != 0 {
			cols = append(cols, store.Column{Name: "size", Type: store.TypeI64})
		}
		for i := range int(shape >> 3 & 7) {
			cols = append(cols, store.Column{Name: "b" + itoa(i), Type: store.TypeBool})
		}
		s, err := store.NewSchema(cols...)
		if err != nil {
			t.Fatal(err)
		}
		r := s.NewRow()
		r.SetTs(ts)
		set := func(name string, f func(store.Col)) {
			if c, ok := s.Col(name); ok {
				f(c)
			}
		}
		set("flag", func(c store.Col) { r.SetBool(c, flag) })
		set("sym", func(c store.Col) { r.SetSym(c, sym) })
		set("price", func(c store.Col) { r.SetF64(c, math.Float64frombits(px)) })
		set("size", func(c store.Col) { r.SetI64(c, size) })
		for i := range int(shape >> 3 & 7) {
			set("b"+itoa(i), func(c store.Col) { r.SetBool(c, i%2 == 0) })
		}
		format.Seal(seq, r)
		if !format.Valid(seq, r) {
			t.Fatal("sealed row is not valid")
		}
		if format.Valid(seq+1, r) {
			t.Fatal("row valid at the next seq")
		}
		// The copy a reader gets decodes to the same values.
		got := store.Row(append([]byte(nil), r...))
		if got.Ts() != ts {
			t.Errorf("ts %d, want %d", got.Ts(), ts)
		}
		set("flag", func(c store.Col) {
			if got.Bool(c) != flag {
				t.Errorf("flag %v", got.Bool(c))
			}
		})
		set("sym", func(c store.Col) {
			if got.Sym(c) != sym {
				t.Errorf("sym %d", got.Sym(c))
			}
		})
		set("price", func(c store.Col) {
			if math.Float64bits(got.F64(c)) != px {
				t.Errorf("price bits %x, want %x", math.Float64bits(got.F64(c)), px)
			}
		})
		set("size", func(c store.Col) {
			if got.I64(c) != size {
				t.Errorf("size %d", got.I64(c))
			}
		})
		for i := range int(shape >> 3 & 7) {
			set("b"+itoa(i), func(c store.Col) {
				if got.Bool(c) != (i%2 == 0) {
					t.Errorf("b%d = %v", i, got.Bool(c))
				}
			})
		}
	})
}
