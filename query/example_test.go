package query_test

import (
	"fmt"
	"math"
	"os"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/store"
)

// Each format, for one tick and one with a missing price. In a program,
// the rows come from query.Run and the names from a reader's Symbol.
func ExampleNewEncoder() {
	s := store.TickSchema()
	sym, _ := s.Col("sym")
	price, _ := s.Col("price")
	size, _ := s.Col("size")
	names := []string{"AAPL", "BRK A"}
	symName := func(id uint32) (string, error) { return names[id], nil }

	a, b := s.NewRow(), s.NewRow()
	a.SetTs(1_700_000_000_000_000_000)
	a.SetSym(sym, 0)
	a.SetF64(price, 189.5)
	a.SetI64(size, 100)
	b.SetTs(1_700_000_000_000_001_500)
	b.SetSym(sym, 1)
	b.SetF64(price, math.NaN())
	b.SetI64(size, 5)

	for _, f := range []query.Format{query.FormatTable, query.FormatCSV, query.FormatJSON, query.FormatILP} {
		fmt.Printf("--- %v\n", f)
		enc := query.NewEncoder(os.Stdout, f, query.TsRFC3339, s, "trades", symName)
		_ = enc.Row(a)
		_ = enc.Row(b)
		if err := enc.Close(); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// --- table
	// ts                              sym                    price          size
	// 2023-11-14T22:13:20.000000000Z  AAPL                   189.5           100
	// 2023-11-14T22:13:20.000001500Z  BRK A                    NaN             5
	// --- csv
	// ts,sym,price,size
	// 2023-11-14T22:13:20.000000000Z,AAPL,189.5,100
	// 2023-11-14T22:13:20.000001500Z,BRK A,,5
	// --- json
	// {"ts":"2023-11-14T22:13:20.000000000Z","sym":"AAPL","price":189.5,"size":100}
	// {"ts":"2023-11-14T22:13:20.000001500Z","sym":"BRK A","price":null,"size":5}
	// --- ilp
	// trades,sym=AAPL price=189.5,size=100i 1700000000000000000
	// trades,sym=BRK\ A size=5i 1700000000000001500
}
