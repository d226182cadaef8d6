// Package loadgen is the line-protocol load generator the ingestion
// benchmarks (and tickdb bench) use: it pre-encodes realistic tick lines
// and sends them over N TCP connections, flat out or at a fixed offered
// rate, so the cost measured is the server's, not the client's encoding.
package loadgen

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/lineproto"
)

// Ticks returns n lines "<table>,sym=<S> price=<p>,size=<q>i[ <ts>]\n" for
// nsym symbols drawn by internal/harness/gen (skewed like a real market), written
// by lineproto.Encoder like every line tickdb writes; with withTs the
// lines carry gen's non-decreasing timestamps, otherwise the server stamps
// them. The error is lineproto's, for a table name it cannot write.
func Ticks(table string, n, nsym int, seed int64, withTs bool) ([]byte, error) {
	g := gen.New(gen.Options{Symbols: nsym, Seed: seed})
	names := g.Symbols()
	out := make([]byte, 0, n*64)
	var e lineproto.Encoder[string]
	for range n {
		t := g.Next()
		e.Begin(out, table)
		e.Tag("sym", names[t.Sym])
		e.Float("price", t.Price)
		e.Int("size", t.Size)
		var err error
		if withTs {
			out, err = e.End(t.Ts)
		} else {
			out, err = e.EndNow()
		}
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
	}
	return out, nil
}

// Split cuts data into k parts of about equal size at line boundaries.
func Split(data []byte, k int) [][]byte {
	parts := make([][]byte, 0, k)
	for i := k; i > 0; i-- {
		cut := len(data) / i
		for cut < len(data) && cut > 0 && data[cut-1] != '\n' {
			cut++
		}
		parts = append(parts, data[:cut])
		data = data[cut:]
	}
	return parts
}

// Lines counts the lines in data.
func Lines(data []byte) int {
	n := 0
	for _, b := range data {
		if b == '\n' {
			n++
		}
	}
	return n
}

// Send writes each part over its own connection to addr, all at once and
// as fast as the server reads, in writes of chunk bytes, and returns when
// every connection has written everything.
func Send(addr string, parts [][]byte, chunk int) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(parts))
	for _, p := range parts {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for len(p) > 0 {
				n := min(chunk, len(p))
				if _, err := c.Write(p[:n]); err != nil {
					errs <- fmt.Errorf("loadgen: write: %w", err)
					return
				}
				p = p[n:]
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Paced sends lines over one connection at a fixed offered rate (lines per
// second), in bursts of burst lines, each line produced by line(i, sendNs)
// with the wall-clock send time in ns, so a reader can time its arrival.
// It stops after n lines or at the first error.
func Paced(addr string, n, rate, burst int, line func(dst []byte, i int, sendNs int64) []byte) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	w := bufio.NewWriterSize(c, 64<<10)
	interval := time.Duration(float64(time.Second) * float64(burst) / float64(rate))
	start := time.Now()
	var buf []byte
	for i := 0; i < n; i += burst {
		// Sleep, never spin: on a small machine a spinning client takes the
		// server's core. A late wake-up sends the burst late, not early, and
		// each line carries its real send time.
		if d := time.Until(start.Add(time.Duration(i/burst) * interval)); d > 0 {
			time.Sleep(d)
		}
		now := time.Now().UnixNano()
		buf = buf[:0]
		for j := i; j < min(i+burst, n); j++ {
			buf = line(buf, j, now)
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}
