package cseg

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// Fuzz targets over arbitrary compressed segment files. Seeds are valid
// files (a tick schema, 1 to 4097 rows) and a few short ones; run one with
//
//	go test ./cseg -run '^$' -fuzz '^FuzzOpen$' -fuzztime 30s -fuzzminimizetime 0
//	go test ./cseg -run '^$' -fuzz '^FuzzBlock$' -fuzztime 30s -fuzzminimizetime 0
//
// The seeds are of both format versions (FuzzOpen is also the version 2
// target). FuzzOpen feeds the bytes as they are, so most inputs stop at a checksum.
// FuzzBlock first recomputes every checksum it can find (fixChecks), so
// mutations reach the structural checks and the column decoders behind
// them. The inputs are files of 4 KiB and more, so minimizing each new
// interesting one would stall the search for up to a minute:
// -fuzzminimizetime 0 turns minimizing off (a crasher is kept whole).

// fuzzHeader is the identity every fuzz input is opened with; Rows 0
// accepts any row count.
var fuzzHeader = Header{TableID: testTableID, SegNo: 1, RowSize: 32, RowsPerSeg: 1 << 13}

func addSeeds(f *testing.F) {
	s := store.TickSchema()
	for _, n := range []int{1, 100, BlockRows + 1} {
		h := fuzzHeader
		h.Rows = uint64(n)
		for _, v := range []int{VersionSeqOrder, VersionClustered} {
			var buf bytes.Buffer
			if _, err := encode(&buf, s, h, genRows(s, n, h.SegNo, h.RowsPerSeg, int64(n)), "seed", level, v); err != nil {
				f.Fatal(err)
			}
			f.Add(buf.Bytes())
		}
	}
	f.Add([]byte{})
	f.Add([]byte(Magic))
	f.Add(make([]byte, headerSize+4))
}

// openAndDecode opens data as a file in dir and decodes every block. Every
// failure must be a corrupt error; rows that decode must be sealed rows
// of the segment whose ts never goes back.
func openAndDecode(t *testing.T, dir string, data []byte) {
	s := store.TickSchema()
	path := filepath.Join(dir, "fuzz.zdat")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Open(path, s, fuzzHeader)
	if err != nil {
		if !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Open: %v is not a corrupt error", err)
		}
		return
	}
	defer g.Close()
	if g.Rows() > fuzzHeader.RowsPerSeg || g.Blocks() != int(numBlocks(g.Rows())) || g.Size() != int64(len(data)) {
		t.Fatalf("opened %d rows in %d blocks, %d bytes, from %d bytes", g.Rows(), g.Blocks(), g.Size(), len(data))
	}
	var dst []byte
	for b := range g.Blocks() {
		dst, err = g.Block(b, dst)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Block(%d): %v is not a corrupt error", b, err)
			}
			continue
		}
		lo, hi := g.BlockTs(b)
		base := fuzzHeader.SegNo*fuzzHeader.RowsPerSeg + uint64(b)*BlockRows
		prev := lo
		for i := 0; i < len(dst); i += s.RowSize {
			row := store.Row(dst[i : i+s.RowSize])
			if !format.Valid(base+uint64(i/s.RowSize), row) || row.Ts() < prev || row.Ts() > hi {
				t.Fatalf("block %d row %d: decoded a row that is not sealed or in order", b, i/s.RowSize)
			}
			prev = row.Ts()
		}
	}
	// Version 2: each symbol's blocks, rows sealed for their seqs.
	var seqs []uint64
	for k := range g.DataBlocks() {
		if g.Version() != VersionClustered {
			break
		}
		dst, seqs, err = g.SymBlock(k, dst, seqs)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("SymBlock(%d): %v is not a corrupt error", k, err)
			}
			continue
		}
		for i, seq := range seqs {
			if !format.Valid(seq, store.Row(dst[i*s.RowSize:(i+1)*s.RowSize])) {
				t.Fatalf("data block %d row %d: decoded a row that is not sealed", k, i)
			}
		}
	}
}

func FuzzOpen(f *testing.F) {
	addSeeds(f)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		openAndDecode(t, dir, data)
	})
}

func FuzzBlock(f *testing.F) {
	addSeeds(f)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		fixChecks(data)
		openAndDecode(t, dir, data)
	})
}
