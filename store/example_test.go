package store_test

import (
	"fmt"
	"log"

	"github.com/tickdb/tickdb/store"
)

// NewSchema lays out a row: ts first, then the 8-byte columns, the symbol
// columns, the bools, and the check word the writer fills in.
func ExampleNewSchema() {
	s, err := store.NewSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "bid", Type: store.TypeF64},
		store.Column{Name: "ask", Type: store.TypeF64},
		store.Column{Name: "halted", Type: store.TypeBool},
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s)
	fmt.Println("row size:", s.RowSize)

	row := s.NewRow()
	bid, _ := s.Col("bid")
	row.SetTs(1_700_000_000_000_000_000)
	row.SetF64(bid, 99.5)
	fmt.Println(row.Ts(), row.F64(bid))
	// Output:
	// ts:ts,sym:sym,bid:f64,ask:f64,halted:bool
	// row size: 40
	// 1700000000000000000 99.5
}
