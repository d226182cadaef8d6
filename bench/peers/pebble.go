package peers

import (
	"encoding/binary"
	"fmt"
	"log"
	"math"

	"github.com/cockroachdb/pebble"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/suite"
)

// Pebble stores one key per tick in a pebble LSM (key layout in the
// package doc).
var Pebble = suite.Peer{Name: "pebble", Open: openPebble, OpenExisting: openPebbleExisting}

const (
	pebbleKeyLen   = 14 // sym <2b> | ts ^ 1<<63 <8b> | seq <4b>, big-endian
	pebbleValueLen = 16 // price bits <8b> | size <8b>, little-endian
	pebbleCache    = 64 << 20
	pebbleMemTable = 64 << 20
)

type pebbleStore struct {
	dir      string
	readOnly bool // opened by OpenExisting
	db       *pebble.DB
	seq      []uint32 // per symbol: the next tick's seq
	key      [pebbleKeyLen]byte
	val      [pebbleValueLen]byte
	lo, hi   [pebbleKeyLen]byte // iterator bounds; SetBounds copies them
}

func openPebble(dir string, d *suite.Data) (suite.System, error) {
	if len(d.Symbols) > math.MaxUint16+1 {
		return nil, fmt.Errorf("peers: pebble: %d symbols, want at most %d (2-byte key field)", len(d.Symbols), math.MaxUint16+1)
	}
	db, err := openPebbleDB(dir, false)
	if err != nil {
		return nil, err
	}
	return &pebbleStore{dir: dir, db: db, seq: make([]uint32, len(d.Symbols))}, nil
}

// openPebbleExisting opens the database a closed pebbleStore left in dir,
// read-only (no compactions, no flush after the WAL replay).
func openPebbleExisting(dir string, s suite.Shape) (suite.System, error) {
	db, err := openPebbleDB(dir, true)
	if err != nil {
		return nil, err
	}
	return &pebbleStore{dir: dir, readOnly: true, db: db, seq: make([]uint32, len(s.Symbols))}, nil
}

// openPebbleDB opens the database in dir with a fresh block cache.
func openPebbleDB(dir string, readOnly bool) (*pebble.DB, error) {
	cache := pebble.NewCache(pebbleCache)
	defer cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(dir, &pebble.Options{Cache: cache, MemTableSize: pebbleMemTable, Logger: quietLogger{}, ReadOnly: readOnly})
	if err != nil {
		return nil, fmt.Errorf("peers: pebble: open: %w", err)
	}
	return db, nil
}

// Reopen closes the database and opens it again with a fresh (empty)
// block cache.
func (s *pebbleStore) Reopen() error {
	if err := s.Close(); err != nil {
		return err
	}
	db, err := openPebbleDB(s.dir, s.readOnly)
	s.db = db
	return err
}

// putKey writes the key of (sym, ts, seq) into k.
func putKey(k *[pebbleKeyLen]byte, sym int, ts int64, seq uint32) {
	binary.BigEndian.PutUint16(k[0:], uint16(sym))
	binary.BigEndian.PutUint64(k[2:], uint64(ts)^1<<63)
	binary.BigEndian.PutUint32(k[10:], seq)
}

func (s *pebbleStore) Ingest(batch []gen.Tick) error {
	b := s.db.NewBatch()
	for i := range batch {
		t := &batch[i]
		putKey(&s.key, t.Sym, t.Ts, s.seq[t.Sym])
		s.seq[t.Sym]++
		binary.LittleEndian.PutUint64(s.val[0:], math.Float64bits(t.Price))
		binary.LittleEndian.PutUint64(s.val[8:], uint64(t.Size))
		if err := b.Set(s.key[:], s.val[:], nil); err != nil { // Set copies both
			_ = b.Close()
			return fmt.Errorf("peers: pebble: batch set: %w", err)
		}
	}
	err := b.Commit(pebble.NoSync)
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("peers: pebble: commit: %w", err)
	}
	return nil
}

func (s *pebbleStore) Seal() error {
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("peers: pebble: flush: %w", err)
	}
	return nil
}

func (s *pebbleStore) Query(q suite.Query) (suite.Answer, error) {
	var a suite.Answer
	lo, hi, err := symbols(q, len(s.seq))
	if err != nil || q.From >= q.To {
		return a, err
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return a, fmt.Errorf("peers: pebble: new iterator: %w", err)
	}
	for sym := lo; sym < hi; sym++ {
		// seq 0 is the smallest, so [key(From, 0), key(To, 0)) is every
		// tick of sym with From <= ts < To.
		putKey(&s.lo, sym, q.From, 0)
		putKey(&s.hi, sym, q.To, 0)
		it.SetBounds(s.lo[:], s.hi[:])
		for ok := it.First(); ok; ok = it.Next() {
			k, v := it.Key(), it.Value()
			ts := int64(binary.BigEndian.Uint64(k[2:]) ^ 1<<63)
			a.Add(ts, math.Float64frombits(binary.LittleEndian.Uint64(v)))
		}
		if err = it.Error(); err != nil { // the next First clears it
			break
		}
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return a, fmt.Errorf("peers: pebble: iterate: %w", err)
	}
	return a, nil
}

func (s *pebbleStore) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("peers: pebble: close: %w", err)
	}
	return nil
}

// quietLogger drops pebble's informational lines (WAL replay at each
// Reopen) so they do not mix with the report; fatal errors still stop the
// program.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}

func (quietLogger) Fatalf(format string, args ...any) { log.Fatalf(format, args...) }
