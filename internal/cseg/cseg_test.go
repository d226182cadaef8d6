package cseg

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testTableID = [16]byte{0xc5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

func col(name string, t store.ColType) store.Column { return store.Column{Name: name, Type: t} }

// allTypes has every column type, two sym columns (the first, venue, keys
// f64 and i64 though it comes after some of them), two bools and padding.
func allTypes() *store.Schema {
	return store.MustSchema(col("ts", store.TypeTs), col("flag", store.TypeBool), col("qty", store.TypeI64),
		col("px", store.TypeF64), col("venue", store.TypeSym), col("sym", store.TypeSym), col("odd", store.TypeF64),
		col("buy", store.TypeBool), col("seqno", store.TypeI64))
}

// maxCols has the most columns a schema may have.
func maxCols() *store.Schema {
	cols := []store.Column{col("ts", store.TypeTs)}
	types := []store.ColType{store.TypeSym, store.TypeF64, store.TypeI64, store.TypeBool}
	for i := 1; i < store.MaxColumns; i++ {
		cols = append(cols, col(fmt.Sprintf("c%02d", i), types[i%len(types)]))
	}
	return store.MustSchema(cols...)
}

// genRows returns n sealed rows of schema s for segment segNo of rps rows
// a segment: realistic ticks (internal/harness/gen, 100 symbols) in the ts, first
// sym, first f64 and first i64 columns, and seeded noise in the others,
// including f64 values that are not decimals (NaN, ±Inf, -0) and extreme
// i64s.
func genRows(s *store.Schema, n int, segNo, rps uint64, seed int64) []byte {
	g := gen.New(gen.Options{Symbols: 100, Seed: seed})
	rs := s.RowSize
	rows := make([]byte, n*rs)
	rng := uint64(seed)*0x9E3779B97F4A7C15 + 1
	next := func() uint64 { // xorshift64*
		rng ^= rng >> 12
		rng ^= rng << 25
		rng ^= rng >> 27
		return rng * 0x2545F4914F6CDD1D
	}
	odd := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1e-310, math.Pi}
	for i := range n {
		t := g.Next()
		row := store.Row(rows[i*rs : (i+1)*rs])
		seenSym, seenF, seenI := false, false, false
		for c, cc := range s.Cols {
			at := s.ColAt(c)
			switch cc.Type {
			case store.TypeTs:
				row.SetTs(t.Ts)
			case store.TypeSym:
				if !seenSym {
					row.SetSym(at, uint32(t.Sym))
				} else {
					row.SetSym(at, uint32(next()%7))
				}
				seenSym = true
			case store.TypeF64:
				switch {
				case !seenF:
					row.SetF64(at, t.Price)
				case next()%8 == 0:
					row.SetF64(at, odd[next()%uint64(len(odd))])
				default:
					row.SetF64(at, float64(int64(next()%2000000)-1000000)/1000)
				}
				seenF = true
			case store.TypeI64:
				switch {
				case !seenI:
					row.SetI64(at, t.Size)
				case next()%16 == 0:
					row.SetI64(at, []int64{math.MinInt64, math.MaxInt64, 0, -1}[next()%4])
				default:
					row.SetI64(at, int64(i)*3+int64(next()%5))
				}
				seenI = true
			case store.TypeBool:
				row.SetBool(at, next()%3 == 0)
			}
		}
		format.Seal(segNo*rps+uint64(i), row)
	}
	return rows
}

// encodeFile encodes rows into a format version 1 file in dir (the tests
// of this file pin version 1; clustered_test.go tests version 2) and
// returns its path and the Stats.
func encodeFile(t testing.TB, dir string, s *store.Schema, h Header, rows []byte) (string, Stats) {
	t.Helper()
	return encodeFileVersion(t, dir, s, h, rows, VersionSeqOrder)
}

// encodeFileVersion is encodeFile writing the given format version.
func encodeFileVersion(t testing.TB, dir string, s *store.Schema, h Header, rows []byte, version int) (string, Stats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := encode(&buf, s, h, rows, filepath.Join(dir, format.SegName(h.SegNo)), level, version)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	path := filepath.Join(dir, format.ZSegName(h.SegNo))
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, st
}

// decodeAll decodes every block of g through one reused buffer and returns
// the rows end to end.
func decodeAll(t testing.TB, g *Segment) []byte {
	t.Helper()
	var out, dst []byte
	for b := range g.Blocks() {
		var err error
		if dst, err = g.Block(b, dst); err != nil {
			t.Fatalf("Block(%d): %v", b, err)
		}
		out = append(out, dst...)
	}
	return out
}

