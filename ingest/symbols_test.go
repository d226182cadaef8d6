package ingest

import (
	"slices"
	"testing"
)

// TestAPITablesSymbolsAreTheKeyColumns: with a string field beside the
// tag, /api/tables lists and counts the tag's values as the symbols, and
// gives the shared dictionary's size apart.
func TestAPITablesSymbolsAreTheKeyColumns(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off"})
	writeLines(t, srv, "q,sym=AAPL px=1.5 1700000000000000000\n"+
		"q,sym=MSFT px=2.5,status=\"halted\" 1700000000000000001\n"+
		"q,sym=AAPL px=1.6 1700000000000000002\n")
	// The dictionary: AAPL, MSFT, halted, and "" (the rows without status).
	q := apiTableOf(t, srv, "q")
	if !slices.Equal(q.Symbols, []string{"AAPL", "MSFT"}) || q.SymCount != 2 || q.Dictionary != 4 {
		t.Fatalf("/api/tables: symbols %q, symbol_count %d, dictionary %d; want [AAPL MSFT], 2, 4", q.Symbols, q.SymCount, q.Dictionary)
	}
}
