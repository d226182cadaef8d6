package peers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nakabonne/tstorage"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/suite"
)

// TStorage stores each symbol as a tstorage series (data model, and why
// Ingest waits and Seal reopens, in the package doc).
var TStorage = suite.Peer{Name: "tstorage", Open: openTStorage, OpenExisting: openTStorageExisting}

const (
	tstorageMetric     = "price"
	tstoragePartitions = 10 // the data's time span over the partition duration
	// tstorageWritable is how many of the newest partitions tstorage keeps
	// in memory, writable (its own constant is unexported); the older ones
	// are flushed to disk by a background goroutine.
	tstorageWritable = 2
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
	// The partitions tstorage has made, mirrored from its rule (a new one
	// when the head's rows span the partition duration at an InsertRows),
	// so Ingest knows how many it must find flushed.
	part             int64
	created          int
	headMin, headMax int64
}

func openTStorage(dir string, d *suite.Data) (suite.System, error) {
	return newTStorage(dir, d.Shape())
}

// openTStorageExisting opens the storage a closed tstorageStore left in
// dir: NewStorage with the same options maps every partition directory
// with a meta.json (all of them after Close) as a disk partition.
func openTStorageExisting(dir string, s suite.Shape) (suite.System, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("peers: tstorage: open existing: %w", err) // NewStorage would make it
	}
	return newTStorage(dir, s)
}

func newTStorage(dir string, d suite.Shape) (suite.System, error) {
	part := (d.Last-d.First)/tstoragePartitions + 1
	s := &tstorageStore{
		dir:  dir,
		part: part,
		opts: []tstorage.Option{
			tstorage.WithDataPath(dir),
			tstorage.WithTimestampPrecision(tstorage.Nanoseconds),
			tstorage.WithPartitionDuration(time.Duration(part)),
			tstorage.WithWALBufferedSize(-1), // no WAL: see the package doc
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
	if s.created == 0 || s.headMax-s.headMin+1 >= s.part {
		s.created++ // this InsertRows starts a partition
		s.headMin = batch[0].Ts
	}
	s.headMax = batch[len(batch)-1].Ts
	if err := s.st.InsertRows(s.rows); err != nil {
		return fmt.Errorf("peers: tstorage: insert: %w", err)
	}
	return s.waitFlushed(s.created - tstorageWritable)
}

// waitFlushed returns once at least want partitions are on disk, each a
// directory holding the meta.json a flush writes last: the background
// flush a new partition started is then done with its writing, and the
// next one cannot overlap it.
func (s *tstorageStore) waitFlushed(want int) error {
	if want <= 0 {
		return nil
	}
	deadline := time.Now().Add(tstorageFlushWait)
	for {
		dirs, err := filepath.Glob(filepath.Join(s.dir, "p-*", "meta.json"))
		if err != nil {
			return fmt.Errorf("peers: tstorage: wait for flush: %w", err)
		}
		if len(dirs) >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("peers: tstorage: %d partitions flushed after %v, want %d: a background flush failed",
				len(dirs), tstorageFlushWait, want)
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
