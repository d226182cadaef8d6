package cseg

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
)

// Tests of format version 2 (clustered by symbol).

// withSyms rewrites the first sym column of rows (schema s, segment segNo
// of rps rows) with ids drawn by pick, and reseals them.
func withSyms(s *store.Schema, rows []byte, segNo, rps uint64, pick func(i int) uint32) []byte {
	at := s.ColAt(s.SymCol)
	for i := 0; i*s.RowSize < len(rows); i++ {
		row := store.Row(rows[i*s.RowSize : (i+1)*s.RowSize])
		row.SetSym(at, pick(i))
		format.Seal(segNo*rps+uint64(i), row)
	}
	return rows
}

// symRows returns the rows of rows whose first sym column is id, end to
// end, and their sequence numbers.
func symRows(s *store.Schema, rows []byte, base uint64, id uint32) ([]byte, []uint64) {
	at := s.ColAt(s.SymCol)
	var out []byte
	var seqs []uint64
	for i := 0; i*s.RowSize < len(rows); i++ {
		row := store.Row(rows[i*s.RowSize : (i+1)*s.RowSize])
		if row.Sym(at) == id {
			out = append(out, row...)
			seqs = append(seqs, base+uint64(i))
		}
	}
	return out, seqs
}

// checkSymBlockIn checks SymBlockIn on each of symbol id's blocks against
// their rows (want, wantSeqs: all of the symbol's, in block order), for
// windows that start and end before, at, between and after their rows:
// the rows from the first with ts >= from up to the first after it with
// ts > hi, found by a walk (the rule that holds with late rows too).
func checkSymBlockIn(t *testing.T, g *Segment, s *store.Schema, id uint32, want []byte, wantSeqs []uint64) {
	t.Helper()
	first, n, _, _ := g.Sym(id)
	rs := s.RowSize
	rng := rand.New(rand.NewPCG(uint64(id), 9))
	var dst []byte
	var seqs []uint64
	at := 0 // the block's first row in want
	for k := first; k < first+n; k++ {
		lo, hi := g.DataBlockTs(k)
		rows := min(BlockRows, len(wantSeqs)-at)
		ts := func(i int) int64 { return store.Row(want[(at+i)*rs:]).Ts() }
		pick := func() int64 {
			switch rng.IntN(4) {
			case 0:
				return lo - 1 - rng.Int64N(3)
			case 1:
				return hi + 1 + rng.Int64N(3)
			case 2:
				return ts(rng.IntN(rows))
			}
			return lo + rng.Int64N(hi-lo+1)
		}
		for range 12 {
			from, to := pick(), pick() // from > to: empty
			a := 0
			for a < rows && ts(a) < from {
				a++
			}
			b := a
			for b < rows && ts(b) <= to {
				b++
			}
			var past bool
			var err error
			dst, seqs, past, err = g.SymBlockIn(k, from, to, dst, seqs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst, want[(at+a)*rs:(at+b)*rs]) || !slices.Equal(seqs, wantSeqs[at+a:at+b]) || past != (b < rows) {
				t.Fatalf("symbol %d block %d: SymBlockIn(%d, %d) gave %d rows (past %v), want rows %d..%d of %d", id, k, from, to, len(seqs), past, a, b, rows)
			}
		}
		at += rows
	}
}

