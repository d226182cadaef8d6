package reader_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/tablecheck"

	"golang.org/x/sys/unix"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// Read-only tree: a closed table whose files are 0444 and directories
// 0555 is read completely by a reader, in this process and in another one,
// and nothing in the tree changes. Root ignores permission bits, so the
// test also proves the absence of writes directly: inotify sees no write,
// create, delete or attribute change anywhere in the tree; every file
// descriptor the in-process reader holds into the tree is O_RDONLY
// (/proc/self/fdinfo) and every mapping of it is without write permission
// (/proc/self/maps); the directory listing, sizes, modes, inodes, mtimes
// and ctimes are unchanged. When the test runs as root, the child process
// runs as nobody (uid 65534), for which the permission bits do hold.

const (
	roTable = "ticks"
	roChild = "readonly"
)

func TestReadOnlyTree(t *testing.T) {
	rows := uint64(20_000) // 9.8 segments of 2048 rows: the last one partial
	root := t.TempDir()
	db := filepath.Join(root, "db")
	live := testutil.LiveDir(t)
	w, err := writer.Open(db, roTable, xprocOptions(live))
	if err != nil {
		t.Fatal(err)
	}
	xprocAppend(t, w, rows, 1000, 0)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("live dir after a clean close: %v", err)
	}
	lockDown(t, db)
	before := treeState(t, db)
	watch := watchTree(t, db)

	t.Run("in-process", func(t *testing.T) {
		r, err := reader.Open(db, roTable, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := readEverything(r, db, roTable, rows); err != nil {
			t.Fatal(err)
		}
		checkReadOnlyHandles(t, db)
	})

	t.Run("other-process", func(t *testing.T) {
		o := &testutil.ChildOptions{Env: []string{"TICKDB_DB=" + db, "TICKDB_ROWS=" + strconv.FormatUint(rows, 10)}}
		if os.Geteuid() == 0 {
			// As root the child would bypass the permission bits: run it as
			// nobody, from a copy of this binary it may execute.
			o.Credential = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
			o.Binary = copyTestBinary(t, root)
			o.Dir = root
			openUp(t, root)
		}
		c := testutil.StartChild(t, "TestChildReadOnly", roChild, o)
		f := c.Expect(t, "ok", 2*time.Minute, nil)
		if err := c.Wait(time.Minute); err != nil {
			t.Fatalf("child: %v\n%s", err, c.Log())
		}
		t.Logf("child (uid %s) read the tree: %s", strings.Join(f[:1], ""), strings.Join(f[1:], " "))
	})

	if ev := watch(); len(ev) > 0 {
		t.Errorf("the tree was changed: %s", strings.Join(ev, "; "))
	}
	if after := treeState(t, db); after != before {
		t.Errorf("tree changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Stat(live); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a reader created the live dir %s: %v", live, err)
	}
	tablecheck.Verify(t, db, roTable, rows)
}

// TestChildReadOnly reads the read-only tree in another process (as nobody
// when the parent is root) and reports "ok <uid> <what it did>".
func TestChildReadOnly(t *testing.T) {
	testutil.ChildRole(t, roChild)
	db := testutil.EnvString(t, "TICKDB_DB")
	rows := testutil.EnvUint(t, "TICKDB_ROWS")
	r, err := reader.Open(db, roTable, nil)
	if err != nil {
		testutil.Report("error open: %v", err)
		t.Fatal(err)
	}
	defer r.Close()
	if err := readEverything(r, db, roTable, rows); err != nil {
		testutil.Report("error %v", err)
		t.Fatal(err)
	}
	// Prove the tree is really closed to this process (not root).
	probe := filepath.Join(db, roTable, "probe")
	if os.Geteuid() != 0 {
		if f, err := os.OpenFile(filepath.Join(db, roTable, format.CtlName), os.O_RDWR, 0); err == nil {
			f.Close()
			testutil.Report("error ctl opened read-write as uid %d", os.Geteuid())
			t.Fatal("ctl writable")
		}
		if f, err := os.Create(probe); err == nil {
			f.Close()
			os.Remove(probe)
			testutil.Report("error created a file in the table dir as uid %d", os.Geteuid())
			t.Fatal("table dir writable")
		}
	}
	testutil.Report("ok %d rows %d segments %d symbols %d", os.Geteuid(), r.Len(), (r.Len()+r.SegmentRows()-1)/r.SegmentRows(), r.Symbols())
}

