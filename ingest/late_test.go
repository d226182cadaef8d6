package ingest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickdb/tickdb/writer"
)

// TestSkewedClientsAllStored: eight feed handlers write one table over
// TCP, each in order, with clocks up to 50 ms apart, interleaved. At
// serve's late window every row is stored, and a query returns them in
// ts order (ties: arrival order within a connection).
func TestSkewedClientsAllStored(t *testing.T) {
	const conns, rows = 8, 400
	srv, db := testServer(t, &Options{Writer: writer.Options{LateWindow: DefaultLateWindow}})
	base := time.Now().UnixNano()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", srv.ILPAddr().String(), 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			skew := int64(i) * int64(50*time.Millisecond) / (conns - 1) // 0 to 50 ms behind
			rng := rand.New(rand.NewPCG(uint64(i), 3))
			for k := range rows {
				ts := base + int64(k)*int64(time.Millisecond)/4 - skew
				if _, err := fmt.Fprintf(c, "q,feed=f%d k=%di %d\n", i, k, ts); err != nil {
					errs <- err
					return
				}
				if rng.IntN(20) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := tableRows(t, db, "q", conns*rows, 30*time.Second)
	var prev int64
	next := map[string]int{}
	for _, row := range got {
		var ts int64
		var feed string
		var k int
		if _, err := fmt.Sscanf(strings.Replace(row, "feed=", "", 1), "%d %s k=%d", &ts, &feed, &k); err != nil {
			t.Fatalf("row %q: %v", row, err)
		}
		if ts < prev {
			t.Fatalf("query not in ts order: %d after %d", ts, prev)
		}
		prev = ts
		if k != next[feed] {
			t.Fatalf("feed %s: k=%d, want %d", feed, k, next[feed])
		}
		next[feed]++
	}
	if got := rejected(srv, "q", "out_of_order"); got != 0 {
		t.Fatalf("%v rows rejected as out of order", got)
	}
}

// TestLateBeyondWindowRejected: a row later than the window follows the
// policy (reject, counted); rows inside it are stored in ts order, and a
// rejected line does not block the good ones after it.
func TestLateBeyondWindowRejected(t *testing.T) {
	srv, db := testServer(t, &Options{Writer: writer.Options{LateWindow: time.Second}})
	c := dial(t, srv)
	const t0 = 1_700_000_000_000_000_000
	lines := []string{
		fmt.Sprintf("w,s=a v=1 %d", t0+int64(10*time.Second)),
		fmt.Sprintf("w,s=a v=2 %d", t0+int64(9500*time.Millisecond)), // 0.5 s late: stored
		fmt.Sprintf("w,s=a v=3 %d", t0),                              // 10 s late: rejected
		fmt.Sprintf("w,s=a v=4 %d", t0+int64(11*time.Second)),
		fmt.Sprintf("w,s=a v=5 %d", t0+int64(10*time.Second)), // equal to an earlier row, 1 s late: stored
	}
	if _, err := c.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
		t.Fatal(err)
	}
	got := tableRows(t, db, "w", 4, 10*time.Second)
	var vs []string
	for _, row := range got {
		vs = append(vs, row[strings.Index(row, "v="):])
	}
	if want := []string{"v=2", "v=1", "v=5", "v=4"}; !slices.Equal(vs, want) {
		t.Fatalf("rows %v, want %v (ts order, ties by arrival)", vs, want)
	}
	deadline := time.Now().Add(5 * time.Second)
	for rejected(srv, "w", "out_of_order") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("out_of_order rejections %v, want 1", rejected(srv, "w", "out_of_order"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
