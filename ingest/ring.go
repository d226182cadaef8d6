package ingest

// This is the package's one file with atomics: the hand-off rings between
// the event loops and the pinned writer, and the writer's park flag.

import (
	"sync/atomic"
	"time"
)

// batch is one slot of a ring: encoded records (record.go) laid end to
// end. The producer fills buf and publishes; the consumer reads it and
// releases the slot. Slots keep their buffers, so the steady state
// allocates nothing.
type batch struct {
	buf    []byte
	recs   int
	readNs int64 // when the first of its bytes was read from a socket (0: not from one)
	// applied is how many bytes of buf the writer has applied when it
	// stopped at a line with no room, 0 otherwise (consumer only;
	// room.go).
	applied int
}

func (b *batch) reset() {
	b.buf = b.buf[:0]
	b.applied = 0
	b.recs = 0
	b.readNs = 0
}

// ring is a bounded single-producer single-consumer queue of batches: one
// event loop (or the HTTP path, serialized by the sink) produces, the
// writer consumes.
//
// Invariants: tail is written only by the producer and head only by the
// consumer. The producer fills slot tail&mask and then storeRelease(tail+1):
// the consumer's loadAcquire of tail orders its reads of the slot after the
// producer's writes. The consumer reads slot head&mask and then
// storeRelease(head+1), handing the slot back. tail-head is always in
// [0, len(slots)]: a full ring is backpressure, the producer stops reading
// its sockets.
type ring struct {
	_     [64]byte
	tail  atomic.Uint64 // next slot the producer fills
	_     [56]byte
	head  atomic.Uint64 // next slot the consumer reads
	_     [56]byte
	slots []batch
	mask  uint64
}

// newRing makes a ring of n slots (a power of two) whose buffers start with
// capacity size bytes each.
func newRing(n, size int) *ring {
	r := &ring{slots: make([]batch, n), mask: uint64(n - 1)}
	for i := range r.slots {
		r.slots[i].buf = make([]byte, 0, size)
	}
	return r
}

// claim returns the next free slot, reset, or nil when the ring is full.
// Producer only.
func (r *ring) claim() *batch {
	t := r.tail.Load()
	if t-r.head.Load() == uint64(len(r.slots)) {
		return nil
	}
	b := &r.slots[t&r.mask]
	b.reset()
	return b
}

// publish hands the claimed slot to the consumer. Producer only.
func (r *ring) publish() { r.tail.Add(1) }

// peek returns the oldest published slot, or nil. Consumer only.
func (r *ring) peek() *batch {
	h := r.head.Load()
	if h == r.tail.Load() {
		return nil
	}
	return &r.slots[h&r.mask]
}

// release returns the slot peek gave back to the producer. Consumer only.
func (r *ring) release() { r.head.Add(1) }

// empty reports whether the consumer has caught up.
func (r *ring) empty() bool { return r.head.Load() == r.tail.Load() }

// depth is the number of published, unconsumed slots.
func (r *ring) depth() uint64 { return r.tail.Load() - r.head.Load() }

// parker lets the writer sleep when every ring is empty and be woken by a
// producer without a system call in the busy case: the writer sets sleeping,
// re-checks the rings and only then blocks; a producer that publishes and
// sees sleeping set sends one token. The re-check after setting the flag
// closes the lost-wakeup window (both sides use sequentially consistent
// atomics).
type parker struct {
	sleeping atomic.Bool
	wakec    chan struct{}
}

func newParker() *parker { return &parker{wakec: make(chan struct{}, 1)} }

// wake is called by producers after publishing.
func (p *parker) wake() {
	if p.sleeping.Load() {
		select {
		case p.wakec <- struct{}{}:
		default:
		}
	}
}

// sleep marks the writer asleep. The caller must then re-check for work
// and call either block or awake.
func (p *parker) sleep() { p.sleeping.Store(true) }

// awake clears the mark.
func (p *parker) awake() { p.sleeping.Store(false) }

// block waits for a wake token or d, then clears the mark.
func (p *parker) block(d time.Duration, t *time.Timer) {
	t.Reset(d)
	select {
	case <-p.wakec:
	case <-t.C:
	}
	t.Stop()
	p.sleeping.Store(false)
}

// counter is a monotonically increasing count shared between goroutines.
type counter struct{ v atomic.Uint64 }

func (c *counter) add(n uint64)   { c.v.Add(n) }
func (c *counter) load() uint64   { return c.v.Load() }
func (c *counter) store(n uint64) { c.v.Store(n) }

// gauge is a signed level shared between goroutines.
type gauge struct{ v atomic.Int64 }

func (g *gauge) add(n int64) { g.v.Add(n) }
func (g *gauge) load() int64 { return g.v.Load() }
