package benchutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// ChildEnv is the variable that makes a re-executed test binary act as a
// benchmark child; its value names the role.
const ChildEnv = "TICKDB_BENCH_CHILD"

// IsChild reports whether this process is a benchmark child in role.
// Child entry points are tests (TestBenchChild...) that skip at once
// otherwise, so `go test ./...` stays fast.
func IsChild(role string) bool { return os.Getenv(ChildEnv) == role }

// Child is a copy of the running test binary re-executed to run one child
// test in another process. Its stdout is read line by line.
type Child struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer
	mu     sync.Mutex
	done   bool
}

// StartChild runs this test binary's test (an exact name) with ChildEnv
// set to role and the extra env ("K=V"). The child is killed by tb's
// cleanup if it is still running then.
func StartChild(tb testing.TB, test, role string, env ...string) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &Child{lines: make(chan string, 1024)}
	c.cmd = exec.Command(exe, "-test.run=^"+test+"$", "-test.count=1", "-test.bench=^$")
	c.cmd.Env = append(append(os.Environ(), ChildEnv+"="+role), env...)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	tb.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.done {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
			c.done = true
		}
	})
	return c, nil
}

// Expect returns the rest of the first output line that starts with
// prefix, skipping other lines, or an error when the child ends or the
// timeout passes first.
func (c *Child) Expect(prefix string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return "", fmt.Errorf("child ended before %q: %s", prefix, c.stderr.String())
			}
			if rest, found := strings.CutPrefix(l, prefix); found {
				return rest, nil
			}
		case <-t.C:
			return "", fmt.Errorf("no %q from the child within %v", prefix, timeout)
		}
	}
}

// Wait waits for the child to exit.
func (c *Child) Wait() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range c.lines {
	}
	err := c.cmd.Wait()
	c.done = true
	if err != nil {
		return fmt.Errorf("child: %w: %s", err, c.stderr.String())
	}
	return nil
}
