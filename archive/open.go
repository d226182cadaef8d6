package archive

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/reader"
)

// ReaderOptions configures OpenReader; nil means the defaults.
type ReaderOptions struct {
	// Config says how to reach the server (zero: the environment's).
	Config Config
	// Client, when not nil, is used instead of a client dialed with
	// Config: its Stats then count the reader's requests too.
	Client *Client
	// CacheDir is where fetched bytes are kept, shared by the readers of
	// every archive on the machine; "" is TICKDB_CACHE_DIR, else
	// os.UserCacheDir()/tickdb/archive.
	CacheDir string
	// CacheBytes bounds the storage the cache directory takes: past it,
	// the segment files used longest ago are removed (those another open
	// Reader of this process reads last; a Reader keeps reading a file
	// removed under it, whose storage is freed when it closes). The
	// small objects and the views count, but only segments go. 0 is
	// DefaultCacheBytes.
	CacheBytes int64
}

// DefaultCacheBytes is the cache's bound when ReaderOptions leaves it 0.
const DefaultCacheBytes = 1 << 30

// CacheDirEnv names the environment variable that sets the default cache
// directory.
const CacheDirEnv = "TICKDB_CACHE_DIR"

// DefaultCacheDir is the cache directory ReaderOptions leaves "" stands
// for.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv(CacheDirEnv); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("archive: no cache directory (set %s): %w", CacheDirEnv, err)
	}
	return filepath.Join(d, "tickdb", "archive"), nil
}

// Reader is a table of an archive opened read-only: a *reader.Reader on
// a local copy of the table's directory (in the cache) whose compressed
// segments are sparse files filled by range requests as queries read
// them. Every query of the reader, query and export packages works on it
// as on a local table, with the same results.
type Reader struct {
	*reader.Reader
	c        *Client
	m        *Manifest
	cache    *cache
	store    string // the table's objects: CACHE/<location>/<table>/<table id>
	view     string // the database directory of the manifest's view, which this Reader opened
	unlock   func()
	segByPth map[string]*Segment // by the view's seg-N.zdat path

	mu    sync.Mutex
	files map[uint64]*segFile // open segment files, by segment number
	// retired: files evicted while open, still read by the segments
	// opened on them.
	retired []*segFile

	// Fetches run under ctx (OpenReader's, cancelled at Close); the
	// background ones (Prefetch) at most prefetchers at a time, and
	// Close waits for them.
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	bg     sync.WaitGroup
}

// prefetchers is how many segments' headers and tables a Reader fetches
// at once in the background.
const prefetchers = 8

// Client is the reader's S3 client (Stats: its requests and bytes).
func (r *Reader) Client() *Client { return r.c }

// Manifest is the manifest the reader opened.
func (r *Reader) Manifest() *Manifest { return r.m }

// ArchivedBytes is the size of the archived compressed segments.
func (r *Reader) ArchivedBytes() int64 {
	var n int64
	for _, s := range r.m.Segments {
		n += s.Size
	}
	return n
}

// Close closes the table (the embedded *reader.Reader's Close does the
// same: a caller handed only that one closes it so). The cache keeps
// what was fetched, for the next Reader; the view's directory goes once
// no Reader holds it and a Reader of another manifest opens.
func (r *Reader) Close() error { return r.Reader.Close() }

// closed releases what the Reader holds beside its *reader.Reader, as
// that one's Close ends (reader.Options.OnClose).
func (r *Reader) closed() {
	r.cancel()
	r.bg.Wait()
	r.mu.Lock()
	for _, f := range r.files {
		r.cache.release(f.path, r)
		f.close()
	}
	for _, f := range r.retired {
		f.close()
	}
	r.files, r.retired = nil, nil
	r.mu.Unlock()
	r.unlock()
}

