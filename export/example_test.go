package export_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The Parquet schema of the demo's tick table (ts, sym, price, size).
func ExampleParquetSchema() {
	fmt.Println(export.ParquetSchema(store.TickSchema()))
	// Output:
	// message tickdb {
	// 	required int64 ts (TIMESTAMP(isAdjustedToUTC=false,unit=NANOS));
	// 	required binary sym (STRING);
	// 	optional double price;
	// 	required int64 size (INT(64,true));
	// }
}

// Run writes a table as CSV files, one directory a UTC date (Hive
// partitioning): two days of trades here.
func ExampleRun() {
	db, err := os.MkdirTemp("", "tickdb-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(db)
	w, err := writer.Open(db, "trades", &writer.Options{
		Schema: store.TickSchema(), LiveDir: filepath.Join(db, "live"), SegmentSize: 1 << 20,
	})
	if err != nil {
		log.Fatal(err)
	}
	symCol, _ := w.Schema().Col("sym")
	priceCol, _ := w.Schema().Col("price")
	aapl, err := w.SymbolString("AAPL")
	if err != nil {
		log.Fatal(err)
	}
	row := w.NewRow()
	day := time.Date(2024, 1, 2, 20, 0, 0, 0, time.UTC)
	for i := range 6 {
		row.SetTs(day.Add(time.Duration(i) * 2 * time.Hour).UnixNano())
		row.SetSym(symCol, aapl)
		row.SetF64(priceCol, 100+float64(i))
		if _, err := w.Append(row); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	r, err := reader.Open(db, "trades", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	res, err := export.Run(context.Background(), r, filepath.Join(db, "out"), &export.Options{Format: export.FormatCSV})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range res.Files {
		fmt.Println(f.Path, f.Rows)
	}
	// Output:
	// date=2024-01-02/part-00000.csv 2
	// date=2024-01-03/part-00000.csv 4
}