// readEverything reads every row, seeks, ranges, per-symbol ranges, a tail
// and a Verify of a closed table of rows SeqRows, checking every answer.
func readEverything(r *reader.Reader, db, name string, rows uint64) error {
	g := testutil.NewSeqRows()
	names := testutil.NewSymCache(r.SymbolName)
	if n := r.Len(); n != rows {
		return fmt.Errorf("count %d, want %d", n, rows)
	}
	if d := r.Durable(); d != rows {
		return fmt.Errorf("durable %d, want %d", d, rows)
	}
	if pid := r.WriterPid(); pid != 0 {
		return fmt.Errorf("writer pid %d in a closed table", pid)
	}
	for seq := uint64(0); seq < rows; seq++ {
		row, err := r.Get(seq)
		if err != nil {
			return fmt.Errorf("get %d: %w", seq, err)
		}
		if err := g.Check(row, seq, names.Name); err != nil {
			return err
		}
	}
	buf := make(store.Row, g.Schema.RowSize)
	for _, seq := range []uint64{0, 1, rows / 3, rows - 1} {
		if err := r.ReadRow(seq, buf); err != nil {
			return fmt.Errorf("read row %d: %w", seq, err)
		}
		if err := g.Check(buf, seq, names.Name); err != nil {
			return err
		}
	}
	if _, err := r.Get(rows); !errors.Is(err, reader.ErrNotVisible) {
		return fmt.Errorf("get past the end: %v, want ErrNotVisible", err)
	}
	// Seeks: ts has ties (two rows per value), so the answer is even.
	for _, seq := range []uint64{0, 1, 2, 63, 64, 65, 2047, 2048, 2049, rows / 2, rows - 2, rows - 1} {
		got, err := r.SeekTime(g.Ts(seq))
		if err != nil {
			return fmt.Errorf("seek ts of row %d: %w", seq, err)
		}
		if got != seq&^1 {
			return fmt.Errorf("seek ts of row %d: got %d, want %d", seq, got, seq&^1)
		}
	}
	if got, err := r.SeekTime(g.Ts(0) - 1); err != nil || got != 0 {
		return fmt.Errorf("seek before the first row: %d, %v", got, err)
	}
	if got, err := r.SeekTime(g.Ts(rows-1) + 1); err != nil || got != rows {
		return fmt.Errorf("seek past the last row: %d, %v", got, err)
	}
	// A time range over a few segments.
	var it reader.Iter
	a, b := uint64(1000), uint64(9000) // even: range bounds fall on tie starts
	if err := r.Range(g.Ts(a), g.Ts(b), &it); err != nil {
		return err
	}
	want := a
	for it.Next() {
		if it.Seq() != want {
			return fmt.Errorf("range: row %d, want %d", it.Seq(), want)
		}
		if err := g.Check(it.Row(), it.Seq(), names.Name); err != nil {
			return err
		}
		want++
	}
	if it.Err() != nil || want != b {
		return fmt.Errorf("range [%d,%d) ended at %d: %v", a, b, want, it.Err())
	}
	// Every symbol's rows over the whole table and over a range.
	total := uint64(0)
	for id := 0; id < r.Symbols(); id++ {
		n, err := rangeSym(r, g, names, uint32(id), 0, rows)
		if err != nil {
			return err
		}
		total += n
		if _, err := rangeSym(r, g, names, uint32(id), a, b); err != nil {
			return err
		}
	}
	if total != rows {
		return fmt.Errorf("symbol ranges hold %d rows, want %d", total, rows)
	}
	// A tail from the first row sees every row, then nothing.
	tail := r.Tail(0, nil)
	for seq := uint64(0); seq < rows; seq++ {
		row, got, ok, err := tail.Poll()
		if err != nil || !ok || got != seq {
			return fmt.Errorf("tail at %d: row %d ok %v err %v", seq, got, ok, err)
		}
		if err := g.Check(row, seq, nil); err != nil {
			return err
		}
	}
	if _, _, ok, err := tail.Poll(); ok || err != nil {
		return fmt.Errorf("tail past the end: ok %v err %v", ok, err)
	}
	rep, err := reader.Verify(db, name, nil)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	// Rows below the postings floor (compressed segments) have no
	// postings entries: Compacted counts them.
	if rep.Rows != rows || rep.Postings+rep.Compacted != rows || rep.Unpublished != 0 {
		return fmt.Errorf("verify: %+v", rep)
	}
	return nil
}

