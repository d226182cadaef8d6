package pgwire

import (
	"context"
	"net"
	"time"
)

// hangupEvery is how often a running statement checks for a client that
// went away.
const hangupEvery = 200 * time.Millisecond

// watchHangup cancels a running statement (cause errClientGone) when the
// client hangs up while it runs: a query that returns nothing for a long
// time would otherwise hold DuckDB until it ended. The returned func stops
// the watch and waits for its goroutine.
func watchHangup(nc net.Conn, cancel context.CancelCauseFunc) func() {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(hangupEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if peerClosed(nc) {
					cancel(errClientGone)
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}
