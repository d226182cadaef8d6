package reader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Corruption tables (STYLE §6): a table is written and closed, then bytes
// are flipped, zeroed or cut at exact offsets in one file. Every read must
// then give either exactly the right value or a *store.CorruptError naming
// that file and the damaged structure's offset; never a panic, never a
// wrong value. The damaged structure itself must be reported.

const ctRows = 2*128 + 44 // segments 0 and 1 full, 44 rows in segment 2

// ctDamage is one way of damaging a file of the table.
type ctDamage func(t *testing.T, path string)

func ctFlip(off int64, mask byte) ctDamage {
	return func(t *testing.T, path string) {
		t.Helper()
		b := ctRead(t, path, off, 1)
		b[0] ^= mask
		ctWrite(t, path, off, b)
	}
}

func ctZero(off, n int64) ctDamage {
	return func(t *testing.T, path string) { ctWrite(t, path, off, make([]byte, n)) }
}

func ctPut32(off int64, v uint32) ctDamage {
	return func(t *testing.T, path string) {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], v)
		ctWrite(t, path, off, b[:])
	}
}

func ctPut64(off int64, v uint64) ctDamage {
	return func(t *testing.T, path string) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		ctWrite(t, path, off, b[:])
	}
}

func ctCopy(from, to, n int64) ctDamage {
	return func(t *testing.T, path string) { ctWrite(t, path, to, ctRead(t, path, from, n)) }
}

func ctTruncate(size int64) ctDamage {
	return func(t *testing.T, path string) {
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}
}

func ctRead(t *testing.T, path string, off, n int64) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatalf("read %s at %d: %v", path, off, err)
	}
	return b
}

func ctWrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// ctBuild writes ctRows rows over 3 symbols ("SYM0".."SYM2": dictionary
// entries of 24 bytes at 4096, 4120, 4144) with 128-row segments and a
// time-index entry every 8 rows, and closes the writer. Its segments stay
// raw and their postings kept (no background compaction): the cases damage
// seg-N.dat and post.idx at fixed offsets.
func ctBuild(t *testing.T, s *store.Schema, segSize int64) (*rtTable, *rtModel) {
	t.Helper()
	tb := newRtTable(t, s, func(o *writer.Options) { o.SegmentSize = segSize; o.TimeStride = 8; o.CompactAge = -1 })
	w := tb.writer(t)
	m := &rtModel{s: s}
	rtFill(t, w, m, ctRows, 3, 31)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return tb, m
}

// ctExpect checks that err is nil or the expected corruption, and
// reports whether it was the corruption.
func ctExpect(t *testing.T, what string, err error, path string, off int64) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var ce *store.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("%s: %v, want a *store.CorruptError", what, err)
	}
	if ce.Path != path || ce.Offset != off {
		t.Fatalf("%s: corruption reported at %s:%d (%s), want %s:%d", what, ce.Path, ce.Offset, ce.Reason, path, off)
	}
	return true
}

// ctSweep reads everything a reader can: every row, seeks around every
// ts, the full range and each symbol's full range. Every answer must be
// right or the expected corruption. It returns the seqs whose Get failed.
func ctSweep(t *testing.T, r *reader.Reader, m *rtModel, path string, off int64) map[uint64]bool {
	t.Helper()
	failed := map[uint64]bool{}
	n := len(m.rows)
	if c := r.Len(); c != uint64(n) {
		t.Fatalf("Count = %d, want %d", c, n)
	}
	for seq := range uint64(n) {
		row, err := r.Get(seq)
		if ctExpect(t, "Get", err, path, off) {
			failed[seq] = true
			continue
		}
		if !bytes.Equal(row, m.rows[seq]) {
			t.Fatalf("Get(%d) returned a wrong row %x, want %x", seq, row, m.rows[seq])
		}
	}
	for i := 0; i < n; i += 3 {
		for _, p := range []int64{m.ts[i] - 1, m.ts[i], m.ts[i] + 1} {
			got, err := r.SeekTime(p)
			if !ctExpect(t, "SeekTime", err, path, off) && got != m.seek(p, n) {
				t.Fatalf("SeekTime(%d) = %d, want %d", p, got, m.seek(p, n))
			}
		}
	}
	var it reader.Iter
	check := func(what string, sym int64) {
		want := m.rangeSeqs(math.MinInt64, math.MaxInt64, sym, n)
		k := 0
		for it.Next() {
			if k >= len(want) || it.Seq() != want[k] || !bytes.Equal(it.Row(), m.rows[want[k]]) {
				t.Fatalf("%s: row %d of the iteration is seq %d, want %v", what, k, it.Seq(), want[k:min(k+1, len(want))])
			}
			k++
		}
		if !ctExpect(t, what, it.Err(), path, off) && k != len(want) {
			t.Fatalf("%s: %d rows and no error, want %d", what, k, len(want))
		}
	}
	if err := r.Range(math.MinInt64, math.MaxInt64, &it); !ctExpect(t, "Range", err, path, off) {
		check("Range", -1)
	}
	for id := range int64(3) {
		if err := r.RangeSym(math.MinInt64, math.MaxInt64, uint32(id), &it); !ctExpect(t, "RangeSym", err, path, off) {
			check("RangeSym", id)
		}
	}
	return failed
}

