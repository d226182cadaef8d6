package store_test

import (
	"errors"
	"math"
	"testing"

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

func FuzzUnmarshalSegHeader(f *testing.F) {
	for _, h := range []store.SegHeader{
		{TableID: testTableID, RowSize: 32, SegNo: 3, RowsPerSeg: 128},
		{Live: true, TableID: testTableID, RowSize: 40, SegNo: 0, RowsPerSeg: 1 << 20},
	} {
		b := make([]byte, store.BlockSize)
		h.Marshal(b)
		f.Add(b[:80], true)
	}
	f.Add([]byte("TICKSEG\x00"), false)
	// The fuzzer gives the first bytes; the rest of the block is zero.
	// fix recomputes the header check so the fields behind it are reached.
	f.Fuzz(func(t *testing.T, head []byte, fix bool) {
		b := make([]byte, max(store.BlockSize, len(head)))
		copy(b, head)
		if fix {
			le.PutUint32(b[56:], store.CRC32C(b[:56]))
		}
		h, err := store.UnmarshalSegHeader("seg", b)
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Path != "seg" || ce.Offset < 0 || ce.Offset >= store.BlockSize {
				t.Fatalf("error %v is not a CorruptError inside the header", err)
			}
			return
		}
		if h.RowsPerSeg == 0 || h.RowsPerSeg&(h.RowsPerSeg-1) != 0 {
			t.Fatalf("accepted rows per segment %d", h.RowsPerSeg)
		}
		out := make([]byte, store.BlockSize)
		h.Marshal(out)
		h2, err := store.UnmarshalSegHeader("seg", out)
		if err != nil || h2 != h {
			t.Fatalf("re-encoded header %+v decodes to %+v, %v", h, h2, err)
		}
	})
}

func FuzzCheckFileHeader(f *testing.F) {
	for _, m := range []string{store.MagicSym, store.MagicTime, store.MagicPost} {
		b := make([]byte, store.BlockSize)
		store.MarshalFileHeader(b, m, testTableID)
		f.Add(b[:40], m, testTableID[:], false)
	}
	f.Add([]byte("TICKPST\x00\x01\x00\x00\x00"), store.MagicPost, testTableID[:], true)
	f.Fuzz(func(t *testing.T, head []byte, magic string, id []byte, fix bool) {
		b := make([]byte, store.BlockSize)
		copy(b, head)
		if fix {
			le.PutUint32(b[32:], store.CRC32C(b[:32]))
		}
		var tid [16]byte
		copy(tid[:], id)
		err := store.CheckFileHeader("f", b, magic, tid)
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Path != "f" || ce.Offset < 0 || ce.Offset >= store.BlockSize {
				t.Fatalf("error %v is not a CorruptError inside the header", err)
			}
			return
		}
		if string(b[:8]) != magic || le.Uint32(b[8:]) != store.FormatVersion || string(b[16:32]) != string(tid[:]) {
			t.Fatal("accepted a header with another magic, version or table id")
		}
		// The canonical header for the same table passes too.
		out := make([]byte, store.BlockSize)
		store.MarshalFileHeader(out, magic, tid)
		if err := store.CheckFileHeader("f", out, magic, tid); err != nil {
			t.Fatalf("canonical header rejected: %v", err)
		}
	})
}

func FuzzParseSymEntry(f *testing.F) {
	for i, name := range []string{"", "A", "AAPL", "12345678", "with space"} {
		b := make([]byte, store.SymEntrySize(len(name)))
		store.PutSymEntry(b, uint32(i), uint64(i*10+1), []byte(name))
		f.Add(b, uint32(i))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint32(0))
	f.Fuzz(func(t *testing.T, b []byte, id uint32) {
		name, dir, size, err := store.ParseSymEntry("sym", 4096, b, id)
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Offset != 4096 || ce.Path != "sym" {
				t.Fatalf("error %v is not a CorruptError at the entry", err)
			}
			return
		}
		if size > len(b) || size != store.SymEntrySize(len(name)) || len(name) > store.MaxSymLen {
			t.Fatalf("entry of size %d (name %d bytes) from %d bytes", size, len(name), len(b))
		}
		out := make([]byte, size)
		store.PutSymEntry(out, id, dir, name)
		n2, d2, s2, err := store.ParseSymEntry("sym", 0, out, id)
		if err != nil || string(n2) != string(name) || d2 != dir || s2 != size {
			t.Fatalf("re-encoded entry decodes to %q %d %d %v", n2, d2, s2, err)
		}
		if string(out[:store.SymEntryHeader+len(name)]) != string(b[:store.SymEntryHeader+len(name)]) {
			t.Fatal("accepted entry differs from its re-encoding outside the padding")
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
		store.Seal(seq, r)
		if !store.Valid(seq, r) {
			t.Fatal("sealed row is not valid")
		}
		if store.Valid(seq+1, r) {
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