// checkClustered checks everything a version 2 file answers against rows.
func checkClustered(t *testing.T, g *Segment, s *store.Schema, h Header, rows []byte) {
	t.Helper()
	if g.Version() != VersionClustered {
		t.Fatalf("version %d, want 2", g.Version())
	}
	if got := decodeAll(t, g); !bytes.Equal(got, rows) {
		i := firstDiff(got, rows)
		t.Fatalf("Block rows differ from byte %d (row %d) of %d", i, i/s.RowSize, len(rows))
	}
	// Blocks in another order, through the cache, into garbage.
	dst := bytes.Repeat([]byte{0xAA}, BlockRows*s.RowSize)
	for _, b := range rand.New(rand.NewPCG(1, 2)).Perm(g.Blocks()) {
		out, err := g.Block(b, dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, rows[b*BlockRows*s.RowSize:][:len(out)]) {
			t.Fatalf("block %d decodes differently out of order", b)
		}
		// The block's lowest and highest ts (its first and last row's,
		// unless rows came late).
		wlo, whi := store.Row(out).Ts(), store.Row(out).Ts()
		for o := 0; o < len(out); o += s.RowSize {
			wlo, whi = min(wlo, store.Row(out[o:]).Ts()), max(whi, store.Row(out[o:]).Ts())
		}
		if lo, hi := g.BlockTs(b); lo != wlo || hi != whi {
			t.Fatalf("block %d: BlockTs %d..%d, want %d..%d", b, lo, hi, wlo, whi)
		}
	}
	// Rows one by one, in random order.
	one := make([]byte, s.RowSize)
	for _, i := range rand.New(rand.NewPCG(3, 4)).Perm(int(h.Rows)) {
		if err := g.RowInto(uint64(i), one); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(one, rows[i*s.RowSize:(i+1)*s.RowSize]) {
			t.Fatalf("RowInto(%d) differs", i)
		}
	}
	// Rows by symbol, seq and ts (a late entry's), in random order; one
	// named with another symbol or ts is not found.
	at := s.ColAt(s.SymCol)
	for _, i := range rand.New(rand.NewPCG(5, 6)).Perm(int(h.Rows)) {
		want := store.Row(rows[i*s.RowSize : (i+1)*s.RowSize])
		seq := h.SegNo*h.RowsPerSeg + uint64(i)
		clear(one)
		ok, err := g.SymRowInto(want.Sym(at), seq, want.Ts(), one)
		if err != nil || !ok || !bytes.Equal(one, want) {
			t.Fatalf("SymRowInto(row %d): %v, %v, equal %v", i, ok, err, bytes.Equal(one, want))
		}
		if ok, err := g.SymRowInto(want.Sym(at)+1, seq, want.Ts(), one); ok || err != nil {
			t.Fatalf("SymRowInto(row %d) under another symbol: %v, %v", i, ok, err)
		}
	}
	// Every symbol through its own blocks.
	var ids []uint32
	for i := 0; i*s.RowSize < len(rows); i++ {
		ids = append(ids, store.Row(rows[i*s.RowSize:]).Sym(at))
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var total uint64
	for _, id := range ids {
		want, wantSeqs := symRows(s, rows, h.SegNo*h.RowsPerSeg, id)
		first, n, nrows, ok := g.Sym(id)
		if !ok || nrows != uint64(len(wantSeqs)) || n != int(numBlocks(nrows)) {
			t.Fatalf("Sym(%d) = %d, %d, %d, %v; want %d rows", id, first, n, nrows, ok, len(wantSeqs))
		}
		total += nrows
		var got []byte
		var gotSeqs []uint64
		var buf []byte
		var seqs []uint64
		for k := first; k < first+n; k++ {
			var err error
			if buf, seqs, err = g.SymBlock(k, buf, seqs); err != nil {
				t.Fatal(err)
			}
			got = append(got, buf...)
			gotSeqs = append(gotSeqs, seqs...)
		}
		if !bytes.Equal(got, want) || !slices.Equal(gotSeqs, wantSeqs) {
			t.Fatalf("symbol %d: SymBlock rows or seqs differ", id)
		}
		checkSymBlockIn(t, g, s, id, want, wantSeqs)
		// SymSeek at each row's ts: the first row with ts >= t is in
		// [k, end) and no earlier block holds one.
		for i := 0; i < len(wantSeqs); i += 1 + len(wantSeqs)/7 {
			ts := store.Row(want[i*s.RowSize:]).Ts()
			k, end := g.SymSeek(id, ts)
			if end != first+n || k < first || k >= end {
				t.Fatalf("SymSeek(%d, %d) = %d, %d; blocks %d..%d", id, ts, k, end, first, first+n)
			}
			if _, hi := g.DataBlockTs(k); hi < ts {
				t.Fatalf("SymSeek(%d, %d): block %d ends at %d", id, ts, k, hi)
			}
			if k > first {
				if _, hi := g.DataBlockTs(k - 1); hi >= ts {
					t.Fatalf("SymSeek(%d, %d): block %d before %d ends at %d", id, ts, k-1, k, hi)
				}
			}
		}
		if k, end := g.SymSeek(id, g.dir[len(g.dir)-1].maxTs+1); k != end && g.entry(k).maxTs <= g.dir[len(g.dir)-1].maxTs {
			t.Fatalf("SymSeek past the end: %d, %d", k, end)
		}
	}
	if total != h.Rows {
		t.Fatalf("symbols hold %d rows, want %d", total, h.Rows)
	}
	for _, id := range []uint32{ids[len(ids)-1] + 1, 1<<32 - 1} {
		if _, _, _, ok := g.Sym(id); ok {
			t.Fatalf("Sym(%d) found an absent symbol", id)
		}
		if k, end := g.SymSeek(id, 0); k != 0 || end != 0 {
			t.Fatalf("SymSeek(absent %d) = %d, %d", id, k, end)
		}
	}
}

func TestClusteredRoundTrip(t *testing.T) {
	tick := store.TickSchema()
	cases := []struct {
		name string
		s    *store.Schema
		rps  uint64
		rows int
		pick func(i int) uint32 // nil: the generator's 100 symbols
		late bool               // every 7th row goes back in ts (FlagLate)
	}{
		{"tick/sealed", tick, 1 << 16, 1 << 16, nil, false},
		{"tick/more_blocks_than_rank_ways", tick, 2 * rankWays * BlockRows, 2*rankWays*BlockRows - 9, nil, false},
		{"tick/short_last_block", tick, 1 << 16, 3*BlockRows + 1234, nil, false},
		{"tick/one_row", tick, 1 << 16, 1, nil, false},
		{"tick/one_block_exact", tick, 1 << 12, BlockRows, nil, false},
		{"tick/one_symbol", tick, 1 << 14, 2*BlockRows + 5, func(int) uint32 { return 7 }, false},
		{"tick/two_symbols_runs", tick, 1 << 14, 3*BlockRows + 5, func(i int) uint32 { return uint32(i / 5000) }, false},
		{"tick/sparse_large_ids", tick, 1 << 14, 9000, func(i int) uint32 { return uint32(i%13) * 400_000_000 }, false},
		{"tick/many_symbols", tick, 1 << 14, 3*BlockRows + 7, func(i int) uint32 { return uint32(i*7919) % 5000 }, false},
		{"all_types", allTypes(), 1 << 14, 2*BlockRows + 77, nil, false},
		{"max_columns", maxCols(), 1 << 13, BlockRows + 3, nil, false},
		{"tick/late_rows", tick, 1 << 14, 3*BlockRows + 11, func(i int) uint32 { return uint32(i % 3) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Header{TableID: testTableID, SegNo: 5, RowSize: tc.s.RowSize, RowsPerSeg: tc.rps, Rows: uint64(tc.rows)}
			rows := genRows(tc.s, tc.rows, h.SegNo, h.RowsPerSeg, 1)
			if tc.pick != nil {
				rows = withSyms(tc.s, rows, h.SegNo, h.RowsPerSeg, tc.pick)
			}
			if tc.late {
				h.LateWindow = 1 << 40
				for i := 7; i*tc.s.RowSize < len(rows); i += 7 {
					row := store.Row(rows[i*tc.s.RowSize : (i+1)*tc.s.RowSize])
					row.SetTs(row.Ts() - 50_000)
					format.Seal(h.SegNo*h.RowsPerSeg+uint64(i), row)
				}
			}
			orig := bytes.Clone(rows)
			var buf bytes.Buffer
			st, err := Encode(&buf, tc.s, h, rows, "src")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rows, orig) {
				t.Fatal("Encode modified its input")
			}
			path := filepath.Join(t.TempDir(), format.ZSegName(h.SegNo))
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			g, err := Open(path, tc.s, h)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			var sum int64
			for _, c := range st.ColBytes {
				sum += c
			}
			if st.Bytes != int64(buf.Len()) || g.SeqBytes() != st.SeqBytes || g.OrderBytes() != st.OrderBytes ||
				st.ColBytes[tc.s.SymCol] != st.OrderBytes || !slices.Equal(g.ColBytes(), st.ColBytes) {
				t.Fatalf("Stats %+v, segment seq %d order %d col %v", st, g.SeqBytes(), g.OrderBytes(), g.ColBytes())
			}
			// Everything but the header, the block index and the padding
			// is a column, the seq column or the seq-order index.
			idx := int64(g.DataBlocks()*entrySize(len(tc.s.Cols)) + 4 + 2*tableGap)
			if over := st.Bytes - sum - st.SeqBytes - headerSize - idx; over < 0 || over >= 8 {
				t.Fatalf("%d bytes unaccounted for", over)
			}
			// The tables at the end fit what Prefetch is told to read.
			if tables, bound := int64(buf.Len())-g.indexOff, TablesSize(tc.rps, len(tc.s.Cols), g.SymCount()); tables > bound {
				t.Fatalf("tables of %d bytes, TablesSize says at most %d", tables, bound)
			}
			checkClustered(t, g, tc.s, h, rows)
		})
	}
}

