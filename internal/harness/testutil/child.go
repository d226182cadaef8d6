package testutil

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/child"
)

// Cross-process tests re-execute their own test binary with
// -test.run=^TestChildXxx$ and ChildEnv set to a role name; that
// TestChildXxx function then acts as the child (and skips when ChildEnv is
// not its role, since it is not a real test then). The child talks to the
// parent through protocol lines on stdout (Report) and commands on stdin
// (Commands); anything else the child prints (testing's own output, panics)
// is kept for the parent's failure messages. No TestMain is involved, so
// this composes with whatever TestMain a package has. The process
// handling is internal/harness/child's; this file adds testing.TB to it.

// ChildEnv names the environment variable that carries a child's role.
const ChildEnv = child.Env

// ChildRole skips t unless this process was started by StartChild in the
// given role.
func ChildRole(t testing.TB, role string) {
	t.Helper()
	if child.Role() != role {
		t.Skip("child process role; runs only when re-executed by a cross-process test")
	}
}

// Report writes one protocol line to the parent. The line goes out in a
// single write(2) on the unbuffered stdout, so a SIGKILL leaves either the
// whole line or none of it in the pipe.
func Report(format string, args ...any) { child.Report(format, args...) }

// ChildFatalf reports an "error" line to the parent (whose Expect fails
// with it) and fails the child test t.
func ChildFatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	Report("error "+format, args...)
	t.Fatalf(format, args...)
}

// Commands returns the lines the parent sends on stdin. The channel is
// closed at EOF, which is when the reading goroutine ends: a child that
// returns normally waits for that (the parent closes stdin with
// CloseStdin), so it leaves no goroutine behind.
func Commands() <-chan string { return child.Commands() }

// EnvString returns the environment variable key, failing t when it is unset.
func EnvString(t testing.TB, key string) string {
	t.Helper()
	v, ok := os.LookupEnv(key)
	if !ok {
		Report("error missing environment variable %s", key)
		t.Fatalf("missing environment variable %s", key)
	}
	return v
}

// EnvUint returns the environment variable key as an unsigned integer.
func EnvUint(t testing.TB, key string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(EnvString(t, key), 10, 64)
	if err != nil {
		Report("error environment variable %s: %v", key, err)
		t.Fatalf("environment variable %s: %v", key, err)
	}
	return v
}

// Seed returns the seed of a randomized test: flagSeed if it is not zero
// (a -seed test flag), else TICKDB_SEED, else a fresh random one. It logs
// the seed and how to replay it.
func Seed(t testing.TB, flagSeed uint64) uint64 {
	t.Helper()
	seed := flagSeed
	if seed == 0 {
		if s := os.Getenv("TICKDB_SEED"); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("TICKDB_SEED=%q: %v", s, err)
			}
			seed = v
		}
	}
	if seed == 0 {
		seed = rand.Uint64()>>1 | 1
	}
	t.Logf("seed %d (replay with -seed=%d or TICKDB_SEED=%d)", seed, seed, seed)
	return seed
}

// ChildOptions configures StartChild.
type ChildOptions struct {
	// Env is added to the parent's environment ("KEY=value").
	Env []string
	// Binary is the executable to run (default: this test binary).
	Binary string
	// Dir is the child's working directory (default: the parent's).
	Dir string
	// Credential runs the child as another user (the parent must be root).
	Credential *syscall.Credential
	// Timeout is passed as -test.timeout (default 10m): a child that the
	// parent lost track of panics and exits by itself.
	Timeout time.Duration
}

// Child is a running child process (internal/harness/child's, with Expect). Its
// methods are safe for concurrent use.
type Child struct {
	*child.Child
}

// StartChild runs test (a TestChildXxx function of this binary) as a child
// process in role. The child is SIGKILLed and reaped when t ends, and gets
// SIGKILL too if this process dies (PR_SET_PDEATHSIG).
func StartChild(t testing.TB, test, role string, o *ChildOptions) *Child {
	t.Helper()
	if o == nil {
		o = &ChildOptions{}
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	co := &child.Options{
		Args:   []string{"-test.run=^" + test + "$", "-test.count=1", "-test.timeout=" + timeout.String()},
		Env:    o.Env,
		Binary: o.Binary,
		Dir:    o.Dir,
	}
	if o.Credential != nil {
		co.SysProcAttr = &syscall.SysProcAttr{Credential: o.Credential}
	}
	c, err := child.Start(role, co)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	return &Child{c}
}

// ErrChildExited is returned by Next when the child has exited and every
// line it reported has been taken.
var ErrChildExited = child.ErrExited

// Expect returns the fields after prefix of the next protocol line that
// starts with prefix, failing t on an "error" line, an exit or a timeout.
// Lines with other prefixes are passed to skip (if not nil) and dropped.
func (c *Child) Expect(t testing.TB, prefix string, timeout time.Duration, skip func(string)) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		line, err := c.Next(time.Until(deadline))
		if err != nil {
			t.Fatalf("child %s (pid %d): waiting for %q: %v\n%s", c.Name, c.Pid, prefix, err, c.Log())
		}
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "error" {
			t.Fatalf("child %s (pid %d): %s\n%s", c.Name, c.Pid, line, c.Log())
		}
		if len(f) > 0 && f[0] == prefix {
			return f[1:]
		}
		if skip != nil {
			skip(line)
		}
	}
}
