package vfs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Strict is an FS over the real files under a root directory that also
// keeps the durable image of that tree: what a power cut would leave,
// under the strictest reading of POSIX. A file's bytes count once an
// O_DSYNC write, an fsync or an msync covered them; a directory's entries
// (a created, renamed or removed name) once the directory was fsynced.
// Anything else, however long ago it was written, reads as it was at the
// last sync (zeros where never synced) in the image Crash writes out.
//
// Strict tracks the paths under its root that go through it; paths
// outside (live slots on tmpfs) pass straight to the file system.
//
// Drop plants a missing sync: a sync whose site it reports true for is
// done on the real file but not recorded, as if the call were not there.
// A site is the function that called into the seam, outside this package,
// internal/mmap and internal/index, and the kind of file ("writer.(*flusher).flushTo
// seg-N.dat"); Sites lists those seen.
type Strict struct {
	// Drop, when set, is asked for each sync's site before it is
	// recorded; set it before the FS is used.
	Drop func(site string) bool

	root  string
	mu    sync.Mutex
	top   *node
	sites map[string]int
	// clock stamps each sync's view of a file or directory when it is
	// taken: syncs of one file that overlap in time (msyncs of ctl from
	// two goroutines, a directory's) each keep what is newest, as on a
	// real disk, where no sync makes older bytes durable over newer.
	clock uint64
}

// node is a file or directory of the tracked tree. Nodes, not paths, are
// the identity: a renamed file keeps its node (and its durable bytes),
// and a name removed and created again gets a new one, while a durable
// listing may still hold the old.
type node struct {
	dir bool
	// Directories: the entries as they are, and as of the last fsync.
	kids, durKids map[string]*node
	kidsAt        uint64 // the stamp of durKids
	// Files: the durable bytes by 4 KiB block and the durable size, with
	// the stamps of the syncs that recorded them.
	blocks map[int64]*block
	size   int64
	sizeAt uint64
}

// block is a durable 4 KiB block of a file: its bytes (nil: zeros) as
// of the sync stamped at.
type block struct {
	b  []byte
	at uint64
}

const blockSize = 4096

// tracked is a File's link to its node.
type tracked struct {
	s    *Strict
	n    *node
	name string
}

// NewStrict tracks the tree under root, which must exist; what is there
// already counts as durable.
func NewStrict(root string) (*Strict, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	s := &Strict{root: filepath.Clean(abs), sites: map[string]int{}}
	if s.top, err = scan(s.root); err != nil {
		return nil, fmt.Errorf("vfs: scan %s: %w", root, err)
	}
	return s, nil
}

// scan builds the node of path from the real tree, all of it durable.
func scan(path string) (*node, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		n := &node{dir: true, kids: map[string]*node{}}
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !e.IsDir() && !e.Type().IsRegular() {
				continue
			}
			k, err := scan(filepath.Join(path, e.Name()))
			if err != nil {
				return nil, err
			}
			n.kids[e.Name()] = k
		}
		n.durKids = clone(n.kids)
		return n, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := readImage(f)
	if err != nil {
		return nil, err
	}
	n := &node{}
	n.synced(img, 0)
	return n, nil
}

func clone(m map[string]*node) map[string]*node {
	c := make(map[string]*node, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// rel splits name into its components under the root, or reports false
// for a path outside it.
func (s *Strict) rel(name string) ([]string, bool) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, false
	}
	r, err := filepath.Rel(s.root, filepath.Clean(abs))
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return nil, false
	}
	if r == "." {
		return nil, true
	}
	return strings.Split(r, string(filepath.Separator)), true
}

// lookup returns the node at name as the tree is now (nil: none, or
// outside the root), and its parent directory's node with the last
// component.
func (s *Strict) lookup(name string) (n, parent *node, base string, inside bool) {
	parts, ok := s.rel(name)
	if !ok {
		return nil, nil, "", false
	}
	if len(parts) == 0 {
		return s.top, nil, "", true
	}
	d := s.top
	for _, p := range parts[:len(parts)-1] {
		k := d.kids[p]
		if k == nil || !k.dir {
			return nil, nil, "", true
		}
		d = k
	}
	base = parts[len(parts)-1]
	return d.kids[base], d, base, true
}

// OpenFile opens name; under the root, a file it creates is a new node,
// durable once its directory is synced.
func (s *Strict) OpenFile(name string, flag int, perm os.FileMode) (*File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	file := &File{File: f, dsync: flag&dsyncFlags != 0}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, parent, base, inside := s.lookup(name)
	if !inside {
		return file, nil
	}
	if n == nil {
		if parent == nil {
			f.Close()
			return nil, fmt.Errorf("vfs: %s: its directory was made outside the seam", name)
		}
		n = &node{}
		parent.kids[base] = n
	}
	file.tr = &tracked{s: s, n: n, name: name}
	return file, nil
}