// TestClusteredSize holds the generated ticks near the size target of 4.5
// bytes a row (4.54 measured; version 1: 3.06).
func TestClusteredSize(t *testing.T) {
	s := store.TickSchema()
	h := Header{TableID: testTableID, SegNo: 1, RowSize: s.RowSize, RowsPerSeg: 1 << 18, Rows: 1 << 18}
	rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 1)
	var b1, b2 bytes.Buffer
	st1, err1 := EncodeV1(&b1, s, h, rows, "src")
	st2, err2 := Encode(&b2, s, h, rows, "src")
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	n := float64(h.Rows)
	t.Logf("bytes/row: v1 %.3f %v, v2 %.3f (seq %.3f, order %.3f, cols %v)", float64(st1.Bytes)/n, st1.ColBytes, float64(st2.Bytes)/n,
		float64(st2.SeqBytes)/n, float64(st2.OrderBytes)/n, st2.ColBytes)
	if per := float64(st2.Bytes) / n; per > 4.6 {
		t.Errorf("version 2: %.3f bytes/row, want at most 4.6", per)
	}
}

// TestClusteredEncodeRejects: damage in the raw rows is reported at the raw
// row's offset, as for version 1.
func TestClusteredEncodeRejects(t *testing.T) {
	s := allTypes()
	h := Header{TableID: testTableID, SegNo: 2, RowSize: s.RowSize, RowsPerSeg: 1 << 13, Rows: 5000}
	rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 3)
	flag, _ := s.Col("flag")
	for _, tc := range []struct {
		name string
		row  int
		edit func(r store.Row)
	}{
		{"check", 4321, func(r store.Row) { r[len(r)-1] ^= 1 }},
		{"bool", 77, func(r store.Row) { r[flag.Off] = 2; format.Seal(h.SegNo*h.RowsPerSeg+77, r) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := bytes.Clone(rows)
			tc.edit(store.Row(d[tc.row*s.RowSize : (tc.row+1)*s.RowSize]))
			var buf bytes.Buffer
			_, err := Encode(&buf, s, h, d, "raw.dat")
			wantCorrupt(t, err, "raw.dat", int64(format.BlockSize+tc.row*s.RowSize))
			if buf.Len() != 0 {
				t.Fatal("wrote a file from damaged rows")
			}
		})
	}
}