// OpenReader opens table of the archive at loc (s3://bucket/prefix)
// read-only (ctx bounds the open and every fetch of the Reader's life): it reads the manifest (the segments archived then; a later
// OpenReader sees those added since), the objects every query needs (the
// control file's copy, the dictionary, the time index and late entries
// of each segment: cached, so a second open reads only the manifest and
// what is new), and builds in the cache a table directory reader.Open
// opens, whose compressed segments are filled on demand. It needs no
// access to the database the archive was written from.
func OpenReader(ctx context.Context, loc, table string, o *ReaderOptions) (*Reader, error) {
	if o == nil {
		o = &ReaderOptions{}
	}
	c := o.Client
	if c == nil {
		var err error
		if c, err = Dial(loc, o.Config); err != nil {
			return nil, err
		}
	}
	m, err := ReadManifest(ctx, c, table)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("archive: %s has no table %q (no %s)", c.loc, table, c.loc.Key(table, ManifestName))
	}
	if len(m.Segments) == 0 {
		return nil, fmt.Errorf("archive: table %s at %s has no segment archived yet", table, c.loc)
	}
	dir := o.CacheDir
	if dir == "" {
		if dir, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	limit := o.CacheBytes
	if limit <= 0 {
		limit = DefaultCacheBytes
	}
	ca, err := openCache(dir, limit)
	if err != nil {
		return nil, err
	}
	endpoint := c.s3.EndpointURL().String()
	h := sha256.Sum256([]byte(endpoint + "\x00" + c.loc.String()))
	store := filepath.Join(ca.dir, hex.EncodeToString(h[:8]), table, m.TableID)
	if err := os.MkdirAll(filepath.Join(store, "obj"), 0o755); err != nil {
		return nil, fmt.Errorf("archive: cache: %w", err)
	}
	_ = os.WriteFile(filepath.Join(ca.dir, hex.EncodeToString(h[:8]), "location"), []byte(endpoint+" "+c.loc.String()+"\n"), 0o644)
	views := filepath.Join(store, "views")
	if err := os.MkdirAll(views, 0o755); err != nil {
		return nil, fmt.Errorf("archive: cache: %w", err)
	}
	// The view of this manifest: shared by every Reader of it, built
	// once (into a temporary directory renamed into place), and held
	// under a shared lock while open; views no Reader holds are swept.
	view := filepath.Join(views, m.identity())
	unlock, err := lockView(view + ".lock")
	if err != nil {
		return nil, fmt.Errorf("archive: cache: %w", err)
	}
	unlock = sync.OnceFunc(unlock)
	sweepViews(views, view)
	r := &Reader{c: c, m: m, cache: ca, store: store, view: view, unlock: unlock,
		segByPth: map[string]*Segment{}, files: map[uint64]*segFile{}, sem: make(chan struct{}, prefetchers)}
	r.ctx, r.cancel = context.WithCancel(ctx)
	fail := func(err error) (*Reader, error) {
		r.cancel()
		unlock()
		return nil, err
	}
	for i := range m.Segments {
		s := &m.Segments[i]
		r.segByPth[format.ZSegPath(filepath.Join(view, table), s.Seg)] = s
	}
	if _, err := os.Stat(filepath.Join(view, "ready")); err != nil {
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		tmp := filepath.Join(views, fmt.Sprintf("tmp-%d-%x", os.Getpid(), rnd))
		err := r.build(ctx, tmp)
		if err == nil {
			err = writeFile(filepath.Join(tmp, "ready"), nil)
		}
		if err == nil {
			if rerr := os.Rename(tmp, view); rerr != nil {
				// Another process built it meanwhile: theirs serves.
				os.RemoveAll(tmp)
				if _, serr := os.Stat(filepath.Join(view, "ready")); serr != nil {
					err = rerr
				}
			}
		}
		if err != nil {
			os.RemoveAll(tmp)
			return fail(fmt.Errorf("archive: open %s of %s: %w", table, c.loc, err))
		}
		ca.recount()
	}
	rd, err := reader.Open(view, table, &reader.Options{Fetch: r.fetcher(), OnClose: r.closed})
	if err != nil {
		return fail(err)
	}
	r.Reader = rd
	return r, nil
}

// object returns the object key's bytes from the cache, fetching it
// (whole) the first time: the objects named by what they hold, which
// never change.
func (r *Reader) object(ctx context.Context, key string) ([]byte, error) {
	path := filepath.Join(r.store, "obj", filepath.Base(key))
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	b, err := r.c.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		if os.Rename(tmp, path) != nil {
			os.Remove(tmp)
		}
	}
	r.cache.added(int64(len(b)))
	return b, nil
}

