package archive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tickdb/tickdb/internal/vfs"
)

// ChunkSize is the unit in which segment bytes are fetched and kept: a
// read of bytes the cache lacks fetches the chunks that hold them, the
// adjacent missing ones in one range request.
const ChunkSize = 64 << 10

// The cache directory (ReaderOptions.CacheDir) holds, per archive
// location and table:
//
//	<location hash>/location                    the endpoint and s3:// location, for people
//	<location hash>/<table>/<table id>/obj/     fetched objects: the small ones whole
//	                                            (time index and late entries, dictionary
//	                                            pieces, the ctl copy, the schema), each
//	                                            segment as a sparse file of the object's
//	                                            size (.zdat) and a byte per chunk saying
//	                                            which of its chunks are there (.zdat.have)
//	<location hash>/<table>/<table id>/views/   a manifest's table directory, which its
//	                                            Readers open (shared, under a shared lock
//	                                            while open; removed once no Reader holds
//	                                            it when one of another manifest opens)
//
// The segment files are the cache's bulk and what it evicts: when the
// directory takes more than the bound, the segment files used longest
// ago go (the .have file's modification time is a segment's last use by
// any process), those another open Reader of this process reads last. A
// segment removed while a Reader has it open stays readable by that
// Reader (through its descriptor and mapping: that storage is freed when
// the Reader closes, and is not the directory's); a Reader that opens it
// again fetches it again.

// cache is one cache directory's accounting in this process.
type cache struct {
	dir   string
	limit int64

	mu    sync.Mutex
	used  int64                       // bytes the directory takes, as last counted plus what was added since
	holds map[string]map[*Reader]bool // segment files open, by path: the Readers holding them
}

var (
	cachesMu sync.Mutex
	caches   = map[string]*cache{}
)

// openCache returns this process's accounting of the cache directory dir
// (created), with the bound limit (the last one asked for).
func openCache(dir string, limit int64) (*cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("archive: cache directory: %w", err)
	}
	cachesMu.Lock()
	defer cachesMu.Unlock()
	c := caches[abs]
	if c == nil {
		c = &cache{dir: abs, holds: map[string]map[*Reader]bool{}, used: -1}
		caches[abs] = c
	}
	c.mu.Lock()
	c.limit = limit
	c.mu.Unlock()
	return c, nil
}

// hold notes that r has the segment file at path open.
func (c *cache) hold(path string, r *Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holds[path] == nil {
		c.holds[path] = map[*Reader]bool{}
	}
	c.holds[path][r] = true
}

// release undoes hold.
func (c *cache) release(path string, r *Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.holds[path], r)
	if len(c.holds[path]) == 0 {
		delete(c.holds, path)
	}
}

// added accounts for n bytes written into the cache by r's fetch of the
// segment file at path ("" for a small object), and evicts past the
// bound.
func (c *cache) added(n int64) { c.addedBy(n, nil, "") }

func (c *cache) addedBy(n int64, r *Reader, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.used >= 0 {
		c.used += n
	}
	if c.used >= 0 && c.used <= c.limit {
		return
	}
	c.evict(r, path)
}

// recount has the next fetch count the directory again (files were
// written that added did not count).
func (c *cache) recount() {
	c.mu.Lock()
	c.used = -1
	c.mu.Unlock()
}

// CacheUsage is the storage the cache directory's files take (blocks
// allocated, each file counted once), and how many segment files it
// holds.
func CacheUsage(dir string) (bytes int64, segments int, err error) {
	files, err := scanCache(dir)
	for _, f := range files {
		bytes += f.alloc
		if strings.HasSuffix(f.path, ".zdat") {
			segments++
		}
	}
	return bytes, segments, err
}

type cacheFile struct {
	path  string
	alloc int64
	used  time.Time // a segment's last use (its .have file's mtime)
}

