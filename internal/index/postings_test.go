package index

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

// versions runs f over a postings file of each version.
func versions(t *testing.T, f func(t *testing.T, v uint32)) {
	for _, v := range []uint32{format.PostVersion1, format.PostVersion2, format.PostVersion3} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { f(t, v) })
	}
}

// dirFull is the number of entries that fill a symbol's first directory's
// data blocks.
func dirFull(p *Postings) int { return dirsFull(p, 1) }

// dirsFull is the number of entries that fill a symbol's first k
// directories' data blocks.
func dirsFull(p *Postings, k int) int {
	return int(p.BlockStart(uint64(p.firstSlots() + (k-1)*dirSlots)))
}

// ndirs is the directories a chain of nblocks data blocks takes.
func ndirs(p *Postings, nblocks int) int {
	if nblocks <= p.firstSlots() {
		return 1
	}
	return 1 + (nblocks-p.firstSlots()+dirSlots-1)/dirSlots
}

// chunkAddr is the address of chunk c.
func chunkAddr(p *Postings, c uint64) uint64 { return c << (chunkShift - p.shift) }

// addrOff is the file offset of address a.
func addrOff(p *Postings, a uint64) int64 { return int64(a) << p.shift }

// dirUnits is the size of a chain's k-th directory in address units.
func dirUnits(p *Postings, k int) uint64 {
	if k == 0 {
		return 1
	}
	return chunkAddr(p, 1)
}