// clusteredFile is a version 2 tick segment on disk: 3 rank blocks, 100
// symbols of about 90 rows each (one data block each) plus one symbol with
// 5000 rows (two blocks).
func clusteredFile(t testing.TB) *testFile {
	t.Helper()
	s := store.TickSchema()
	h := Header{TableID: testTableID, SegNo: 3, RowSize: s.RowSize, RowsPerSeg: 1 << 14, Rows: 2*BlockRows + 1000}
	rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 7)
	rows = withSyms(s, rows, h.SegNo, h.RowsPerSeg, func(i int) uint32 {
		if i%37 < 22 {
			return 1000
		}
		return uint32(i % 100)
	})
	path, _ := encodeFileVersion(t, t.TempDir(), s, h, rows, VersionClustered)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Open(path, s, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return &testFile{s: s, h: h, rows: rows, path: path, data: data, g: g}
}

// clusteredErr decodes data block k (k >= 0) or rank block b (b >= 0) of
// data (a copy of f's bytes) through a copy of f.g reading data, and
// returns the error; a block that decodes must give the original rows.
func (f *testFile) clusteredErr(t *testing.T, data []byte, k, b int) error {
	g := *f.g
	g.data = data
	g.clustered.cache, g.cur, g.stamp, g.rankCur = nil, nil, nil, 0
	if b >= 0 {
		out, err := g.Block(b, nil)
		if err == nil && !bytes.Equal(out, f.rows[b*BlockRows*f.s.RowSize:][:len(out)]) {
			t.Fatalf("block %d: wrong rows without an error", b)
		}
		return err
	}
	out, seqs, err := g.SymBlock(k, nil, nil)
	if err != nil {
		return err
	}
	for i, seq := range seqs {
		r := int(seq - f.h.SegNo*f.h.RowsPerSeg)
		if !bytes.Equal(out[i*f.s.RowSize:(i+1)*f.s.RowSize], f.rows[r*f.s.RowSize:(r+1)*f.s.RowSize]) {
			t.Fatalf("data block %d row %d: wrong row without an error", k, i)
		}
	}
	return nil
}

// TestClusteredDamage flips bytes everywhere in a version 2 file: a flip
// in the header or the tables fails Open at the file's path; a flip in a
// data block fails that block's decode at its offset, and a flip in a rank
// frame fails that rank block at its offset; none gives wrong rows.
func TestClusteredDamage(t *testing.T) {
	f := clusteredFile(t)
	g := f.g
	path := filepath.Join(t.TempDir(), "damaged.zdat")
	data := bytes.Clone(f.data)
	// Every byte of the header, every third of the tables (entries of 56
	// and 40 bytes: the sample shifts across fields from entry to entry),
	// every seventh of the frames; each flip at a table byte writes and
	// opens a file.
	step := func(off int64) int64 {
		switch {
		case off < headerSize:
			return 1
		case off >= f.indexOff():
			return 3
		}
		return 7
	}
	for off := int64(0); off < int64(len(data)); off += step(off) {
		blk := f.blockOf(off)
		rank := -1
		for r := range g.Blocks() {
			e := g.rank(r)
			if off >= e.off && off < e.off+int64(e.len) {
				rank = r
			}
		}
		if blk < 0 && rank < 0 && off >= h2End && off < headerSize && off%97 != 0 {
			continue // the header's zero area: a sample is enough
		}
		flips := []byte{0x01, 0x80}
		if off >= f.indexOff() {
			flips = flips[off%2 : off%2+1]
		}
		for _, x := range flips {
			data[off] ^= x
			switch {
			case blk >= 0:
				wantCorrupt(t, f.clusteredErr(t, data, blk, -1), f.path, g.entry(blk).off)
			case rank >= 0:
				wantCorrupt(t, f.clusteredErr(t, data, -1, rank), f.path, g.rank(rank).off)
			default:
				err, got := f.check(t, path, data)
				if got != -1 {
					t.Fatalf("flip %#x at %d: Open passed, block %d failed: %v", x, off, got, err)
				}
				wantCorrupt(t, err, path, -1)
			}
			data[off] ^= x
		}
	}
}

