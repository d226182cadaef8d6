package export_test

import (
	"fmt"

	"github.com/tickdb/tickdb/export"
	"github.com/tickdb/tickdb/store"
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
