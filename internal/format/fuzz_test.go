package format_test

import (
	"errors"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// Fuzz targets for every decoder of untrusted bytes. Seeds live in
// testdata/fuzz/<FuzzName>/ and in the f.Add calls; run one with e.g.
//
//	go test ./internal/format -run '^$' -fuzz '^FuzzUnmarshalSegHeader$' -fuzztime 20s

func FuzzUnmarshalSegHeader(f *testing.F) {
	for _, h := range []format.SegHeader{
		{TableID: testTableID, RowSize: 32, SegNo: 3, RowsPerSeg: 128},
		{Live: true, TableID: testTableID, RowSize: 40, SegNo: 0, RowsPerSeg: 1 << 20},
	} {
		b := make([]byte, format.BlockSize)
		h.Marshal(b)
		f.Add(b[:80], true)
	}
	f.Add([]byte("TICKSEG\x00"), false)
	// The fuzzer gives the first bytes; the rest of the block is zero.
	// fix recomputes the header check so the fields behind it are reached.
	f.Fuzz(func(t *testing.T, head []byte, fix bool) {
		b := make([]byte, max(format.BlockSize, len(head)))
		copy(b, head)
		if fix {
			le.PutUint32(b[56:], format.CRC32C(b[:56]))
		}
		h, err := format.UnmarshalSegHeader("seg", b)
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Path != "seg" || ce.Offset < 0 || ce.Offset >= format.BlockSize {
				t.Fatalf("error %v is not a CorruptError inside the header", err)
			}
			return
		}
		if h.RowsPerSeg == 0 || h.RowsPerSeg&(h.RowsPerSeg-1) != 0 {
			t.Fatalf("accepted rows per segment %d", h.RowsPerSeg)
		}
		out := make([]byte, format.BlockSize)
		h.Marshal(out)
		h2, err := format.UnmarshalSegHeader("seg", out)
		if err != nil || h2 != h {
			t.Fatalf("re-encoded header %+v decodes to %+v, %v", h, h2, err)
		}
	})
}

func FuzzCheckFileHeader(f *testing.F) {
	for _, m := range []string{format.MagicSym, format.MagicTime, format.MagicPost} {
		b := make([]byte, format.BlockSize)
		format.MarshalFileHeader(b, m, testTableID)
		f.Add(b[:40], m, testTableID[:], false)
	}
	f.Add([]byte("TICKPST\x00\x01\x00\x00\x00"), format.MagicPost, testTableID[:], true)
	f.Fuzz(func(t *testing.T, head []byte, magic string, id []byte, fix bool) {
		b := make([]byte, format.BlockSize)
		copy(b, head)
		if fix {
			le.PutUint32(b[32:], format.CRC32C(b[:32]))
		}
		var tid [16]byte
		copy(tid[:], id)
		err := format.CheckFileHeader("f", b, magic, tid)
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Path != "f" || ce.Offset < 0 || ce.Offset >= format.BlockSize {
				t.Fatalf("error %v is not a CorruptError inside the header", err)
			}
			return
		}
		if string(b[:8]) != magic || le.Uint32(b[8:]) != format.FormatVersion || string(b[16:32]) != string(tid[:]) {
			t.Fatal("accepted a header with another magic, version or table id")
		}
		// The canonical header for the same table passes too.
		out := make([]byte, format.BlockSize)
		format.MarshalFileHeader(out, magic, tid)
		if err := format.CheckFileHeader("f", out, magic, tid); err != nil {
			t.Fatalf("canonical header rejected: %v", err)
		}
	})
}

func FuzzParseSymEntry(f *testing.F) {
	for i, name := range []string{"", "A", "AAPL", "12345678", "with space"} {
		b := make([]byte, format.SymEntrySize(len(name)))
		format.PutSymEntry(b, uint32(i), uint64(i*10+1), []byte(name))
		f.Add(b, uint32(i))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint32(0))
	f.Fuzz(func(t *testing.T, b []byte, id uint32) {
		name, dir, size, err := format.ParseSymEntry("sym", 4096, b, id)
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Offset != 4096 || ce.Path != "sym" {
				t.Fatalf("error %v is not a CorruptError at the entry", err)
			}
			return
		}
		if size > len(b) || size != format.SymEntrySize(len(name)) || len(name) > store.MaxSymLen {
			t.Fatalf("entry of size %d (name %d bytes) from %d bytes", size, len(name), len(b))
		}
		out := make([]byte, size)
		format.PutSymEntry(out, id, dir, name)
		n2, d2, s2, err := format.ParseSymEntry("sym", 0, out, id)
		if err != nil || string(n2) != string(name) || d2 != dir || s2 != size {
			t.Fatalf("re-encoded entry decodes to %q %d %d %v", n2, d2, s2, err)
		}
		if string(out[:format.SymEntryHeader+len(name)]) != string(b[:format.SymEntryHeader+len(name)]) {
			t.Fatal("accepted entry differs from its re-encoding outside the padding")
		}
	})
}
