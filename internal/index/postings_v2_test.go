package index

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
)

// Version 2 postings close a chunk early when a symbol's next row is
// MaxDelta-1 rows or more after its chunk's first (docs/FORMAT.md §7).
// These tests put real seqs with such gaps into a PostWriter (a seq is
// only a number to it), and run the same through version 1, which never
// closes early.

// addAll adds rows (symbol, seq) in order.
func addAll(t *testing.T, pw *PostWriter, m *postModel, rows [][2]uint64) {
	t.Helper()
	for _, r := range rows {
		m.add(t, pw, uint32(r[0]), r[1])
	}
}

// oneSym is rows of symbol 0 at seqs.
func oneSym(seqs ...uint64) [][2]uint64 {
	rows := make([][2]uint64, len(seqs))
	for i, s := range seqs {
		rows[i] = [2]uint64{0, s}
	}
	return rows
}

// run is n seqs from a, one apart.
func run(a uint64, n int) []uint64 { return seqRange(a, a+uint64(n)) }

func cat(s ...[]uint64) []uint64 {
	var out []uint64
	for _, x := range s {
		out = append(out, x...)
	}
	return out
}

// earlyCases are rows whose gaps close version 2 chunks early; n is the
// entries per chunk.
func earlyCases(n int) []struct {
	name string
	rows [][2]uint64
} {
	const D = MaxDelta
	return []struct {
		name string
		rows [][2]uint64
	}{
		{"gap_after_ten_rows", oneSym(cat(run(0, 10), run(10+D, 10))...)},
		// Entry d = seq - first + 1: D-1 is the largest that fits.
		{"largest_delta_fits", oneSym(cat(run(0, 3), []uint64{D - 2}, run(D+100, 2))...)},
		{"smallest_delta_closes", oneSym(cat(run(0, 3), []uint64{D - 1}, run(D, 2))...)},
		{"first_seq_not_zero", oneSym(cat(run(1000, 3), []uint64{1000 + D - 2, 1000 + D - 1})...)},
		{"chunk_of_its_first_row_only", oneSym(5, 5+D+3, 5+D+4)},
		{"every_row_far", oneSym(0, D, 2*D, 3*D, 4*D, 5*D)},
		{"close_before_last_two_entries", oneSym(cat(run(0, n-2), []uint64{D * 3}, run(3*D+1, 5))...)},
		{"close_before_last_entry", oneSym(cat(run(0, n-1), []uint64{D * 3}, run(3*D+1, 5))...)},
		{"far_row_after_full_chunk", oneSym(cat(run(0, n), []uint64{D * 3}, run(3*D+1, 5))...)},
		{"two_symbols_interleaved", func() [][2]uint64 {
			var rows [][2]uint64
			for s := range uint64(3000) {
				rows = append(rows, [2]uint64{s % 2, s*s*40 + s%2})
			}
			return rows
		}()},
		{"many_chunks_past_a_directory", func() [][2]uint64 {
			// 600 chunks of one row each: a second directory.
			var rows [][2]uint64
			for k := range uint64(600) {
				rows = append(rows, [2]uint64{0, k * D})
			}
			return rows
		}()},
	}
}

