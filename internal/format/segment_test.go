package format_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

var le = binary.LittleEndian

var testTableID = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// wantCorrupt asserts that err is a *store.CorruptError for path at off.
func wantCorrupt(t *testing.T, err error, path string, off int64) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want corruption of %s at %d", path, off)
	}
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("error %v does not match ErrCorrupt", err)
	}
	var ce *store.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CorruptError", err)
	}
	if ce.Path != path || ce.Offset != off {
		t.Fatalf("corruption reported at %s:%d (%s), want %s:%d", ce.Path, ce.Offset, ce.Reason, path, off)
	}
	if ce.Reason == "" {
		t.Error("corruption without a reason")
	}
}

func TestCorruptError(t *testing.T) {
	err := format.Corruptf("/db/t/seg-0000000001.dat", 4128, "row %d fails its check", 7)
	want := "store: corrupt /db/t/seg-0000000001.dat at offset 4128: row 7 fails its check"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
	wrapped := errors.Join(errors.New("reader: open t"), err)
	if !errors.Is(wrapped, store.ErrCorrupt) || errors.Is(errors.New("x"), store.ErrCorrupt) {
		t.Error("errors.Is(ErrCorrupt) wrong")
	}
	if errors.Is(err, store.ErrSchema) {
		t.Error("a CorruptError matches ErrSchema")
	}
}

func TestCRC32C(t *testing.T) {
	// The standard check value of CRC-32C (Castagnoli).
	if got := format.CRC32C([]byte("123456789")); got != 0xE3069283 {
		t.Errorf("CRC32C(123456789) = %08x, want e3069283", got)
	}
}

func TestSegHeaderRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		h    format.SegHeader
	}{
		{"durable_first", format.SegHeader{TableID: testTableID, RowSize: 32, SegNo: 0, RowsPerSeg: 128}},
		{"durable_later", format.SegHeader{TableID: testTableID, RowSize: 40, SegNo: 12345, RowsPerSeg: 1 << 21}},
		{"live", format.SegHeader{Live: true, TableID: testTableID, RowSize: 16, SegNo: 7, RowsPerSeg: 16}},
		{"huge_segno", format.SegHeader{TableID: testTableID, RowSize: 488, SegNo: 1 << 40, RowsPerSeg: 1 << 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Repeat([]byte{0x5A}, format.BlockSize+8)
			tc.h.Marshal(b)
			if b[format.BlockSize] != 0x5A {
				t.Error("Marshal wrote past the header block")
			}
			magic := format.MagicSeg
			if tc.h.Live {
				magic = format.MagicLive
			}
			if string(b[:8]) != magic {
				t.Errorf("magic %q, want %q", b[:8], magic)
			}
			if le.Uint64(b[format.LiveGenOff:]) != 0 {
				t.Error("gen word not zero")
			}
			if got := le.Uint64(b[40:]); got != tc.h.SegNo*tc.h.RowsPerSeg {
				t.Errorf("base seq %d, want %d", got, tc.h.SegNo*tc.h.RowsPerSeg)
			}
			got, err := format.UnmarshalSegHeader("seg", b[:format.BlockSize])
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.h {
				t.Errorf("round trip %+v, want %+v", got, tc.h)
			}
			if got.BaseSeq() != tc.h.SegNo*tc.h.RowsPerSeg {
				t.Errorf("BaseSeq %d", got.BaseSeq())
			}
		})
	}
	t.Run("gen_word_is_not_checked", func(t *testing.T) {
		// A live slot's generation changes under a valid header.
		b := make([]byte, format.BlockSize)
		format.SegHeader{Live: true, TableID: testTableID, RowSize: 32, SegNo: 3, RowsPerSeg: 128}.Marshal(b)
		le.PutUint64(b[format.LiveGenOff:], 99)
		if _, err := format.UnmarshalSegHeader("slot", b); err != nil {
			t.Fatal(err)
		}
	})
}