// TestClusteredDamageBehindChecks damages fields with their checks
// recomputed: the structural checks must still catch them.
func TestClusteredDamageBehindChecks(t *testing.T) {
	f := clusteredFile(t)
	g := f.g
	io := f.indexOff()
	es := int64(entrySize(len(f.s.Cols)))
	dirOff := int64(le.Uint64(f.data[h2DirOff:]))
	rankOff := int64(le.Uint64(f.data[h2RankOff:]))
	r1 := g.rank(1)
	cases := []struct {
		name    string
		edit    func(d []byte)
		block   int   // -1: Open fails; else the rank block whose Block fails
		wantOff int64 // the offset reported, or -1 for any
	}{
		{"sym_col", func(d []byte) { le.PutUint32(d[h2SymCol:], 2) }, -1, h2SymCol},
		{"nsyms", func(d []byte) { le.PutUint32(d[h2Syms:], uint32(len(g.dir)-1)) }, -1, h2DirLen},
		{"nranks", func(d []byte) { le.PutUint32(d[h2Ranks:], 2) }, -1, h2Ranks},
		{"dir_off", func(d []byte) { le.PutUint64(d[h2DirOff:], uint64(dirOff+8)) }, -1, h2DirOff},
		{"gap", func(d []byte) { d[dirOff-1] = 1 }, -1, dirOff - 1},
		{"dir_id_order", func(d []byte) { le.PutUint32(d[dirOff+dirEntry+dId:], le.Uint32(d[dirOff+dId:])) }, -1, dirOff + dirEntry + dId},
		{"dir_first", func(d []byte) { le.PutUint32(d[dirOff+dirEntry+dFirst:], 5) }, -1, dirOff + dirEntry + dFirst},
		{"dir_rows", func(d []byte) { le.PutUint64(d[dirOff+dRows:], le.Uint64(d[dirOff+dRows:])+1) }, -1, -1},
		{"dir_min_ts", func(d []byte) { le.PutUint64(d[dirOff+dMinTs:], le.Uint64(d[dirOff+dMinTs:])-1) }, -1, dirOff + dMinTs},
		{"entry_slot", func(d []byte) { le.PutUint32(d[io+es+eSlot:], 7) }, -1, io + es + eSlot},
		{"entry_rows", func(d []byte) { le.PutUint32(d[io+es+eRows:], 1) }, -1, io + es + eRows},
		{"rank_off", func(d []byte) { le.PutUint64(d[rankOff+rankEntry+rOff:], uint64(r1.off+1)) }, -1, rankOff + rankEntry + rOff},
		{"rank_present", func(d []byte) { le.PutUint32(d[rankOff+rankEntry+rPresent:], 0) }, -1, rankOff + rankEntry + rPresent},
		{"rank_present_wrong", func(d []byte) { le.PutUint32(d[rankOff+rankEntry+rPresent:], uint32(r1.present-1)) }, 1, r1.off},
		{"rank_min_ts", func(d []byte) { le.PutUint64(d[rankOff+rankEntry+rMinTs:], uint64(r1.minTs-1)) }, 1, r1.off},
		{"rank_frame", func(d []byte) { d[r1.off+10] ^= 0x10 }, 1, r1.off},
	}
	path := filepath.Join(t.TempDir(), "damaged.zdat")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := bytes.Clone(f.data)
			tc.edit(d)
			fixChecks(d)
			err, b := f.check(t, path, d)
			if b != tc.block {
				t.Fatalf("failure at block %d, want %d: %v", b, tc.block, err)
			}
			wantCorrupt(t, err, path, tc.wantOff)
		})
	}
}

func TestClusteredTruncated(t *testing.T) {
	f := clusteredFile(t)
	path := filepath.Join(t.TempDir(), "short.zdat")
	n := int64(len(f.data))
	for _, size := range []int64{headerSize, f.g.entry(1).off, f.g.rank(0).off, f.indexOff(), n - 5, n - 4, n - 1} {
		err, _ := f.check(t, path, f.data[:size])
		wantCorrupt(t, err, path, -1)
	}
}