func TestPostWriterEarlyClose(t *testing.T) {
	versions(t, func(t *testing.T, v uint32) {
		n := newPostings(t, v).BlockLen(0)
		for _, c := range earlyCases(n) {
			t.Run(c.name, func(t *testing.T) {
				p := newPostings(t, v)
				pw := NewPostWriter(p, 1)
				m := &postModel{}
				nsyms := 0
				for _, r := range c.rows {
					nsyms = max(nsyms, int(r[0])+1)
				}
				for range nsyms {
					m.newSymbol(t, pw)
				}
				addAll(t, pw, m, c.rows)
				checkAdded(t, p, pw, m)
				// A reopened file reads the same.
				r, err := OpenPostings(p.Path(), testID, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				checkModel(t, r, m, pw.NextChunk())
			})
		}
	})
}

// TestPostWriterEarlyCloseRandom: many symbols with random gaps under a
// low bound (SetMaxDelta), against the model: chunks close early often,
// at every fill.
func TestPostWriterEarlyCloseRandom(t *testing.T) {
	versions(t, func(t *testing.T, v uint32) {
		for _, lim := range []uint64{2, 3, 256, 5000} {
			t.Run("lim="+itoa(lim), func(t *testing.T) {
				p := newPostings(t, v)
				pw := NewPostWriter(p, 1)
				pw.SetMaxDelta(lim)
				m := &postModel{lim: lim}
				for range 7 {
					m.newSymbol(t, pw)
				}
				rng := rand.New(rand.NewPCG(lim, 3))
				seq := uint64(0)
				for range 30_000 {
					id := rng.IntN(7)
					if id >= 4 && rng.IntN(4) != 0 {
						id = 0 // symbols 4..6 are rare
					}
					m.add(t, pw, uint32(id), seq)
					seq += 1 + uint64(rng.IntN(3))
				}
				checkAdded(t, p, pw, m)
			})
		}
	})
}

func itoa(n uint64) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestPostWriterResetEarlyClose cuts version 2 postings the way writer
// recovery does, around chunks closed early: in the middle of the rows
// of a chunk that was closed, right after them (the far row that closed
// it cut), right after the far row, and with the far row's chunk begun
// (its header) but its first entry not written (a crash between the two
// stores). Appends then resume, a second restart keeps everything.
func TestPostWriterResetEarlyClose(t *testing.T) {
	const D = MaxDelta
	// Symbol 0: rows 0..99, a far row at F, rows after it; symbol 1
	// dense throughout (it keeps the checkpoint's chunk count honest).
	const F = 100 + D
	rows := func() [][2]uint64 {
		var r [][2]uint64
		for s := range uint64(100) {
			r = append(r, [2]uint64{0, 2 * s}, [2]uint64{1, 2*s + 1})
		}
		r = append(r, [2]uint64{1, F - 1}, [2]uint64{0, F})
		for s := range uint64(50) {
			r = append(r, [2]uint64{0, F + 1 + 2*s}, [2]uint64{1, F + 2 + 2*s})
		}
		return r
	}()
	cases := []struct {
		name       string
		cut        uint64
		headerOnly bool // zero the far row's entry 0, keep its chunk's header
		punched    bool
	}{
		{"cut_inside_closed_chunk", 51, false, false},
		{"cut_after_closed_chunk", F, false, false},
		{"cut_after_far_row", F + 1, false, false},
		{"cut_after_far_row_punched", F + 1, false, true},
		{"far_row_header_only", F, true, false},
		{"far_row_header_only_punched", F, true, true},
	}
	for _, v := range []uint32{format.PostVersion2, format.PostVersion3} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("v%d/%s", v, c.name), func(t *testing.T) {
				p := newPostings(t, v)
				pw := NewPostWriter(p, 1)
				m := &postModel{}
				m.newSymbol(t, pw)
				m.newSymbol(t, pw)
				addAll(t, pw, m, rows)
				limit := pw.NextChunk()
				chunks, err := p.DataChunks(nil, m.dirs[0], limit)
				if want := wantChunks(p, run(0, 100), MaxDelta) + 1; err != nil || len(chunks) != want {
					t.Fatalf("symbol 0 has chunks %v, %v; want %d", chunks, err, want)
				}
				if c.headerOnly {
					// The far row's chunk as a crash between its header and its
					// entry 0 leaves it, the rows after it not yet written.
					j := uint64(len(chunks) - 1)
					b := chunks[j] << p.shift
					clear(p.b[b+entryOff2(0) : b+p.blockUnits(j)<<p.shift])
				}
				pw2 := NewPostWriter(p, 1)
				if err := pw2.Reset(m.dirs, c.cut, limit, c.punched); err != nil {
					t.Fatalf("Reset(%d): %v", c.cut, err)
				}
				m.cut(c.cut)
				m.early = true // a chunk closed for a row that was cut stays closed
				checkModel(t, p, m, pw2.NextChunk())
				// Appends resume: symbol 0 near its kept rows, then far again.
				next := c.cut
				for k := range uint64(40) {
					m.add(t, pw2, uint32(k%2), next+k)
				}
				m.add(t, pw2, 0, next+40+2*D)
				m.add(t, pw2, 1, next+41+2*D)
				m.add(t, pw2, 0, next+42+2*D)
				checkModel(t, p, m, pw2.NextChunk())
				pw3 := NewPostWriter(p, 1)
				if err := pw3.Reset(m.dirs, next+43+2*D, pw2.NextChunk(), c.punched); err != nil {
					t.Fatal(err)
				}
				if pw3.NextChunk() != pw2.NextChunk() {
					t.Errorf("idempotent Reset moved NextChunk from %d to %d", pw2.NextChunk(), pw3.NextChunk())
				}
				checkModel(t, p, m, pw3.NextChunk())
			})
		}
	}
}

