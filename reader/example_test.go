package reader_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// exampleTable writes a small table of trades for the examples and returns
// its database directory.
func exampleTable() string {
	db, err := os.MkdirTemp("", "tickdb-example-")
	if err != nil {
		log.Fatal(err)
	}
	w, err := writer.Open(db, "trades", &writer.Options{
		Schema: store.TickSchema(), LiveDir: filepath.Join(db, "live"), SegmentSize: 1 << 20,
	})
	if err != nil {
		log.Fatal(err)
	}
	s := w.Schema()
	symCol, _ := s.Col("sym")
	priceCol, _ := s.Col("price")
	sizeCol, _ := s.Col("size")
	row := w.NewRow()
	for i, t := range []struct {
		sym   string
		price float64
	}{{"AAPL", 190.10}, {"MSFT", 410.50}, {"AAPL", 190.12}, {"MSFT", 410.40}, {"AAPL", 190.11}} {
		id, err := w.SymbolString(t.sym)
		if err != nil {
			log.Fatal(err)
		}
		row.SetTs(1_700_000_000_000_000_000 + int64(i)*1_000)
		row.SetSym(symCol, id)
		row.SetF64(priceCol, t.price)
		row.SetI64(sizeCol, int64(100*(i+1)))
		if _, err := w.Append(row); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil { // publishes and syncs
		log.Fatal(err)
	}
	return db
}

// Open reads a table, here from the process that wrote it; another process
// opens it the same way, while the writer runs or after.
func ExampleOpen() {
	db := exampleTable()
	defer os.RemoveAll(db)

	r, err := reader.Open(db, "trades", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	s := r.Schema()
	symCol, _ := s.Col("sym")
	priceCol, _ := s.Col("price")

	fmt.Println("rows:", r.Len())
	var it reader.Iter
	if err := r.Range(1_700_000_000_000_001_000, reader.ToEnd, &it); err != nil {
		log.Fatal(err)
	}
	for it.Next() {
		row := it.Row() // a view into the mapping, valid until Close
		name, err := r.SymbolName(row.Sym(symCol))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(it.Seq(), name, row.F64(priceCol))
	}
	if err := it.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// rows: 5
	// 1 MSFT 410.5
	// 2 AAPL 190.12
	// 3 MSFT 410.4
	// 4 AAPL 190.11
}

// RangeSym iterates one symbol's rows of a time window at a cost that
// follows that symbol's rows, not the table's.
func ExampleReader_RangeSym() {
	db := exampleTable()
	defer os.RemoveAll(db)

	r, err := reader.Open(db, "trades", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	sizeCol, _ := r.Schema().Col("size")
	aapl, ok := r.SymbolID([]byte("AAPL"))
	if !ok {
		log.Fatal("no AAPL")
	}
	var it reader.Iter
	if err := r.RangeSym(1_700_000_000_000_000_000, 1_700_000_000_000_004_000, aapl, &it); err != nil {
		log.Fatal(err)
	}
	var volume int64
	for it.Next() {
		volume += it.Row().I64(sizeCol)
	}
	if err := it.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("AAPL volume:", volume)
	// Output:
	// AAPL volume: 400
}
