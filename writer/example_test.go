package writer_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Open creates the table trades (the tick schema: ts, sym, price, size),
// appends three trades, publishes them to readers and waits until they are
// on disk.
func ExampleOpen() {
	db, err := os.MkdirTemp("", "tickdb-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(db)

	w, err := writer.Open(db, "trades", &writer.Options{
		Schema:      store.TickSchema(),
		LiveDir:     filepath.Join(db, "live"), // default: under /dev/shm
		SegmentSize: 1 << 20,
	})
	if err != nil {
		log.Fatal(err)
	}
	s := w.Schema()
	symCol, _ := s.Col("sym")
	priceCol, _ := s.Col("price")
	sizeCol, _ := s.Col("size")
	aapl, err := w.SymbolString("AAPL")
	if err != nil {
		log.Fatal(err)
	}

	row := w.NewRow() // one buffer, reused: Append copies it
	for i, price := range []float64{190.10, 190.12, 190.11} {
		row.SetTs(1_700_000_000_000_000_000 + int64(i)*1_000)
		row.SetSym(symCol, aapl)
		row.SetF64(priceCol, price)
		row.SetI64(sizeCol, 100)
		if _, err := w.Append(row); err != nil {
			log.Fatal(err)
		}
	}
	w.Publish()                      // readers see the rows now
	if err := w.Sync(); err != nil { // and now they are durable
		log.Fatal(err)
	}
	fmt.Println("rows:", w.Len())
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// rows: 3
}