// wantCorrupt asserts that err is a *store.CorruptError for path, at off
// unless off is negative.
func wantCorrupt(t testing.TB, err error, path string, off int64) *store.CorruptError {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want corruption of %s at %d", path, off)
	}
	var ce *store.CorruptError
	if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *store.CorruptError", err)
	}
	if ce.Path != path || (off >= 0 && ce.Offset != off) || ce.Reason == "" {
		t.Fatalf("corruption reported at %s:%d (%q), want %s:%d", ce.Path, ce.Offset, ce.Reason, path, off)
	}
	return ce
}

func TestRoundTrip(t *testing.T) {
	tick := store.TickSchema()
	cases := []struct {
		name       string
		s          *store.Schema
		rps        uint64
		rows       int
		maxPerByte float64 // compressed bytes per row at most (0: no bound)
	}{
		{"tick/sealed", tick, 1 << 16, 1 << 16, 5},
		{"tick/short_last_block", tick, 1 << 16, 3*BlockRows + 1234, 5},
		{"tick/one_row", tick, 1 << 16, 1, 0},
		{"tick/one_block_exact", tick, 1 << 12, BlockRows, 0},
		{"tick/empty", tick, 1 << 10, 0, 0},
		{"all_types", allTypes(), 1 << 14, 2*BlockRows + 77, 0},
		{"ts_only", store.MustSchema(col("ts", store.TypeTs)), 1 << 13, 5000, 0},
		{"no_sym", store.MustSchema(col("ts", store.TypeTs), col("price", store.TypeF64), col("size", store.TypeI64), col("b", store.TypeBool)), 1 << 13, 6000, 0},
		{"max_columns", maxCols(), 1 << 13, BlockRows + 3, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := Header{TableID: testTableID, SegNo: 5, RowSize: tc.s.RowSize, RowsPerSeg: tc.rps, Rows: uint64(tc.rows)}
			rows := genRows(tc.s, tc.rows, h.SegNo, h.RowsPerSeg, 1)
			orig := bytes.Clone(rows)
			path, st := encodeFile(t, dir, tc.s, h, rows)
			if !bytes.Equal(rows, orig) {
				t.Fatal("Encode modified its input")
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Rows != h.Rows || st.RawBytes != int64(len(rows)) || st.Bytes != fi.Size() || len(st.ColBytes) != len(tc.s.Cols) {
				t.Fatalf("Stats %+v for %d rows of %d bytes in a %d-byte file", st, h.Rows, tc.s.RowSize, fi.Size())
			}
			nb := int(numBlocks(h.Rows))
			var sum int64
			for _, c := range st.ColBytes {
				sum += c
			}
			if overhead := st.Bytes - sum; overhead < headerSize+4 || overhead > headerSize+8+int64(nb*entrySize(len(tc.s.Cols)))+4 {
				t.Fatalf("column bytes %d in a %d-byte file of %d blocks", sum, st.Bytes, nb)
			}
			if tc.maxPerByte > 0 {
				if perRow := float64(st.Bytes) / float64(tc.rows); perRow > tc.maxPerByte {
					t.Errorf("%.3f bytes/row, want at most %.1f", perRow, tc.maxPerByte)
				}
			}

			g, err := Open(path, tc.s, h)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if g.Rows() != h.Rows || g.Blocks() != nb || g.Size() != fi.Size() || fmt.Sprint(g.ColBytes()) != fmt.Sprint(st.ColBytes) {
				t.Fatalf("Open: %d rows, %d blocks, %d bytes, col bytes %v; want %d, %d, %d, %v",
					g.Rows(), g.Blocks(), g.Size(), g.ColBytes(), h.Rows, nb, fi.Size(), st.ColBytes)
			}
			for b := range nb {
				first := b * BlockRows
				last := min(first+BlockRows, tc.rows) - 1
				lo, hi := g.BlockTs(b)
				if want := store.Row(rows[first*tc.s.RowSize:]).Ts(); lo != want {
					t.Errorf("block %d min ts %d, want %d", b, lo, want)
				}
				if want := store.Row(rows[last*tc.s.RowSize:]).Ts(); hi != want {
					t.Errorf("block %d max ts %d, want %d", b, hi, want)
				}
			}
			got := decodeAll(t, g)
			if i := firstDiff(got, rows); i >= 0 {
				t.Fatalf("decoded rows differ from byte %d (row %d) of %d", i, i/tc.s.RowSize, len(rows))
			}
			// Decoding in another order, into garbage, gives the same.
			dst := bytes.Repeat([]byte{0xAA}, BlockRows*tc.s.RowSize)
			for b := nb - 1; b >= 0; b-- {
				out, err := g.Block(b, dst)
				if err != nil {
					t.Fatal(err)
				}
				if &out[0] != &dst[0] {
					t.Fatalf("block %d: a dst with room was not used", b)
				}
				if !bytes.Equal(out, rows[b*BlockRows*tc.s.RowSize:][:len(out)]) {
					t.Fatalf("block %d decodes differently into a dirty buffer", b)
				}
			}
			// Want.Rows 0 means any count.
			h0 := h
			h0.Rows = 0
			g0, err := Open(path, tc.s, h0)
			if err != nil {
				t.Fatal(err)
			}
			g0.Close()
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func TestEncodeRejects(t *testing.T) {
	tick := store.TickSchema()
	all := allTypes()
	const rps, segNo = 1 << 14, 2
	src := "/db/t/" + format.SegName(segNo)
	rowOff := func(s *store.Schema, i int) int64 { return format.BlockSize + int64(i*s.RowSize) }
	reseal := func(s *store.Schema, rows []byte, i int) {
		format.Seal(segNo*rps+uint64(i), rows[i*s.RowSize:(i+1)*s.RowSize])
	}
	cases := []struct {
		name   string
		s      *store.Schema
		n      int
		damage func(s *store.Schema, rows []byte) int // returns the bad row
		reason string
	}{
		{"bad_check_word", tick, 9000, func(s *store.Schema, rows []byte) int {
			rows[5000*s.RowSize+s.RowSize-1] ^= 0x40
			return 5000
		}, "row 5000 (seq 37768) fails its check"},
		{"bad_value", tick, 9000, func(s *store.Schema, rows []byte) int {
			rows[8999*s.RowSize+9] ^= 1 // price, not resealed
			return 8999
		}, "row 8999 (seq 41767) fails its check"},
		{"zero_row", tick, 100, func(s *store.Schema, rows []byte) int {
			clear(rows[0:s.RowSize])
			return 0
		}, "row 0 (seq 32768) fails its check"},
		{"row_of_another_seq", tick, 100, func(s *store.Schema, rows []byte) int {
			format.Seal(7, rows[42*s.RowSize:43*s.RowSize])
			return 42
		}, "row 42 (seq 32810) fails its check"},
		{"ts_goes_back", tick, 5000, func(s *store.Schema, rows []byte) int {
			r := store.Row(rows[4096*s.RowSize : 4097*s.RowSize])
			r.SetTs(store.Row(rows[4095*s.RowSize:]).Ts() - 1)
			reseal(s, rows, 4096)
			return 4096
		}, "goes back"},
		{"bool_not_0_or_1", all, 300, func(s *store.Schema, rows []byte) int {
			rows[123*s.RowSize+s.ColAt(s.Index("buy")).Off] = 2
			reseal(s, rows, 123)
			return 123
		}, `bool column "buy" holds 2`},
		{"nonzero_padding", all, 300, func(s *store.Schema, rows []byte) int {
			rows[200*s.RowSize+s.RowSize-store.CheckSize-1] = 9
			reseal(s, rows, 200)
			return 200
		}, "nonzero padding"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := genRows(tc.s, tc.n, segNo, rps, 3)
			bad := tc.damage(tc.s, rows)
			var buf bytes.Buffer
			h := Header{TableID: testTableID, SegNo: segNo, RowSize: tc.s.RowSize, RowsPerSeg: rps, Rows: uint64(tc.n)}
			_, err := Encode(&buf, tc.s, h, rows, src)
			ce := wantCorrupt(t, err, src, rowOff(tc.s, bad))
			if !strings.Contains(ce.Reason, tc.reason) {
				t.Errorf("reason %q does not say %q", ce.Reason, tc.reason)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written for damaged rows", buf.Len())
			}
		})
	}

	t.Run("args", func(t *testing.T) {
		rows := genRows(tick, 10, segNo, rps, 1)
		good := Header{TableID: testTableID, SegNo: segNo, RowSize: tick.RowSize, RowsPerSeg: rps, Rows: 10}
		for name, f := range map[string]func(h *Header) []byte{
			"rows_short":      func(h *Header) []byte { return rows[:len(rows)-1] },
			"rows_count":      func(h *Header) []byte { h.Rows = 9; return rows },
			"row_size":        func(h *Header) []byte { h.RowSize = 40; return rows },
			"rows_per_seg":    func(h *Header) []byte { h.RowsPerSeg = 1000; return rows },
			"more_than_a_seg": func(h *Header) []byte { h.RowsPerSeg = 8; return rows },
		} {
			h := good
			r := f(&h)
			if _, err := Encode(&bytes.Buffer{}, tick, h, r, src); !errors.Is(err, ErrArgs) {
				t.Errorf("%s: error %v, want ErrArgs", name, err)
			}
		}
		if _, err := Encode(&bytes.Buffer{}, nil, good, rows, src); !errors.Is(err, ErrArgs) {
			t.Errorf("nil schema: error %v, want ErrArgs", err)
		}
		wErr := errors.New("disk full")
		if _, err := Encode(failWriter{wErr}, tick, good, rows, src); !errors.Is(err, wErr) {
			t.Errorf("write error: got %v, want it wrapped", err)
		}
	})
}

type failWriter struct{ err error }

func (w failWriter) Write(p []byte) (int, error) { return 0, w.err }

// testFile is a three-block tick segment (the last one short) on disk.
type testFile struct {
	s    *store.Schema
	h    Header
	rows []byte
	path string
	data []byte
	g    *Segment // open on data; closed by the test's cleanup
}

func newTestFile(t testing.TB) *testFile {
	t.Helper()
	s := store.TickSchema()
	h := Header{TableID: testTableID, SegNo: 3, RowSize: s.RowSize, RowsPerSeg: 1 << 14, Rows: 2*BlockRows + 1000}
	rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 7)
	path, _ := encodeFile(t, t.TempDir(), s, h, rows)
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

// indexOff is the file offset of the block index.
func (f *testFile) indexOff() int64 { return int64(le.Uint64(f.data[hIndexOff:])) }

// blockOf returns the block holding file offset off, or -1.
func (f *testFile) blockOf(off int64) int {
	for b := range f.g.DataBlocks() {
		e := f.g.entry(b)
		if off >= e.off && off < e.off+int64(e.len) {
			return b
		}
	}
	return -1
}

// check opens data (written at path) and decodes every block. It returns
// the error of Open, or of the first block that fails, with the block; a
// block that decodes must give the original rows.
func (f *testFile) check(t testing.TB, path string, data []byte) (err error, block int) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Open(path, f.s, f.h)
	if err != nil {
		return err, -1
	}
	defer g.Close()
	var dst []byte
	for b := range g.Blocks() {
		if dst, err = g.Block(b, dst); err != nil {
			return err, b
		}
		if want := f.rows[b*BlockRows*f.s.RowSize:][:len(dst)]; !bytes.Equal(dst, want) {
			t.Fatalf("block %d decodes to wrong rows without an error", b)
		}
	}
	return nil, -1
}

// blockErr decodes block b of data, a copy of the file's bytes, through a
// copy of f.g that reads data instead of the mapping: a flip inside a block
// is not seen by Open, so there is no need to write and open a file for it.
func (f *testFile) blockErr(data []byte, b int) error {
	g := *f.g
	g.data = data
	out, err := g.Block(b, nil)
	if err == nil && !bytes.Equal(out, f.rows[b*BlockRows*f.s.RowSize:][:len(out)]) {
		return errors.New("wrong rows without an error")
	}
	return err
}

// TestDamage flips bytes everywhere in a file: a flip in the header or the
// index fails Open at the file's path, a flip in a block fails that block
// (reported at the block's offset), and none gives wrong rows.
func TestDamage(t *testing.T) {
	f := newTestFile(t)
	path := filepath.Join(t.TempDir(), "damaged.zdat")
	data := bytes.Clone(f.data)
	for off := int64(0); off < int64(len(data)); off++ {
		b := f.blockOf(off)
		if b < 0 && off >= hEnd && off < headerSize && off%97 != 0 {
			continue // the header's zero area: a sample is enough
		}
		for _, x := range []byte{0x01, 0x80, 0xFF} {
			data[off] ^= x
			if b >= 0 {
				if err := f.blockErr(data, b); err == nil || !errors.Is(err, store.ErrCorrupt) {
					t.Fatalf("flip %#x at %d (block %d): %v", x, off, b, err)
				}
				wantCorrupt(t, f.blockErr(data, b), f.path, f.g.entry(b).off)
			} else {
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

// fixChecks recomputes every CRC32C of data that its structure lets it
// find (the header's; each block's in the index when the entry points
// inside the file; the index's), so damage reaches the checks behind them.
func fixChecks(data []byte) {
	if len(data) < headerSize {
		return
	}
	if le.Uint32(data[hVersion:]) == VersionClustered {
		fixChecksV2(data)
		le.PutUint32(data[h2Check:], format.CRC32C(data[:h2Check]))
	} else {
		le.PutUint32(data[hCheck:], format.CRC32C(data[:hCheck]))
	}
	ncols := int(le.Uint32(data[hCols:]))
	off, n := le.Uint64(data[hIndexOff:]), le.Uint64(data[hIndexLen:])
	if ncols > store.MaxColumns || off > uint64(len(data)) || n < 4 || n > uint64(len(data))-off {
		return
	}
	index := data[off : off+n]
	es := entrySize(ncols)
	nb := (len(index) - 4) / es
	for b := range nb {
		e := index[b*es:]
		bo, bl := le.Uint64(e[eOff:]), uint64(le.Uint32(e[eLen:]))
		if bo <= uint64(len(data)) && bl <= uint64(len(data))-bo {
			le.PutUint32(e[eCRC:], format.CRC32C(data[bo:bo+bl]))
		}
	}
	le.PutUint32(index[len(index)-4:], format.CRC32C(index[:len(index)-4]))
}

// fixChecksV2 recomputes the directory's and the rank table's CRC32Cs of a
// version 2 file, and each rank frame's where its entry points inside it.
func fixChecksV2(data []byte) {
	table := func(off, n uint64, entry int, each func(e []byte)) {
		if off > uint64(len(data)) || n < 4 || n > uint64(len(data))-off {
			return
		}
		t := data[off : off+n]
		if each != nil {
			for i := 0; (i+1)*entry <= len(t)-4; i++ {
				each(t[i*entry:])
			}
		}
		le.PutUint32(t[len(t)-4:], format.CRC32C(t[:len(t)-4]))
	}
	table(le.Uint64(data[h2DirOff:]), le.Uint64(data[h2DirLen:]), dirEntry, nil)
	table(le.Uint64(data[h2RankOff:]), le.Uint64(data[h2RankLen:]), rankEntry, func(e []byte) {
		o, l := le.Uint64(e[rOff:]), uint64(le.Uint32(e[rLen:]))
		if o <= uint64(len(data)) && l <= uint64(len(data))-o {
			le.PutUint32(e[rCRC:], format.CRC32C(data[o:o+l]))
		}
	})
}

// TestDamageBehindChecks damages fields with their checks recomputed: the
// structural checks of Open and Block must still catch them.
func TestDamageBehindChecks(t *testing.T) {
	f := newTestFile(t)
	io := f.indexOff()
	es := int64(entrySize(len(f.s.Cols)))
	b1 := f.g.entry(1)
	cases := []struct {
		name    string
		edit    func(d []byte)
		block   int   // -1: Open fails
		wantOff int64 // the offset reported, or -1 for any
	}{
		{"rows", func(d []byte) { le.PutUint64(d[hRows:], f.h.Rows+1) }, -1, hRows},
		{"block_rows", func(d []byte) { le.PutUint32(d[hBlockRows:], 1024) }, -1, hBlockRows},
		{"nblocks", func(d []byte) { le.PutUint32(d[hBlocks:], 2) }, -1, hBlocks},
		{"col_type", func(d []byte) { d[hColTypes+2] = byte(store.TypeI64) }, -1, hColTypes + 2},
		{"index_off", func(d []byte) { le.PutUint64(d[hIndexOff:], uint64(io+8)) }, -1, hIndexLen},
		{"header_zero_area", func(d []byte) { d[1000] = 1 }, -1, 1000},
		{"block_offset", func(d []byte) { le.PutUint64(d[io+es+eOff:], uint64(b1.off+1)) }, -1, io + es + eOff},
		{"block_len", func(d []byte) { le.PutUint32(d[io+es+eLen:], uint32(b1.len+1)) }, -1, io + es + eColLen},
		{"entry_rows", func(d []byte) { le.PutUint32(d[io+es+eRows:], 4095) }, -1, io + es + eRows},
		{"min_above_max", func(d []byte) { le.PutUint64(d[io+es+eMinTs:], uint64(b1.maxTs+1)) }, -1, io + es + eMinTs},
		{"min_below_prev", func(d []byte) { le.PutUint64(d[io+es+eMinTs:], uint64(f.g.entry(0).maxTs-1)) }, -1, io + es + eMinTs},
		{"reserved", func(d []byte) { d[io+es+eReserved] = 1 }, -1, io + es + eReserved},
		{"col_len_sum", func(d []byte) { le.PutUint32(d[io+es+eColLen:], le.Uint32(d[io+es+eColLen:])+1) }, -1, io + es + eColLen},
		{"col_lens_swapped", func(d []byte) { // sums agree, prefixes do not
			e := d[io+es+eColLen:]
			a, b := le.Uint32(e), le.Uint32(e[4:])
			le.PutUint32(e, b)
			le.PutUint32(e[4:], a)
		}, 1, b1.off},
		{"min_ts_lower", func(d []byte) { le.PutUint64(d[io+es+eMinTs:], uint64(b1.minTs-1)) }, 1, -1},
		{"max_ts_higher", func(d []byte) { le.PutUint64(d[io+es+eMaxTs:], uint64(b1.maxTs+1)) }, 1, -1},
		{"frame_byte", func(d []byte) { d[b1.off+100] ^= 0x10 }, 1, -1},
		{"frame_prefix", func(d []byte) { d[b1.off] ^= 1 }, 1, b1.off},
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

func TestTruncated(t *testing.T) {
	f := newTestFile(t)
	path := filepath.Join(t.TempDir(), "short.zdat")
	n := int64(len(f.data))
	for _, size := range []int64{0, 1, 100, headerSize - 1, headerSize, headerSize + 3, headerSize + 4, f.g.entry(1).off, f.indexOff(), n - 5, n - 4, n - 1} {
		err, _ := f.check(t, path, f.data[:size])
		wantCorrupt(t, err, path, -1)
	}
	err, _ := f.check(t, path, append(bytes.Clone(f.data), 0, 0, 0, 0, 0, 0, 0, 0))
	wantCorrupt(t, err, path, hIndexLen)
}

func TestOpenMismatch(t *testing.T) {
	f := newTestFile(t)
	for _, tc := range []struct {
		name string
		edit func(h *Header)
		s    *store.Schema
		off  int64
	}{
		{"table_id", func(h *Header) { h.TableID[3]++ }, nil, hTableID},
		{"seg_no", func(h *Header) { h.SegNo++ }, nil, hSegNo},
		{"rows_per_seg", func(h *Header) { h.RowsPerSeg *= 2 }, nil, hRowsPerSeg},
		{"rows", func(h *Header) { h.Rows-- }, nil, hRows},
		{"schema_types", nil, store.MustSchema(col("ts", store.TypeTs), col("sym", store.TypeSym), col("price", store.TypeI64), col("size", store.TypeI64)), hColTypes + 2},
		{"schema_cols", nil, store.MustSchema(col("ts", store.TypeTs), col("sym", store.TypeSym), col("price", store.TypeF64), col("size", store.TypeI64), col("b", store.TypeBool)), hRowSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, s := f.h, f.s
			if tc.edit != nil {
				tc.edit(&h)
			}
			if tc.s != nil {
				s = tc.s
				h.RowSize = s.RowSize
			}
			_, err := Open(f.path, s, h)
			wantCorrupt(t, err, f.path, tc.off)
		})
	}
	h := f.h
	h.RowSize = 40
	if _, err := Open(f.path, f.s, h); !errors.Is(err, ErrArgs) {
		t.Errorf("row size unlike the schema's: %v, want ErrArgs", err)
	}
	if _, err := Open(f.path+".missing", f.s, f.h); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}

func TestBlockArgsAndClose(t *testing.T) {
	f := newTestFile(t)
	g, err := Open(f.path, f.s, f.h)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []int{-1, g.Blocks()} {
		if _, err := g.Block(b, nil); !errors.Is(err, ErrArgs) {
			t.Errorf("Block(%d): %v, want ErrArgs", b, err)
		}
	}
	small := make([]byte, 10)
	out, err := g.Block(2, small)
	if err != nil || len(out) != 1000*f.s.RowSize {
		t.Fatalf("Block(2) into a short dst: %d bytes, %v", len(out), err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, f.rows[2*BlockRows*f.s.RowSize:]) {
		t.Error("rows changed by Close")
	}
	if _, err := g.Block(0, out); !errors.Is(err, ErrClosed) {
		t.Errorf("Block after Close: %v, want ErrClosed", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestBlockAllocs holds Block to zero allocations with a dst of a block's
// capacity on a Segment whose scratch is warm.
func TestBlockAllocs(t *testing.T) {
	if testutil.Race {
		t.Skip("allocation counts are not meaningful under -race")
	}
	for _, s := range []*store.Schema{store.TickSchema(), allTypes()} {
		t.Run(strings.ReplaceAll(s.String(), ",", "_"), func(t *testing.T) {
			h := Header{TableID: testTableID, SegNo: 1, RowSize: s.RowSize, RowsPerSeg: 1 << 14, Rows: 3*BlockRows + 10}
			rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 1)
			path, _ := encodeFile(t, t.TempDir(), s, h, rows)
			g, err := Open(path, s, h)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			dst := make([]byte, 0, BlockRows*s.RowSize)
			for b := range g.Blocks() {
				if _, err := g.Block(b, dst); err != nil {
					t.Fatal(err)
				}
			}
			b := 0
			n := testing.AllocsPerRun(50, func() {
				if _, err := g.Block(b%g.Blocks(), dst); err != nil {
					t.Fatal(err)
				}
				b++
			})
			if n != 0 {
				t.Errorf("Block allocates %v times", n)
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite testdata/v1-tick.zdat")

// TestGolden opens the version 1 file kept in testdata: every later build
// must keep reading it. Regenerate it (only for a format change that comes
// with a version bump, keeping the old file) with go test -run Golden -update.
func TestGolden(t *testing.T) {
	s := store.TickSchema()
	h := Header{TableID: testTableID, SegNo: 9, RowSize: s.RowSize, RowsPerSeg: 1 << 13, Rows: 5000}
	rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 42)
	path := filepath.Join("testdata", "v1-tick.zdat")
	if *update {
		var buf bytes.Buffer
		if _, err := EncodeV1(&buf, s, h, rows, "golden"); err != nil {
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
	if got := decodeAll(t, g); !bytes.Equal(got, rows) {
		t.Fatal("the golden file decodes to other rows")
	}
}

// TestEntryPadding checks the zero padding of index entries, which the
// tick schema's 56-byte entries do not have.
func TestEntryPadding(t *testing.T) {
	s := allTypes()
	h := Header{TableID: testTableID, SegNo: 1, RowSize: s.RowSize, RowsPerSeg: 1 << 13, Rows: 100}
	path, _ := encodeFile(t, t.TempDir(), s, h, genRows(s, 100, 1, 1<<13, 1))
	d, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	es := int64(entrySize(len(s.Cols)))
	if es == eColLen+4*int64(len(s.Cols)) {
		t.Fatal("no padding in the entry")
	}
	at := int64(le.Uint64(d[hIndexOff:])) + es - 1
	d[at] = 1
	fixChecks(d)
	if err := os.WriteFile(path, d, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, s, h)
	wantCorrupt(t, err, path, at)
}

// TestLayout reads a file by the byte offsets of the package doc, written
// here as literals, so the doc and the code cannot drift apart unnoticed.
func TestLayout(t *testing.T) {
	s := store.TickSchema()
	h := Header{TableID: testTableID, SegNo: 6, RowSize: s.RowSize, RowsPerSeg: 1 << 13, Rows: BlockRows + 5}
	rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 2)
	path, _ := encodeFile(t, t.TempDir(), s, h, rows)
	d, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u32 := func(o uint64) uint64 { return uint64(le.Uint32(d[o:])) }
	u64 := func(o uint64) uint64 { return le.Uint64(d[o:]) }
	size := uint64(len(d))
	indexOff, indexLen := u64(72), u64(80)
	const e = 56 // roundup(40 + 4*4, 8)
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"version", u32(8), 1}, {"reserved", u32(12), 0}, {"segNo", u64(32), 6}, {"rowsPerSeg", u64(40), 1 << 13},
		{"rows", u64(48), BlockRows + 5}, {"rowSize", u32(56), 32}, {"blockRows", u32(60), 4096}, {"nblocks", u32(64), 2},
		{"ncols", u32(68), 4}, {"index 8-aligned", indexOff % 8, 0}, {"index ends the file", indexOff + indexLen, size},
		{"index length", indexLen, 2*e + 4}, {"header check", u32(152), uint64(format.CRC32C(d[:152]))},
		{"index check", u32(size - 4), uint64(format.CRC32C(d[indexOff : size-4]))},
		{"block 0 offset", u64(indexOff), 4096}, {"block 1 offset", u64(indexOff + e), 4096 + u32(indexOff+8)},
		{"block 0 rows", u32(indexOff + 12), 4096}, {"block 1 rows", u32(indexOff + e + 12), 5},
		{"block 1 min ts", u64(indexOff + e + 16), uint64(store.Row(rows[4096*32:]).Ts())},
		{"block 1 max ts", u64(indexOff + e + 24), uint64(store.Row(rows[4100*32:]).Ts())},
		{"block 0 check", u32(indexOff + 32), uint64(format.CRC32C(d[4096 : 4096+u32(indexOff+8)]))},
		{"block 0 ts frame length", u32(4096), u32(indexOff + 40)},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	if string(d[:8]) != "TICKZSG\x00" || !bytes.Equal(d[16:32], testTableID[:]) || !bytes.Equal(d[88:93], []byte{1, 2, 3, 4, 0}) {
		t.Errorf("magic %q, table id %x, column types %v", d[:8], d[16:32], d[88:93])
	}
	// Block 1's columns, in schema order: ts, sym, price (keyed by sym), size.
	p := 4096 + u32(indexOff+8)
	frame := func(c uint64) []byte {
		l := u32(p)
		if l != u32(indexOff+e+40+4*c) {
			t.Fatalf("column %d: frame length %d, index %d", c, l, u32(indexOff+e+40+4*c))
		}
		raw, err := codec.Decompress(nil, d[p+4:p+4+l], 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		p += 4 + l
		return raw
	}
	ts, _, err1 := codec.DecodeTs(nil, frame(0), 5)
	sym, _, err2 := codec.DecodeU32(nil, frame(1), 5)
	price, _, err3 := codec.DecodeF64(nil, frame(2), 5, sym, nil)
	qty, _, err4 := codec.DecodeI64(nil, frame(3), 5, sym, nil)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	if indexOff < p || indexOff-p >= 8 {
		t.Errorf("blocks end at %d, index at %d", p, indexOff)
	}
	tick := store.TickSchema()
	symC, _ := tick.Col("sym")
	priceC, _ := tick.Col("price")
	sizeC, _ := tick.Col("size")
	for i := range 5 {
		r := store.Row(rows[(4096+i)*32:])
		if ts[i] != r.Ts() || sym[i] != r.Sym(symC) || price[i] != r.F64(priceC) || qty[i] != r.I64(sizeC) {
			t.Errorf("row %d: decoded %d %d %v %d", 4096+i, ts[i], sym[i], price[i], qty[i])
		}
	}
}

// TestOpenShared: segments of different schemas and versions opened with
// one Scratch, their blocks decoded in turn, give the rows Open's own
// scratch gives.
func TestOpenShared(t *testing.T) {
	dir := t.TempDir()
	var sc Scratch
	type seg struct {
		g    *Segment
		rows []byte
	}
	var segs []seg
	for i, s := range []*store.Schema{store.TickSchema(), allTypes(), maxCols(), store.TickSchema()} {
		h := Header{TableID: testTableID, SegNo: uint64(i), RowSize: s.RowSize, RowsPerSeg: 1 << 14, Rows: uint64(2*BlockRows + 100*i + 7)}
		rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, int64(i))
		path, _ := encodeFileVersion(t, dir, s, h, rows, []int{VersionSeqOrder, VersionClustered}[i%2])
		g, err := OpenShared(path, s, h, &sc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		segs = append(segs, seg{g, rows})
	}
	var dst []byte
	for b := range 3 {
		for i, x := range segs {
			var err error
			if dst, err = x.g.Block(b, dst[:0]); err != nil {
				t.Fatalf("segment %d block %d: %v", i, b, err)
			}
			rs := x.g.RowSize()
			if want := x.rows[b*BlockRows*rs : b*BlockRows*rs+len(dst)]; !bytes.Equal(dst, want) {
				t.Fatalf("segment %d block %d: rows differ at byte %d", i, b, firstDiff(dst, want))
			}
		}
	}
}