func newPostings(t *testing.T, v uint32) *Postings {
	t.Helper()
	path := filepath.Join(t.TempDir(), format.PostName)
	if err := createPostings(path, v, testID, vfs.OS); err != nil {
		t.Fatal(err)
	}
	p, err := OpenPostings(path, testID, vfs.OS)
	if err != nil {
		t.Fatal(err)
	}
	if p.Version() != v {
		t.Fatalf("version %d file opens as version %d", v, p.Version())
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// postModel is what the postings must hold: each symbol's seqs in order.
// early: chunks may close early (a version 2 writer with rows far apart),
// so a symbol's chunk count is only bounded below by its rows.
type postModel struct {
	dirs  []uint64
	seqs  [][]uint64
	lim   uint64 // SetMaxDelta's bound (0: MaxDelta)
	early bool
}

func (m *postModel) limit() uint64 {
	if m.lim == 0 {
		return MaxDelta
	}
	return m.lim
}

func (m *postModel) newSymbol(t *testing.T, pw *PostWriter) {
	t.Helper()
	dir, err := pw.NewSymbol()
	if err != nil {
		t.Fatal(err)
	}
	m.dirs = append(m.dirs, dir)
	m.seqs = append(m.seqs, nil)
}

func (m *postModel) add(t *testing.T, pw *PostWriter, id uint32, seq uint64) {
	if err := pw.Add(id, seq); err != nil {
		t.Fatalf("Add(%d, %d): %v", id, seq, err)
	}
	m.seqs[id] = append(m.seqs[id], seq)
}

// cut drops every seq >= seq, as Reset must.
func (m *postModel) cut(seq uint64) {
	for id, s := range m.seqs {
		n := 0
		for n < len(s) && s[n] < seq {
			n++
		}
		m.seqs[id] = s[:n]
	}
}

// readSymbol lists a symbol's entries through DataChunks and checks the
// chunk shape: chunks strictly increasing, every chunk but the last full,
// the last one a run of entries then zeros, entries strictly increasing
// but for a version 2 chunk closed early, whose last entry repeats to its
// end.
func readSymbol(t *testing.T, p *Postings, dir, next uint64) ([]uint64, []uint64) {
	t.Helper()
	chunks, err := p.DataChunks(nil, dir, next)
	if err != nil {
		t.Fatalf("DataChunks(%d, %d): %v", dir, next, err)
	}
	var seqs []uint64
	for j, c := range chunks {
		if j > 0 && c <= chunks[j-1] {
			t.Fatalf("data chunks not increasing: %v", chunks)
		}
		ended, repeat := false, false
		for i := range p.BlockLen(uint64(j)) {
			e := p.Entry(c, i)
			switch {
			case e == 0:
				if repeat {
					t.Fatalf("chunk %d entry %d empty after a repeated one", c, i)
				}
				ended = true
			case ended:
				t.Fatalf("chunk %d entry %d = %d after an empty entry", c, i, e)
			case i > 0 && e == p.Entry(c, i-1) && p.Version() != format.PostVersion1:
				repeat = true
			case repeat:
				t.Fatalf("chunk %d entry %d = %d after a repeated entry", c, i, e)
			default:
				if k := len(seqs); k > 0 && e-1 <= seqs[k-1] {
					t.Fatalf("entry %d after %d", e-1, seqs[k-1])
				}
				seqs = append(seqs, e-1)
			}
		}
		if ended && j != len(chunks)-1 {
			t.Fatalf("chunk %d (%d of %d) is not full", c, j, len(chunks))
		}
		// (A last chunk closed early is one whose far row a restart cut.)
		if repeat && j < len(chunks)-1 {
			if h := p.Word(chunks[j+1], 0); p.Word(c, 0) == 0 || h-1 < seqs[len(seqs)-1]+1 {
				t.Fatalf("chunk %d closed early at row %d, the next chunk starts at row %d", c, seqs[len(seqs)-1], h-1)
			}
		}
	}
	return seqs, chunks
}

// wantChunks is the number of data chunks a writer that never restarted
// gives the rows seqs of a symbol (lim: SetMaxDelta's bound): a chunk per
// EntriesPerChunk rows, one at least, and in version 2 a new one for a
// row lim-1 or more after its chunk's first.
func wantChunks(p *Postings, seqs []uint64, lim uint64) int {
	chunks, fill, first := 1, 0, uint64(0)
	for _, s := range seqs {
		if fill == p.BlockLen(uint64(chunks-1)) || fill > 0 && p.Version() != format.PostVersion1 && s-first+1 >= lim {
			chunks, fill = chunks+1, 0
		}
		if fill == 0 {
			first = s
		}
		fill++
	}
	return chunks
}

// checkModel compares every symbol with the model and checks that no
// block or directory overlaps another.
func checkModel(t *testing.T, p *Postings, m *postModel, next uint64) {
	t.Helper()
	type span struct {
		a, end uint64
		id, j  int // j < 0: directory -j-1
	}
	what := func(s span) string {
		if s.j < 0 {
			return fmt.Sprintf("directory %d (%d) of symbol %d", s.a, -s.j-1, s.id)
		}
		return fmt.Sprintf("block %d (%d) of symbol %d", s.a, s.j, s.id)
	}
	var spans []span
	for id, dir := range m.dirs {
		for k, d := 0, dir; d != 0 && d < next; k, d = k+1, p.Word(d, 0) {
			spans = append(spans, span{d, d + dirUnits(p, k), id, -k - 1})
			if k > 0 && p.shift == lineShift && d%chunkLines != 0 {
				t.Fatalf("directory %d of symbol %d not 4 KiB aligned", d, id)
			}
			if n := p.firstSlots(); k == 0 && p.Word(d, n) == 0 {
				break // (a link out of a partial directory is not followed)
			} else if k > 0 && p.Word(d, dirSlots) == 0 {
				break
			}
		}
		got, chunks := readSymbol(t, p, dir, next)
		if !equalSeqs(got, m.seqs[id]) {
			t.Fatalf("symbol %d: %d entries %v, want %d %v", id, len(got), brief(got), len(m.seqs[id]), brief(m.seqs[id]))
		}
		want := wantChunks(p, m.seqs[id], m.limit())
		if len(chunks) != want && (!m.early || len(chunks) < want) {
			t.Fatalf("symbol %d with %d entries has %d data chunks, want %d", id, len(got), len(chunks), want)
		}
		for j, c := range chunks {
			spans = append(spans, span{c, c + p.blockUnits(uint64(j)), id, j})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.a, b.a) })
	for i := 1; i < len(spans); i++ {
		if spans[i].a < spans[i-1].end {
			t.Fatalf("%s overlaps %s", what(spans[i]), what(spans[i-1]))
		}
	}
	if len(spans) > 0 && spans[len(spans)-1].end > next {
		t.Fatalf("%s ends past next %d", what(spans[len(spans)-1]), next)
	}
}

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func seqRange(a, b uint64) []uint64 {
	var s []uint64
	for i := a; i < b; i++ {
		s = append(s, i)
	}
	return s
}

func brief(s []uint64) []uint64 {
	if len(s) > 6 {
		return append(append([]uint64(nil), s[:3]...), s[len(s)-3:]...)
	}
	return s
}

func TestPostWriterAdd(t *testing.T) {
	cases := []struct {
		name  string
		nsyms int
		rows  func(n, dir int) int // n: entries per chunk; dir: per directory
		pick  func(seq uint64, rng *rand.Rand) uint32
	}{
		{"one_symbol_one_row", 1, func(int, int) int { return 1 }, func(uint64, *rand.Rand) uint32 { return 0 }},
		{"one_symbol_exactly_one_chunk", 1, func(n, _ int) int { return n }, func(uint64, *rand.Rand) uint32 { return 0 }},
		{"one_symbol_one_chunk_and_one", 1, func(n, _ int) int { return n + 1 }, func(uint64, *rand.Rand) uint32 { return 0 }},
		{"round_robin_three", 3, func(int, int) int { return 10_000 }, func(s uint64, _ *rand.Rand) uint32 { return uint32(s % 3) }},
		{"skewed_random", 5, func(int, int) int { return 20_000 }, func(_ uint64, r *rand.Rand) uint32 {
			if r.IntN(10) < 7 {
				return 0
			}
			return uint32(1 + r.IntN(4))
		}},
		{"one_symbol_exactly_one_directory", 1, func(_, d int) int { return d }, func(uint64, *rand.Rand) uint32 { return 0 }},
		{"one_symbol_three_directories", 2, func(_, d int) int { return 2*d + 5000 }, func(s uint64, _ *rand.Rand) uint32 {
			if s%64 == 0 {
				return 1
			}
			return 0
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			versions(t, func(t *testing.T, v uint32) {
				p := newPostings(t, v)
				pw := NewPostWriter(p, 0) // 0 means 1: chunk 0 is the header
				if pw.NextChunk() != chunkAddr(p, 1) {
					t.Fatalf("NextChunk = %d, want %d", pw.NextChunk(), chunkAddr(p, 1))
				}
				m := &postModel{}
				for range tc.nsyms {
					m.newSymbol(t, pw)
				}
				rng := rand.New(rand.NewPCG(1, 1))
				for seq := range uint64(tc.rows(p.EntriesPerChunk(), dirFull(p))) {
					m.add(t, pw, tc.pick(seq, rng), seq)
				}
				checkAdded(t, p, pw, m)
			})
		})
	}
}

// checkAdded checks the postings a writer that never restarted made:
// the model's rows, directory chains as long as their chunks need, and a
// reader with an older NextChunk seeing a prefix of the chunks.
func checkAdded(t *testing.T, p *Postings, pw *PostWriter, m *postModel) {
	t.Helper()
	next := pw.NextChunk()
	if next > chunkAddr(p, p.Chunks()) {
		t.Fatalf("NextChunk %d past the file's %d chunks", next, p.Chunks())
	}
	checkModel(t, p, m, next)
	// Directory chains: the directory count follows the chunk count.
	for id, dir := range m.dirs {
		nchunks := wantChunks(p, m.seqs[id], m.limit())
		nd := 0
		for d := dir; d != 0; d = p.Word(d, 0) {
			nd++
		}
		if want := ndirs(p, nchunks); nd != want {
			t.Errorf("symbol %d: %d directories for %d chunks, want %d", id, nd, nchunks, want)
		}
	}
	// A reader with an older NextChunk sees a prefix of the chunks. (A
	// published NextChunk is the end of an allocation.)
	ends := allocEnds(p, m, next)
	for _, older := range []uint64{NewPostWriter(p, 0).NextChunk(), next / 2, next - 1} {
		if i, _ := slices.BinarySearch(ends, older+1); i > 0 {
			older = ends[i-1]
		}
		for id, dir := range m.dirs {
			if dir >= older {
				if _, err := p.DataChunks(nil, dir, older); err == nil {
					t.Errorf("DataChunks of unpublished directory %d (next %d) succeeded", dir, older)
				}
				continue
			}
			_, all := readSymbol(t, p, dir, next)
			part, err := p.DataChunks(nil, dir, older)
			if err != nil {
				t.Fatal(err)
			}
			if len(part) > len(all) || !equalSeqs(part, all[:len(part)]) {
				t.Fatalf("symbol %d: chunks under %d are %v, not a prefix of %v", id, older, brief(part), brief(all))
			}
			for _, c := range part {
				if c >= older {
					t.Fatalf("chunk %d listed under next chunk %d", c, older)
				}
			}
		}
	}
}

// allocEnds is the sorted ends of the directories and blocks of m's
// symbols: the NextChunk values a writer published.
func allocEnds(p *Postings, m *postModel, next uint64) []uint64 {
	var ends []uint64
	for _, dir := range m.dirs {
		for k, d := 0, dir; d != 0 && d < next; k, d = k+1, p.Word(d, 0) {
			ends = append(ends, d+dirUnits(p, k))
			if k == 0 && p.Word(d, p.firstSlots()) == 0 || k > 0 && p.Word(d, dirSlots) == 0 {
				break
			}
		}
		chunks, _ := p.DataChunks(nil, dir, next)
		for j, c := range chunks {
			ends = append(ends, c+p.blockUnits(uint64(j)))
		}
	}
	slices.Sort(ends)
	return ends
}

func TestDataChunksErrors(t *testing.T) { versions(t, testDataChunksErrors) }

func testDataChunksErrors(t *testing.T, v uint32) {
	p := newPostings(t, v)
	pw := NewPostWriter(p, 1)
	dir, err := pw.NewSymbol()
	if err != nil {
		t.Fatal(err)
	}
	for seq := range uint64(2000) {
		pw.Add(0, seq)
	}
	next := pw.NextChunk()
	t.Run("dir_zero_is_empty", func(t *testing.T) {
		got, err := p.DataChunks(nil, 0, next)
		if err != nil || len(got) != 0 {
			t.Fatalf("DataChunks(0) = %v, %v", got, err)
		}
	})
	t.Run("dir_past_next", func(t *testing.T) {
		_, err := p.DataChunks(nil, next+3, next)
		wantCorrupt(t, err, p.Path(), addrOff(p, next+3))
	})
	t.Run("next_past_file", func(t *testing.T) {
		far := chunkAddr(p, p.Chunks()+10)
		_, err := p.DataChunks(nil, dir, far)
		wantCorrupt(t, err, p.Path(), addrOff(p, far))
	})
	t.Run("appends_to_dst", func(t *testing.T) {
		got, err := p.DataChunks([]uint64{42}, dir, next)
		if err != nil || got[0] != 42 || len(got) != wantChunks(p, seqRange(0, 2000), MaxDelta)+1 {
			t.Fatalf("DataChunks with a prefix = %v, %v", brief(got), err)
		}
	})
}

// TestDataChunksDamage: damaged links give a CorruptError naming the word,
// never an endless walk.
func TestDataChunksDamage(t *testing.T) { versions(t, testDataChunksDamage) }

func testDataChunksDamage(t *testing.T, v uint32) {
	probe := newPostings(t, v)
	n, dirFull := probe.EntriesPerChunk(), dirFull(probe)
	build := func(t *testing.T, rows int) (*Postings, uint64, uint64) {
		p := newPostings(t, v)
		pw := NewPostWriter(p, 1)
		dir, err := pw.NewSymbol()
		if err != nil {
			t.Fatal(err)
		}
		for seq := range uint64(rows) {
			if err := pw.Add(0, seq); err != nil {
				t.Fatal(err)
			}
		}
		return p, dir, pw.NextChunk()
	}
	// Links are only followed out of full directories: two full ones.
	two := dirsFull(probe, 2) + 10
	t.Run("directory_self_loop", func(t *testing.T) {
		p, dir, next := build(t, two)
		second := p.Word(dir, 0)
		p.w[second*p.wpu] = second
		_, err := p.DataChunks(nil, dir, next)
		wantCorrupt(t, err, p.Path(), p.WordOff(second, 0))
	})
	t.Run("directory_links_back", func(t *testing.T) {
		p, dir, next := build(t, two)
		second := p.Word(dir, 0)
		p.w[second*p.wpu] = dir
		_, err := p.DataChunks(nil, dir, next)
		wantCorrupt(t, err, p.Path(), p.WordOff(second, 0))
	})
	t.Run("data_chunk_is_its_directory", func(t *testing.T) {
		p, dir, next := build(t, 10)
		p.w[dir*p.wpu+1] = dir
		_, err := p.DataChunks(nil, dir, next)
		wantCorrupt(t, err, p.Path(), p.WordOff(dir, 1))
	})
	t.Run("next_directory_before_last_data_chunk", func(t *testing.T) {
		p, dir, next := build(t, dirFull+10)
		p.w[dir*p.wpu] = p.Word(dir, p.firstSlots()) // a data chunk of its own
		_, err := p.DataChunks(nil, dir, next)
		wantCorrupt(t, err, p.Path(), p.WordOff(dir, 0))
	})
	if v == format.PostVersion3 {
		t.Run("first_directory_big_block_not_aligned", func(t *testing.T) {
			p, dir, next := build(t, dirFull+10)
			p.w[dir*p.wpu+smallSlots]++ // block 6, of 64 lines
			_, err := p.DataChunks(nil, dir, next)
			wantCorrupt(t, err, p.Path(), p.WordOff(dir, smallSlots))
		})
		t.Run("first_directory_links_to_unaligned", func(t *testing.T) {
			p, dir, next := build(t, dirFull+10)
			p.w[dir*p.wpu]++
			_, err := p.DataChunks(nil, dir, next)
			wantCorrupt(t, err, p.Path(), p.WordOff(dir, 0))
		})
		t.Run("block_ends_past_next", func(t *testing.T) {
			p, dir, _ := build(t, 100) // blocks 0 to 2
			c := p.Word(dir, 3)        // block 2, of 4 lines
			_, err := p.DataChunks(nil, dir, c+2)
			wantCorrupt(t, err, p.Path(), p.WordOff(dir, 3))
			var ch Chain
			if err := p.LoadChain(&ch, dir, c+2); err != nil || ch.Len() != 3 {
				t.Fatalf("LoadChain: %d blocks, %v", ch.Len(), err)
			}
			if ch.Block(2) != 0 || ch.Err() == nil {
				t.Fatalf("Chain.Block of a block past next: %v", ch.Err())
			}
			wantCorrupt(t, ch.Err(), p.Path(), p.WordOff(dir, 3))
		})
	}
	t.Run("data_chunk_repeated", func(t *testing.T) {
		p, dir, next := build(t, 5*n)
		p.w[dir*p.wpu+3] = p.Word(dir, 2)
		_, err := p.DataChunks(nil, dir, next)
		wantCorrupt(t, err, p.Path(), p.WordOff(dir, 3))
	})
}

// TestPostWriterReset cuts a postings file back to a checkpoint the way
// writer recovery does: (cut, limit) is a row count and the NextChunk that
// was published with it (or an earlier row count), rows and chunks after
// them are untrusted. Then appends resume and must extend the cut state.
func TestPostWriterReset(t *testing.T) { versions(t, testPostWriterReset) }

func testPostWriterReset(t *testing.T, v uint32) {
	probe := newPostings(t, v)
	n := probe.BlockStart(1) // the first block boundary
	type tc struct {
		name    string
		nsyms   int    // symbols at the start
		late    int    // symbols added right after the checkpoint row
		ck      uint64 // checkpoint: rows added when limit is taken
		rows    uint64 // rows added before the "crash"
		cut     uint64 // rows kept (<= ck)
		garbage bool   // scribble over every chunk >= limit
		more    uint64 // rows appended after Reset
	}
	big := uint64(dirFull(probe))
	cases := []tc{
		{name: "mid_chunk_three_symbols", nsyms: 3, ck: 5000, rows: 5000, cut: 3001, more: 3000},
		{name: "cut_to_zero", nsyms: 3, ck: 4000, rows: 6000, cut: 0, more: 2000},
		{name: "cut_at_chunk_boundary", nsyms: 1, ck: 2000, rows: 2000, cut: n, more: 1500},
		{name: "cut_one_past_chunk_boundary", nsyms: 1, ck: 2000, rows: 2000, cut: n + 1, more: 1500},
		{name: "cut_one_before_chunk_boundary", nsyms: 1, ck: 2000, rows: 2000, cut: n - 1, more: 10},
		{name: "cut_just_before_directory_boundary", nsyms: 1, ck: big + 700, rows: big + 700, cut: big - 1, more: 2000},
		{name: "cut_at_directory_boundary", nsyms: 1, ck: big + 700, rows: big + 700, cut: big, more: 2000},
		{name: "cut_just_past_directory_boundary", nsyms: 1, ck: big + 700, rows: big + 700, cut: big + 1, more: 2000},
		{name: "cut_in_second_directory", nsyms: 1, ck: big + 5000, rows: big + 5000, cut: big + 3000, more: big},
		{name: "limit_cuts_data_slots", nsyms: 1, ck: 600, rows: 5000, cut: 600, more: 1000},
		{name: "limit_cuts_data_slots_garbage", nsyms: 1, ck: 600, rows: 5000, cut: 600, garbage: true, more: 1000},
		{name: "limit_cuts_directory_link", nsyms: 1, ck: big - 5, rows: big + 3000, cut: big - 5, garbage: true, more: 3000},
		{name: "cut_below_checkpoint", nsyms: 2, ck: 4000, rows: 6000, cut: 2500, more: 500},
		{name: "late_symbols", nsyms: 2, late: 2, ck: 1000, rows: 3000, cut: 1000, more: 2000},
		{name: "late_symbols_garbage", nsyms: 2, late: 3, ck: 1000, rows: 4000, cut: 1000, garbage: true, more: 2000},
		{name: "late_symbols_cut_to_zero", nsyms: 1, late: 2, ck: 0, rows: 700, cut: 0, garbage: true, more: 700},
		{name: "checkpoint_at_chunk_fill", nsyms: 1, ck: n, rows: 3 * n, cut: n, garbage: true, more: 600},
	}
	if v == format.PostVersion3 {
		// The growing blocks' boundaries, and the first 4 KiB block's.
		for _, j := range []uint64{2, 5, bigClass, bigClass + 1} {
			b := probe.BlockStart(j)
			cases = append(cases,
				tc{name: "cut_at_block_" + itoa(j), nsyms: 2, ck: 2*b + 10, rows: 2*b + 10, cut: 2 * b, more: 3 * b},
				tc{name: "cut_before_block_" + itoa(j), nsyms: 2, ck: 2*b + 10, rows: 2*b + 10, cut: 2*b - 1, more: 3 * b},
				tc{name: "limit_in_block_" + itoa(j), nsyms: 3, late: 1, ck: 3*b - 2, rows: 3*b + 500, cut: 3*b - 2, garbage: true, more: 3 * b})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPostings(t, v)
			pw := NewPostWriter(p, 1)
			m := &postModel{}
			for range c.nsyms {
				m.newSymbol(t, pw)
			}
			nsyms := func() uint64 { return uint64(len(m.dirs)) }
			var limit uint64
			for seq := uint64(0); seq < c.rows; seq++ {
				if seq == c.ck {
					limit = pw.NextChunk()
					for range c.late {
						m.newSymbol(t, pw)
					}
				}
				m.add(t, pw, uint32(seq%nsyms()), seq)
			}
			if c.ck == c.rows {
				limit = pw.NextChunk()
			}
			crashNext := pw.NextChunk()
			if c.garbage {
				rng := rand.New(rand.NewPCG(9, 9))
				for a := limit; a < crashNext; a++ {
					for i := range p.wpu {
						// Small values look like addresses, large ones like seqs.
						if rng.IntN(2) == 0 {
							p.w[a*p.wpu+i] = uint64(rng.IntN(int(crashNext) + 5))
						} else {
							p.w[a*p.wpu+i] = rng.Uint64()
						}
					}
				}
			}

			// Restart: a fresh PostWriter, as a reopening writer makes.
			pw2 := NewPostWriter(p, 1)
			if err := pw2.Reset(m.dirs, c.cut, limit, false); err != nil {
				t.Fatalf("Reset(%d, %d): %v", c.cut, limit, err)
			}
			if pw2.NextChunk() < limit {
				t.Fatalf("NextChunk %d after Reset is below the limit %d", pw2.NextChunk(), limit)
			}
			for _, d := range m.dirs {
				if d >= pw2.NextChunk() {
					t.Fatalf("directory %d not below NextChunk %d", d, pw2.NextChunk())
				}
			}
			m.cut(c.cut)
			checkModel(t, p, m, pw2.NextChunk())

			// Appends resume where the cut left off.
			for seq := c.cut; seq < c.cut+c.more; seq++ {
				m.add(t, pw2, uint32(seq%nsyms()), seq)
			}
			checkModel(t, p, m, pw2.NextChunk())

			// A second restart at the new end keeps everything.
			pw3 := NewPostWriter(p, 1)
			if err := pw3.Reset(m.dirs, c.cut+c.more, pw2.NextChunk(), false); err != nil {
				t.Fatal(err)
			}
			if pw3.NextChunk() != pw2.NextChunk() {
				t.Errorf("idempotent Reset moved NextChunk from %d to %d", pw2.NextChunk(), pw3.NextChunk())
			}
			checkModel(t, p, m, pw3.NextChunk())
		})
	}
}

