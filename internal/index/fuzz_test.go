package index

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

// Fuzz targets for the index files read from untrusted bytes. Seeds live
// in testdata/fuzz/<FuzzName>/ and in the f.Add calls; run one with e.g.
//
//	go test ./index -run '^$' -fuzz '^FuzzOpenCtl$' -fuzztime 20s

func validCtlImage(f *testing.F, g Geometry, s *store.Schema) []byte {
	path := filepath.Join(f.TempDir(), "ctl")
	if err := CreateCtl(path, s, g, testID, vfs.OS); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// trimZeros drops trailing zero bytes: the fuzz target pads with zeros.
func trimZeros(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// FuzzOpenCtl: a control file of arbitrary bytes gives an error or a Ctl
// whose header is valid and whose reader methods all work; never a panic.
// The file is the header page hdr and the published page pub, each zero
// padded, cut to size bytes when size is not 0. fix recomputes the header
// check word so that mutations reach the field checks behind it.
func FuzzOpenCtl(f *testing.F) {
	good := validCtlImage(f, testGeo, store.TickSchema())
	hdr := trimZeros(good[:hdrCheck])
	f.Add(good[:format.BlockSize], []byte{}, uint16(0), false, false)
	f.Add(hdr, []byte{}, uint16(0), true, true)
	big := validCtlImage(f, Geometry{SegShift: 40, StrideShift: 20, LiveSlots: MaxLiveSlots},
		store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "b", Type: store.TypeBool}))
	f.Add(trimZeros(big[:hdrCheck]), []byte{}, uint16(0), true, false)
	pub := make([]byte, offLiveDir+8-format.BlockSize)
	le.PutUint64(pub[offSeqlock-format.BlockSize:], 6)
	le.PutUint64(pub[offVisible-format.BlockSize:], 1<<62)
	le.PutUint64(pub[offSlots-format.BlockSize:], 3)
	le.PutUint32(pub[offLiveDir-format.BlockSize:], 4)
	copy(pub[offLiveDir+4-format.BlockSize:], "/shm")
	f.Add(hdr, pub, uint16(0), true, false)
	f.Add(hdr, []byte{}, uint16(format.BlockSize+100), true, false)
	f.Add([]byte{}, []byte{}, uint16(1), false, false)
	// One directory per fuzz process: the target runs sequentially in it.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, hdr, pub []byte, size uint16, fix, writable bool) {
		img := make([]byte, CtlSize)
		copy(img[:format.BlockSize], hdr)
		copy(img[format.BlockSize:], pub)
		if size != 0 && int(size) < CtlSize {
			img = img[:size]
		}
		if fix && len(img) >= format.BlockSize {
			le.PutUint32(img[hdrCheck:], format.CRC32C(img[:hdrCheck]))
		}
		if len(img) > offSeqlock {
			// An odd lock word makes Snapshot wait out its patience (a
			// writer that died mid-publish): a timing path, tested in
			// TestSnapshotBusyAndResetSeqlock, that would only slow the
			// fuzzer down here.
			img[offSeqlock] &^= 1
		}
		path := filepath.Join(dir, "ctl")
		if err := os.WriteFile(path, img, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := OpenCtl(path, testFS(writable))
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Path != path || ce.Offset < 0 || ce.Offset > int64(len(img)) {
				t.Fatalf("error %v is not a CorruptError inside %s", err, path)
			}
			return
		}
		defer c.Close()
		if c.Schema == nil || c.Schema.Cols[0].Type != store.TypeTs || c.LiveSlots < 2 || c.LiveSlots > MaxLiveSlots ||
			c.SegShift < 4 || c.SegShift > 40 || c.StrideShift > 20 || c.RowsPerSeg() == 0 {
			t.Fatalf("accepted ctl with schema %v geometry %+v", c.Schema, c.Geometry)
		}
		if c.Schema.SchemaBytes() > hdrCheck-hdrSchema {
			t.Fatalf("schema of %d bytes overlaps the check word", c.Schema.SchemaBytes())
		}
		// Every reader method works on whatever the published page holds.
		if _, err := c.Snapshot(); err != nil && !errors.Is(err, ErrBusy) {
			t.Fatalf("Snapshot: %v", err)
		}
		_ = c.RawSnap()
		for i := range c.LiveSlots {
			c.Slot(i)
			c.SlotGen(i)
		}
		if len(c.LiveDir()) > maxLiveDir {
			t.Fatal("LiveDir longer than its field")
		}
		_, _, _, _ = c.Visible(), c.Durable(), c.DurableSegs(), c.Checkpoint()
		_, _, _, _ = c.SymCount(), c.SymBytes(), c.WriterPid(), c.State()
		_, _, _, _ = c.OutOfOrder(), c.BootID(), c.Flushes(), c.Created()
	})
}

