package cseg

import (
	"fmt"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/tickdb/tickdb/store"
)

// TestColReader: every column of every data block, read alone through a
// ColReader, is what the rows the file holds say, with each row's offset
// in the segment; in both format versions, for every column type (keyed
// f64 and i64 in version 1, the clustering column in version 2), from
// several goroutines at once on one Segment.
func TestColReader(t *testing.T) {
	s := allTypes()
	for _, version := range []int{VersionSeqOrder, VersionClustered} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			const n = 3*BlockRows + 777
			h := Header{TableID: testTableID, SegNo: 3, RowSize: s.RowSize, RowsPerSeg: 1 << 14, Rows: n}
			rows := genRows(s, n, h.SegNo, h.RowsPerSeg, 5)
			path, _ := encodeFileVersion(t, t.TempDir(), s, h, rows, version)
			g, err := Open(path, s, h)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			check := func(cr *ColReader) error {
				var ts, i64s []int64
				var f64s []float64
				var u32s []uint32
				var bools []bool
				for k := range g.DataBlocks() {
					m, err := cr.Open(g, k)
					if err != nil {
						return err
					}
					if m != g.DataBlockRows(k) {
						return fmt.Errorf("block %d: %d rows, the index says %d", k, m, g.DataBlockRows(k))
					}
					offs, err := cr.Offsets()
					if err != nil {
						return err
					}
					if ts, err = cr.Ts(ts); err != nil {
						return err
					}
					for c, col := range s.Cols {
						if c == 0 {
							continue
						}
						at := s.ColAt(c)
						for i, o := range offs {
							row := store.Row(rows[o*int64(s.RowSize) : (o+1)*int64(s.RowSize)])
							if i == 0 {
								switch col.Type {
								case store.TypeI64:
									i64s, err = cr.I64(c, i64s)
								case store.TypeF64:
									f64s, err = cr.F64(c, f64s)
								case store.TypeSym:
									u32s, err = cr.Sym(c, u32s)
								case store.TypeBool:
									bools, err = cr.Bool(c, bools)
								}
								if err != nil {
									return err
								}
							}
							var got, want uint64
							switch col.Type {
							case store.TypeI64:
								got, want = uint64(i64s[i]), uint64(row.I64(at))
							case store.TypeF64:
								got, want = math.Float64bits(f64s[i]), math.Float64bits(row.F64(at))
							case store.TypeSym:
								got, want = uint64(u32s[i]), uint64(row.Sym(at))
							case store.TypeBool:
								got, want = b2u(bools[i]), b2u(row.Bool(at))
							}
							if got != want || ts[i] != row.Ts() {
								return fmt.Errorf("block %d row %d (offset %d) column %s: %#x ts %d, want %#x ts %d", k, i, o, col.Name, got, ts[i], want, row.Ts())
							}
						}
					}
				}
				return nil
			}
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Go(func() { errs[i] = check(new(ColReader)) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			// Every row once: the offsets cover the segment.
			seen := make([]bool, n)
			var cr ColReader
			for k := range g.DataBlocks() {
				if _, err := cr.Open(g, k); err != nil {
					t.Fatal(err)
				}
				offs, _ := cr.Offsets()
				for _, o := range offs {
					if seen[o] {
						t.Fatalf("row %d twice", o)
					}
					seen[o] = true
				}
			}
			// A column of another type, or none open, is an argument error.
			if _, err := cr.F64(0, nil); err == nil {
				t.Error("F64 of the ts column: no error")
			}
			if _, err := new(ColReader).Offsets(); err == nil {
				t.Error("Offsets with no block open: no error")
			}
		})
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// TestColReaderDamage: a flipped byte in a data block fails its CRC32C at
// Open, naming the file and the block's offset.
func TestColReaderDamage(t *testing.T) {
	s := store.TickSchema()
	h := Header{TableID: testTableID, SegNo: 0, RowSize: s.RowSize, RowsPerSeg: 1 << 13, Rows: 1 << 13}
	rows := genRows(s, int(h.Rows), h.SegNo, h.RowsPerSeg, 9)
	path, _ := encodeFileVersion(t, t.TempDir(), s, h, rows, VersionClustered)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[headerSize+10] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Open(path, s, h)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var cr ColReader
	_, err = cr.Open(g, 0)
	wantCorrupt(t, err, path, headerSize)
}
