package peers

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/internal/harness/suite"
)

// Bufio is the naive baseline: a plain file of fixed 32-byte rows.
var Bufio = suite.Peer{Name: "bufio", Open: openFile, OpenExisting: openFileExisting}

const (
	rowSize       = 32 // ts, price bits, size, sym: 8 bytes each, little-endian
	fileWriteBuf  = 64 << 10
	fileReadBuf   = 1 << 20
	fileStoreName = "ticks.bin"
)

type fileStore struct {
	f    *os.File
	w    *bufio.Writer
	r    *bufio.Reader // reused by every query
	size int64         // bytes written through w
	nsym int
	row  [rowSize]byte
}

func openFile(dir string, d *suite.Data) (suite.System, error) {
	f, err := os.OpenFile(filepath.Join(dir, fileStoreName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("peers: bufio: %w", err)
	}
	return &fileStore{
		f:    f,
		w:    bufio.NewWriterSize(f, fileWriteBuf),
		r:    bufio.NewReaderSize(nil, fileReadBuf),
		nsym: len(d.Symbols),
	}, nil
}

// openFileExisting opens the file a closed fileStore left in dir, read
// only; every row in it counts.
func openFileExisting(dir string, sh suite.Shape) (suite.System, error) {
	f, err := os.Open(filepath.Join(dir, fileStoreName))
	if err != nil {
		return nil, fmt.Errorf("peers: bufio: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("peers: bufio: %w", err)
	}
	return &fileStore{
		f:    f,
		w:    bufio.NewWriterSize(io.Discard, 0), // Close flushes nothing
		r:    bufio.NewReaderSize(nil, fileReadBuf),
		size: st.Size() / rowSize * rowSize,
		nsym: len(sh.Symbols),
	}, nil
}

func (s *fileStore) Ingest(batch []gen.Tick) error {
	for i := range batch {
		t := &batch[i]
		binary.LittleEndian.PutUint64(s.row[0:], uint64(t.Ts))
		binary.LittleEndian.PutUint64(s.row[8:], math.Float64bits(t.Price))
		binary.LittleEndian.PutUint64(s.row[16:], uint64(t.Size))
		binary.LittleEndian.PutUint64(s.row[24:], uint64(t.Sym))
		if _, err := s.w.Write(s.row[:]); err != nil {
			return fmt.Errorf("peers: bufio: write: %w", err)
		}
	}
	s.size += int64(len(batch)) * rowSize
	return nil
}

func (s *fileStore) Seal() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("peers: bufio: flush: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("peers: bufio: sync: %w", err)
	}
	return nil
}

// Reopen has nothing to drop: the file holds no cache of its own.
func (s *fileStore) Reopen() error { return nil }

// Query sees only what Seal (or the writer's buffer filling) has written.
func (s *fileStore) Query(q suite.Query) (suite.Answer, error) {
	var a suite.Answer
	lo, hi, err := symbols(q, s.nsym)
	if err != nil || q.From >= q.To {
		return a, err
	}
	s.r.Reset(io.NewSectionReader(s.f, 0, s.size))
	for {
		if _, err := io.ReadFull(s.r, s.row[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return a, nil
			}
			return a, fmt.Errorf("peers: bufio: read: %w", err)
		}
		ts := int64(binary.LittleEndian.Uint64(s.row[0:]))
		if ts >= q.To {
			return a, nil // rows are in ts order
		}
		sym := int(binary.LittleEndian.Uint64(s.row[24:]))
		if ts >= q.From && sym >= lo && sym < hi {
			a.Add(ts, math.Float64frombits(binary.LittleEndian.Uint64(s.row[8:])))
		}
	}
}

func (s *fileStore) Close() error {
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("peers: bufio: close: %w", err)
	}
	return nil
}
