package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// demoTestTable writes rows ticks of the generator (10 symbols, seed 1)
// into table "trades" of a fresh database and closes the writer.
func demoTestTable(t *testing.T, rows int) string {
	t.Helper()
	db, live := testutil.DB(t)
	w, err := writer.Open(db, "trades", &writer.Options{Schema: store.TickSchema(), LiveDir: live, SegmentSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	g := gen.New(gen.Options{Symbols: 10, Seed: 1})
	ids := make([]uint32, len(g.Symbols()))
	for i, s := range g.Symbols() {
		if ids[i], err = w.SymbolString(s); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, rows*w.Schema().RowSize)
	DemoEncode(buf, w.Schema(), g, ids)
	if _, n, err := w.AppendBatch(buf); err != nil || n != rows {
		t.Fatalf("AppendBatch: %d rows, %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestDemoRead runs the demo's reader in this process on a written table:
// it verifies every row and reports a sample per DemoSampleEvery rows; a
// row off the generator, or a cancel while it waits, is an error.
func TestDemoRead(t *testing.T) {
	const rows = 5000
	db := demoTestTable(t, rows)
	o := demoReaderOpts{db: db, table: "trades", rows: rows, symbols: 10, seed: 1}
	t.Run("match", func(t *testing.T) {
		var lines []string
		report := func(f string, args ...any) { lines = append(lines, fmt.Sprintf(f, args...)) }
		if err := demoRead(context.Background(), o, report); err != nil {
			t.Fatal(err)
		}
		if len(lines) != 2+rows/DemoSampleEvery || lines[0] != "ready" {
			t.Fatalf("reports %q", lines)
		}
		for k, l := range lines[1 : len(lines)-1] {
			var seq, vis, seen int64
			if _, err := fmt.Sscanf(l, "sample %d %d %d", &seq, &vis, &seen); err != nil || seq != int64((k+1)*DemoSampleEvery-1) {
				t.Fatalf("sample line %q (%v)", l, err)
			}
			if vis == 0 || vis > seen {
				t.Errorf("sample %q: visible must be set and not after seen", l)
			}
		}
		var n, el, rereads int64
		if _, err := fmt.Sscanf(lines[len(lines)-1], "done %d %d %d", &n, &el, &rereads); err != nil || n != rows || el <= 0 {
			t.Fatalf("last report %q (%v)", lines[len(lines)-1], err)
		}
	})
	t.Run("other seed", func(t *testing.T) {
		o := o
		o.seed = 2
		err := demoRead(context.Background(), o, func(string, ...any) {})
		if err == nil || !strings.Contains(err.Error(), "demo reader: row 0: got ts=") {
			t.Fatalf("with the wrong seed: %v, want a row 0 mismatch", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		// More rows than the table holds: it waits, until the demo (its
		// stdin) goes away.
		o := o
		o.rows = rows + 1000
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := demoRead(ctx, o, func(string, ...any) {})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("waiting for row %d", rows)) {
			t.Fatalf("after a cancel: %v, want a cancelled wait at row %d", err, rows)
		}
	})
}

// TestDemo runs the demo workload with its reader process (this test
// binary, re-executed), checks what it reports and that it leaves neither
// live slots nor the process behind.
func TestDemo(t *testing.T) {
	db, live := testutil.DB(t)
	const rows = 100_000
	var setup DemoSetup
	rep, err := Demo(context.Background(), DemoConfig{DB: db, Table: "trades", Rows: rows, Symbols: 20, Seed: 5,
		CPU: -1, SegmentSize: 1 << 20, LiveDir: live, Started: func(s DemoSetup) { setup = s }})
	if err != nil {
		t.Fatal(err)
	}
	if setup.ReaderPid != rep.ReaderPid || setup.ReaderPid == 0 || setup.LiveDir != live || setup.SegmentRows != 1<<20/32 {
		t.Errorf("setup %+v, report's reader pid %d", setup, rep.ReaderPid)
	}
	if rep.Verified != rows || rep.ReadTime <= 0 || rep.AppendTime <= 0 {
		t.Errorf("verified %d rows in %v, appended in %v", rep.Verified, rep.ReadTime, rep.AppendTime)
	}
	for _, c := range []struct {
		name string
		lat  *Latency
		n    int64
	}{
		{"append", rep.AppendLat, (rows + DemoPublishEvery - 1 - demoAppendSampleAt) / DemoPublishEvery}, // batches that reach the timed row
		{"batch", rep.BatchLat, (rows + DemoPublishEvery - 1) / DemoPublishEvery},
		{"visible", rep.VisibleLat, rows / DemoSampleEvery},
		{"verified", rep.VerifiedLat, rows / DemoSampleEvery},
	} {
		if c.lat == nil || c.lat.Count != c.n || c.lat.P50 <= 0 || c.lat.Max < c.lat.P999 {
			t.Errorf("%s latency %+v, want %d samples", c.name, c.lat, c.n)
		}
	}
	if len(rep.Queries) != 7 || rep.Queries[0].Rows != rows || !rep.Queries[6].Point {
		t.Errorf("queries %+v", rep.Queries)
	}
	if rep.Stats.Durable != rows || rep.Stats.Appended != rows {
		t.Errorf("writer stats %+v", rep.Stats)
	}
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("live dir %s after the demo: %v", live, err)
	}
	if err := syscall.Kill(rep.ReaderPid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("reader process %d after the demo: %v, want gone", rep.ReaderPid, err)
	}
}
