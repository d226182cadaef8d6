package suite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/tickdb/tickdb/internal/harness/gen"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Table is the name of the table the suite writes.
const Table = "ticks"

// TickDBPeer is tickdb as a System: AppendBatch of each batch and Publish,
// the O_DIRECT flusher on its default 1 ms interval; Seal closes the writer
// (every row durable, the live slots gone) and opens a reader; queries are
// RangeSym (one symbol, through its postings) and Range (every symbol).
// In the user protocol Seal keeps the writer open (Sync, then a reader
// beside it) and Close closes it as Config.TickDBClose says. OpenExisting
// opens a reader only (a writer's Open would run recovery and may rewrite
// files).
var TickDBPeer = Peer{
	Name: TickDB,
	Open: func(dir string, d *Data) (System, error) {
		return openTickDB(dir, d, writer.FlushInterval)
	},
	OpenExisting: openTickDBExisting,
}

// CloseMode is how tickdb closes its writer at the end of the user
// protocol's ingest (Config.TickDBClose): the maintenance a closing
// ingest process runs.
type CloseMode string

// The close modes. A new kind of maintenance at close is one more case in
// closeWith.
const (
	ClosePlain     CloseMode = "plain"     // writer.Close
	CloseCompacted CloseMode = "compacted" // writer.CloseCompacted(0): every segment compressed
)

// closeWith is the function that closes a writer in mode m ("" is
// ClosePlain).
func closeWith(m CloseMode) (func(*writer.Writer) error, error) {
	switch m {
	case "", ClosePlain:
		return (*writer.Writer).Close, nil
	case CloseCompacted:
		return func(w *writer.Writer) error {
			_, err := w.CloseCompacted(0)
			return err
		}, nil
	}
	return nil, fmt.Errorf("tickdb close mode %q: want %s or %s", m, ClosePlain, CloseCompacted)
}

type tickdbSystem struct {
	dir, live string
	w         *writer.Writer
	r         *reader.Reader
	buf       []byte
	price     store.Col
	it        reader.Iter
	sc        reader.Scan

	// keepWriter makes Seal leave the writer open, as the ingesting
	// process has the table (every row durable, a reader beside it), and
	// Close close it with closeWriter (nil: Close). The user protocol sets
	// both; the suite's other measurements Seal by closing the writer.
	keepWriter  bool
	closeWriter func(*writer.Writer) error
}

// errQueryOnly is the error of Ingest and Seal on a table opened by
// OpenExisting.
var errQueryOnly = errors.New("suite: tickdb: opened for queries only")

// openTickDBExisting opens a reader on the table a tickdbSystem left in
// dir, following the live directory its control file records (none once
// the writer closed).
func openTickDBExisting(dir string, _ Shape) (System, error) {
	r, err := reader.Open(dir, Table, nil)
	if err != nil {
		return nil, err
	}
	price, _ := store.TickSchema().Col("price")
	return &tickdbSystem{dir: dir, r: r, price: price}, nil
}

// liveDir makes a fresh directory for live slots on tmpfs where there is
// one (as the writer's default does), so the suite can remove it.
func liveDir() (string, error) {
	base := "/dev/shm"
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		base = ""
	}
	return os.MkdirTemp(base, "tickdb-bench-*")
}