// rangeSym checks RangeSym over rows [a, b) against the rows' own symbols
// and returns how many rows it gave.
func rangeSym(r *reader.Reader, g *testutil.SeqRows, names *testutil.SymCache, id uint32, a, b uint64) (uint64, error) {
	name, err := names.Name(id)
	if err != nil {
		return 0, err
	}
	var it reader.Iter
	to := g.Ts(b-1) + 1
	if err := r.RangeSym(g.Ts(a), to, id, &it); err != nil {
		return 0, fmt.Errorf("range symbol %q: %w", name, err)
	}
	n, prev := uint64(0), uint64(0)
	for it.Next() {
		seq := it.Seq()
		if seq < a || seq >= b || (n > 0 && seq <= prev) {
			return 0, fmt.Errorf("range symbol %q over [%d,%d): row %d after %d", name, a, b, seq, prev)
		}
		if g.SymName(seq) != name {
			return 0, fmt.Errorf("range symbol %q: row %d names %q", name, seq, g.SymName(seq))
		}
		if err := g.Check(it.Row(), seq, names.Name); err != nil {
			return 0, err
		}
		prev = seq
		n++
	}
	if it.Err() != nil {
		return 0, fmt.Errorf("range symbol %q: %w", name, it.Err())
	}
	// The expected count, from the generator.
	want := uint64(0)
	for seq := a; seq < b; seq++ {
		if g.SymName(seq) == name {
			want++
		}
	}
	if n != want {
		return 0, fmt.Errorf("range symbol %q over [%d,%d): %d rows, want %d", name, a, b, n, want)
	}
	return n, nil
}

// lockDown makes every file of the tree 0444 and every directory 0555,
// restoring them when the test ends.
func lockDown(t *testing.T, dir string) {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range paths {
			if st, err := os.Lstat(p); err == nil && st.IsDir() {
				os.Chmod(p, 0o755)
			} else {
				os.Chmod(p, 0o644)
			}
		}
	})
	// Files first, then directories deepest first.
	for i := len(paths) - 1; i >= 0; i-- {
		st, err := os.Lstat(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o444)
		if st.IsDir() {
			mode = 0o555
		}
		if err := os.Chmod(paths[i], mode); err != nil {
			t.Fatal(err)
		}
	}
}

// treeState lists every entry of the tree with its size, mode, inode,
// mtime and ctime (not atime: reading may update it).
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s size=%d mode=%o ino=%d mtime=%d.%09d ctime=%d.%09d\n", p, st.Size, st.Mode, st.Ino,
			st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// watchTree watches every directory of the tree with inotify for anything
// but reads, and returns a function that reports what was seen.
func watchTree(t *testing.T, dir string) func() []string {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	const mask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
		unix.IN_DELETE_SELF | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MOVE_SELF
	names := map[int]string{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		wd, err := unix.InotifyAddWatch(fd, p, mask)
		if err != nil {
			return fmt.Errorf("inotify watch %s: %w", p, err)
		}
		names[wd] = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return func() []string {
		var out []string
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if n <= 0 || err != nil {
				return out
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				// struct inotify_event: i32 wd, u32 mask, u32 cookie, u32 len, name.
				wd := int32(binary.NativeEndian.Uint32(buf[off:]))
				evMask := binary.NativeEndian.Uint32(buf[off+4:])
				nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+nameLen]), "\x00")
				out = append(out, fmt.Sprintf("%s/%s mask=%#x", names[int(wd)], name, evMask))
				off += unix.SizeofInotifyEvent + nameLen
			}
		}
	}
}

// checkReadOnlyHandles checks that every descriptor this process holds on
// a file under dir is open O_RDONLY and every mapping of one is not
// writable.
func checkReadOnlyHandles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	fds := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasPrefix(target, dir+"/") {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		flags := -1
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				f, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
				if err == nil {
					flags = int(f)
				}
			}
		}
		if flags < 0 || flags&unix.O_ACCMODE != unix.O_RDONLY {
			t.Errorf("fd %s on %s has flags %#o, want O_RDONLY", e.Name(), target, flags)
		}
		fds++
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	maps := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasPrefix(fields[5], dir+"/") {
			continue
		}
		if strings.Contains(fields[1], "w") {
			t.Errorf("mapping %s of %s is writable", fields[1], fields[5])
		}
		maps++
	}
	if fds == 0 || maps < 4 {
		t.Errorf("found %d descriptors and %d mappings of the tree: the check saw nothing", fds, maps)
	}
	t.Logf("checked %d descriptors and %d mappings into the tree", fds, maps)
}

// copyTestBinary copies this test binary into dir with mode 0755, so that
// another user may execute it.
func copyTestBinary(t *testing.T, dir string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "reader.test")
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// openUp lets other users traverse dir and its parent (t.TempDir makes
// them 0700).
func openUp(t *testing.T, dir string) {
	t.Helper()
	for _, p := range []string{filepath.Dir(dir), dir} {
		if p == os.TempDir() || p == "/" {
			continue
		}
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
