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
