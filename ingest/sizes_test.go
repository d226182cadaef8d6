package ingest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/writer"
)

// TestSizesAreAllocated: /api/tables (the console's bytes column) and
// /metrics give a table's size as what its files take on disk, which for
// two rows in 64 MiB segments is far below the files' sparse sizes;
// /api/tables gives the logical size apart.
func TestSizesAreAllocated(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off", Writer: writer.Options{SegmentSize: 64 << 20}})
	writeLines(t, srv, "tiny,sym=AAPL px=1.5 1700000000000000000\ntiny,sym=MSFT px=2.5 1700000000000000001\n")
	dir := filepath.Join(db, "tiny")
	// The writer's preparer may still be allocating room ahead: compare
	// with the files when they stay the same across the two reads.
	deadline := time.Now().Add(10 * time.Second)
	for {
		alloc, logical := testutil.DiskUse(t, dir)
		api := apiTableOf(t, srv, "tiny")
		metric, ok := scrape(t, srv, "tickdb_table_disk_bytes", "table", "tiny")
		alloc2, _ := testutil.DiskUse(t, dir)
		if alloc == alloc2 && api.Bytes == alloc && api.Logical == logical && ok && metric == float64(alloc) {
			if api.Bytes*16 > api.Logical {
				t.Fatalf("/api/tables: %d bytes on disk for 2 rows, not far below the logical %d", api.Bytes, api.Logical)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/tables bytes %d, logical_bytes %d; tickdb_table_disk_bytes %v (present %v); the files take %d then %d on disk (st_blocks), %d logical",
				api.Bytes, api.Logical, metric, ok, alloc, alloc2, logical)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
