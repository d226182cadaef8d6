package writer_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/tablecheck"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// A table's footprint follows its data: a table of a few rows, with the
// default 64 MiB segments, costs well under 1 MiB of disk and of shared
// memory, writer open or closed. Footprints are allocated bytes
// (st_blocks × 512), not apparent sizes, which stay as docs/FORMAT.md
// gives them.

const footprintMax = 1 << 20

// allocated is the sum of st_blocks × 512 over the files under dir (0 when
// dir does not exist).
func allocated(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			if os.IsNotExist(err) {
				return nil // removed meanwhile (a hot copy trimmed)
			}
			return err
		}
		if !d.IsDir() {
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// logFiles logs each file's allocated and apparent size (with -v).
func logFiles(t testing.TB, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join(dir, e.Name()), &st) == nil && !e.IsDir() {
				t.Logf("  %-20s %6d KiB allocated, %8d KiB apparent", e.Name(), st.Blocks*512>>10, st.Size>>10)
			}
		}
	}
}

// settle gives the writer's background goroutines time to do what they
// do unprompted (the preparer runs at Open and on a timer; the flusher
// every millisecond): the footprint is measured after Sync and after the
// preparer has been kicked, so a measurement taken before it had acted
// would be too small, not too large. Not a timing threshold: the asserts
// hold at any point.
func settle(t testing.TB, w *writer.Writer) {
	t.Helper()
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	writer.PrepareNow(w)
}

