package suite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/internal/harness/gen"
)

// System is one store under test, opened on an empty directory. The suite
// calls Ingest once with every tick, in batches as a feed handler would,
// then Seal, then the queries, then Close.
type System interface {
	// Ingest stores ticks, in ts order, in batches of the system's natural
	// write unit (the suite passes 1,000 ticks a call), in the store's
	// fastest mode that still ends on disk (no fsync per batch).
	Ingest(batch []gen.Tick) error
	// Seal makes everything ingested durable and queryable (flush, close
	// a write-ahead log, publish), as an ingest process does at its end.
	Seal() error
	// Query returns the answer to q (q.Want is ignored): the rows of q.Sym
	// (or of every symbol, with AllSymbols) with q.From <= ts < q.To.
	Query(q Query) (Answer, error)
	// Reopen closes what the store holds open for reading (handles,
	// mappings, its own caches) and opens it again on the same directory,
	// as a process starting on a cold machine would. The suite calls it
	// after evicting the store's files from the page cache, before the
	// cold queries.
	Reopen() error
	// Close releases the store; the suite removes its directory after.
	Close() error
}

// Peer names a System and opens it.
type Peer struct {
	Name string
	// Open opens an empty store in dir (which exists and is empty) for
	// the symbols d.Symbols.
	Open func(dir string, d *Data) (System, error)
	// OpenExisting opens, for queries only, the store that a System
	// opened by Open left in dir once sealed and closed: what a process
	// starting later does (the user protocol's child process). Ingest
	// and Reopen need not work on what it returns. Nil: the peer cannot,
	// and the user protocol skips it.
	OpenExisting func(dir string, s Shape) (System, error)
}

// Shape is what a store needs to know of the data set to open on it
// without the ticks (the child process of the user protocol has only
// this): the symbol names, indexed by Tick.Sym, and the first and last
// ticks' timestamps.
type Shape struct {
	Symbols     []string
	First, Last int64
}

// Shape is d's shape.
func (d *Data) Shape() Shape { return Shape{Symbols: d.Symbols, First: d.First(), Last: d.Last()} }

// Evict drops the files under dir from the page cache: each is synced
// (dirty pages cannot be dropped) and then advised away
// (POSIX_FADV_DONTNEED). Pages a process has mapped and touched stay; a
// store's own cache stays.
func Evict(dir string) error {
	return filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed by the store meanwhile
			}
			return err
		}
		defer f.Close()
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("evict %s: %w", path, err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("evict %s: %w", path, err)
		}
		return nil
	})
}