// TestClusteredAllocs holds Block, SymBlock and RowInto on a version 2
// file to zero allocations once warm.
func TestClusteredAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	for _, s := range []*store.Schema{store.TickSchema(), allTypes()} {
		t.Run(strings.ReplaceAll(s.String(), ",", "_"), func(t *testing.T) {
			h := Header{TableID: testTableID, SegNo: 1, RowSize: s.RowSize, RowsPerSeg: 1 << 14, Rows: 3*BlockRows + 10}
			rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 1)
			path, _ := encodeFileVersion(t, t.TempDir(), s, h, rows, VersionClustered)
			g, err := Open(path, s, h)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			dst := make([]byte, 0, BlockRows*s.RowSize)
			seqs := make([]uint64, 0, BlockRows)
			for b := range g.Blocks() {
				if _, err := g.Block(b, dst); err != nil {
					t.Fatal(err)
				}
			}
			for k := range g.DataBlocks() {
				if _, _, err := g.SymBlock(k, dst, seqs); err != nil {
					t.Fatal(err)
				}
			}
			b := 0
			if n := testing.AllocsPerRun(20, func() {
				if _, err := g.Block(b%g.Blocks(), dst); err != nil {
					t.Fatal(err)
				}
				b++
			}); n != 0 {
				t.Errorf("Block allocates %v times", n)
			}
			if n := testing.AllocsPerRun(50, func() {
				if _, _, err := g.SymBlock(b%g.DataBlocks(), dst, seqs); err != nil {
					t.Fatal(err)
				}
				b++
			}); n != 0 {
				t.Errorf("SymBlock allocates %v times", n)
			}
			if n := testing.AllocsPerRun(50, func() {
				k := b % g.DataBlocks()
				lo, hi := g.DataBlockTs(k)
				if _, _, _, err := g.SymBlockIn(k, lo+(hi-lo)/3, hi-(hi-lo)/3, dst, seqs); err != nil {
					t.Fatal(err)
				}
				b++
			}); n != 0 {
				t.Errorf("SymBlockIn allocates %v times", n)
			}
			// Random rows, once every block's rank frame and every
			// symbol's data block has been decoded for them.
			one := make([]byte, s.RowSize)
			for i := range h.Rows {
				if err := g.RowInto(i, one); err != nil {
					t.Fatal(err)
				}
			}
			x := uint64(1)
			if n := testing.AllocsPerRun(200, func() {
				x = x*6364136223846793005 + 1442695040888963407
				if err := g.RowInto(x>>33%h.Rows, one); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("RowInto allocates %v times", n)
			}
		})
	}
}