// TestPunchBelow punches the data chunks whose rows are all below a
// floor (chunks closed early among them), keeps each symbol's last, and
// skips what it punched before; a restarted writer (Reset with punched)
// keeps the punched chunks first in the chain and appends after them.
func TestPunchBelow(t *testing.T) {
	versions(t, func(t *testing.T, v uint32) {
		p := newPostings(t, v)
		n := uint64(p.EntriesPerChunk())
		rows := 6 * n
		if v == format.PostVersion3 {
			rows = 30 * n // symbol 1 past its growing blocks too
		}
		pw := NewPostWriter(p, 1)
		pw.SetMaxDelta(1000)
		m := &postModel{lim: 1000}
		for range 3 {
			m.newSymbol(t, pw)
		}
		// Symbol 0 dense, symbol 1 sparse (every 7th row, and a gap of
		// 5000 rows: a version 2 chunk closed early), symbol 2 one row.
		seq := uint64(0)
		for i := range rows {
			id := uint32(0)
			if i%7 == 3 {
				id = 1
			}
			if i == rows/3 {
				seq += 5000
			}
			m.add(t, pw, id, seq)
			seq++
		}
		m.add(t, pw, 2, seq)
		seq++
		next := pw.NextChunk()
		floor := seq / 2
		// Expected: every punchable block but a symbol's last whose last
		// entry is below the floor; kept: the entries of the others.
		want := map[uint64]bool{}
		kept := make([][]uint64, len(m.dirs))
		for id, dir := range m.dirs {
			chunks, err := p.DataChunks(nil, dir, next)
			if err != nil {
				t.Fatal(err)
			}
			reaches := false
			for i, c := range chunks {
				j := uint64(i)
				if i < len(chunks)-1 && p.Punchable(j) && !reaches && p.Entry(c, p.BlockLen(j)-1)-1 < floor {
					want[c] = true
					continue
				}
				if p.Punchable(j) {
					reaches = true
				}
				for k := range p.BlockLen(j) {
					if e := p.Entry(c, k); e != 0 && (len(kept[id]) == 0 || e-1 != kept[id][len(kept[id])-1]) {
						kept[id] = append(kept[id], e-1)
					}
				}
			}
			if len(chunks)-1 > p.punchFrom && !want[chunks[p.punchFrom]] {
				t.Fatalf("symbol %d has nothing to punch", id)
			}
		}
		// A symbol added after next was read (the checkpointer reads the
		// dictionary after the snapshot) is skipped, not damage.
		late, err := pw.NewSymbol()
		if err != nil {
			t.Fatal(err)
		}
		before := allocatedBytes(t, p.Path())
		got, err := p.PunchBelow(append(m.dirs[:len(m.dirs):len(m.dirs)], late), next, floor)
		if err != nil {
			t.Fatal(err)
		}
		if got != len(want) || got == 0 {
			t.Fatalf("PunchBelow punched %d blocks, want %d", got, len(want))
		}
		// The punched blocks' disk space is freed, and growing the file
		// (the preparer's room ahead) allocates only what it adds: the
		// holes stay holes. (slack: the file system's own metadata, such
		// as the extent blocks a hole in the middle of an extent takes,
		// counts in st_blocks.)
		const slack = 4 * format.BlockSize
		punched := allocatedBytes(t, p.Path())
		if freed := before - punched; freed < int64(got)*format.BlockSize-slack {
			t.Fatalf("PunchBelow punched %d blocks and freed %d bytes", got, freed)
		}
		const more = 16
		if err := p.Grow(p.Chunks() + more); err != nil {
			t.Fatal(err)
		}
		if grown := allocatedBytes(t, p.Path()) - punched; grown > more*format.BlockSize+slack {
			t.Fatalf("growing by %d blocks allocated %d bytes: the punched blocks were allocated again", more, grown)
		}
		for id, dir := range m.dirs {
			chunks, _ := p.DataChunks(nil, dir, next)
			var have []uint64
			for i, c := range chunks {
				j := uint64(i)
				zero := true
				for k := range p.BlockLen(j) {
					zero = zero && p.Entry(c, k) == 0
				}
				if zero != want[c] {
					t.Fatalf("symbol %d block %d (%d): zero %v, punched %v", id, c, j, zero, want[c])
				}
				if want[c] {
					for w := range ChunkWords {
						if p.Word(c, w) != 0 {
							t.Fatalf("punched block %d word %d = %d", c, w, p.Word(c, w))
						}
					}
					continue
				}
				for k := range p.BlockLen(j) {
					if e := p.Entry(c, k); e != 0 && (len(have) == 0 || e-1 != have[len(have)-1]) {
						have = append(have, e-1)
					}
				}
			}
			if !equalSeqs(have, kept[id]) {
				t.Fatalf("symbol %d keeps %v, want %v", id, brief(have), brief(kept[id]))
			}
		}
		if again, err := p.PunchBelow(m.dirs, next, floor); err != nil || again != 0 {
			t.Fatalf("PunchBelow again = %d, %v; want 0", again, err)
		}
		// Restart at the end with punched blocks: they stay in the
		// chain, and appends go after them.
		pw2 := NewPostWriter(p, 1)
		pw2.SetMaxDelta(1000)
		if err := pw2.Reset(m.dirs, seq, next, true); err != nil {
			t.Fatal(err)
		}
		if pw2.NextChunk() != next {
			t.Fatalf("Reset with punched blocks moved NextChunk from %d to %d", next, pw2.NextChunk())
		}
		for k := range uint64(3 * n) {
			if err := pw2.Add(uint32(k%3), seq+k); err != nil {
				t.Fatal(err)
			}
		}
		for id, dir := range m.dirs {
			chunks, err := p.DataChunks(nil, dir, pw2.NextChunk())
			if err != nil {
				t.Fatal(err)
			}
			prev := uint64(0)
			for i, c := range chunks {
				j := uint64(i)
				for k := range p.BlockLen(j) {
					e := p.Entry(c, k)
					if e != 0 && e <= prev && !(e == prev && p.Entry(c, p.BlockLen(j)-1) == e) {
						t.Fatalf("symbol %d: entry %d after %d", id, e, prev)
					}
					prev = max(prev, e)
				}
			}
			if prev-1 < seq {
				t.Fatalf("symbol %d: last entry row %d, appends went elsewhere", id, prev-1)
			}
		}
	})
}

