package writer_test

import (
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Stats after Close returns the final counters instead of reading the
// unmapped control file.
func TestStatsAfterClose(t *testing.T) {
	db, live := testutil.DB(t)
	s := store.TickSchema()
	w, err := writer.Open(db, "t", &writer.Options{Schema: s, LiveDir: live, SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.SymbolString("A")
	row := s.NewRow()
	symc, _ := s.Col("sym")
	for i := 0; i < 500; i++ {
		row.SetTs(int64(i))
		row.SetSym(symc, id)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if st.Appended != 500 || st.Visible != 500 || st.Durable != 500 || st.Symbols != 1 || st.Flushes == 0 {
		t.Fatalf("final stats %+v", st)
	}
}
