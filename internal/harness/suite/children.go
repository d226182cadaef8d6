package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/tickdb/tickdb/internal/harness/child"
)

// The suite's child processes: this binary, re-executed by internal/harness/child
// in one of these roles. Its main (or TestMain) calls MaybeChild first.
const (
	roleObserve    = "bench-observe" // publish → reader's reader (observeChild)
	roleUser       = "bench-user"    // the user protocol's ingesting and fresh processes (userChild)
	roleDemoReader = "demo-reader"   // the demo's verifying reader (demoReaderChild)
)

// Roles is the suite's child roles, for internal/harness/child's Run, with the
// peers the binary runs: the user protocol's fresh process opens the store
// of tickdb or of one of them by name.
func Roles(peers ...Peer) map[string]func() error {
	return map[string]func() error{
		roleObserve:    observeChild,
		roleUser:       func() error { return userChild(peers) },
		roleDemoReader: demoReaderChild,
	}
}

// MaybeChild runs the suite's child process role and exits when this
// process was started as one; otherwise it returns at once. Call it first
// in main (and in TestMain of tests that run the suite), with the peers
// the binary runs (see Roles).
func MaybeChild(peers ...Peer) { child.Run(Roles(peers...)) }

// expect is the fields after word of c's next report, which must start
// with word; an "error" report, an exit or no report within timeout is an
// error naming the child.
func expect(c *child.Child, word string, timeout time.Duration) (string, error) {
	l, err := c.Next(timeout)
	if err != nil {
		return "", fmt.Errorf("%s process (pid %d): waiting for %q: %w: %s", c.Name, c.Pid, word, err, c.LastLog())
	}
	if msg, ok := strings.CutPrefix(l, "error "); ok {
		return "", fmt.Errorf("%s process (pid %d): %s", c.Name, c.Pid, msg)
	}
	rest, ok := strings.CutPrefix(l, word)
	if !ok || (rest != "" && rest[0] != ' ') {
		return "", fmt.Errorf("%s process (pid %d) said %q, want %q", c.Name, c.Pid, l, word)
	}
	return strings.TrimPrefix(rest, " "), nil
}
