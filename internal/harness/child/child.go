package child

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Env names the environment variable that carries a child's role.
const Env = "TICKDB_CHILD"

// reportPrefix marks a report line on a child's stdout.
const reportPrefix = "@tickdb "

// Options configures Start. The zero value runs this executable with no
// arguments in the parent's environment and working directory.
type Options struct {
	// Args are the child's arguments (after the program name).
	Args []string
	// Env is added to the parent's environment ("KEY=value").
	Env []string
	// Binary is the executable to run (default: this one).
	Binary string
	// Dir is the child's working directory (default: the parent's).
	Dir string
	// SysProcAttr is the child's, for example a Credential to run it as
	// another user (the parent must be root). On Linux, Start sets
	// Pdeathsig in a copy of it.
	SysProcAttr *syscall.SysProcAttr
	// Stdin, when set, is the child's stdin instead of the pipe Send
	// writes to (Send and CloseStdin then fail).
	Stdin io.Reader
	// Stdout, when set, gets the child's stdout as it is, and no reports
	// are taken from it (Next waits for the exit). For a child that
	// prints rather than reports, such as the CLI under test.
	Stdout io.Writer
	// Stderr, when set, gets the child's stderr instead of the log.
	Stderr io.Writer
}

// Child is a running child process.
type Child struct {
	Pid  int    // the child's process id
	Name string // its role

	cmd      *exec.Cmd
	stdin    io.WriteCloser // nil with Options.Stdin
	mu       sync.Mutex
	lines    []string // reports not yet taken
	eof      bool     // stdout ended and the child was reaped
	notify   chan struct{}
	log      bytes.Buffer // stdout lines that are not reports, and stderr
	waitDone chan struct{}
	waitErr  error
}

// ErrExited is returned by Next when the child has exited and every line
// it reported has been taken.
var ErrExited = errors.New("child exited")

// Start runs the executable (this one by default) as a child in role.
// It returns once the child runs; its stdout is read, and the child reaped
// when it exits, by a goroutine that ends then. The caller must Kill or
// Wait for every child it starts.
func Start(role string, o *Options) (*Child, error) {
	if o == nil {
		o = &Options{}
	}
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("child %s: find this executable: %w", role, err)
		}
	}
	cmd := exec.Command(bin, o.Args...)
	cmd.Env = append(append(os.Environ(), Env+"="+role), o.Env...)
	cmd.Dir = o.Dir
	cmd.SysProcAttr = sysProcAttr(o.SysProcAttr)
	c := &Child{Name: role, cmd: cmd, notify: make(chan struct{}, 1), waitDone: make(chan struct{})}
	cmd.Stderr = o.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = (*childLog)(c)
	}
	var stdout io.Reader
	if o.Stdout != nil {
		cmd.Stdout = o.Stdout
	} else {
		var err error
		if stdout, err = cmd.StdoutPipe(); err != nil {
			return nil, fmt.Errorf("child %s: %w", role, err)
		}
	}
	if o.Stdin != nil {
		cmd.Stdin = o.Stdin
	} else {
		var err error
		if c.stdin, err = cmd.StdinPipe(); err != nil {
			return nil, fmt.Errorf("child %s: %w", role, err)
		}
	}
	// The goroutine that starts the child keeps its thread until the
	// child is reaped (see the package's Caveats).
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		c.Pid = cmd.Process.Pid
		started <- nil
		c.run(stdout)
	}()
	if err := <-started; err != nil {
		if c.stdin != nil {
			_ = c.stdin.Close()
		}
		return nil, fmt.Errorf("start child %s: %w", role, err)
	}
	return c, nil
}

// childLog collects the child's stderr.
type childLog Child

func (l *childLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.log.Write(p)
}

// run takes the reports from stdout (nil: Options.Stdout has it), then
// reaps the child.
func (c *Child) run(stdout io.Reader) {
	if stdout != nil {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
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
		_, _ = io.Copy(io.Discard, stdout) // a line over the limit: keep the pipe drained
	}
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

// Next returns the next report line (without its prefix), waiting at most
// timeout; after the child's exit, an error wrapping ErrExited.
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
			return "", fmt.Errorf("%w (%v)", ErrExited, c.ExitErr())
		}
		select {
		case <-c.notify:
		case <-deadline.C:
			return "", fmt.Errorf("child %s (pid %d): no line within %v", c.Name, c.Pid, timeout)
		}
	}
}

// Drain returns the report lines received so far without waiting.
func (c *Child) Drain() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lines
	c.lines = nil
	return l
}

// Send writes one command line to the child's stdin.
func (c *Child) Send(line string) error {
	if c.stdin == nil {
		return fmt.Errorf("child %s: stdin is not a pipe (Options.Stdin)", c.Name)
	}
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// CloseStdin closes the child's stdin: its Commands channel closes.
func (c *Child) CloseStdin() error {
	if c.stdin == nil {
		return nil
	}
	return c.stdin.Close()
}

// Signal sends sig to the child unless it has been reaped.
func (c *Child) Signal(sig os.Signal) error {
	if c.Exited() {
		return ErrExited
	}
	return c.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL (unless the child has exited) and waits until it is
// reaped, so that its file locks are released once Kill returns; it
// closes the child's stdin.
func (c *Child) Kill() {
	if !c.Exited() {
		_ = c.cmd.Process.Kill() // a no-op error if it has just exited
		<-c.waitDone
	}
	_ = c.CloseStdin()
}

// Wait waits at most timeout for the child to exit by itself and returns
// its exit error (nil for status 0); a child still running then is left
// running.
func (c *Child) Wait(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.waitDone:
		return c.ExitErr()
	case <-t.C:
		return fmt.Errorf("child %s (pid %d) still running after %v", c.Name, c.Pid, timeout)
	}
}

// Done is closed when the child has exited and been reaped.
func (c *Child) Done() <-chan struct{} { return c.waitDone }

// Exited reports whether the child has exited and been reaped.
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

// Log returns what the child printed besides reports (its last 8 KiB).
func (c *Child) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.log.String()
	if len(s) > 8<<10 {
		s = "...\n" + s[len(s)-8<<10:]
	}
	return s
}

// LastLog is the last non-empty line of Log: where a role's error goes
// (Run prints it last).
func (c *Child) LastLog() string {
	s := strings.TrimSpace(c.Log())
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
