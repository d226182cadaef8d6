package reader_test

import (
	"os"
	"path/filepath"
	"slices"
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

// symAnswers is every symbol's rows (seqs) over the whole table and over
// a few windows, through RangeSym.
func symAnswers(t *testing.T, r *reader.Reader) [][]uint64 {
	t.Helper()
	g := testutil.NewSeqRows()
	n := r.Len()
	windows := [][2]int64{{g.Ts(0), g.Ts(n-1) + 1}, {g.Ts(n / 3), g.Ts(n/3 + 3000)}, {g.Ts(n / 2), g.Ts(n - 1)}, {g.Ts(100), g.Ts(2100)}}
	var out [][]uint64
	var it reader.Iter
	for id := range uint32(r.Symbols()) {
		for _, w := range windows {
			if err := r.RangeSym(w[0], w[1], id, &it); err != nil {
				t.Fatal(err)
			}
			var seqs []uint64
			for it.Next() {
				seqs = append(seqs, it.Seq())
			}
			if it.Err() != nil {
				t.Fatalf("symbol %d window %v: %v", id, w, it.Err())
			}
			out = append(out, seqs)
		}
	}
	return out
}

func postBytes(t *testing.T, db string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(db, hotTable, format.PostName), &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestPostingsDroppedAfterCompaction compacts a table into clustered
// segments: the postings of the compacted rows are punched out of
// post.idx, and every symbol query gives the same rows as before — for a
// reader opened after, and for one that had the raw segments mapped
// before — and again after a writer reopens the table (which decompresses
// its last segment) and appends.
func TestPostingsDroppedAfterCompaction(t *testing.T) {
	db, live := testutil.DB(t)
	// Raw until CloseCompacted: no compaction in the background or at
	// a plain Close.
	o := &writer.Options{Schema: store.TickSchema(), SegmentSize: 64 << 10, LiveDir: live, CompactAge: -1}
	w, err := writer.Open(db, hotTable, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := uint64(12*2048 + 500)
	xprocAppend(t, w, rows, 1000, 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := postBytes(t, db)
	old, err := reader.Open(db, hotTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	want := symAnswers(t, old) // maps the raw segments

	if w, err = writer.Open(db, hotTable, o); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	after := postBytes(t, db)
	if after >= before {
		t.Errorf("post.idx holds %d bytes after compaction, %d before: want the compacted rows' chunks gone", after, before)
	}
	if rep, err := reader.Verify(db, hotTable, nil); err != nil || rep.Compacted == 0 || rep.Compacted+rep.Postings != rows {
		t.Errorf("verify: %+v, %v; want rows below the postings floor", rep, err)
	}
	if got := symAnswers(t, old); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatal("a reader opened before the compaction answers differently after it")
	}
	r, err := reader.Open(db, hotTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := symAnswers(t, r); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatal("a reader opened after the compaction answers differently")
	}
	r.Close()
	tablecheck.Verify(t, db, hotTable, rows)

	// Reopen: the last segment is decompressed, its postings were kept;
	// append, compact again.
	if w, err = writer.Open(db, hotTable, o); err != nil {
		t.Fatal(err)
	}
	more := rows + 3*2048
	xprocAppend(t, w, more, 1000, 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err = reader.Open(db, hotTable, nil); err != nil {
		t.Fatal(err)
	}
	want = symAnswers(t, r)
	checkRows(t, r, 0, more)
	r.Close()
	if w, err = writer.Open(db, hotTable, o); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
	if r, err = reader.Open(db, hotTable, nil); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := symAnswers(t, r); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatal("answers differ after the second compaction")
	}
	checkRows(t, r, 0, more)
	tablecheck.Verify(t, db, hotTable, more)
	if _, err := os.Stat(filepath.Join(db, hotTable, format.ZSegName(0))); err != nil {
		t.Fatal(err)
	}
}

// TestSymbolQueryAcrossBackgroundCompaction: an iterator reading a
// segment through the postings when the background compaction (the
// default) compresses it and then drops its postings goes on through the
// compressed segment's directory, with the same rows, none twice.
func TestSymbolQueryAcrossBackgroundCompaction(t *testing.T) {
	db, live := testutil.DB(t)
	// Segments long enough to hold whole postings chunks of symbol 0's
	// rows (those are what the writer punches out).
	const segRows = 1 << 15
	// No hot copies: sealed segments are read through the postings.
	o := writer.Options{Schema: store.TickSchema(), SegmentSize: segRows * 32, LiveDir: live, HotBytes: -1, CompactAge: -1}
	w, err := writer.Open(db, hotTable, &o)
	if err != nil {
		t.Fatal(err)
	}
	rows := uint64(10*segRows + 100)
	xprocAppend(t, w, rows, 1000, 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, hotTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := symAnswers(t, r)
	g := testutil.NewSeqRows()
	var it reader.Iter
	if err := r.RangeSym(g.Ts(0), reader.ToEnd, 0, &it); err != nil {
		t.Fatal(err)
	}
	// Into segment 2.
	var got []uint64
	for it.Next() {
		got = append(got, it.Seq())
		if it.Seq() >= 2*segRows+10 {
			break
		}
	}
	if it.Err() != nil || len(got) == 0 || got[len(got)-1] >= 3*segRows {
		t.Fatalf("symbol 0 up to segment 2: %d rows (%v)", len(got), it.Err())
	}

	// A writer with the default CompactAge compresses the segments in
	// the background once a segment seals, and drops their postings a
	// pass later.
	o.CompactAge = 0
	if w, err = writer.Open(db, hotTable, &o); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		xprocAppend(t, w, w.Len()+segRows, 1000, 0)
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		rep, err := reader.Verify(db, hotTable, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Compacted >= 8*segRows {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no postings dropped after background compaction: %+v", rep)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for it.Next() && it.Seq() < rows {
		got = append(got, it.Seq())
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	if !slices.Equal(got, want[0]) {
		t.Fatalf("symbol 0 across the compaction: %d rows, want %d", len(got), len(want[0]))
	}
}