// scanCache lists the regular files under dir (a file of several links
// once).
func scanCache(dir string) ([]cacheFile, error) {
	var out []cacheFile
	seen := map[fileID]bool{}
	have := map[string]time.Time{}
	err := vfs.WalkFiles(dir, func(path string, fi fs.FileInfo) error {
		if id, ok := idOf(fi); ok {
			if seen[id] {
				return nil
			}
			seen[id] = true
		}
		if strings.HasSuffix(path, ".zdat.have") {
			have[strings.TrimSuffix(path, ".have")] = fi.ModTime()
		}
		out = append(out, cacheFile{path: path, alloc: vfs.Allocated(fi), used: fi.ModTime()})
		return nil
	})
	for i := range out {
		if t, ok := have[out[i].path]; ok {
			out[i].used = t
		}
	}
	return out, err
}

// evict counts the directory and removes segment files, longest unused
// first, until it is within the bound: never one another Reader of this
// process holds, nor keep (the file r is filling). c.mu is held.
func (c *cache) evict(r *Reader, keep string) {
	files, err := scanCache(c.dir)
	if err != nil {
		return // counted again at the next fetch
	}
	var used int64
	var segs []cacheFile
	alloc := map[string]int64{}
	for _, f := range files {
		used += f.alloc
		alloc[f.path] = f.alloc
		if strings.HasSuffix(f.path, ".zdat") && f.path != keep {
			segs = append(segs, f)
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].used.Before(segs[j].used) })
	// Those no other Reader of this process holds first; then, if the
	// directory is still past the bound, theirs too: a Reader keeps
	// reading a file removed under it (its descriptor and mapping), and
	// opens a new one for the segment when it opens it again.
	for pass := range 2 {
		for _, f := range segs {
			if used <= c.limit {
				break
			}
			holders := c.holds[f.path]
			if pass == 0 && (len(holders) > 1 || len(holders) == 1 && !holders[r]) {
				continue
			}
			if removeSeg(f.path) {
				used -= f.alloc + alloc[f.path+".have"]
				f.alloc = 0
			}
		}
	}
	c.used = used
}

// segFile is a segment's sparse file in the cache, open for filling: the
// Fetcher its Reader's compressed segment reads through.
type segFile struct {
	ctx   context.Context
	c     *Client
	cache *cache
	r     *Reader
	path  string
	key   string
	size  int64

	mu      sync.Mutex
	data    *os.File // (its marks, path.have, are opened when needed: a descriptor a segment, not two)
	local   []bool   // chunks known to be in the file
	touched bool
}

// maxAhead is the most chunks a read fetches past its own (read-ahead,
// Fetch): a scan then fetches up to 1 MiB a request.
const maxAhead = 16

// openSegFile opens (creating) the cache file of segment s at path.
func openSegFile(ctx context.Context, c *Client, ca *cache, r *Reader, path string, s *Segment) (*segFile, error) {
	nchunks := (s.Size + ChunkSize - 1) / ChunkSize
	for try := 0; ; try++ {
		data, have, err := openPair(path, s.Size, nchunks)
		if errors.Is(err, errRetry) && try < 10 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("archive: cache file %s: %w", path, err)
		}
		have.Close()
		return &segFile{ctx: ctx, c: c, cache: ca, r: r, path: path, key: s.Key, size: s.Size,
			data: data, local: make([]bool, nchunks)}, nil
	}
}

var errRetry = errors.New("removed meanwhile")

// same reports whether f is the file at path.
func same(f *os.File, path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	fst, err := f.Stat()
	return err == nil && os.SameFile(st, fst)
}

// current reports whether the file is still the one at its path (not
// evicted since).
func (f *segFile) current() bool { return same(f.data, f.path) }

func (f *segFile) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data.Close()
}