func TestFootprintSmallTable(t *testing.T) {
	for _, rows := range []uint64{1, 29, 100} {
		t.Run(fmt.Sprintf("rows=%d", rows), func(t *testing.T) {
			tb := newWtTable(t)
			w := tb.open(t, func(o *writer.Options) { o.SegmentSize = 0 }) // the default, 64 MiB
			ids := tb.symbols(t, w, "AAA", "BBB", "CCC", "DDD")
			tb.appendN(t, w, 0, rows, ids)
			w.Publish()
			settle(t, w)
			disk, shm := allocated(t, tb.dir()), allocated(t, tb.live)
			t.Logf("open: disk %d KiB, shm %d KiB", disk>>10, shm>>10)
			logFiles(t, tb.dir(), tb.live)
			if disk > footprintMax || shm > footprintMax {
				t.Errorf("writer open, %d rows: disk %d bytes, shm %d bytes, want at most %d each", rows, disk, shm, footprintMax)
			}
			if shm == 0 {
				t.Errorf("no live slot in %s", tb.live)
			}
			tb.checkAll(t, rows, ids)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			disk, shm = allocated(t, tb.dir()), allocated(t, tb.live)
			t.Logf("closed: disk %d KiB, shm %d KiB", disk>>10, shm>>10)
			if disk > footprintMax || shm != 0 {
				t.Errorf("writer closed, %d rows: disk %d bytes, shm %d bytes, want at most %d and 0", rows, disk, shm, footprintMax)
			}
			tb.checkAll(t, rows, ids)
			tablecheck.Verify(t, tb.db, tb.name, rows)
			// Reopened (the cold path: a sparse live slot, one block
			// copied in) and closed again.
			w = tb.open(t, func(o *writer.Options) { o.SegmentSize = 0 })
			tb.appendN(t, w, rows, 1, ids)
			w.Publish()
			settle(t, w)
			disk, shm = allocated(t, tb.dir()), allocated(t, tb.live)
			t.Logf("reopened: disk %d KiB, shm %d KiB", disk>>10, shm>>10)
			if disk > footprintMax || shm > footprintMax {
				t.Errorf("writer reopened, %d rows: disk %d bytes, shm %d bytes, want at most %d each", rows+1, disk, shm, footprintMax)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			tablecheck.Verify(t, tb.db, tb.name, rows+1)
		})
	}
}

// TestFootprintTwoColumns: a table of ts and one f64, no symbol column,
// one row.
func TestFootprintTwoColumns(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "v", Type: store.TypeF64})
	w, err := writer.Open(db, "two", &writer.Options{Schema: s, LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	r := s.NewRow()
	r.SetTs(1)
	if _, err := w.Append(r); err != nil {
		t.Fatal(err)
	}
	w.Publish()
	settle(t, w)
	dir := filepath.Join(db, "two")
	disk, shm := allocated(t, dir), allocated(t, live)
	t.Logf("open: disk %d KiB, shm %d KiB", disk>>10, shm>>10)
	if disk > footprintMax || shm > footprintMax {
		t.Errorf("writer open: disk %d bytes, shm %d bytes, want at most %d each", disk, shm, footprintMax)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	disk = allocated(t, dir)
	t.Logf("closed: disk %d KiB", disk>>10)
	if disk > footprintMax {
		t.Errorf("writer closed: disk %d bytes, want at most %d", disk, footprintMax)
	}
	rd, err := reader.Open(db, "two", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if got, err := rd.Get(0); err != nil || got.Ts() != 1 {
		t.Fatalf("Get(0) = %v, %v", got, err)
	}
	rep, err := reader.Verify(db, "two", nil)
	if err != nil || rep.Rows != 1 || rep.Unpublished != 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// TestFootprintManyTables opens 200 small tables at once in one process,
// each with its writer and a few rows, and bounds their total footprint.
// Before this change each cost about 181 MiB of disk and 161 MiB of shared
// memory (36 GiB and 32 GiB for 200).
func TestFootprintManyTables(t *testing.T) {
	if testing.Short() {
		t.Skip("200 writers")
	}
	const tables, rows = 200, 7
	db, live := testutil.DB(t)
	s := store.TickSchema()
	symCol, _ := s.Col("sym")
	ws := make([]*writer.Writer, 0, tables)
	t.Cleanup(func() {
		for _, w := range ws {
			w.Close()
		}
	})
	row := s.NewRow()
	for i := range tables {
		name := fmt.Sprintf("t%03d", i)
		w, err := writer.Open(db, name, &writer.Options{Schema: s, LiveDir: filepath.Join(live, name)})
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		ws = append(ws, w)
		id, err := w.SymbolString("SYM")
		if err != nil {
			t.Fatal(err)
		}
		for j := range rows {
			row.SetTs(int64(j))
			row.SetSym(symCol, id)
			if _, err := w.Append(row); err != nil {
				t.Fatal(err)
			}
		}
		w.Publish()
	}
	for _, w := range ws {
		settle(t, w)
	}
	disk, shm := allocated(t, db), allocated(t, live)
	t.Logf("%d tables open: disk %d KiB (%d KiB each), shm %d KiB (%d KiB each)", tables, disk>>10, disk/tables>>10, shm>>10, shm/tables>>10)
	if disk > tables*footprintMax || shm > tables*footprintMax {
		t.Errorf("%d tables open: disk %d bytes, shm %d bytes, want at most %d each", tables, disk, shm, tables*footprintMax)
	}
	for i, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatalf("close t%03d: %v", i, err)
		}
	}
	ws = ws[:0]
	disk, shm = allocated(t, db), allocated(t, live)
	t.Logf("%d tables closed: disk %d KiB, shm %d KiB", tables, disk>>10, shm>>10)
	if disk > tables*footprintMax || shm != 0 {
		t.Errorf("%d tables closed: disk %d bytes, shm %d bytes", tables, disk, shm)
	}
	for i := range tables {
		tablecheck.Verify(t, db, fmt.Sprintf("t%03d", i), rows)
	}
}

// TestFootprintRolls writes past several segment rolls with 64 KiB
// segments, reopens (the cold path cuts nothing and starts a sparse slot
// mid-segment) and rolls again: every row reads back, verify is clean, and
// the files' allocation follows the rows: each sealed segment file holds
// its header and rows (the flusher allocates at most to the file's end),
// shared memory at most the live slots.
func TestFootprintRolls(t *testing.T) {
	const segBytes = 64 << 10
	const segRows = segBytes / 32
	tb := newWtTable(t)
	segFile := format.SegFileSize(32, segRows)
	// 3 live slots and a hot budget of 2 segments: shared memory is
	// bounded by 3 slots, 2 hot copies with their clustered copies (rows,
	// a u32 each, header and directory), and the hot copy of the segment
	// being written. The checkpointer trims the copies past the budget
	// after the flusher made them: the bound holds once it has.
	// CompactAge -1: the footprint of raw segments and their hot copies
	// (a compressed segment has none; TestCompactCrashBackground and the
	// compaction tests cover those).
	mod := func(o *writer.Options) {
		o.SegmentSize, o.LiveSlots, o.HotBytes, o.CompactAge = segBytes, 3, 2*segFile, -1
	}
	w := tb.open(t, mod)
	ids := tb.symbols(t, w, "A", "B", "C")
	n := uint64(7*segRows + 300)
	tb.appendN(t, w, 0, n, ids)
	settle(t, w)
	cluFile := int64(segBytes + 4*segRows + 2*format.BlockSize)
	bound := 3*segFile + 2*(segFile+cluFile) + segFile
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		shm := allocated(t, tb.live)
		if shm <= bound {
			break
		}
		if time.Now().After(deadline) {
			logFiles(t, tb.live)
			t.Fatalf("shm %d bytes, want at most 3 slots and 3 hot copies (2 and the one being written) of %d and 2 clustered copies of %d", shm, segFile, cluFile)
		}
	}
	tb.checkAll(t, n, ids)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tb.checkAll(t, n, ids)
	tablecheck.Verify(t, tb.db, tb.name, n)
	w = tb.open(t, mod)
	tb.appendN(t, w, n, 3*segRows, ids)
	n += 3 * segRows
	settle(t, w)
	tb.checkAll(t, n, ids)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tb.checkAll(t, n, ids)
	tablecheck.Verify(t, tb.db, tb.name, n)
	for seg := range n / segRows {
		var st syscall.Stat_t
		if err := syscall.Stat(format.SegPath(tb.dir(), seg), &st); err != nil {
			t.Fatal(err)
		}
		if st.Size != segFile || st.Blocks*512 > segFile {
			t.Errorf("sealed segment %d: size %d, %d bytes allocated; want %d and at most that", seg, st.Size, st.Blocks*512, segFile)
		}
	}
}

// TestFootprintProportional: with the default 64 MiB segments, 200,000
// rows (6.4 MB) hold disk and shared memory in proportion (the distance
// populated ahead has doubled a few times, the flusher's allocation step
// is at most 8 MiB, the hot copy holds the rows again), far below the
// 64 MiB of a whole segment.
func TestFootprintProportional(t *testing.T) {
	tb := newWtTable(t)
	w := tb.open(t, func(o *writer.Options) { o.SegmentSize = 0 })
	ids := tb.symbols(t, w, "A", "B", "C", "D")
	const n = 200_000
	tb.appendN(t, w, 0, n, ids)
	w.Publish()
	settle(t, w)
	data := int64(n * 32)
	disk, shm := allocated(t, tb.dir()), allocated(t, tb.live)
	t.Logf("%d rows (%d KiB): disk %d KiB, shm %d KiB", n, data>>10, disk>>10, shm>>10)
	logFiles(t, tb.dir(), tb.live)
	// Shared memory: the slot's rows and the distance populated ahead,
	// and the segment's hot copy, which the flusher writes as it goes.
	if disk > 2*data+(8<<20) || shm > 4*data+footprintMax {
		t.Errorf("disk %d bytes, shm %d bytes for %d bytes of rows", disk, shm, data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tablecheck.Verify(t, tb.db, tb.name, n)
}

// TestFootprintRawPerRow: a raw table (Close, not CloseCompacted) of a few
// million 32-byte ticks over 100 symbols in 31 segments costs at most 36
// bytes a row on disk, index included: the segment files, ts.idx, post.idx
// and sym.dat, in allocated bytes, over the rows. A segment is 32 bytes a
// row and a 4 KiB header, ts.idx 1/8, post.idx (version 2, docs/FORMAT.md
// §7) 4096/1341 = 3.05 plus a directory per 511 data chunks and a partial
// chunk per symbol; version 1's 8 bytes a row made it about 40. The rows
// fill their segments: a table's last segment is allocated whole (a fixed
// cost of up to a segment, not a cost per row). The figure while the
// writer runs, with the index files' room grown ahead, is logged.
func TestFootprintRawPerRow(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 130 MB")
	}
	tb := newWtTable(t)
	w := tb.open(t, func(o *writer.Options) { o.SegmentSize = 4 << 20 })
	const nsyms, n = 100, 31 * (4 << 20) / 32
	names := make([]string, nsyms)
	for i := range names {
		names[i] = fmt.Sprintf("SYM%03d", i)
	}
	ids := tb.symbols(t, w, names...)
	// Symbols drawn from a fixed skewed sequence (a few busy, most quiet),
	// batches of 4,096 rows.
	const batch = 4096
	buf := make([]byte, batch*32)
	r := tb.s.NewRow()
	x := uint64(1)
	for seq := uint64(0); seq < n; {
		k := min(batch, int(n-seq))
		for i := range k {
			x = x*6364136223846793005 + 1442695040888963407
			u := x >> 33 // 31 bits
			tb.fill(r, seq+uint64(i), ids[(u%nsyms)*(u>>8%nsyms)/nsyms])
			copy(buf[i*32:], r)
		}
		if _, got, err := w.AppendBatch(buf[:k*32]); err != nil || got != k {
			t.Fatalf("AppendBatch at %d: %d rows, %v", seq, got, err)
		}
		seq += uint64(k)
		w.Publish()
	}
	settle(t, w)
	t.Logf("writer running: %.3f B/row", float64(rawBytes(t, tb.dir(), false))/n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	total := rawBytes(t, tb.dir(), true)
	perRow := float64(total) / n
	t.Logf("%d rows, %d symbols, closed: %d bytes allocated, %.3f B/row", n, nsyms, total, perRow)
	if perRow > 36 {
		t.Errorf("raw table costs %.3f B/row on disk, want at most 36", perRow)
	}
	tablecheck.Verify(t, tb.db, tb.name, n)
}

// rawBytes is the allocated bytes of a raw table's segment files, ts.idx,
// post.idx and sym.dat (logged with show).
func rawBytes(t *testing.T, dir string, show bool) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total, segs int64
	for _, e := range ents {
		name := e.Name()
		seg, _ := filepath.Match("seg-*.dat", name)
		if !seg && name != format.TimeIdxName && name != format.PostName && name != format.SymName {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, name), &st); err != nil {
			t.Fatal(err)
		}
		total += st.Blocks * 512
		if seg {
			segs += st.Blocks * 512
		} else if show {
			t.Logf("  %-10s %8d KiB allocated", name, st.Blocks*512>>10)
		}
	}
	if show {
		t.Logf("  segments   %8d KiB allocated", segs>>10)
	}
	return total
}