// TestGoldenV2 opens the version 2 file kept in testdata (regenerate with
// go test -run GoldenV2 -update, only with a version bump).
func TestGoldenV2(t *testing.T) {
	s := store.TickSchema()
	h := Header{TableID: testTableID, SegNo: 9, RowSize: s.RowSize, RowsPerSeg: 1 << 13, Rows: 5000}
	rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 42)
	path := filepath.Join("testdata", "v2-tick.zdat")
	if *update {
		var buf bytes.Buffer
		if _, err := Encode(&buf, s, h, rows, "golden"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Open(path, s, h)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	checkClustered(t, g, s, h, rows)
}

// TestLayoutV2 reads a version 2 file by the byte offsets of the package
// doc, written here as literals.
func TestLayoutV2(t *testing.T) {
	s := store.TickSchema()
	h := Header{TableID: testTableID, SegNo: 6, RowSize: s.RowSize, RowsPerSeg: 1 << 13, Rows: 5}
	rows := withSyms(s, genRows(s, 5, h.SegNo, h.RowsPerSeg, 2), h.SegNo, h.RowsPerSeg, func(i int) uint32 { return uint32(9 - i%2*5) })
	path, _ := encodeFileVersion(t, t.TempDir(), s, h, rows, VersionClustered)
	d, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u32 := func(o uint64) uint64 { return uint64(le.Uint32(d[o:])) }
	u64 := func(o uint64) uint64 { return le.Uint64(d[o:]) }
	size := uint64(len(d))
	io, il := u64(72), u64(80)
	dirOff, dirLen, rankOff, rankLen := u64(168), u64(176), u64(184), u64(192)
	const e = 56
	// Rows 0, 2, 4 are symbol 9, rows 1, 3 symbol 4: symbol 4 is slot 0
	// (block 0), symbol 9 slot 1 (block 1).
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"version", u32(8), 2}, {"nblocks", u32(64), 2}, {"symCol", u32(152), 1}, {"nsyms", u32(156), 2}, {"nranks", u32(160), 1},
		{"header check", u32(200), uint64(format.CRC32C(d[:200]))}, {"index length", il, 2*e + 4},
		{"dir after index", dirOff, io + il + 4}, {"dir length", dirLen, 2*40 + 4},
		{"rank table after dir", rankOff, dirOff + dirLen + 4}, {"rank length", rankLen, 40 + 4}, {"file end", rankOff + rankLen, size},
		{"slot 0 id", u32(dirOff), 4}, {"slot 0 first", u32(dirOff + 4), 0}, {"slot 0 blocks", u32(dirOff + 8), 1}, {"slot 0 rows", u64(dirOff + 16), 2},
		{"slot 1 id", u32(dirOff + 40), 9}, {"slot 1 first", u32(dirOff + 44), 1}, {"slot 1 rows", u64(dirOff + 56), 3},
		{"slot 1 min ts", u64(dirOff + 64), uint64(store.Row(rows[0:]).Ts())}, {"slot 1 max ts", u64(dirOff + 72), uint64(store.Row(rows[4*32:]).Ts())},
		{"dir check", u32(dirOff + 80), uint64(format.CRC32C(d[dirOff : dirOff+80]))},
		{"block 1 slot", u32(io + e + 36), 1}, {"block 1 rows", u32(io + e + 12), 3},
		{"rank 0 off", u64(rankOff), 4096 + u32(io+8) + u32(io+e+8)}, {"rank 0 present", u32(rankOff + 16), 2},
		{"rank 0 min ts", u64(rankOff + 24), uint64(store.Row(rows).Ts())}, {"rank 0 max ts", u64(rankOff + 32), uint64(store.Row(rows[4*32:]).Ts())},
		{"rank check", u32(rankOff + 40), uint64(format.CRC32C(d[rankOff : rankOff+40]))},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestScratchPrepare checks that a Scratch readied with Prepare holds every
// buffer a version 2 file's block reads decode through, at full size: the
// decodes that follow reuse them all, growing none (which is what spares a
// fresh process their page faults), and decode the same rows.
func TestScratchPrepare(t *testing.T) {
	for _, s := range []*store.Schema{store.TickSchema(), allTypes()} {
		t.Run(strings.ReplaceAll(s.String(), ",", "_"), func(t *testing.T) {
			h := Header{TableID: testTableID, SegNo: 1, RowSize: s.RowSize, RowsPerSeg: 1 << 14, Rows: 3*BlockRows + 10}
			rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 1)
			path, _ := encodeFileVersion(t, t.TempDir(), s, h, rows, VersionClustered)
			var sc Scratch
			sc.Prepare(s)
			bufs := func() []any {
				return []any{unsafe.SliceData(sc.raw), unsafe.SliceData(sc.ts), unsafe.SliceData(sc.offs),
					unsafe.SliceData(sc.u32), unsafe.SliceData(sc.f64), unsafe.SliceData(sc.i64), unsafe.SliceData(sc.bools)}
			}
			before := bufs()
			g, err := OpenShared(path, s, h, &sc)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			var got []byte
			for b := range g.Blocks() {
				out, err := g.Block(b, nil)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, out...)
			}
			for k := range g.DataBlocks() {
				if _, _, err := g.SymBlock(k, nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, rows) {
				t.Fatal("rows decoded through a prepared scratch differ")
			}
			after := bufs()
			for i := range before {
				if before[i] != after[i] {
					t.Errorf("buffer %d of the scratch grew after Prepare", i)
				}
			}
		})
	}
}

