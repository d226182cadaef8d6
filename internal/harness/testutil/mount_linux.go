package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Small file systems for the tests of what a full disk gets: a
// size-limited tmpfs and an ext4 image on a loop device. Mounting needs
// root (CI runs as root); without it the test skips, or fails when CI is
// set, since a fault test that never runs proves nothing there.

// FSKind names a small file system MountSmall makes.
type FSKind string

// The kinds of small file systems.
const (
	Tmpfs FSKind = "tmpfs"
	Ext4  FSKind = "ext4"
)

// MountSmall mounts a file system of kind with about size bytes of room
// on a fresh directory and returns it; the test's cleanup unmounts it
// (and so frees the loop device) and removes everything.
func MountSmall(t testing.TB, kind FSKind, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		NeedOrSkip(t, "mounting a small %s needs root", kind)
	}
	base := t.TempDir()
	dir := filepath.Join(base, "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	switch kind {
	case Tmpfs:
		if err := unix.Mount("tickdb-test", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)+",mode=0755"); err != nil {
			NeedOrSkip(t, "mount tmpfs: %v", err)
		}
	case Ext4:
		img := filepath.Join(base, "ext4.img")
		if err := os.WriteFile(img, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img, size); err != nil {
			t.Fatal(err)
		}
		// No blocks reserved for root (-m 0): the test's processes run as
		// root and would otherwise see a disk that is full for others only.
		if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
			NeedOrSkip(t, "mkfs.ext4: %v: %s", err, out)
		}
		if out, err := exec.Command("mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
			NeedOrSkip(t, "mount -o loop %s: %v: %s", img, err, out)
		}
	default:
		t.Fatalf("unknown file system %q", kind)
	}
	t.Cleanup(func() { unmount(t, dir) })
	return dir
}

// unmount unmounts dir, retrying while something still holds it (a child
// process the test just killed), then detaching it lazily.
func unmount(t testing.TB, dir string) {
	t.Helper()
	for range 50 {
		err := unix.Unmount(dir, 0)
		if err == nil || errors.Is(err, unix.EINVAL) {
			return
		}
		if !errors.Is(err, unix.EBUSY) {
			t.Errorf("unmount %s: %v", dir, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
		t.Errorf("unmount %s: %v", dir, err)
	}
}

// NeedOrSkip skips t for want of a prerequisite, or fails it when CI is
// set.
func NeedOrSkip(t testing.TB, format string, args ...any) {
	t.Helper()
	Need(t, fmt.Sprintf(format, args...))
}

// Fill writes the file path until its file system has no room left and
// returns how many bytes it wrote: a file of zeros written in 1 MiB, then
// 4 KiB pieces (a full disk, for the tests; remove the file to free it).
func Fill(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	buf := make([]byte, 1<<20)
	for _, piece := range []int{1 << 20, 4 << 10} {
		for {
			m, err := f.Write(buf[:piece])
			n += int64(m)
			if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
				break
			}
			if err != nil {
				return n, fmt.Errorf("fill %s: %w", path, err)
			}
		}
	}
	return n, f.Sync()
}

// Free is the room left to root on the file system holding path.
func Free(path string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return -1
	}
	return int64(st.Bfree) * st.Bsize
}
