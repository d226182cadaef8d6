package load_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tickdb/tickdb/load"
)

// Two files into a fresh database: a line-protocol file whose lines
// create the table, then a CSV file into the same table with one bad
// line, which therefore stores nothing.
func ExampleLoader() {
	dir, err := os.MkdirTemp("", "load-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ilp := filepath.Join(dir, "ticks.ilp")
	csv := filepath.Join(dir, "more.csv")
	_ = os.WriteFile(ilp, []byte("trades,sym=AAPL price=189.5,size=100i 1700000000000000000\n"+
		"trades,sym=MSFT price=370.25,size=5i 1700000000000000500\n"), 0o644)
	_ = os.WriteFile(csv, []byte("ts,sym,price,size\n"+
		"2023-11-14T22:13:21Z,AAPL,189.75,200\n"+
		"2023-11-14T22:13:22Z,AAPL,lots,300\n"), 0o644)

	ld := load.New(&load.Options{
		DB:       filepath.Join(dir, "db"),
		LiveRoot: filepath.Join(dir, "live"),
		Table:    "trades", // the CSV file's table
		Report:   func(file string, err error) { fmt.Printf("bad line: %s: %v\n", filepath.Base(file), err) },
	})
	for _, path := range []string{ilp, csv} {
		format, _ := load.FormatOf(path)
		err := ld.File(context.Background(), path, path, format)
		var fe *load.FileError
		if errors.As(err, &fe) {
			fmt.Printf("%s: %d bad line, nothing stored\n", filepath.Base(fe.File), fe.Bad)
		} else if err != nil {
			fmt.Println(err)
		}
	}
	if err := ld.Close(); err != nil {
		fmt.Println(err)
	}
	st := ld.Stats()
	fmt.Printf("%d file, %d rows: trades %d\n", st.Files, st.Rows, st.Tables["trades"])
	// Output:
	// bad line: more.csv: line 3, byte 27: column "price" (f64): "lots" is not a number
	// more.csv: 1 bad line, nothing stored
	// 1 file, 2 rows: trades 2
}