func TestPostWriterResetErrors(t *testing.T) { versions(t, testPostWriterResetErrors) }

func testPostWriterResetErrors(t *testing.T, v uint32) {
	two := dirsFull(newPostings(t, v), 2) + 10
	t.Run("symbol_without_directory", func(t *testing.T) {
		p := newPostings(t, v)
		err := NewPostWriter(p, 1).Reset([]uint64{0}, 0, 1, false)
		wantCorrupt(t, err, p.Path(), 0)
	})
	t.Run("directory_cycle", func(t *testing.T) {
		p := newPostings(t, v)
		pw := NewPostWriter(p, 1)
		dir, _ := pw.NewSymbol()
		for seq := range uint64(two) {
			pw.Add(0, seq)
		}
		second := p.Word(dir, 0)
		p.w[second*p.wpu] = dir
		err := NewPostWriter(p, 1).Reset([]uint64{dir}, 10, pw.NextChunk(), false)
		if !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Reset over a directory cycle: %v, want a corruption error", err)
		}
	})
	t.Run("stray_link_out_of_partial_directory_is_cut", func(t *testing.T) {
		// The writer links only full directories; any other link is junk
		// that Reset drops (readers never follow it).
		p := newPostings(t, v)
		pw := NewPostWriter(p, 1)
		dir, _ := pw.NewSymbol()
		for seq := range uint64(700) {
			pw.Add(0, seq)
		}
		p.w[dir*p.wpu] = dir
		pw2 := NewPostWriter(p, 1)
		if err := pw2.Reset([]uint64{dir}, 700, pw.NextChunk(), false); err != nil {
			t.Fatal(err)
		}
		if p.Word(dir, 0) != 0 {
			t.Error("stray link kept")
		}
		m := &postModel{dirs: []uint64{dir}, seqs: [][]uint64{seqRange(0, 700)}}
		checkModel(t, p, m, pw2.NextChunk())
	})
	t.Run("stray_slots_after_empty_first_slot", func(t *testing.T) {
		p := newPostings(t, v)
		pw := NewPostWriter(p, 1)
		dir, _ := pw.NewSymbol()
		p.w[dir*p.wpu+1] = 0
		p.w[dir*p.wpu+2] = 1 // in the header chunk
		p.w[dir*p.wpu+7] = dir + 1
		pw2 := NewPostWriter(p, 1)
		if err := pw2.Reset([]uint64{dir}, 0, pw.NextChunk(), false); err != nil {
			t.Fatal(err)
		}
		m := &postModel{dirs: []uint64{dir}, seqs: [][]uint64{nil}}
		for seq := range uint64(1500) {
			m.add(t, pw2, 0, seq)
		}
		checkModel(t, p, m, pw2.NextChunk())
	})
	t.Run("limit_zero_means_one", func(t *testing.T) {
		p := newPostings(t, v)
		pw := NewPostWriter(p, 1)
		if err := pw.Reset(nil, 0, 0, false); err != nil || pw.NextChunk() != chunkAddr(p, 1) {
			t.Fatalf("Reset(nil, 0, 0) = %v, next %d", err, pw.NextChunk())
		}
	})
}