// fixSegCheck recomputes the header check so that a field change reaches
// the field's own validation.
func fixSegCheck(b []byte) { le.PutUint32(b[56:], format.CRC32C(b[:56])) }

func TestUnmarshalSegHeaderRejects(t *testing.T) {
	const path = "/db/t/seg-0000000003.dat"
	good := func() []byte {
		b := make([]byte, format.BlockSize)
		format.SegHeader{TableID: testTableID, RowSize: 32, SegNo: 3, RowsPerSeg: 128}.Marshal(b)
		return b
	}
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		off    int64
	}{
		{"empty", func(b []byte) []byte { return nil }, 0},
		{"truncated", func(b []byte) []byte { return b[:format.BlockSize-1] }, 0},
		{"zeroed", func(b []byte) []byte { clear(b); return b }, 0},
		{"magic_byte_0", func(b []byte) []byte { b[0] ^= 1; return b }, 0},
		{"magic_byte_7", func(b []byte) []byte { b[7] ^= 0x80; return b }, 0},
		{"other_file_magic", func(b []byte) []byte { copy(b, format.MagicSym); return b }, 0},
		{"version_flip_unchecked", func(b []byte) []byte { b[8] ^= 1; return b }, 56},
		{"row_size_flip", func(b []byte) []byte { b[12] ^= 4; return b }, 56},
		{"table_id_flip", func(b []byte) []byte { b[20] ^= 1; return b }, 56},
		{"segno_flip", func(b []byte) []byte { b[32] ^= 1; return b }, 56},
		{"base_flip", func(b []byte) []byte { b[41] ^= 1; return b }, 56},
		{"rows_flip", func(b []byte) []byte { b[48] ^= 1; return b }, 56},
		{"check_flip", func(b []byte) []byte { b[58] ^= 1; return b }, 56},
		{"version_2", func(b []byte) []byte { le.PutUint32(b[8:], 2); fixSegCheck(b); return b }, 8},
		{"version_0", func(b []byte) []byte { le.PutUint32(b[8:], 0); fixSegCheck(b); return b }, 8},
		{"rows_zero", func(b []byte) []byte { le.PutUint64(b[48:], 0); fixSegCheck(b); return b }, 40},
		{"rows_not_pow2", func(b []byte) []byte { le.PutUint64(b[48:], 96); le.PutUint64(b[40:], 3*96); fixSegCheck(b); return b }, 40},
		{"base_mismatch", func(b []byte) []byte { le.PutUint64(b[40:], 3*128+1); fixSegCheck(b); return b }, 40},
		{"segno_mismatch", func(b []byte) []byte { le.PutUint64(b[32:], 4); fixSegCheck(b); return b }, 40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := format.UnmarshalSegHeader(path, tc.mutate(good()))
			wantCorrupt(t, err, path, tc.off)
		})
	}
}

func TestSegFileSize(t *testing.T) {
	cases := []struct {
		rowSize int
		rows    uint64
		want    int64
	}{
		{32, 128, 8192},
		{32, 16, 8192},
		{40, 128, 4096 + 8192},
		{24, 128, 8192},
		{32, 1 << 21, 4096 + 64<<20},
		{488, 16, 4096 + 8192},
	}
	for _, tc := range cases {
		if got := format.SegFileSize(tc.rowSize, tc.rows); got != tc.want {
			t.Errorf("SegFileSize(%d, %d) = %d, want %d", tc.rowSize, tc.rows, got, tc.want)
		}
	}
}