// openWriter creates table Table in dir with the tick schema, live slots
// in live, the symbols of d in order (so a tick's Sym is its id) and the
// rest of o.
func openWriter(dir, live string, d *Data, o writer.Options) (*writer.Writer, error) {
	o.Schema, o.LiveDir = store.TickSchema(), live
	w, err := writer.Open(dir, Table, &o)
	if err != nil {
		return nil, err
	}
	for i, s := range d.Symbols {
		id, err := w.SymbolString(s)
		if err == nil && id != uint32(i) {
			err = fmt.Errorf("symbol %s got id %d, want %d", s, id, i)
		}
		if err != nil {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

func openTickDB(dir string, d *Data, p writer.FlushPolicy) (*tickdbSystem, error) {
	return openTickDBWith(dir, d, writer.Options{Flush: p})
}

// openTickDBWith is openTickDB with the writer's options o.
func openTickDBWith(dir string, d *Data, o writer.Options) (*tickdbSystem, error) {
	live, err := liveDir()
	if err != nil {
		return nil, err
	}
	w, err := openWriter(dir, live, d, o)
	if err != nil {
		os.RemoveAll(live)
		return nil, err
	}
	price, _ := store.TickSchema().Col("price")
	return &tickdbSystem{dir: dir, live: live, w: w, price: price}, nil
}

// Encode writes t as a row of store.TickSchema into dst (32 bytes; the
// check word is the writer's).
func Encode(dst []byte, t *gen.Tick) {
	le := binary.LittleEndian
	le.PutUint64(dst[0:], uint64(t.Ts))
	le.PutUint64(dst[8:], math.Float64bits(t.Price))
	le.PutUint64(dst[16:], uint64(t.Size))
	le.PutUint32(dst[24:], uint32(t.Sym))
	le.PutUint32(dst[28:], 0)
}

// EncodeAll is every tick of d as rows of store.TickSchema, end to end.
func EncodeAll(d *Data) []byte {
	b := make([]byte, 32*len(d.Ticks))
	for i := range d.Ticks {
		Encode(b[32*i:], &d.Ticks[i])
	}
	return b
}

func (s *tickdbSystem) Ingest(batch []gen.Tick) error {
	if s.w == nil {
		return errQueryOnly
	}
	if n := 32 * len(batch); cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:32*len(batch)]
	for i := range batch {
		Encode(b[32*i:], &batch[i])
	}
	if _, _, err := s.w.AppendBatch(b); err != nil {
		return err
	}
	s.w.Publish()
	return nil
}

func (s *tickdbSystem) Seal() error {
	if s.w == nil {
		return errQueryOnly
	}
	var err error
	if s.keepWriter {
		err = s.w.Sync()
	} else {
		err = s.w.Close()
		s.w = nil
	}
	if err != nil {
		return err
	}
	s.r, err = reader.Open(s.dir, Table, &reader.Options{LiveDir: s.live})
	return err
}

func (s *tickdbSystem) Reopen() error {
	s.sc.Close()
	if err := s.r.Close(); err != nil {
		return err
	}
	var err error
	s.r, err = reader.Open(s.dir, Table, &reader.Options{LiveDir: s.live})
	return err
}

func (s *tickdbSystem) Query(q Query) (Answer, error) {
	var a Answer
	var err error
	if q.Sym != AllSymbols {
		// One symbol: the column scan of its rows (ts and price alone are
		// decoded from compressed segments), in ts order as RangeSym's.
		spec := reader.ScanSpec{Cols: []int{0, priceIdx}, From: q.From, To: q.To, OneSym: true, Sym: uint32(q.Sym)}
		if err := s.r.Scan(spec, &s.sc); err != nil {
			return a, err
		}
		for s.sc.Next() {
			b := s.sc.Block()
			for i, t := range b.I64(0) {
				a.Add(t, b.F64(1)[i])
			}
		}
		return a, s.sc.Err()
	}
	err = s.r.Range(q.From, q.To, &s.it)
	if err != nil {
		return a, err
	}
	for s.it.Next() {
		row := s.it.Row()
		a.Add(row.Ts(), row.F64(s.price))
	}
	return a, s.it.Err()
}

// priceIdx is the price column's index in store.TickSchema.
var priceIdx = store.TickSchema().Index("price")

// Close closes the reader, then the writer if Seal left it open (with
// closeWriter), and removes the live directory.
func (s *tickdbSystem) Close() error {
	var err error
	s.sc.Close()
	if s.r != nil {
		err = s.r.Close()
	}
	if s.w != nil {
		c := s.closeWriter
		if c == nil {
			c = (*writer.Writer).Close
		}
		if e := c(s.w); err == nil {
			err = e
		}
	}
	if e := os.RemoveAll(s.live); err == nil {
		err = e
	}
	return err
}
