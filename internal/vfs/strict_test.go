//go:build linux

package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func newStrict(t *testing.T) (*Strict, string) {
	t.Helper()
	root := t.TempDir()
	s, err := NewStrict(root)
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

// crash writes s's durable image to a new directory and returns it.
func crash(t *testing.T, s *Strict) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "after")
	if err := s.Crash(dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func readOr(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func TestStrictNames(t *testing.T) {
	s, root := newStrict(t)
	a := filepath.Join(root, "a")
	f, err := s.OpenFile(a, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Synced bytes, but the name is not: a crash loses the file.
	if _, ok := readOr(t, filepath.Join(crash(t, s), "a")); ok {
		t.Fatal("a file whose directory was never synced survived")
	}
	if err := s.SyncPath(root); err != nil {
		t.Fatal(err)
	}
	if got, ok := readOr(t, filepath.Join(crash(t, s), "a")); got != "hello" || !ok {
		t.Fatalf("after the directory sync: %q %v", got, ok)
	}
	// A rename is durable only with its directory's sync.
	b := filepath.Join(root, "b")
	if err := s.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	dst := crash(t, s)
	if _, ok := readOr(t, filepath.Join(dst, "a")); !ok {
		t.Fatal("the old name is gone before the directory was synced")
	}
	if _, ok := readOr(t, filepath.Join(dst, "b")); ok {
		t.Fatal("the new name is there before the directory was synced")
	}
	if err := s.SyncPath(root); err != nil {
		t.Fatal(err)
	}
	dst = crash(t, s)
	if got, _ := readOr(t, filepath.Join(dst, "b")); got != "hello" {
		t.Fatalf("b after sync: %q", got)
	}
	if _, ok := readOr(t, filepath.Join(dst, "a")); ok {
		t.Fatal("a is still there after the rename's sync")
	}
	// A remove is durable only with its directory's sync, and a name
	// created again is a new file.
	if err := s.Remove(b); err != nil {
		t.Fatal(err)
	}
	f, _ = s.OpenFile(b, os.O_RDWR|os.O_CREATE, 0o644)
	f.Write([]byte("other"))
	f.Sync()
	f.Close()
	if got, _ := readOr(t, filepath.Join(crash(t, s), "b")); got != "hello" {
		t.Fatalf("before the directory sync b holds %q, want the old file", got)
	}
	s.SyncPath(root)
	if got, _ := readOr(t, filepath.Join(crash(t, s), "b")); got != "other" {
		t.Fatalf("after: %q", got)
	}
}

func TestStrictBytes(t *testing.T) {
	s, root := newStrict(t)
	p := filepath.Join(root, "seg")
	f, err := s.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 20); err != nil { // sparse
		t.Fatal(err)
	}
	f.WriteAt([]byte("header"), 0)
	f.Sync()
	s.SyncPath(root)
	// Written, not synced: lost.
	f.WriteAt([]byte("unsynced"), 8192)
	d, err := s.OpenFile(p, os.O_WRONLY|unix.O_DSYNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// O_DSYNC: durable on return.
	d.WriteAt([]byte("dsync"), 4096)
	after := filepath.Join(crash(t, s), "seg")
	b, _ := os.ReadFile(after)
	if len(b) != 1<<20 || !bytes.HasPrefix(b, []byte("header")) || string(b[4096:4101]) != "dsync" || b[8192] != 0 {
		t.Fatalf("after crash: len %d, %q %q %q", len(b), b[:6], b[4096:4101], b[8192:8200])
	}
	// msync of a shared mapping: the range is durable.
	m, err := unix.Mmap(int(f.Fd()), 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	copy(m[12288:], "mapped")
	copy(m[16384:], "not msynced")
	if err := f.Msync(m[12288:16384], 12288); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(crash(t, s), "seg"))
	if string(b[12288:12294]) != "mapped" || b[16384] != 0 || b[8192] != 0 {
		t.Fatalf("after msync: %q %q %q", b[12288:12294], b[16384:16390], b[8192:8200])
	}
	// fsync takes it all, and a punched hole reads as zeros.
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	b, _ = os.ReadFile(filepath.Join(crash(t, s), "seg"))
	if b[0] != 0 || string(b[8192:8200]) != "unsynced" || string(b[16384:16395]) != "not msynced" {
		t.Fatalf("after fsync: %q %q %q", b[:6], b[8192:8200], b[16384:16395])
	}
}

// TestStrictDirs: a directory made, filled, synced and renamed into
// place (how a table is created) is there after a crash only once its
// parent is synced, with the entries it had at its own sync.
func TestStrictDirs(t *testing.T) {
	s, root := newStrict(t)
	tmp, err := s.MkdirTemp(root, ".t.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.OpenFile(filepath.Join(tmp, "ctl"), os.O_RDWR|os.O_CREATE, 0o644)
	f.Write([]byte("ctl"))
	f.Sync()
	f.Close()
	s.SyncPath(tmp)
	g, _ := s.OpenFile(filepath.Join(tmp, "late"), os.O_RDWR|os.O_CREATE, 0o644) // after the sync
	g.Close()
	if err := s.Rename(tmp, filepath.Join(root, "t")); err != nil {
		t.Fatal(err)
	}
	if _, ok := readOr(t, filepath.Join(crash(t, s), "t", "ctl")); ok {
		t.Fatal("the table is there before its parent's sync")
	}
	s.SyncPath(root)
	dst := crash(t, s)
	if got, _ := readOr(t, filepath.Join(dst, "t", "ctl")); got != "ctl" {
		t.Fatalf("ctl %q", got)
	}
	if _, ok := readOr(t, filepath.Join(dst, "t", "late")); ok {
		t.Fatal("an entry made after the directory's sync survived")
	}
	if err := s.MkdirAll(filepath.Join(root, "x", "y"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(crash(t, s), "x")); err == nil {
		t.Fatal("an unsynced directory survived")
	}
	// Outside the root: passed through, not tracked.
	out := filepath.Join(t.TempDir(), "live")
	h, err := s.OpenFile(out, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil || h.tr != nil {
		t.Fatalf("outside the root: %v, tracked %v", err, h.tr != nil)
	}
	h.Close()
}

// TestStrictDrop: a dropped site's syncs happen on the file but not in
// the image; Sites names each site by function and kind of file.
func TestStrictDrop(t *testing.T) {
	s, root := newStrict(t)
	s.Drop = func(site string) bool { return strings.HasSuffix(site, " b.dat") }
	for _, name := range []string{"a.dat", "b.dat"} {
		f, _ := s.OpenFile(filepath.Join(root, name), os.O_RDWR|os.O_CREATE, 0o644)
		f.Write([]byte(name))
		f.Sync()
		f.Close()
	}
	s.SyncPath(root)
	dst := crash(t, s)
	if got, _ := readOr(t, filepath.Join(dst, "a.dat")); got != "a.dat" {
		t.Fatalf("a.dat: %q", got)
	}
	if got, ok := readOr(t, filepath.Join(dst, "b.dat")); !ok || got != "" {
		t.Fatalf("b.dat, whose sync was dropped: %q %v", got, ok)
	}
	sites := s.Sites()
	if len(sites) != 3 || sites[1] != "vfs.TestStrictDrop a.dat" || sites[2] != "vfs.TestStrictDrop b.dat" {
		t.Fatalf("sites %q", sites)
	}
	if fileKind("seg-000042.dat") != "seg-N.dat" || fileKind(root) == "" {
		t.Fatal(fileKind("seg-000042.dat"))
	}
}

// TestStrictSyncOrder: syncs of one file that overlap in time (two
// goroutines msync the same control block) are recorded in whatever
// order they return; the durable bytes are those of the newest view, as
// on a disk, where no sync makes older bytes durable over newer ones.
func TestStrictSyncOrder(t *testing.T) {
	s, root := newStrict(t)
	p := filepath.Join(root, "ctl")
	f, err := s.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s.SyncPath(root)
	view := func(content string) (*image, uint64) {
		if _, err := f.WriteAt([]byte(content), 0); err != nil {
			t.Fatal(err)
		}
		at := s.stamp()
		img, err := readImage(f.File)
		if err != nil {
			t.Fatal(err)
		}
		return img, at
	}
	old, oldAt := view("old!")
	img, at := view("new!")
	f.tr.synced(img, at)
	f.tr.synced(old, oldAt) // the older view returns last
	if got, _ := readOr(t, filepath.Join(crash(t, s), "ctl")); got != "new!" {
		t.Fatalf("fsyncs recorded newest first: %q, want the newest view", got)
	}
	// An msync's older capture, recorded after a newer fsync, neither.
	stale := s.stamp()
	_, at = view("last")
	img, _ = readImage(f.File)
	f.tr.synced(img, at)
	f.tr.wrote([]byte("msyn"), 0, stale)
	if got, _ := readOr(t, filepath.Join(crash(t, s), "ctl")); got != "last" {
		t.Fatalf("an older msync recorded after a newer fsync: %q", got)
	}
	// And a newer one wins.
	f.tr.wrote([]byte("msyn"), 0, s.stamp())
	if got, _ := readOr(t, filepath.Join(crash(t, s), "ctl")); got != "msyn" {
		t.Fatalf("a newer msync: %q", got)
	}
}
