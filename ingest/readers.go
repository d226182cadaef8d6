package ingest

import (
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/tickdb/tickdb/internal/format"
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
	sweepT *time.Timer // closes the warmed readers no query took (warm)
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

// warm opens and warms (Reader.Warm) a reader of each of tables, the most
// recently written first, and keeps it idle for the first query: at most
// warmTables of them, for at most warmTime in all. The ones no query took
// are closed once readerMaxAge old (sweep).
func (p *readerPool) warm(tables []string) {
	type recent struct {
		name string
		mod  time.Time
	}
	var rs []recent
	for _, name := range tables {
		fi, err := os.Stat(filepath.Join(p.db, name, format.TimeIdxName))
		if err == nil {
			rs = append(rs, recent{name, fi.ModTime()})
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].mod.After(rs[j].mod) })
	t0 := time.Now()
	for i, t := range rs {
		if i == warmTables || time.Since(t0) > warmTime {
			break
		}
		r, err := reader.Open(p.db, t.name, nil)
		if err != nil {
			continue // its first query says why
		}
		r.Warm()
		p.put(t.name, &pooledReader{r: r, born: time.Now()}, true)
	}
	p.mu.Lock()
	if !p.closed {
		p.sweepT = time.AfterFunc(p.maxAge, p.sweep)
	}
	p.mu.Unlock()
}

const (
	warmTables = 64
	warmTime   = time.Second
)

// sweep closes the idle readers older than maxAge.
func (p *readerPool) sweep() {
	now := time.Now()
	var stale []*pooledReader
	p.mu.Lock()
	for table, rs := range p.idle {
		keep := rs[:0]
		for _, pr := range rs {
			if now.Sub(pr.born) < p.maxAge {
				keep = append(keep, pr)
			} else {
				stale = append(stale, pr)
			}
		}
		p.idle[table] = keep
	}
	p.mu.Unlock()
	for _, pr := range stale {
		pr.r.Close()
	}
}

// close closes every idle reader; readers given out are closed when they
// come back.
func (p *readerPool) close() {
	p.mu.Lock()
	p.closed = true
	if p.sweepT != nil {
		p.sweepT.Stop()
	}
	idle := p.idle
	p.idle = map[string][]*pooledReader{}
	p.mu.Unlock()
	for _, rs := range idle {
		for _, pr := range rs {
			pr.r.Close()
		}
	}
}