// TestPostingsVersions: a new post.idx is version 3; versions 1 to 3
// open; an unknown version is refused naming the file and the version
// word's offset. A build before version 2 checked post.idx's header as
// every other file's (format.CheckFileHeader, version 1 only): it refuses
// a version 2 file the same way, as damage naming the file.
func TestPostingsVersions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, format.PostName)
	if err := CreatePostings(path, testID, vfs.OS); err != nil {
		t.Fatal(err)
	}
	p, err := OpenPostings(path, testID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Version() != format.PostVersion3 || p.EntriesPerChunk() != 1341 || p.BlockLen(0) != 18 {
		t.Errorf("new post.idx: version %d, %d entries a chunk, %d in a first block; want 3, 1341, 18", p.Version(), p.EntriesPerChunk(), p.BlockLen(0))
	}
	p.Close()
	hdr := make([]byte, format.BlockSize)
	if err := format.CheckFileHeader(path, readHeader(t, path, hdr), format.MagicPost, testID); err == nil {
		t.Error("a version 1 build's header check accepts post.idx version 3")
	} else {
		wantCorrupt(t, err, path, 8)
	}
	for _, v := range []uint32{0, 4, 1 << 31} {
		bad := filepath.Join(dir, "bad.idx")
		if err := createPostings(bad, v, testID, vfs.OS); err != nil {
			t.Fatal(err)
		}
		_, err := OpenPostings(bad, testID, nil)
		wantCorrupt(t, err, bad, 8)
		if err := os.Remove(bad); err != nil {
			t.Fatal(err)
		}
	}
}

func readHeader(t *testing.T, path string, b []byte) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// allocatedBytes is the disk space path takes (st_blocks × 512).
func allocatedBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}