// TestEncodeParallel: EncodeParallel writes Encode's bytes and Stats, and
// fails with Encode's error, whatever its worker count, including rows that
// go back in ts across the boundary between two workers' runs (late within
// the window, or damage).
func TestEncodeParallel(t *testing.T) {
	tick := store.TickSchema()
	type tc struct {
		name string
		s    *store.Schema
		rows int
		pick func(i int) uint32
		lw   int64
		edit func(rows []byte, h Header) // sealed again after
	}
	back := func(row int, by int64) func([]byte, Header) {
		return func(rows []byte, h Header) {
			r := store.Row(rows[row*tick.RowSize : (row+1)*tick.RowSize])
			r.SetTs(r.Ts() - by)
		}
	}
	cases := []tc{
		{"tick", tick, 5*BlockRows + 999, nil, 0, nil},
		{"one_symbol", tick, 3*BlockRows + 5, func(int) uint32 { return 7 }, 0, nil},
		{"two_symbols_skewed", tick, 4*BlockRows + 5, func(i int) uint32 { return uint32(min(i%50, 1)) }, 0, nil},
		{"many_symbols", tick, 6*BlockRows + 7, func(i int) uint32 { return uint32(i*7919) % 5000 }, 0, nil},
		{"sparse_ids", tick, 3*BlockRows + 1, func(i int) uint32 { return uint32(i%13) * 400_000_000 }, 0, nil},
		{"all_types", allTypes(), 3*BlockRows + 77, nil, 0, nil},
		{"one_row", tick, 1, nil, 0, nil},
		{"late_across_runs", tick, 4 * BlockRows, nil, 1 << 40, back(2*BlockRows, 1<<30)},
		{"late_in_runs", tick, 4 * BlockRows, nil, 1 << 40, back(3*BlockRows+5, 1<<30)},
		{"back_across_runs", tick, 4 * BlockRows, nil, 0, back(2*BlockRows, 1<<30)},
		{"back_past_window_across_runs", tick, 4 * BlockRows, nil, 1 << 20, back(2*BlockRows+1, 1<<30)},
		{"back_in_second_run", tick, 4 * BlockRows, nil, 0, back(3*BlockRows+9, 1<<30)},
		{"bad_check_late_run", tick, 4 * BlockRows, nil, 0, func(rows []byte, h Header) { rows[(3*BlockRows+1)*tick.RowSize+3] ^= 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := Header{TableID: testTableID, SegNo: 3, RowSize: c.s.RowSize, RowsPerSeg: 1 << 15, Rows: uint64(c.rows), LateWindow: c.lw}
			rows := genRows(c.s, c.rows, h.SegNo, h.RowsPerSeg, 9)
			if c.pick != nil {
				rows = withSyms(c.s, rows, h.SegNo, h.RowsPerSeg, c.pick)
			}
			if c.edit != nil {
				c.edit(rows, h)
				if c.name != "bad_check_late_run" {
					for i := range c.rows {
						format.Seal(h.SegNo*h.RowsPerSeg+uint64(i), store.Row(rows[i*c.s.RowSize:(i+1)*c.s.RowSize]))
					}
				}
			}
			var want bytes.Buffer
			wst, werr := Encode(&want, c.s, h, rows, "raw.dat")
			for _, workers := range []int{1, 2, 3, 8} {
				var got bytes.Buffer
				st, err := EncodeParallel(&got, c.s, h, rows, "raw.dat", workers, nil)
				if fmt.Sprint(err) != fmt.Sprint(werr) {
					t.Fatalf("workers %d: error %v, Encode's %v", workers, err, werr)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("workers %d: %d bytes differ from Encode's %d", workers, got.Len(), want.Len())
				}
				if fmt.Sprint(st) != fmt.Sprint(wst) {
					t.Fatalf("workers %d: stats %+v, Encode's %+v", workers, st, wst)
				}
			}
			switch {
			case strings.HasPrefix(c.name, "late"):
				if werr != nil {
					t.Fatalf("late rows: %v", werr)
				}
				if le.Uint32(want.Bytes()[hFlags:])&FlagLate == 0 {
					t.Fatal("late rows: no FlagLate")
				}
			case strings.HasPrefix(c.name, "back"), strings.HasPrefix(c.name, "bad"):
				if werr == nil {
					t.Fatal("damage encoded without an error")
				}
			default:
				if werr != nil {
					t.Fatal(werr)
				}
			}
		})
	}
}

// TestEncodeParallelStop: a closed stop channel ends the encoding with
// ErrStopped and nothing written, whatever the worker count and version;
// one closed while the encoding runs ends it the same way or lets it
// finish with Encode's bytes.
func TestEncodeParallelStop(t *testing.T) {
	for _, s := range []*store.Schema{store.TickSchema(), allTypes()} {
		h := Header{TableID: testTableID, SegNo: 1, RowSize: s.RowSize, RowsPerSeg: 1 << 16, Rows: 12*BlockRows + 3}
		rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 5)
		var want bytes.Buffer
		if _, err := Encode(&want, s, h, rows, "raw.dat"); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		close(closed)
		for _, workers := range []int{1, 2, 4} {
			var got bytes.Buffer
			if _, err := EncodeParallel(&got, s, h, rows, "raw.dat", workers, closed); !errors.Is(err, ErrStopped) || got.Len() != 0 {
				t.Fatalf("workers %d, stopped before: %v, %d bytes written", workers, err, got.Len())
			}
			stop := make(chan struct{})
			go func() { time.Sleep(time.Millisecond); close(stop) }()
			got.Reset()
			_, err := EncodeParallel(&got, s, h, rows, "raw.dat", workers, stop)
			switch {
			case errors.Is(err, ErrStopped):
				if got.Len() != 0 {
					t.Fatalf("workers %d: stopped with %d bytes written", workers, got.Len())
				}
			case err != nil:
				t.Fatalf("workers %d: %v", workers, err)
			case !bytes.Equal(got.Bytes(), want.Bytes()):
				t.Fatalf("workers %d: finished with bytes unlike Encode's", workers)
			}
		}
	}
}