func TestCorruptTable(t *testing.T) {
	const hdr = format.BlockSize
	row32 := func(i int64) int64 { return hdr + i*32 } // row i of a segment, 32-byte rows
	row40 := func(i int64) int64 { return hdr + i*40 }
	cases := []struct {
		name   string
		schema *store.Schema
		seg    int64 // SegmentSize
		file   string
		damage ctDamage
		off    int64    // offset the error must name
		open   bool     // reader.Open itself fails
		bad    []uint64 // rows whose Get must fail
		good   []uint64 // rows that must still read
	}{
		// ctl: the header page is checked when a reader opens the table.
		{name: "ctl_header_schema_byte", file: format.CtlName, damage: ctFlip(100, 0x01), off: 4092, open: true},
		{name: "ctl_magic", file: format.CtlName, damage: ctFlip(0, 0x20), off: 0, open: true},
		{name: "ctl_geometry_byte", file: format.CtlName, damage: ctFlip(32, 0x01), off: 4092, open: true},
		{name: "ctl_check_word", file: format.CtlName, damage: ctFlip(4093, 0x80), off: 4092, open: true},
		{name: "ctl_truncated", file: format.CtlName, damage: ctTruncate(5000), off: 5000, open: true},
		// sym.dat: header, then each entry (24 bytes for "SYMn").
		{name: "sym_header_table_id", file: format.SymName, damage: ctFlip(20, 0x01), off: 32, open: true},
		{name: "sym_magic", file: format.SymName, damage: ctFlip(3, 0x01), off: 0, open: true},
		{name: "sym_truncated_header", file: format.SymName, damage: ctTruncate(100), off: 100, open: true},
		{name: "sym_entry0_name", file: format.SymName, damage: ctFlip(hdr+16, 0x02), off: hdr, open: true},
		{name: "sym_entry1_check", file: format.SymName, damage: ctFlip(hdr+24+4, 0x10), off: hdr + 24, open: true},
		{name: "sym_entry2_length", file: format.SymName, damage: ctPut32(hdr+48, 0xFFFF), off: hdr + 48, open: true},
		{name: "sym_entry2_dir", file: format.SymName, damage: ctFlip(hdr+48+8, 0x01), off: hdr + 48, open: true},
		{name: "sym_entries_zeroed", file: format.SymName, damage: ctZero(hdr, 72), off: hdr, open: true},
		// ts.idx and post.idx headers.
		{name: "ts_header", file: format.TimeIdxName, damage: ctFlip(9, 0x01), off: 32, open: true},
		{name: "ts_magic", file: format.TimeIdxName, damage: ctFlip(0, 0x01), off: 0, open: true},
		{name: "ts_truncated", file: format.TimeIdxName, damage: ctTruncate(4095), off: 4095, open: true},
		{name: "post_header", file: format.PostName, damage: ctFlip(25, 0x40), off: 32, open: true},
		{name: "post_truncated", file: format.PostName, damage: ctTruncate(1000), off: 1000, open: true},
		// post.idx version 3 (docs/FORMAT.md §7): symbol i's first
		// directory is line 64+2i, its first block (18 entries) line
		// 65+2i; symbol 1's rows are 1, 4, 7, ...
		{name: "post_first_dir_slot_links_back", file: format.PostName, damage: ctPut64(64*64+16, 64), off: 64*64 + 16},
		{name: "post_entry_in_first_block", file: format.PostName, damage: ctFlip(67*64+24, 0x02), off: 67*64 + 24}, // entry 5: row 16 now 18, symbol 0's
		// Segment headers: checked when the segment is first read.
		{name: "seg0_header", file: format.SegName(0), damage: ctFlip(20, 0x01), off: 56, bad: []uint64{0, 127}, good: []uint64{128, 299}},
		{name: "seg1_magic", file: format.SegName(1), damage: ctFlip(0, 0x01), off: 0, bad: []uint64{130}, good: []uint64{0, 256}},
		{name: "seg2_last_partial_header", file: format.SegName(2), damage: ctFlip(40, 0x01), off: 56, bad: []uint64{256, 299}, good: []uint64{255}},
		{name: "seg0_truncated", file: format.SegName(0), damage: ctTruncate(6000), off: 6000, bad: []uint64{5}, good: []uint64{128}},
		{name: "seg2_truncated", file: format.SegName(2), damage: ctTruncate(row32(10)), off: row32(10), bad: []uint64{270}, good: []uint64{0}},
		// Rows: a 4 KiB block of rows is checked on first read.
		{name: "row_in_sealed_segment", file: format.SegName(0), damage: ctFlip(row32(5)+9, 0x08), off: row32(5), bad: []uint64{5}, good: []uint64{128, 255, 256}},
		{name: "row_check_word_in_sealed_segment", file: format.SegName(1), damage: ctFlip(row32(7)+29, 0x01), off: row32(7), bad: []uint64{135}, good: []uint64{127, 256}},
		{name: "row_zeroed_in_sealed_segment", file: format.SegName(1), damage: ctZero(row32(100), 32), off: row32(100), bad: []uint64{228}, good: []uint64{0, 299}},
		{name: "row_moved_in_sealed_segment", file: format.SegName(0), damage: ctCopy(row32(10), row32(11), 32), off: row32(11), bad: []uint64{11}, good: []uint64{200}},
		{name: "row_in_last_partial_segment", file: format.SegName(2), damage: ctFlip(row32(34)+16, 0x01), off: row32(34), bad: []uint64{290}, good: []uint64{255}},
		{name: "last_row_zeroed", file: format.SegName(2), damage: ctZero(row32(43), 32), off: row32(43), bad: []uint64{299}, good: []uint64{0, 128}},
		{name: "first_row_ts", file: format.SegName(0), damage: ctFlip(row32(0)+7, 0x40), off: row32(0), bad: []uint64{0}, good: []uint64{128}},
		// 40-byte rows straddle blocks: damage stays in its block.
		{name: "row40_second_block", schema: tickBoolSchema(), seg: 8192, file: format.SegName(1), damage: ctFlip(row40(120)+3, 0x01),
			off: row40(120), bad: []uint64{248, 103 + 128}, good: []uint64{128, 102 + 128, 256}},
		{name: "row40_straddling_row_tail", schema: tickBoolSchema(), seg: 8192, file: format.SegName(0), damage: ctFlip(row40(102)+30, 0x01),
			off: row40(102), bad: []uint64{102, 0}, good: []uint64{103, 127, 128}},
		{name: "row40_last_partial", schema: tickBoolSchema(), seg: 8192, file: format.SegName(2), damage: ctFlip(row40(43)+35, 0x01),
			off: row40(43), bad: []uint64{299}, good: []uint64{255}},
		// Index entries that disagree with the rows: an error naming the
		// entry, or the right answer, never a wrong one.
		{name: "ts_index_entry_too_high", file: format.TimeIdxName, damage: ctPut64(hdr+8*5, math.MaxInt64), off: hdr + 8*5},
		{name: "ts_index_entry_too_low", file: format.TimeIdxName, damage: ctPut64(hdr+8*20, 1), off: hdr + 8*20},
		{name: "ts_index_last_entry", file: format.TimeIdxName, damage: ctPut64(hdr+8*37, 1<<63), off: hdr + 8*37},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, seg := tc.schema, tc.seg
			if s == nil {
				s, seg = store.TickSchema(), 4096
			}
			tb, m := ctBuild(t, s, seg)
			path := filepath.Join(tb.dir(), tc.file)
			tc.damage(t, path)

			r, err := reader.Open(tb.db, tb.name, nil)
			if tc.open {
				if err == nil {
					r.Close()
					t.Fatal("reader.Open of the damaged table succeeded")
				}
				ctExpect(t, "Open", err, path, tc.off)
				return
			}
			if err != nil {
				t.Fatalf("reader.Open: %v", err)
			}
			defer r.Close()
			failed := ctSweep(t, r, m, path, tc.off)
			for _, seq := range tc.bad {
				if !failed[seq] {
					t.Errorf("Get(%d) did not report the damage", seq)
				}
			}
			for _, seq := range tc.good {
				if failed[seq] {
					t.Errorf("Get(%d), away from the damage, failed", seq)
				}
			}
			// A second reader gets the same answers (nothing was cached
			// wrongly), and so does the first one again.
			r2 := tb.reader(t)
			ctSweep(t, r2, m, path, tc.off)
			ctSweep(t, r, m, path, tc.off)
		})
	}
}
