// Command tickdb is the command line of the tickdb tick store: a demo,
// ingestion, queries, tailing, verification and maintenance of a database
// directory. Run "tickdb help" for the list of commands.
package main

import (
	"os"
)

func main() {
	maybeChild() // bench's and demo's child processes: this binary, re-executed
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
