package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// Options configures an Archiver; nil means the defaults.
type Options struct {
	SyncOptions
	// Interval is how often every table is looked at for segments to
	// upload (default 1 s); Kick asks for a look at once.
	Interval time.Duration
	// MaxBackoff bounds the wait between attempts after a failure (the
	// wait doubles from Interval up to it; default 30 s).
	MaxBackoff time.Duration
	// Tables, when set, archives only these tables.
	Tables []string
	Logger *slog.Logger
	// StatusFile, when set, is where the Archiver keeps its Status as
	// JSON (a StatusReport), rewritten after every pass that changed it,
	// for tickdb stat in another process (serve: DB/archive-status.json).
	StatusFile string
}

// StatusName is the status file serve keeps in its database directory.
const StatusName = "archive-status.json"

// StatusReport is the status file's content.
type StatusReport struct {
	Location string        `json:"location"`
	Pid      int           `json:"pid"`
	Updated  time.Time     `json:"updated"`
	Tables   []TableStatus `json:"tables"`
}

// ReadStatus reads a status file; (nil, nil) when there is none.
func ReadStatus(path string) (*StatusReport, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := new(StatusReport)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("archive: status file %s: %w", path, err)
	}
	return r, nil
}

// writeStatus rewrites the status file (write, then rename).
func (a *Archiver) writeStatus() {
	if a.o.StatusFile == "" {
		return
	}
	b, err := json.MarshalIndent(StatusReport{Location: a.c.loc.String(), Pid: os.Getpid(), Updated: time.Now().UTC(), Tables: a.Status()}, "", " ")
	if err != nil {
		return
	}
	tmp := a.o.StatusFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		_ = os.Rename(tmp, a.o.StatusFile)
	}
}

// TableStatus is an Archiver's account of one table.
type TableStatus struct {
	Table string `json:"table"`
	// ArchivedRows is the end of the archived rows [first, end): the
	// manifest's EndSeq. ArchivedSegs is the number of the first segment
	// not archived whole: retention may delete the segments below it.
	ArchivedRows uint64 `json:"archived_rows"`
	ArchivedSegs uint64 `json:"archived_segs"`
	// LastTs is the newest ts the archive holds (0: none yet).
	LastTs int64 `json:"archived_last_ts"`
	// Pending: compressed segments on the local disk the manifest does
	// not list yet, and their bytes (the archive's lag).
	PendingSegs  uint64 `json:"pending_segments"`
	PendingBytes int64  `json:"pending_bytes"`
	// Uploaded counts segments and bytes this Archiver put.
	UploadedSegs  int64 `json:"uploaded_segments"`
	UploadedBytes int64 `json:"uploaded_bytes"`
	// LastSync is when the manifest last matched the local table (zero:
	// never); Err is the last attempt's error ("" after a success),
	// Failures how many attempts in a row failed.
	LastSync time.Time `json:"last_sync"`
	Err      string    `json:"error,omitempty"`
	ErrAt    time.Time `json:"error_at"`
	Failures int       `json:"failures"`
	// known: a manifest was read (ArchivedSegs is the archive's).
	known bool
	next  time.Time // the next attempt after a failure
}

// Archiver uploads a database's tables continuously, in the background:
// every compressed segment once it is on the disk (Sync), retrying with
// backoff while the server is away; after a restart it goes on from each
// table's manifest.
type Archiver struct {
	c    *Client
	db   string
	o    Options
	log  *slog.Logger
	kick chan struct{}
	stop context.CancelFunc
	done chan struct{}
	mu   sync.Mutex
	st   map[string]*TableStatus
}

// Start starts archiving database directory db to c's location.
func Start(c *Client, db string, o *Options) *Archiver {
	a := &Archiver{c: c, db: db, kick: make(chan struct{}, 1), done: make(chan struct{}), st: map[string]*TableStatus{}}
	if o != nil {
		a.o = *o
	}
	if a.o.Interval <= 0 {
		a.o.Interval = time.Second
	}
	if a.o.MaxBackoff <= 0 {
		a.o.MaxBackoff = 30 * time.Second
	}
	a.log = a.o.Logger
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.stop = cancel
	go a.run(ctx)
	return a
}

// Location is where the Archiver archives to.
func (a *Archiver) Location() Location { return a.c.loc }

// Kick asks for a look at every table now (a segment was compressed).
func (a *Archiver) Kick() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Close stops the Archiver: an upload in flight is cut short (the next
// start does it again) and the manifest is never left naming a segment
// that is not up.
func (a *Archiver) Close() error {
	a.stop()
	<-a.done
	return nil
}

// Status is every table's account, by name.
func (a *Archiver) Status() []TableStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]TableStatus, 0, len(a.st))
	for _, s := range a.st {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}