// FuzzSymbolsRefresh: dictionary bytes after a valid header, with an
// arbitrary published count and end: Refresh gives an error or exactly
// count entries inside end; Scan never panics and finds entries that
// parse.
func FuzzSymbolsRefresh(f *testing.F) {
	entries := make([]byte, 0, 256)
	for i, n := range []string{"AAPL", "", "BRK.B", "12345678"} {
		e := make([]byte, format.SymEntrySize(len(n)))
		format.PutSymEntry(e, uint32(i), uint64(2*i+1), []byte(n))
		entries = append(entries, e...)
	}
	f.Add(entries, uint16(4), uint32(len(entries)))
	f.Add(entries, uint16(2), uint32(48))
	f.Add(entries[:30], uint16(2), uint32(30))
	f.Add([]byte{}, uint16(1), uint32(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte, count uint16, endRel uint32) {
		if len(body) > 1<<16 {
			return
		}
		hdr := make([]byte, format.BlockSize)
		format.MarshalFileHeader(hdr, format.MagicSym, testID)
		path := filepath.Join(dir, format.SymName)
		if err := os.WriteFile(path, append(hdr, body...), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := OpenSymbols(path, testID, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		end := format.BlockSize + uint64(endRel)
		if err := s.Refresh(uint64(count), end); err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Refresh error %v is not a corruption", err)
			}
		} else if s.Len() != int(count) || s.End() > end {
			t.Fatalf("Refresh(%d, %d) gave %d entries ending at %d", count, end, s.Len(), s.End())
		}
		for i := range s.Len() {
			if id, ok := s.Lookup([]byte(s.Name(uint32(i)))); !ok || id > uint32(i) {
				t.Fatalf("symbol %d not found by name", i)
			}
		}
		s2, err := OpenSymbols(path, testID, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		n := s2.Scan()
		if n != s2.Len() || s2.End() > format.BlockSize+uint64(len(body)) {
			t.Fatalf("Scan found %d entries (len %d) ending at %d of %d", n, s2.Len(), s2.End(), format.BlockSize+len(body))
		}
	})
}

// FuzzPostings builds a postings file from a compact description and
// walks it (DataChunks) and repairs it (Reset): errors are corruption
// errors, walks are bounded and go forward, nothing panics or hangs. Each
// input runs over a version 1 and a version 2 file.
//
// The file is sparse, postChunks chunks. spec: u16 published chunk count,
// u16 first directory, then 7-byte ops {op, chunk u16, word u16, value
// u16}: op bit 0 clear sets one word to value; set, it fills slots 1..511
// of chunk with value, value+1, ... (a full directory, the only kind whose
// link is followed).
func FuzzPostings(f *testing.F) {
	op := func(fill bool, chunk, word, value uint16) []byte {
		b := []byte{0, byte(chunk), byte(chunk >> 8), byte(word), byte(word >> 8), byte(value), byte(value >> 8)}
		if fill {
			b[0] = 1
		}
		return b
	}
	spec := func(next, dir uint16, ops ...[]byte) []byte {
		b := []byte{byte(next), byte(next >> 8), byte(dir), byte(dir >> 8)}
		for _, o := range ops {
			b = append(b, o...)
		}
		return b
	}
	// A directory with two data chunks holding three rows.
	f.Add(spec(4, 1, op(false, 1, 1, 2), op(false, 1, 2, 3), op(false, 2, 0, 1), op(false, 2, 1, 2), op(false, 3, 0, 3)), uint16(2), true)
	// A full directory linking to itself, and to an earlier one.
	f.Add(spec(1100, 1, op(true, 1, 0, 2), op(false, 1, 0, 1)), uint16(600), true)
	f.Add(spec(1100, 1, op(true, 1, 0, 2), op(false, 1, 0, 513), op(true, 513, 0, 514), op(false, 513, 0, 1)), uint16(9000), true)
	// Two good full directories and a partial third.
	f.Add(spec(1600, 1, op(true, 1, 0, 2), op(false, 1, 0, 513), op(true, 513, 0, 514), op(false, 513, 0, 1025),
		op(false, 1025, 1, 1026), op(false, 1026, 0, 7)), uint16(100), true)
	// A directory with nothing in it.
	f.Add(spec(10, 9), uint16(0), true)
	tmp := f.TempDir()
	f.Fuzz(func(t *testing.T, spec []byte, seq uint16, reset bool) {
		if len(spec) < 4 || len(spec) > 7*64+4 {
			return
		}
		for _, v := range []uint32{format.PostVersion1, format.PostVersion2, format.PostVersion3} {
			fuzzPostings(t, tmp, v, spec, seq, reset)
		}
	})
}

func fuzzPostings(t *testing.T, tmp string, version uint32, spec []byte, seq uint16, reset bool) {
	const postChunks = 2048
	next := uint64(le.Uint16(spec[0:]))%(postChunks-1) + 1
	dir := uint64(le.Uint16(spec[2:])) % postChunks
	hdr := make([]byte, format.BlockSize)
	format.MarshalFileHeaderVersion(hdr, format.MagicPost, version, testID)
	path := filepath.Join(tmp, format.PostName)
	if err := os.WriteFile(path, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, postChunks*format.BlockSize); err != nil {
		t.Fatal(err)
	}
	p, err := OpenPostings(path, testID, vfs.OS)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for o := spec[4:]; len(o) >= 7; o = o[7:] {
		c := uint64(le.Uint16(o[1:])) % postChunks
		w := uint64(le.Uint16(o[3:])) % ChunkWords
		v := uint64(le.Uint16(o[5:]))
		if c == 0 {
			continue // the header
		}
		if o[0]&1 == 0 {
			p.w[c*p.wpu+w] = v
			continue
		}
		for i := uint64(1); i < ChunkWords; i++ {
			p.w[c*p.wpu+i] = v + i - 1
		}
	}
	chunks, err := p.DataChunks(nil, dir, next)
	if err != nil {
		if !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("DataChunks error %v is not a corruption", err)
		}
	} else {
		if uint64(len(chunks)) > next {
			t.Fatalf("%d data chunks under next chunk %d", len(chunks), next)
		}
		for j, c := range chunks {
			if c == 0 || c >= next || j > 0 && c <= chunks[j-1] {
				t.Fatalf("data chunks %v (next %d)", chunks, next)
			}
		}
	}
	if !reset || dir == 0 {
		return
	}
	pw := NewPostWriter(p, 1)
	if err := pw.Reset([]uint64{dir}, uint64(seq), next, false); err != nil {
		if !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Reset error %v is not a corruption", err)
		}
		return
	}
	// After a successful Reset the symbol's postings walk cleanly and
	// appends extend them.
	before, err := p.DataChunks(nil, dir, pw.NextChunk())
	if err != nil {
		t.Fatalf("DataChunks after Reset: %v", err)
	}
	for s := uint64(seq); s < uint64(seq)+600; s++ {
		if err := pw.Add(0, s); err != nil {
			t.Fatal(err)
		}
	}
	after, err := p.DataChunks(nil, dir, pw.NextChunk())
	if err != nil {
		t.Fatalf("DataChunks after Reset and appends: %v", err)
	}
	if len(after) < len(before) || !equalSeqs(after[:len(before)], before) {
		t.Fatalf("appends changed the kept chunks: %v then %v", before, after)
	}
}