// Rename renames from to to; under the root both names change for
// the durable image when their directories are synced.
func (s *Strict) Rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, fp, fb, _ := s.lookup(from)
	if n == nil {
		return nil
	}
	delete(fp.kids, fb)
	if _, tp, tb, _ := s.lookup(to); tp != nil {
		tp.kids[tb] = n
	}
	return nil
}

// Remove removes name.
func (s *Strict) Remove(name string) error {
	if err := os.Remove(name); err != nil {
		return err
	}
	s.forget(name)
	return nil
}

// RemoveAll removes name and what is under it.
func (s *Strict) RemoveAll(name string) error {
	if err := os.RemoveAll(name); err != nil {
		return err
	}
	s.forget(name)
	return nil
}

func (s *Strict) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, p, b, _ := s.lookup(name); n != nil && p != nil {
		delete(p.kids, b)
	}
}

// MkdirAll makes name and its missing parents.
func (s *Strict) MkdirAll(name string, perm os.FileMode) error {
	if err := os.MkdirAll(name, perm); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parts, ok := s.rel(name)
	if !ok {
		return nil
	}
	d := s.top
	for _, p := range parts {
		k := d.kids[p]
		if k == nil {
			k = &node{dir: true, kids: map[string]*node{}, durKids: map[string]*node{}}
			d.kids[p] = k
		}
		d = k
	}
	return nil
}

// MkdirTemp is os.MkdirTemp.
func (s *Strict) MkdirTemp(dir, pattern string) (string, error) {
	name, err := os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, p, b, _ := s.lookup(name); p != nil {
		p.kids[b] = &node{dir: true, kids: map[string]*node{}, durKids: map[string]*node{}}
	}
	return name, nil
}

// SyncPath fsyncs name: a directory's entries, or a file's bytes, become
// durable, as they were when it was called.
func (s *Strict) SyncPath(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	s.mu.Lock()
	n, _, _, _ := s.lookup(name)
	var kids map[string]*node
	if n != nil && n.dir {
		kids = clone(n.kids)
	}
	at := s.stampLocked()
	s.mu.Unlock()
	var img *image
	if n != nil && !n.dir {
		if img, err = readImage(f); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	switch {
	case n == nil:
	case n.dir:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.record(name) && at > n.kidsAt {
			n.durKids, n.kidsAt = kids, at
		}
	default:
		(&tracked{s: s, n: n, name: name}).synced(img, at)
	}
	return nil
}

// stamp is a new stamp for a sync's view of a file, taken as the view
// is: later stamps are newer views.
func (s *Strict) stamp() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stampLocked()
}

func (s *Strict) stampLocked() uint64 {
	s.clock++
	return s.clock
}

// wrote records b, the bytes at off as of stamp at, as durable.
func (t *tracked) wrote(b []byte, off int64, at uint64) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.record(t.name) {
		return
	}
	t.n.put(b, off, at)
}

// synced records img, the file as it was when its fsync was called
// (stamp at), as durable.
func (t *tracked) synced(img *image, at uint64) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.record(t.name) {
		return
	}
	t.n.synced(img, at)
}

// synced makes img the file's durable bytes and size, but for the blocks
// (and size) a newer sync recorded.
func (n *node) synced(img *image, at uint64) {
	if n.blocks == nil {
		n.blocks = map[int64]*block{}
	}
	for bi, b := range n.blocks {
		if b.at <= at && img.blocks[bi] == nil {
			n.blocks[bi] = &block{at: at} // zeros now
		}
	}
	for bi, b := range img.blocks {
		if old := n.blocks[bi]; old == nil || old.at <= at {
			n.blocks[bi] = &block{b: b, at: at}
		}
	}
	if at >= n.sizeAt {
		n.size, n.sizeAt = img.size, at
	}
}

// record counts the calling site of a sync of the file name and reports
// whether it is to be recorded (Drop did not claim it). Called with mu
// held.
func (s *Strict) record(name string) bool {
	site := callSite() + " " + fileKind(name)
	s.sites[site]++
	return s.Drop == nil || !s.Drop(site)
}

