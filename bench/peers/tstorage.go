package peers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nakabonne/tstorage"

	"github.com/tickdb/tickdb/internal/gen"
	"github.com/tickdb/tickdb/internal/suite"
)

// TStorage stores each symbol as a tstorage series (data model, and why
// Ingest waits and Seal reopens, in the package doc).
var TStorage = suite.Peer{Name: "tstorage", Open: openTStorage}

const (
	tstorageMetric     = "price"
	tstoragePartitions = 10 // the data's time span over the partition duration
	// tstorageWALDir is tstorage's WAL directory under its data path (its
	// own constant is unexported).
	tstorageWALDir = "wal"
	// tstorageUnflushed is how many WAL segments remain once every
	// background flush is done: one per partition tstorage keeps in memory
	// (it keeps the two newest writable).
	tstorageUnflushed = 2
	// tstorageFlushWait bounds the wait for a background flush; a flush
	// that fails is only logged by tstorage, so without it Ingest would
	// wait forever.
	tstorageFlushWait = time.Minute
)

type tstorageStore struct {
	st     tstorage.Storage
	opts   []tstorage.Option
	dir    string
	labels [][]tstorage.Label // per symbol: {sym=<name>}
	rows   []tstorage.Row     // reused by Ingest: InsertRows keeps no reference
}

func openTStorage(dir string, d *suite.Data) (suite.System, error) {
	part := time.Duration((d.Last()-d.First())/tstoragePartitions + 1)
	s := &tstorageStore{
		dir: dir,
		opts: []tstorage.Option{
			tstorage.WithDataPath(dir),
			tstorage.WithTimestampPrecision(tstorage.Nanoseconds),
			tstorage.WithPartitionDuration(part),
		},
		labels: make([][]tstorage.Label, len(d.Symbols)),
	}
	for i, name := range d.Symbols {
		s.labels[i] = []tstorage.Label{{Name: "sym", Value: name}}
	}
	var err error
	if s.st, err = tstorage.NewStorage(s.opts...); err != nil {
		return nil, fmt.Errorf("peers: tstorage: open: %w", err)
	}
	return s, nil
}

func (s *tstorageStore) Ingest(batch []gen.Tick) error {
	if len(batch) == 0 {
		return nil // InsertRows rejects an empty slice
	}
	s.rows = s.rows[:0]
	for i := range batch {
		t := &batch[i]
		s.rows = append(s.rows, tstorage.Row{
			Metric:    tstorageMetric,
			Labels:    s.labels[t.Sym],
			DataPoint: tstorage.DataPoint{Value: t.Price, Timestamp: t.Ts},
		})
	}
	if err := s.st.InsertRows(s.rows); err != nil {
		return fmt.Errorf("peers: tstorage: insert: %w", err)
	}
	return s.waitFlushed()
}

// waitFlushed returns once tstorage's background flushes are done: each
// removes one WAL segment as its last step. Taking the WAL's mutex in the
// next InsertRows or Close then orders the flush before them.
func (s *tstorageStore) waitFlushed() error {
	wal := filepath.Join(s.dir, tstorageWALDir)
	deadline := time.Now().Add(tstorageFlushWait)
	for {
		segs, err := os.ReadDir(wal)
		if err != nil {
			return fmt.Errorf("peers: tstorage: wait for flush: %w", err)
		}
		if len(segs) <= tstorageUnflushed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("peers: tstorage: %d WAL segments after %v, want at most %d: a background flush failed",
				len(segs), tstorageFlushWait, tstorageUnflushed)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func (s *tstorageStore) Seal() error {
	if err := s.st.Close(); err != nil {
		return fmt.Errorf("peers: tstorage: seal: close: %w", err)
	}
	s.st = nil
	if err := syncTree(s.dir); err != nil {
		return fmt.Errorf("peers: tstorage: seal: %w", err)
	}
	st, err := tstorage.NewStorage(s.opts...)
	if err != nil {
		return fmt.Errorf("peers: tstorage: seal: reopen: %w", err)
	}
	s.st = st
	return nil
}

// Reopen closes the storage and opens it again on the same directory.
func (s *tstorageStore) Reopen() error {
	if err := s.st.Close(); err != nil {
		return fmt.Errorf("peers: tstorage: reopen: close: %w", err)
	}
	s.st = nil
	st, err := tstorage.NewStorage(s.opts...)
	if err != nil {
		return fmt.Errorf("peers: tstorage: reopen: %w", err)
	}
	s.st = st
	return nil
}

// syncTree fsyncs every file and directory under dir, dir included.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

func (s *tstorageStore) Query(q suite.Query) (suite.Answer, error) {
	var a suite.Answer
	if s.st == nil {
		return a, errors.New("peers: tstorage: query: closed by a failed Seal")
	}
	lo, hi, err := symbols(q, len(s.labels))
	if err != nil || q.From >= q.To {
		return a, err // Select rejects an empty range
	}
	for sym := lo; sym < hi; sym++ {
		points, err := s.st.Select(tstorageMetric, s.labels[sym], q.From, q.To)
		if errors.Is(err, tstorage.ErrNoDataPoints) {
			continue
		}
		if err != nil {
			return a, fmt.Errorf("peers: tstorage: select %s: %w", s.labels[sym][0].Value, err)
		}
		for _, p := range points {
			a.Add(p.Timestamp, p.Value)
		}
	}
	return a, nil
}

func (s *tstorageStore) Close() error {
	if s.st == nil { // a failed Seal left it closed
		return nil
	}
	if err := s.st.Close(); err != nil {
		return fmt.Errorf("peers: tstorage: close: %w", err)
	}
	return nil
}
