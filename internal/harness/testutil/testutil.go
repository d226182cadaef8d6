// Package testutil holds helpers shared by tickdb's tests: temporary
// databases whose live slots are removed from /dev/shm afterwards, and the
// race-detector switch for allocation tests.
package testutil

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// LiveDir returns a fresh live-slot directory under /dev/shm (or the temp
// dir where /dev/shm is missing) that is removed when the test ends.
func LiveDir(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	root := "/dev/shm"
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		root = os.TempDir()
	}
	dir := filepath.Join(root, "tickdb-test-"+hex.EncodeToString(b[:]))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// DB returns a temporary database directory and a live directory for it,
// both removed when the test ends.
func DB(t testing.TB) (db, live string) {
	t.Helper()
	return t.TempDir(), LiveDir(t)
}

// Need fails the test under CI (CI set to anything but "", "0" or
// "false": CI systems set CI=true or CI=1) and skips it otherwise: a
// prerequisite (a browser, a Python with numpy, root to mount a file
// system) that CI installs must not turn into a quiet skip there.
func Need(t testing.TB, msg string) {
	t.Helper()
	switch os.Getenv("CI") {
	case "", "0", "false":
		t.Skip(msg)
	}
	t.Fatal(msg)
}