// Fetch brings bytes [off, off+n) of the segment into its file: the
// chunks neither this process nor another has fetched, each run of
// adjacent ones in one range request; then it marks them present.
func (f *segFile) Fetch(off, n int64) error {
	if n <= 0 {
		return nil
	}
	lo, hi := off/ChunkSize, (off+n-1)/ChunkSize+1
	f.mu.Lock()
	defer f.mu.Unlock()
	if hi > int64(len(f.local)) {
		return fmt.Errorf("archive: bytes [%d, %d) of %s, a %d-byte object", off, off+n, f.key, f.size)
	}

	all := true
	for c := lo; c < hi; c++ {
		if !f.local[c] {
			all = false
			break
		}
	}
	if all {
		return nil
	}
	if !f.touched {
		now := time.Now()
		_ = os.Chtimes(f.path+".have", now, now) // the segment's last use
		f.touched = true
	}
	// Read ahead: a read right after chunks that are here (a scan going
	// through the file, on however many goroutines) takes as many
	// missing chunks after its own as there are (from 2, at most
	// maxAhead), so that a scan's requests grow to 1 MiB; a read after
	// chunks not here (one symbol's blocks, a probe) takes its own.
	before := int64(0)
	for before < maxAhead && lo-before-1 >= 0 && f.local[lo-before-1] {
		before++
	}
	if before >= 2 {
		end := min(hi+before, int64(len(f.local)))
		for hi < end && !f.local[hi] {
			hi++
		}
	}
	// What other processes fetched: the marks of this file, unless it
	// was evicted (then the marks at its path are another file's, and
	// this one's chunks are its own).
	marks := make([]byte, hi-lo)
	var have *os.File
	if f.current() {
		if h, err := os.OpenFile(f.path+".have", os.O_RDWR, 0); err == nil {
			have = h
			defer have.Close()
			if _, err := have.ReadAt(marks, lo); err != nil {
				return fmt.Errorf("archive: cache file %s.have: %w", f.path, err)
			}
		}
	}
	var fetched int64
	for c := lo; c < hi; {
		if f.local[c] || marks[c-lo] != 0 {
			f.local[c] = true
			c++
			continue
		}
		e := c
		for e < hi && !f.local[e] && marks[e-lo] == 0 {
			e++
		}
		from, to := c*ChunkSize, min(e*ChunkSize, f.size)
		b, err := f.c.GetRange(f.ctx, f.key, from, to-from)
		if err != nil {
			return err
		}
		if _, err := f.data.WriteAt(b, from); err != nil {
			return fmt.Errorf("archive: cache file %s: %w", f.path, err)
		}
		// The bytes are on disk before the marks that say so.
		if err := f.data.Sync(); err != nil {
			return fmt.Errorf("archive: cache file %s: %w", f.path, err)
		}
		ones := make([]byte, e-c)
		for i := range ones {
			ones[i] = 1
		}
		if have != nil {
			if _, err := have.WriteAt(ones, c); err != nil {
				return fmt.Errorf("archive: cache file %s.have: %w", f.path, err)
			}
		}
		for i := c; i < e; i++ {
			f.local[i] = true
		}
		fetched += to - from
		c = e
	}
	if fetched > 0 {
		f.cache.addedBy(fetched, f.r, f.path)
	}
	return nil
}

// Prefetch fetches, in the background, what opening the segment reads:
// its header and its tables (at most the last tail bytes; a small
// segment whole). It is reader.Prefetcher's: a query asks it of the
// segments it will visit, so their fetches overlap.
func (f *segFile) Prefetch(tail int64) {
	r := f.r
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		select {
		case r.sem <- struct{}{}:
		case <-r.ctx.Done():
			return
		}
		defer func() { <-r.sem }()
		// (Errors are the open's to report, which fetches again.)
		if f.size <= 3*ChunkSize || tail >= f.size-ChunkSize {
			_ = f.Fetch(0, f.size)
			return
		}
		if f.Fetch(0, 1) == nil {
			_ = f.Fetch(f.size-tail, tail)
		}
	}()
}
