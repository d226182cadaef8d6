package testutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Cross-process tests re-execute their own test binary with
// -test.run=^TestChildXxx$ and ChildEnv set to a role name; that
// TestChildXxx function then acts as the child (and skips when ChildEnv is
// not its role, since it is not a real test then). The child talks to the
// parent through protocol lines on stdout (Report) and commands on stdin
// (Commands); anything else the child prints (testing's own output, panics)
// is kept for the parent's failure messages. No TestMain is involved, so
// this composes with whatever TestMain a package has.

// ChildEnv names the environment variable that carries a child's role.
const ChildEnv = "TICKDB_CHILD"

// reportPrefix marks a protocol line on a child's stdout.
const reportPrefix = "@tickdb "

// ChildRole skips t unless this process was started by StartChild in the
// given role.
func ChildRole(t testing.TB, role string) {
	t.Helper()
	if os.Getenv(ChildEnv) != role {
		t.Skip("child process role; runs only when re-executed by a cross-process test")
	}
}

// Report writes one protocol line to the parent. The line goes out in a
// single write(2) on the unbuffered stdout, so a SIGKILL leaves either the
// whole line or none of it in the pipe.
func Report(format string, args ...any) {
	line := reportPrefix + fmt.Sprintf(format, args...) + "\n"
	_, _ = os.Stdout.Write([]byte(line))
}

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
func Commands() <-chan string {
	c := make(chan string, 16)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	return c
}

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

// Child is a running child process. Its methods are safe for concurrent use.
type Child struct {
	Pid  int
	Name string

	cmd      *exec.Cmd
	stdin    io.WriteCloser
	mu       sync.Mutex
	lines    []string // protocol lines not yet taken
	eof      bool
	notify   chan struct{}
	log      bytes.Buffer // other stdout and stderr lines, for diagnostics
	waitDone chan struct{}
	waitErr  error
	killed   bool
}

// StartChild runs test (a TestChildXxx function of this binary) as a child
// process in role. The child is SIGKILLed and reaped when t ends, and gets
// SIGKILL too if this process dies (PR_SET_PDEATHSIG).
func StartChild(t testing.TB, test, role string, o *ChildOptions) *Child {
	t.Helper()
	if o == nil {
		o = &ChildOptions{}
	}
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			t.Fatal(err)
		}
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1", "-test.timeout="+timeout.String())
	cmd.Env = append(append(os.Environ(), ChildEnv+"="+role), o.Env...)
	cmd.Dir = o.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: o.Credential}
	c := &Child{Name: role, cmd: cmd, notify: make(chan struct{}, 1), waitDone: make(chan struct{})}
	cmd.Stderr = (*childLog)(c)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", role, err)
	}
	c.Pid = cmd.Process.Pid
	go c.run(stdout)
	t.Cleanup(func() {
		c.Kill()
		_ = c.stdin.Close()
	})
	return c
}

// childLog collects the child's stderr.
type childLog Child

func (l *childLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.log.Write(p)
}

func (c *Child) run(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		c.mu.Lock()
		if s, ok := strings.CutPrefix(line, reportPrefix); ok {
			c.lines = append(c.lines, s)
		} else {
			c.log.WriteString(line)
			c.log.WriteByte('\n')
		}
		c.mu.Unlock()
		c.wake()
	}
	_, _ = io.Copy(io.Discard, stdout)
	err := c.cmd.Wait()
	c.mu.Lock()
	c.eof = true
	c.waitErr = err
	c.mu.Unlock()
	close(c.waitDone)
	c.wake()
}

func (c *Child) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// ErrChildExited is returned by Next when the child has exited and every
// line it reported has been taken.
var ErrChildExited = errors.New("child exited")

// Next returns the next protocol line, waiting at most timeout.
func (c *Child) Next(timeout time.Duration) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if len(c.lines) > 0 {
			s := c.lines[0]
			c.lines = c.lines[1:]
			c.mu.Unlock()
			return s, nil
		}
		eof := c.eof
		c.mu.Unlock()
		if eof {
			return "", fmt.Errorf("%w (%v)", ErrChildExited, c.ExitErr())
		}
		select {
		case <-c.notify:
		case <-deadline.C:
			return "", fmt.Errorf("child %s: no line within %v", c.Name, timeout)
		}
	}
}

// Drain returns the protocol lines reported so far without waiting.
func (c *Child) Drain() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lines
	c.lines = nil
	return l
}

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

// Send writes one command line to the child's stdin.
func (c *Child) Send(line string) error {
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// CloseStdin closes the child's stdin (its Commands channel closes).
func (c *Child) CloseStdin() error { return c.stdin.Close() }

// Kill sends SIGKILL (unless the child has exited) and waits until it is
// reaped: its file locks are released once Kill returns.
func (c *Child) Kill() {
	select {
	case <-c.waitDone:
		return
	default:
	}
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	_ = c.cmd.Process.Kill() // a no-op error if it has just exited
	<-c.waitDone
}

// Wait waits at most timeout for the child to exit by itself and returns
// its exit error (nil for status 0).
func (c *Child) Wait(timeout time.Duration) error {
	select {
	case <-c.waitDone:
		return c.ExitErr()
	case <-time.After(timeout):
		return fmt.Errorf("child %s (pid %d) still running after %v", c.Name, c.Pid, timeout)
	}
}

// Exited reports whether the child has exited.
func (c *Child) Exited() bool {
	select {
	case <-c.waitDone:
		return true
	default:
		return false
	}
}

// ExitErr is the child's exit error (nil while running or after status 0).
func (c *Child) ExitErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitErr
}

// Log returns what the child printed besides protocol lines.
func (c *Child) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.log.String()
	if len(s) > 8<<10 {
		s = "...\n" + s[len(s)-8<<10:]
	}
	return s
}
