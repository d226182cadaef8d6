package reader_test

import (
	"os"
	"reflect"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/writer"
)

// TestStat checks Stat against a table written across segment rolls, with
// its writer open (pid, state, live dir) and after it closed.
func TestStat(t *testing.T) {
	db, live := testutil.DB(t)
	g := testutil.NewSeqRows()
	// Raw segments: the tiers below are exact, and background compaction
	// would move segments to the historical tier at its own pace.
	w, err := writer.Open(db, "t", &writer.Options{Schema: g.Schema, LiveDir: live, SegmentSize: 4096, CompactAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	st, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 0 || st.Segments != 0 || st.FirstTs != 0 || st.LastTs != 0 {
		t.Fatalf("empty table: %+v", st)
	}

	const n = 300 // 128 rows of 32 bytes per 4 KiB segment: three segments
	syms := testutil.NewWriterSyms(g, w.SymbolString)
	row := w.NewRow()
	for seq := uint64(0); seq < n; seq++ {
		id, err := syms.ID(seq)
		if err != nil {
			t.Fatal(err)
		}
		g.Fill(row, seq, id)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	want := reader.Stat{
		Rows: n, Durable: n, FirstTs: g.Ts(0), LastTs: g.Ts(n - 1),
		Segments: 3, SealedSegs: 2, SegmentRows: 128,
		SegmentBytes: format.SegFileSize(g.Schema.RowSize, 128),
		Symbols:      w.Stats().Symbols, WriterState: reader.WriterOpen,
		LiveDir: w.LiveDir(), LiveSlots: 4, // the default LiveSlots: hot segments are copies, not slots
		Hot:  reader.Tier{Segments: 2, Rows: 256},
		Live: reader.Tier{Segments: 1, Rows: n - 256},
	}
	check := func(when string, want reader.Stat) {
		t.Helper()
		st, err := r.Stat()
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if st.Created.IsZero() {
			t.Errorf("%s: no creation time", when)
		}
		st.Created = want.Created
		if !reflect.DeepEqual(st, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", when, st, want)
		}
	}
	want.WriterPid = os.Getpid()
	check("writer open", want)

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A clean close removes the live slots: every row is read from the
	// segment files now.
	want.WriterPid, want.WriterState = 0, reader.WriterClosed
	want.Hot, want.Live, want.Raw = reader.Tier{}, reader.Tier{}, reader.Tier{Segments: 3, Rows: n}
	check("writer closed", want)
}