func TestFileHeaderRoundTrip(t *testing.T) {
	for _, magic := range []string{format.MagicSym, format.MagicTime, format.MagicPost} {
		t.Run(strings.TrimRight(magic, "\x00"), func(t *testing.T) {
			b := bytes.Repeat([]byte{0xCC}, format.BlockSize+1)
			format.MarshalFileHeader(b, magic, testTableID)
			if b[format.BlockSize] != 0xCC {
				t.Error("MarshalFileHeader wrote past the block")
			}
			for i := 36; i < format.BlockSize; i++ {
				if b[i] != 0 {
					t.Fatalf("byte %d of the header = %#x, want 0", i, b[i])
				}
			}
			if err := format.CheckFileHeader("f", b[:format.BlockSize], magic, testTableID); err != nil {
				t.Fatal(err)
			}
			// Longer input (a mapping) is fine too.
			if err := format.CheckFileHeader("f", b, magic, testTableID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCheckFileHeaderRejects(t *testing.T) {
	const path = "/db/t/ts.idx"
	good := func() []byte {
		b := make([]byte, format.BlockSize)
		format.MarshalFileHeader(b, format.MagicTime, testTableID)
		return b
	}
	fix := func(b []byte) { le.PutUint32(b[32:], format.CRC32C(b[:32])) }
	otherID := testTableID
	otherID[15] ^= 0xFF
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		magic  string
		id     [16]byte
		off    int64
	}{
		{"empty", func(b []byte) []byte { return b[:0] }, format.MagicTime, testTableID, 0},
		{"truncated", func(b []byte) []byte { return b[:100] }, format.MagicTime, testTableID, 0},
		{"zeroed", func(b []byte) []byte { clear(b); return b }, format.MagicTime, testTableID, 0},
		{"magic_flip", func(b []byte) []byte { b[3] ^= 1; return b }, format.MagicTime, testTableID, 0},
		{"wrong_kind", func(b []byte) []byte { return b }, format.MagicPost, testTableID, 0},
		{"version_flip", func(b []byte) []byte { b[9] ^= 1; return b }, format.MagicTime, testTableID, 32},
		{"reserved_flip", func(b []byte) []byte { b[12] ^= 1; return b }, format.MagicTime, testTableID, 32},
		{"table_id_flip", func(b []byte) []byte { b[16] ^= 1; return b }, format.MagicTime, testTableID, 32},
		{"check_flip", func(b []byte) []byte { b[35] ^= 1; return b }, format.MagicTime, testTableID, 32},
		{"version_2_fixed", func(b []byte) []byte { le.PutUint32(b[8:], 2); fix(b); return b }, format.MagicTime, testTableID, 8},
		{"other_table", func(b []byte) []byte { return b }, format.MagicTime, otherID, 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := format.CheckFileHeader(path, tc.mutate(good()), tc.magic, tc.id)
			wantCorrupt(t, err, path, tc.off)
		})
	}
	t.Run("bytes_past_check_ignored", func(t *testing.T) {
		b := good()
		b[100] = 1
		if err := format.CheckFileHeader(path, b, format.MagicTime, testTableID); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSymEntryRoundTrip(t *testing.T) {
	names := []string{"", "A", "AAPL", "BRK.B   ", "12345678", "123456789", "with space, comma=eq", "\x00\xff", strings.Repeat("x", store.MaxSymLen)}
	for i, name := range names {
		t.Run(strconv.Itoa(len(name)), func(t *testing.T) {
			id, dir := uint32(i*3+1), uint64(1000+i)
			size := format.SymEntrySize(len(name))
			if size%8 != 0 || size < format.SymEntryHeader+len(name) || size >= format.SymEntryHeader+len(name)+8+1 {
				t.Fatalf("SymEntrySize(%d) = %d", len(name), size)
			}
			b := bytes.Repeat([]byte{0x77}, size+8)
			if n := format.PutSymEntry(b, id, dir, []byte(name)); n != size {
				t.Fatalf("PutSymEntry returned %d, want %d", n, size)
			}
			if b[size] != 0x77 {
				t.Error("PutSymEntry wrote past the entry")
			}
			for j := format.SymEntryHeader + len(name); j < size; j++ {
				if b[j] != 0 {
					t.Errorf("padding byte %d = %#x", j, b[j])
				}
			}
			got, gotDir, gotSize, err := format.ParseSymEntry("sym.dat", 4096, b, id)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != name || gotDir != dir || gotSize != size {
				t.Errorf("parsed %q dir %d size %d, want %q %d %d", got, gotDir, gotSize, name, dir, size)
			}
			// Exactly the entry's bytes are enough.
			if _, _, _, err := format.ParseSymEntry("sym.dat", 4096, b[:size], id); err != nil {
				t.Errorf("entry-sized buffer: %v", err)
			}
		})
	}
}

func TestParseSymEntryRejects(t *testing.T) {
	const path = "/db/t/sym.dat"
	const off = 4096 + 48
	const id = 5
	good := func() []byte {
		b := make([]byte, 64)
		format.PutSymEntry(b, id, 77, []byte("MSFT.O"))
		return b
	}
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		id     uint32
	}{
		{"empty", func(b []byte) []byte { return nil }, id},
		{"header_truncated", func(b []byte) []byte { return b[:15] }, id},
		{"name_truncated", func(b []byte) []byte { return b[:17] }, id},
		{"padding_truncated", func(b []byte) []byte { return b[:format.SymEntrySize(6)-1] }, id},
		{"length_over_max", func(b []byte) []byte {
			b = append(b, make([]byte, 8192)...)
			le.PutUint32(b, store.MaxSymLen+1)
			return b
		}, id},
		{"length_huge", func(b []byte) []byte { le.PutUint32(b, 0xFFFFFFFF); return b }, id},
		{"length_flip", func(b []byte) []byte { b[0] ^= 1; return b }, id},
		{"check_flip", func(b []byte) []byte { b[5] ^= 1; return b }, id},
		{"dir_flip", func(b []byte) []byte { b[8] ^= 1; return b }, id},
		{"dir_high_flip", func(b []byte) []byte { b[15] ^= 0x80; return b }, id},
		{"name_flip", func(b []byte) []byte { b[18] ^= 0x20; return b }, id},
		{"wrong_id", func(b []byte) []byte { return b }, id + 1},
		{"zeroed", func(b []byte) []byte { clear(b); return b }, id},
		{"zeroed_id0", func(b []byte) []byte { clear(b); return b }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := format.ParseSymEntry(path, off, tc.mutate(good()), tc.id)
			wantCorrupt(t, err, path, off)
		})
	}
	t.Run("padding_not_covered", func(t *testing.T) {
		// Padding carries no value, so damage there cannot give a wrong
		// answer; the entry still parses to the same symbol.
		b := good()
		b[format.SymEntryHeader+6] = 0xFF
		name, dir, _, err := format.ParseSymEntry(path, off, b, id)
		if err != nil || string(name) != "MSFT.O" || dir != 77 {
			t.Fatalf("got %q %d %v", name, dir, err)
		}
	})
}

func TestNames(t *testing.T) {
	if got := format.SegName(42); got != "seg-0000000042.dat" {
		t.Errorf("SegName(42) = %q", got)
	}
	if got := format.SegPath("/db/t", 0); got != "/db/t/seg-0000000000.dat" {
		t.Errorf("SegPath = %q", got)
	}
	if got := format.SlotName(3); got != "slot-03.live" {
		t.Errorf("SlotName(3) = %q", got)
	}
	for _, m := range []string{format.MagicCtl, format.MagicSym, format.MagicTime, format.MagicPost, format.MagicSeg, format.MagicLive} {
		if len(m) != 8 {
			t.Errorf("magic %q is %d bytes", m, len(m))
		}
	}
}

func TestValidTableName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"trades", true},
		{"q-2024.v1_A", true},
		{strings.Repeat("a", 128), true},
		{"", false},
		{strings.Repeat("a", 129), false},
		{".hidden", false},
		{"a/b", false},
		{"..", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := store.ValidTableName(tc.name)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidTableName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			}
			if err != nil && !errors.Is(err, store.ErrSchema) {
				t.Errorf("error %v is not ErrSchema", err)
			}
		})
	}
}