func TestPostingsGrowAndReopen(t *testing.T) { versions(t, testPostingsGrowAndReopen) }

func testPostingsGrowAndReopen(t *testing.T, v uint32) {
	p := newPostings(t, v)
	start := p.Chunks()
	if start != postInitial {
		t.Errorf("new file has %d chunks, want %d", start, postInitial)
	}
	if err := p.Grow(start + 1000); err != nil {
		t.Fatal(err)
	}
	if p.Chunks() != start+1000 || !p.Covers(chunkAddr(p, start+1000)) {
		t.Fatalf("Chunks %d after Grow", p.Chunks())
	}
	if p.Covers(chunkAddr(p, 1<<40)) {
		t.Error("Covers past the reservation")
	}
	pw := NewPostWriter(p, 1)
	dir, _ := pw.NewSymbol()
	for seq := range uint64(3000) {
		pw.Add(0, seq)
	}
	if err := p.Sync(pw.NextChunk()); err != nil {
		t.Fatal(err)
	}
	// A reader mapping sees the same chunks.
	r, err := OpenPostings(p.Path(), testID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, _ := readSymbol(t, r, dir, pw.NextChunk())
	if len(got) != 3000 || got[2999] != 2999 {
		t.Fatalf("reader sees %d entries", len(got))
	}
	other := testID
	other[0]++
	if _, err := OpenPostings(p.Path(), other, nil); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("OpenPostings with another table id: %v", err)
	}
}

// TestSymPostSize: a cursor is one cache line, and grow maps them by
// symPostSize.
func TestSymPostSize(t *testing.T) {
	if n := unsafe.Sizeof(symPost{}); n != symPostSize {
		t.Fatalf("symPost is %d bytes, symPostSize %d", n, symPostSize)
	}
}