// TableStatus is one table's account (ok false: not looked at yet).
func (a *Archiver) TableStatus(table string) (TableStatus, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.st[table]
	if !ok {
		return TableStatus{Table: table}, false
	}
	return *s, true
}

// RetainBelow is the retention gate for table: segments below the
// returned number are in the archive's manifest (or were never to be
// archived, being below its first row), so retention may delete them;
// 0 until the manifest was read. It is safe to call from any goroutine.
func (a *Archiver) RetainBelow(table string) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.st[table]; ok && s.known {
		return s.ArchivedSegs
	}
	return 0
}

// Wait blocks until every table's manifest holds every compressed
// segment on the disk (no pending segment and no error), or ctx ends.
func (a *Archiver) Wait(ctx context.Context, tables ...string) error {
	for {
		a.Kick()
		ok := true
		for _, t := range tables {
			s, seen := a.TableStatus(t)
			if !seen || s.PendingSegs > 0 || s.Err != "" || s.LastSync.IsZero() {
				ok = false
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (a *Archiver) run(ctx context.Context) {
	defer close(a.done)
	t := time.NewTicker(a.o.Interval)
	defer t.Stop()
	for {
		a.pass(ctx)
		a.writeStatus()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.kick:
		}
	}
}

// pass syncs every table whose backoff has passed.
func (a *Archiver) pass(ctx context.Context) {
	for _, table := range a.tables() {
		if ctx.Err() != nil {
			return
		}
		a.mu.Lock()
		s := a.st[table]
		if s == nil {
			s = &TableStatus{Table: table}
			a.st[table] = s
		}
		wait := s.next
		a.mu.Unlock()
		if time.Now().Before(wait) {
			continue
		}
		res, err := Sync(ctx, a.c, a.db, table, &a.o.SyncOptions)
		if ctx.Err() != nil {
			return
		}
		a.mu.Lock()
		if m := res.Manifest; m != nil {
			s.ArchivedRows, s.LastTs, s.known = m.EndSeq, m.LastTs, true
			s.ArchivedSegs = m.EndSeq >> m.SegShift // a partial last segment is not archived whole
			if m.EndSeq == m.FirstSeq {
				s.ArchivedSegs = m.FirstSeq >> m.SegShift
			}
		}
		s.PendingSegs, s.PendingBytes = res.PendingSegs, res.PendingBytes
		s.UploadedSegs += int64(res.Segments)
		s.UploadedBytes += res.Bytes
		if err != nil {
			s.Failures++
			if s.Err != err.Error() {
				a.log.Warn("archive: upload failed; retrying with backoff", "table", table, "to", a.c.loc.String(), "err", err)
			}
			s.Err, s.ErrAt = err.Error(), time.Now()
			back := a.o.Interval << min(s.Failures, 16)
			back = min(back, a.o.MaxBackoff)
			back = back/2 + rand.N(back/2+1)
			s.next = time.Now().Add(back)
			if res.Manifest == nil {
				s.PendingSegs, s.PendingBytes = localPending(a.db, table, s.ArchivedSegs)
			}
		} else {
			if s.Err != "" {
				a.log.Info("archive: uploading again", "table", table, "after_failures", s.Failures)
			}
			s.Err, s.Failures, s.next = "", 0, time.Time{}
			if res.PendingSegs == 0 {
				s.LastSync = time.Now()
			}
		}
		a.mu.Unlock()
	}
}

// localPending counts the compressed segment files from segment n on.
func localPending(db, table string, n uint64) (segs uint64, bytes int64) {
	ents, _ := os.ReadDir(filepath.Join(db, table))
	for _, e := range ents {
		var k uint64
		if name := e.Name(); filepath.Ext(name) == ".zdat" && parseSeg(name, &k) && k >= n {
			if info, err := e.Info(); err == nil {
				segs++
				bytes += info.Size()
			}
		}
	}
	return segs, bytes
}

func parseSeg(name string, n *uint64) bool {
	var k uint64
	if _, err := fmt.Sscanf(name, "seg-%d.zdat", &k); err != nil {
		return false
	}
	*n = k
	return true
}

// tables lists the database's tables (Options.Tables when set).
func (a *Archiver) tables() []string {
	if len(a.o.Tables) > 0 {
		return a.o.Tables
	}
	ents, err := os.ReadDir(a.db)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || store.ValidTableName(e.Name()) != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(a.db, e.Name(), format.CtlName)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		out = append(out, e.Name())
	}
	return out
}
