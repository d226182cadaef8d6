package ingest_test

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/reader"
)

// Start serves the line protocol over HTTP (and TCP, off here) into the
// tables of a database, creating each table from its first line; a reader
// sees the rows once the write is answered.
func ExampleStart() {
	db, err := os.MkdirTemp("", "tickdb-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(db)
	srv, err := ingest.Start(&ingest.Options{
		DB:       db,
		ILPAddr:  "off",
		HTTPAddr: "127.0.0.1:0",
		LiveRoot: filepath.Join(db, "live"), // default: under /dev/shm
	})
	if err != nil {
		log.Fatal(err)
	}
	body := "trades,sym=AAPL price=190.1,size=100i 1700000000000000000\n" +
		"trades,sym=MSFT price=410.5,size=50i 1700000000000001000\n"
	resp, err := http.Post("http://"+srv.HTTPAddr().String()+"/write", "text/plain", strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("POST /write:", resp.Status)

	r, err := reader.Open(db, "trades", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("schema:", r.Schema())
	fmt.Println("rows:", r.Len())
	r.Close()
	if err := srv.Close(); err != nil { // every accepted row durable
		log.Fatal(err)
	}
	// Output:
	// POST /write: 204 No Content
	// schema: ts:ts,sym:sym,price:f64,size:i64
	// rows: 2
}
