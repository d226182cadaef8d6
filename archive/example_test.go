package archive_test

import (
	"context"
	"log"
	"time"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// An embedding program archives its tables as serve --archive does: an
// Archiver uploads each segment once the writer has compressed it (the
// writer's background compaction, on by default), and retention waits
// for the archive (Options.RetainBelow), so history never lives only on
// this disk. Credentials and the server come from AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ENDPOINT_URL.
func Example_embedded() {
	c, err := archive.Dial("s3://ticks/node-a", archive.Config{})
	if err != nil {
		log.Fatal(err)
	}
	a := archive.Start(c, "/var/lib/tickdb", nil)
	defer a.Close() // after the writers: the last segments go up at the next start
	w, err := writer.Open("/var/lib/tickdb", "trades", &writer.Options{
		Schema:      store.TickSchema(),
		RetainAge:   7 * 24 * time.Hour,
		RetainBelow: a.RetainBelow, // delete only what the manifest lists
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	// ... w.Append, w.Publish ...

	// Before a planned shutdown, wait (bounded) for the archive to hold
	// every compressed segment.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.Wait(ctx, "trades"); err != nil {
		log.Print("archive lagging: ", err)
	}
}
