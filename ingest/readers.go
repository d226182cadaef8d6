package ingest

import (
	"sync"
	"time"

	"github.com/tickdb/tickdb/reader"
)

// readerPool keeps open readers of the tables HTTP queries read, so that
// a query does not open its table again: an open reads the whole symbol
// dictionary, hundreds of milliseconds at a million symbols, where a
// query of one symbol's latest row on a warm reader takes microseconds.
// A Reader serves one request at a time: the pool hands each out to one
// request and takes it back after.
//
// A reader is kept at most readerMaxAge, then closed when it comes back:
// a reader maps the segments it has read, so one kept for ever would keep
// segments that retention deleted on disk. At most readerIdle per table
// wait idle (a burst of concurrent requests opens more, and closes the
// extra ones after). A request that failed closes its reader.
type readerPool struct {
	db     string
	maxAge time.Duration // readerMaxAge (tests lower it)
	mu     sync.Mutex
	idle   map[string][]*pooledReader
	closed bool
}

// pooledReader is a reader and when it was opened.
type pooledReader struct {
	r    *reader.Reader
	born time.Time
}

const (
	readerMaxAge = 10 * time.Second
	readerIdle   = 2
)

func newReaderPool(db string) *readerPool {
	return &readerPool{db: db, maxAge: readerMaxAge, idle: map[string][]*pooledReader{}}
}

// get returns an open reader of table: an idle one, or a new one.
func (p *readerPool) get(table string) (*pooledReader, error) {
	now := time.Now()
	var stale []*pooledReader
	p.mu.Lock()
	var pr *pooledReader
	for rs := p.idle[table]; len(rs) > 0 && pr == nil; rs = p.idle[table] {
		last := rs[len(rs)-1]
		p.idle[table] = rs[:len(rs)-1]
		if now.Sub(last.born) < p.maxAge {
			pr = last
		} else {
			stale = append(stale, last)
		}
	}
	p.mu.Unlock()
	for _, s := range stale {
		s.r.Close()
	}
	if pr != nil {
		pr.r.ReloadSchema() // columns added since its last request
		return pr, nil
	}
	r, err := reader.Open(p.db, table, nil)
	if err != nil {
		return nil, err
	}
	return &pooledReader{r: r, born: now}, nil
}

// put takes back a reader get gave; ok says its request succeeded.
func (p *readerPool) put(table string, pr *pooledReader, ok bool) {
	if ok && time.Since(pr.born) < p.maxAge {
		p.mu.Lock()
		if !p.closed && len(p.idle[table]) < readerIdle {
			p.idle[table] = append(p.idle[table], pr)
			pr = nil
		}
		p.mu.Unlock()
	}
	if pr != nil {
		pr.r.Close()
	}
}

// close closes every idle reader; readers given out are closed when they
// come back.
func (p *readerPool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = map[string][]*pooledReader{}
	p.mu.Unlock()
	for _, rs := range idle {
		for _, pr := range rs {
			pr.r.Close()
		}
	}
}