// build writes the table directory of the archived view into r.view:
// the control file (page 0 the archived one, page 1 published words that
// say every archived row is readable, durable and compressed), the
// dictionary, the time index and late.idx from the segments' pieces, an
// empty post.idx (every row is below the postings floor: in a clustered
// compressed segment, found through its directory), the schema file, and
// a link per segment to its sparse file in the cache.
func (r *Reader) build(ctx context.Context, view string) error {
	m := r.m
	dir := filepath.Join(view, m.Table)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var id [16]byte
	if b, err := hex.DecodeString(m.TableID); err != nil || len(b) != 16 {
		return fmt.Errorf("manifest: table id %q: want 32 hex digits", m.TableID)
	} else {
		copy(id[:], b)
	}
	shift := m.SegShift
	last := m.Segments[len(m.Segments)-1]

	// The objects every query may need, fetched in parallel (cached).
	tsi := make([][]byte, len(m.Segments))
	late := make([][]byte, len(m.Segments))
	syms := make([][]byte, len(m.Sym))
	var page0, schema []byte
	g := newGroup(ctx, 8)
	gctx := g.ctx
	g.Go(func() (err error) { page0, err = r.object(gctx, m.Ctl); return })
	if m.Schema != "" {
		g.Go(func() (err error) { schema, err = r.object(gctx, m.Schema); return })
	}
	for i, s := range m.Segments {
		g.Go(func() (err error) { tsi[i], err = r.object(gctx, s.TsIdx); return })
		if s.Late != "" {
			g.Go(func() (err error) { late[i], err = r.object(gctx, s.Late); return })
		}
	}
	for i, p := range m.Sym {
		g.Go(func() (err error) { syms[i], err = r.object(gctx, p.Key); return })
	}
	if err := g.Wait(); err != nil {
		return err
	}

	// ctl.
	if len(page0) < format.BlockSize {
		return fmt.Errorf("%s: %d bytes, want the control file's first %d", m.Ctl, len(page0), format.BlockSize)
	}
	ctlPath := filepath.Join(dir, format.CtlName)
	ctlBytes := make([]byte, index.CtlSize)
	copy(ctlBytes, page0[:format.BlockSize])
	if err := writeFile(ctlPath, ctlBytes); err != nil {
		return err
	}
	ctl, err := index.OpenCtl(ctlPath, vfs.OS)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Ctl, err)
	}
	if ctl.TableID != id || ctl.SegShift != shift || ctl.StrideShift != m.StrideShift {
		ctl.Close()
		return fmt.Errorf("%s: table id %x, segment shift %d, stride shift %d; the manifest says %s, %d, %d",
			m.Ctl, ctl.TableID, ctl.SegShift, ctl.StrideShift, m.TableID, shift, m.StrideShift)
	}
	if ctl.Schema.SymCol >= 0 {
		for _, s := range m.Segments {
			if s.Version != 2 {
				ctl.Close()
				return fmt.Errorf("segment %d (%s) is compressed in format version %d: a table with a symbol column is read from the archive through its segments' directories (version 2), and this one's postings are not archived", s.Seg, s.Key, s.Version)
			}
		}
	}
	var nlate uint64
	for _, s := range m.Segments {
		nlate += s.LateCount
	}
	floor := (last.Seg + 1) << shift
	ctl.Publish(index.Snap{Visible: m.EndSeq, LastTs: m.LastTs, FirstSeq: m.FirstSeq, NextChunk: 0, Late: nlate})
	ctl.SetDurable(m.EndSeq)
	ctl.SetDurableSegs(m.EndSeq >> shift)
	ctl.SetCmpSegs(last.Seg + 1)
	ctl.SetPostFloor(floor)
	ctl.SetCheckpoint(index.Checkpoint{Seq: m.EndSeq, SymCount: m.SymCount, Late: nlate})
	ctl.SetSyms(m.SymCount, m.SymBytes)
	ctl.SetWriter(0, index.StateClosed)
	ctl.SetLateWindow(m.LateWindow)
	ctl.AddFeatures(m.Features)
	if err := ctl.Sync(); err != nil {
		ctl.Close()
		return err
	}
	if err := ctl.Close(); err != nil {
		return err
	}

	// schema.
	if schema != nil {
		if err := writeFile(filepath.Join(dir, format.SchemaName), schema); err != nil {
			return err
		}
	}

	// sym.dat: the pieces, one after the other.
	symPath := filepath.Join(dir, format.SymName)
	if err := index.CreateSymbols(symPath, id, vfs.OS); err != nil {
		return err
	}
	if err := writeAt(symPath, func(f *os.File) error {
		for i, p := range m.Sym {
			if uint64(len(syms[i])) != p.To-p.From {
				return fmt.Errorf("%s: %d bytes, want %d", p.Key, len(syms[i]), p.To-p.From)
			}
			if _, err := f.WriteAt(syms[i], int64(p.From)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}

	// ts.idx: the segments' entries; those of the rows before the first
	// archived one (never read) repeat its first, so keys never decrease.
	tsPath := filepath.Join(dir, format.TimeIdxName)
	if err := index.CreateTimeIndex(tsPath, id, vfs.OS); err != nil {
		return err
	}
	if err := writeAt(tsPath, func(f *os.File) error {
		first := m.Segments[0]
		if len(tsi[0]) >= 8 && first.TsFirst > 0 {
			fill := make([]byte, 8*min(first.TsFirst, 1<<16))
			for o := 0; o < len(fill); o += 8 {
				copy(fill[o:], tsi[0][:8])
			}
			for k := uint64(0); k < first.TsFirst; k += uint64(len(fill) / 8) {
				n := min(uint64(len(fill)/8), first.TsFirst-k)
				if _, err := f.WriteAt(fill[:8*n], format.BlockSize+int64(8*k)); err != nil {
					return err
				}
			}
		}
		for i, s := range m.Segments {
			if uint64(len(tsi[i])) != 8*s.TsCount {
				return fmt.Errorf("%s: %d bytes, want %d entries of 8", s.TsIdx, len(tsi[i]), s.TsCount)
			}
			if _, err := f.WriteAt(tsi[i], format.BlockSize+int64(8*s.TsFirst)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}

	// late.idx: the segments' late entries in order.
	latePath := filepath.Join(dir, format.LateIdxName)
	if err := index.CreateLateIndex(latePath, id, vfs.OS); err != nil {
		return err
	}
	if err := writeAt(latePath, func(f *os.File) error {
		off := int64(format.BlockSize)
		for i, s := range m.Segments {
			if uint64(len(late[i])) != s.LateCount*index.LateEntrySize {
				return fmt.Errorf("%s: %d bytes, want %d entries of %d", s.Late, len(late[i]), s.LateCount, index.LateEntrySize)
			}
			if _, err := f.WriteAt(late[i], off); err != nil {
				return err
			}
			off += int64(len(late[i]))
		}
		return nil
	}); err != nil {
		return err
	}

	// post.idx: none of it is read (every row is below the floor).
	if err := index.CreatePostings(filepath.Join(dir, format.PostName), id, vfs.OS); err != nil {
		return err
	}

	// The segments: links to their files in the cache (made again when
	// evicted, as they are opened: fetcher).
	for _, s := range m.Segments {
		if err := os.Symlink(r.objPath(s), format.ZSegPath(dir, s.Seg)); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// fetcher is the reader.Options.Fetch of the view: the cached file of
// the segment at path (the view's link to it), opened for filling.
func (r *Reader) fetcher() func(path string) reader.Fetcher {
	return func(path string) reader.Fetcher {
		s := r.segByPth[path]
		if s == nil {
			return nil
		}
		f, err := r.segFile(r.ctx, s, path)
		if err != nil {
			return failed{err}
		}
		return f
	}
}

// segFile returns the open cache file of segment s, linked at path in
// the view.
func (r *Reader) segFile(ctx context.Context, s *Segment, path string) (*segFile, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	obj := r.objPath(*s)
	if f := r.files[s.Seg]; f != nil && f.current() {
		return f, nil
	} else if f != nil {
		// Evicted since (by this process or another): its bytes stay
		// for the segments opened on it, which keep filling it until
		// Close; a new file takes its place for the next opens.
		r.retired = append(r.retired, f)
		delete(r.files, s.Seg)
	}
	f, err := openSegFile(ctx, r.c, r.cache, r, obj, s)
	if err != nil {
		return nil, err
	}
	r.files[s.Seg] = f
	r.cache.hold(obj, r)
	return f, nil
}

// objPath is segment s's file in the cache.
func (r *Reader) objPath(s Segment) string {
	return filepath.Join(r.store, "obj", filepath.Base(s.Key))
}

// identity names the view of m: what its files hold.
func (m *Manifest) identity() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s %d %d %d %d %d %d %s %s %x %d\n", m.TableID, m.FirstSeq, m.EndSeq, m.LastTs, m.SymCount, m.SymBytes,
		m.LateWindow, m.Schema, m.Ctl, m.Features, len(m.Segments))
	for _, s := range m.Segments {
		fmt.Fprintf(h, "%s %s %s %d\n", s.Key, s.TsIdx, s.Late, s.LateCount)
	}
	return fmt.Sprintf("%d-%x", m.EndSeq, h.Sum(nil)[:8])
}

// failed is the Fetcher of a segment whose cache file could not be
// opened: every read of it fails with the error.
type failed struct{ err error }

func (f failed) Fetch(int64, int64) error { return f.err }

// writeFile writes b to a new file at path and syncs it.
func writeFile(path string, b []byte) error {
	return writeAt(path, func(f *os.File) error {
		_, err := f.WriteAt(b, 0)
		return err
	})
}

// writeAt opens path for writing (creating it), runs fn, and syncs it.
func writeAt(path string, fn func(*os.File) error) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	err = fn(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// group runs functions on up to n goroutines and keeps the first error
// (which cancels its context).
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

func newGroup(ctx context.Context, n int) *group {
	ctx, cancel := context.WithCancel(ctx)
	return &group{ctx: ctx, cancel: cancel, sem: make(chan struct{}, n)}
}

func (g *group) Go(fn func() error) {
	g.wg.Add(1)
	g.sem <- struct{}{}
	go func() {
		defer func() { <-g.sem; g.wg.Done() }()
		if err := fn(); err != nil {
			g.once.Do(func() { g.err = err; g.cancel() })
		}
	}()
}

func (g *group) Wait() error {
	g.wg.Wait()
	g.cancel()
	return g.err
}