// Sites returns the sync sites seen so far, sorted.
func (s *Strict) Sites() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.sites))
	for k := range s.sites {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// callSite names the first function on the stack outside this package,
// internal/mmap and internal/index: the code that decided to sync (the
// index files' msync is index's, but whether and when it runs is the
// writer's: its checkpoint, its flusher before rows naming new symbols).
func callSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		fr, more := frames.Next()
		fn := fr.Function
		seam := strings.Contains(fn, "/internal/mmap.") || strings.Contains(fn, "/internal/index.") ||
			strings.Contains(fn, "/internal/vfs.") && !strings.HasSuffix(fr.File, "_test.go")
		if !seam {
			return fn[strings.LastIndex(fn, "/")+1:]
		}
		if !more {
			return "?"
		}
	}
}

// fileKind is a file's name with its digits replaced by N
// (seg-000042.dat → seg-N.dat): the sites of one kind of file group
// together.
func fileKind(name string) string {
	b := []byte(filepath.Base(name))
	out := b[:0]
	for i := 0; i < len(b); i++ {
		if b[i] >= '0' && b[i] <= '9' {
			if len(out) == 0 || out[len(out)-1] != 'N' {
				out = append(out, 'N')
			}
			continue
		}
		out = append(out, b[i])
	}
	return string(out)
}

// put stores b at off in the durable blocks, as of stamp at, but in
// blocks a newer sync recorded.
func (n *node) put(b []byte, off int64, at uint64) {
	if n.blocks == nil {
		n.blocks = map[int64]*block{}
	}
	if end := off + int64(len(b)); end > n.size && at >= n.sizeAt {
		n.size, n.sizeAt = end, at
	}
	for len(b) > 0 {
		bi, in := off/blockSize, int(off%blockSize)
		c := min(len(b), blockSize-in)
		old := n.blocks[bi]
		if old == nil || old.at <= at {
			blk := make([]byte, blockSize)
			if old != nil && old.b != nil {
				copy(blk, old.b)
			}
			copy(blk[in:], b[:c])
			if isZero(blk) {
				blk = nil
			}
			n.blocks[bi] = &block{b: blk, at: at}
		}
		b, off = b[c:], off+int64(c)
	}
}

// image is a file's bytes (by block, all-zero blocks absent) and size.
type image struct {
	blocks map[int64][]byte
	size   int64
}

// readImage reads f's bytes as they are, only its data extents (segment
// files are large and sparse).
func readImage(of *os.File) (*image, error) {
	// A descriptor of its own, for reading: the caller's may be
	// write-only, or O_DIRECT (which reads only aligned buffers).
	f, err := reopenRead(of)
	if err != nil {
		return nil, fmt.Errorf("vfs: read %s: %w", of.Name(), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	img := &image{blocks: map[int64][]byte{}, size: st.Size()}
	buf := make([]byte, 1<<20)
	for off := int64(0); off < img.size; {
		data, hole, ok := extent(f, off, img.size)
		if !ok {
			break // no data past off
		}
		data &^= blockSize - 1
		for p := data; p < hole; {
			m, err := f.ReadAt(buf[:min(int64(len(buf)), hole-p)], p)
			if m > 0 {
				putBlocks(img.blocks, buf[:m], p)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("vfs: read %s: %w", of.Name(), err)
			}
			p += int64(m)
		}
		off = hole
	}
	return img, nil
}

// putBlocks stores b (at a block-aligned off) block by block, leaving out
// the all-zero ones.
func putBlocks(blocks map[int64][]byte, b []byte, off int64) {
	for len(b) > 0 {
		c := min(len(b), blockSize)
		if !isZero(b[:c]) {
			blk := make([]byte, blockSize)
			copy(blk, b[:c])
			blocks[off/blockSize] = blk
		}
		b, off = b[c:], off+int64(c)
	}
}

var zeroBlock [blockSize]byte

func isZero(b []byte) bool { return bytes.Equal(b, zeroBlock[:len(b)]) }

// Crash writes the durable image of the tree to dst, a directory that
// must not exist: what a machine would find after a power cut at this
// moment. The real tree is left as it is (the writer goes on, unaware).
func (s *Strict) Crash(dst string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	return s.top.writeOut(dst)
}

func (n *node) writeOut(path string) error {
	if n.dir {
		for name, k := range n.durKids {
			p := filepath.Join(path, name)
			if k.dir {
				if err := os.Mkdir(p, 0o755); err != nil {
					return err
				}
			}
			if err := k.writeOut(p); err != nil {
				return err
			}
		}
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(n.size); err != nil {
		return err
	}
	for bi, blk := range n.blocks {
		off := bi * blockSize
		if off >= n.size || blk.b == nil {
			continue
		}
		if _, err := f.WriteAt(blk.b[:min(int64(blockSize), n.size-off)], off); err != nil {
			return err
		}
	}
	return nil
}
