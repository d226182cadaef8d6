package reader

import (
	"runtime"
	"time"
)

// IdleStrategy decides what a tailing reader does when no new row is
// published: Idle is called with the number of consecutive empty polls,
// Reset when a row arrives. Implementations are not safe for concurrent use.
type IdleStrategy interface {
	Idle(empty int)
	Reset()
}

// BusySpin polls without pause: the lowest latency, one core burnt.
type BusySpin struct{}

// Idle does nothing.
func (BusySpin) Idle(int) {}

// Reset does nothing.
func (BusySpin) Reset() {}

// Yield gives the processor to other goroutines between polls.
type Yield struct{}

// Idle yields.
func (Yield) Idle(int) { runtime.Gosched() }

// Reset does nothing.
func (Yield) Reset() {}

// Backoff spins, then yields, then sleeps with exponential growth from
// MinSleep to MaxSleep: low latency while busy, little CPU while idle.
type Backoff struct {
	Spins    int           // empty polls spent spinning (default 100)
	Yields   int           // then this many yielding (default 100)
	MinSleep time.Duration // first sleep (default 1 µs)
	MaxSleep time.Duration // sleep cap (default 1 ms)
	sleep    time.Duration
}

// Idle spins, yields or sleeps depending on how long the tail was idle.
func (b *Backoff) Idle(empty int) {
	spins, yields := b.Spins, b.Yields
	if spins == 0 {
		spins = 100
	}
	if yields == 0 {
		yields = 100
	}
	switch {
	case empty < spins:
	case empty < spins+yields:
		runtime.Gosched()
	default:
		lo, hi := b.MinSleep, b.MaxSleep
		if lo <= 0 {
			lo = time.Microsecond
		}
		if hi <= 0 {
			hi = time.Millisecond
		}
		if b.sleep < lo {
			b.sleep = lo
		}
		time.Sleep(b.sleep)
		if b.sleep *= 2; b.sleep > hi {
			b.sleep = hi
		}
	}
}

// Reset returns to spinning.
func (b *Backoff) Reset() { b.sleep = 0 }
