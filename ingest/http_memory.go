package ingest

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// writeMemory bounds the memory every HTTP write request together holds
// (Options.MaxWriteMemory): read buffers, decompressors and staged rows.
// A request takes memory before it grows; when there is none it waits up
// to wait for other requests to give some back, then gives up, and the
// request is answered 503 (Retry-After) with nothing stored. A request
// that alone would need more than the limit is answered 413 at once. Safe
// for concurrent use.
type writeMemory struct {
	limit int64
	wait  time.Duration
	onUse func(used int64) // the gauge, under mu

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed, and replaced, when memory is given back
}

// memoryGrain is the least a request takes at once, so that taking memory
// is rare next to staging rows.
const memoryGrain = 256 << 10

// DefaultMemoryWait is how long a write request waits for memory that
// other requests hold before it is answered 503.
const DefaultMemoryWait = time.Second

var (
	errMemoryBusy  = errors.New("ingest: write requests hold all the memory they may")
	errMemoryLimit = errors.New("ingest: the request needs more memory than all write requests may hold")
)

func newWriteMemory(limit int64, wait time.Duration, onUse func(int64)) *writeMemory {
	return &writeMemory{limit: limit, wait: wait, onUse: onUse, freed: make(chan struct{})}
}

// acquire takes n bytes for a request that holds own already. It reports
// whether it had to wait.
func (m *writeMemory) acquire(n, own int64) (waited bool, err error) {
	if own+n > m.limit {
		return false, errMemoryLimit
	}
	var timer *time.Timer
	for {
		m.mu.Lock()
		if m.used+n <= m.limit {
			m.used += n
			m.onUse(m.used)
			m.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return timer != nil, nil
		}
		freed := m.freed
		m.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(m.wait)
		}
		select {
		case <-freed:
		case <-timer.C:
			return true, errMemoryBusy
		}
	}
}

// release gives back n bytes.
func (m *writeMemory) release(n int64) {
	if n == 0 {
		return
	}
	m.mu.Lock()
	m.used -= n
	m.onUse(m.used)
	close(m.freed)
	m.freed = make(chan struct{})
	m.mu.Unlock()
}

// reqMemory is one request's share of writeMemory: what it uses and what
// it has taken (at least that, in grains). The request's goroutine and
// the goroutines staging its chunks charge it (http_chunks.go).
type reqMemory struct {
	mu        sync.Mutex
	m         *writeMemory
	used      int64
	held      int64
	afterWait func() // called after a wait for memory (the read deadline moves)
}

// charge accounts n more bytes, taking memory when what is held runs out.
func (r *reqMemory) charge(n int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.used += n
	if r.used <= r.held {
		return nil
	}
	need := max(r.used-r.held, memoryGrain)
	if r.held+need > r.m.limit {
		need = r.used - r.held // the last bit before the limit
	}
	waited, err := r.m.acquire(need, r.held)
	if waited && r.afterWait != nil {
		r.afterWait()
	}
	if err != nil {
		return err
	}
	r.held += need
	return nil
}

// release gives back everything the request holds.
func (r *reqMemory) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m.release(r.held)
	r.held, r.used = 0, 0
}

// memoryMessage is what a client is told when the memory bound refuses
// its request.
func memoryMessage(err error, limit int64) string {
	if errors.Is(err, errMemoryLimit) {
		return fmt.Sprintf("the request needs more than the %d bytes all write requests may hold together (--max-write-memory): send it in smaller requests", limit)
	}
	return fmt.Sprintf("write requests hold all the %d bytes they may (--max-write-memory); nothing of this request was stored: retry", limit)
}
