package reader_test

import (
	"slices"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// TestSymbolOrder: the ids in name (byte) order, names sharing their
// first 8 bytes, shorter than 8, empty and with zero bytes among them,
// and still in order as symbols are added between calls.
func TestSymbolOrder(t *testing.T) {
	db, live := testutil.DB(t)
	w, err := writer.Open(db, "t", &writer.Options{Schema: store.TickSchema(), LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := reader.Open(db, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	batches := [][]string{
		{"MSFT", "AAPL261218C00150000", "AAPL261218C00145000", "A", ""},
		{"AAPL261218P00150000", "A\x00", "A\x00B", "AAPL2612", "ZZ", "AAPL261218C00150000x"},
		{"B", "AAPL261218C00150001", "\xff"},
	}
	var all []string
	for _, b := range batches {
		for _, name := range b {
			if _, err := w.SymbolString(name); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, b...)
		order, err := r.SymbolOrder()
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(all)
		slices.Sort(want)
		var got []string
		for _, id := range order {
			name, err := r.SymbolName(id)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, name)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("order %q, want %q", got, want)
		}
	}
}
