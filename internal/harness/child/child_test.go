package child

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain runs the roles below when a test re-executed this binary as a
// child, else the tests (failing them if goroutines leak).
func TestMain(m *testing.M) {
	Run(map[string]func() error{
		// echo reports ready, prints a line that is not a report, and
		// answers each "say X" with "said X" until stdin ends.
		"echo": func() error {
			Report("ready %d", os.Getpid())
			fmt.Println("not a report")
			for cmd := range Commands() {
				if s, ok := strings.CutPrefix(cmd, "say "); ok {
					Report("said %s", s)
				}
			}
			return nil
		},
		// hang reports ready and never ends by itself.
		"hang": func() error {
			Report("ready")
			time.Sleep(time.Hour)
			return nil
		},
		"fail": func() error { return errors.New("the role failed") },
		// args reports its arguments and environment, and prints to
		// stdout and stderr as they are.
		"args": func() error {
			Report("args %s env %s", strings.Join(os.Args[1:], ","), os.Getenv("CHILD_TEST_VALUE"))
			fmt.Fprintln(os.Stderr, "to stderr")
			return nil
		},
	})
	goleak.VerifyTestMain(m)
}

func start(t *testing.T, role string, o *Options) *Child {
	t.Helper()
	c, err := Start(role, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	return c
}

func next(t *testing.T, c *Child) string {
	t.Helper()
	l, err := c.Next(20 * time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Log())
	}
	return l
}

// A report, commands over stdin, the log, and a clean exit at stdin's end.
func TestReportsAndCommands(t *testing.T) {
	c := start(t, "echo", nil)
	if got, want := next(t, c), fmt.Sprintf("ready %d", c.Pid); got != want {
		t.Fatalf("first report %q, want %q", got, want)
	}
	for _, s := range []string{"one", "two words"} {
		if err := c.Send("say " + s); err != nil {
			t.Fatal(err)
		}
		if got := next(t, c); got != "said "+s {
			t.Fatalf("report %q, want %q", got, "said "+s)
		}
	}
	if err := c.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(20 * time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, c.Log())
	}
	if _, err := c.Next(time.Second); !errors.Is(err, ErrExited) {
		t.Fatalf("Next after the exit: %v, want ErrExited", err)
	}
	if c.Log() != "not a report\n" {
		t.Fatalf("log %q, want the line that was not a report", c.Log())
	}
}

// Wait gives up at its timeout and leaves the child running; Kill ends it
// with SIGKILL and reaps it.
func TestWaitTimeoutAndKill(t *testing.T) {
	c := start(t, "hang", nil)
	next(t, c)
	t0 := time.Now()
	err := c.Wait(100 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "still running after 100ms") {
		t.Fatalf("Wait on a hanging child: %v", err)
	}
	if el := time.Since(t0); el < 100*time.Millisecond || el > 10*time.Second {
		t.Fatalf("Wait(100ms) returned after %v", el)
	}
	if c.Exited() {
		t.Fatal("the child exited by itself")
	}
	if err := syscall.Kill(c.Pid, 0); err != nil {
		t.Fatalf("the child is not running after Wait's timeout: %v", err)
	}
	c.Kill()
	if !c.Exited() {
		t.Fatal("not reaped after Kill")
	}
	var ee *exec.ExitError
	if err := c.ExitErr(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("exit after Kill: %v, want SIGKILL", err)
	}
	if err := syscall.Kill(c.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pid %d after Kill: %v, want no such process", c.Pid, err)
	}
	c.Kill() // a second Kill is a no-op
	if err := c.Signal(syscall.SIGTERM); !errors.Is(err, ErrExited) {
		t.Fatalf("Signal after the exit: %v", err)
	}
}

// A role's error: exit status 1, an "error" report, the message last on
// stderr.
func TestRoleError(t *testing.T) {
	c := start(t, "fail", nil)
	if got := next(t, c); got != "error the role failed" {
		t.Fatalf("report %q", got)
	}
	var ee *exec.ExitError
	if err := c.Wait(20 * time.Second); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1", err)
	}
	if c.LastLog() != "the role failed" {
		t.Fatalf("last log line %q", c.LastLog())
	}
}

// Arguments and environment reach the child; Stdout, Stderr and Stdin
// options take the streams as they are.
func TestOptions(t *testing.T) {
	c := start(t, "args", &Options{Args: []string{"-a", "b"}, Env: []string{"CHILD_TEST_VALUE=x"}})
	if got := next(t, c); got != "args -a,b env x" {
		t.Fatalf("report %q", got)
	}
	if err := c.Wait(20 * time.Second); err != nil || c.LastLog() != "to stderr" {
		t.Fatalf("exit %v, log %q", err, c.Log())
	}

	var out, errb lockedBuffer
	c = start(t, "args", &Options{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")})
	if err := c.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != reportPrefix+"args  env \n" {
		t.Fatalf("stdout %q", got)
	}
	if errb.String() != "to stderr\n" || c.Log() != "" {
		t.Fatalf("stderr %q, log %q", errb.String(), c.Log())
	}
	if _, err := c.Next(time.Second); !errors.Is(err, ErrExited) {
		t.Fatalf("Next with Options.Stdout: %v, want ErrExited", err)
	}
	if err := c.Send("x"); err == nil {
		t.Fatal("Send with Options.Stdin: no error")
	}
}

// A child outlives the goroutine that started it even when that goroutine
// ends locked to its thread, which the runtime then ends (a pinned writer
// does so): the death signal follows the thread that forked.
func TestThreadExit(t *testing.T) {
	var c *Child
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		c, err = Start("echo", nil)
	}()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	next(t, c)
	time.Sleep(50 * time.Millisecond)
	if err := c.Send("say alive"); err != nil {
		t.Fatal(err)
	}
	if got := next(t, c); got != "said alive" {
		t.Fatalf("report %q", got)
	}
}

func TestStartMissingBinary(t *testing.T) {
	if _, err := Start("x", &Options{Binary: "/nonexistent/tickdb"}); err == nil || !strings.Contains(err.Error(), "start child x") {
		t.Fatalf("Start of a missing binary: %v", err)
	}
}

// lockedBuffer is a bytes.Buffer that exec's copying goroutine may write
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
