package servers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Timeouts of a server process's life.
const (
	readyTimeout = 2 * time.Minute // from exec until it answers its readiness request
	stopTimeout  = 2 * time.Minute // from SIGTERM until it exits (tickdb makes every row durable first)
	pollEvery    = 20 * time.Millisecond
)

// proc is one server process: the command line it runs with, the file its
// output goes to, and the process while it runs.
//
// A proc belongs to the goroutine that runs the benchmark; start and stop
// of two procs may run on two goroutines at once.
type proc struct {
	name  string
	argv  []string // argv[0] is the binary
	dir   string   // working directory
	log   string   // stdout and stderr, appended across restarts
	ready string   // URL that answers 200 once the server serves

	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	err  error         // cmd.Wait's, once done is closed
}

// start runs the process and waits until its readiness URL answers 200
// (client: c), or the process exits, or readyTimeout passes. It returns
// how long that took.
func (p *proc) start(ctx context.Context, c *http.Client) (time.Duration, error) {
	if p.cmd != nil {
		return 0, fmt.Errorf("%s: already running (pid %d)", p.name, p.cmd.Process.Pid)
	}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = p.dir, out, out
	cmd.SysProcAttr = procAttr()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("%s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() { p.err = cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(readyTimeout)
	for {
		if ok, _ := get(ctx, c, p.ready); ok {
			return time.Since(t0), nil
		}
		select {
		case <-p.done:
			p.cmd = nil
			return 0, fmt.Errorf("%s exited before it served (%v): %s", p.name, p.err, p.tail())
		case <-ctx.Done():
			return 0, errors.Join(ctx.Err(), p.stop())
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) {
			return 0, errors.Join(fmt.Errorf("%s (pid %d) did not answer %s within %v: %s", p.name, cmd.Process.Pid, p.ready, readyTimeout, p.tail()), p.stop())
		}
	}
}

// get reports whether a GET of url answers 200.
func get(ctx context.Context, c *http.Client, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// stop sends SIGTERM and waits for the exit; a process still running after
// stopTimeout is killed and that is an error. An exit status other than 0
// is an error too: both servers exit 0 on SIGTERM.
func (p *proc) stop() error {
	if p.cmd == nil {
		return nil
	}
	defer func() { p.cmd = nil }()
	select {
	case <-p.done:
		return fmt.Errorf("%s (pid %d) had exited (%v): %s", p.name, p.cmd.Process.Pid, p.err, p.tail())
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s (pid %d) still running %v after SIGTERM: killed", p.name, p.cmd.Process.Pid, stopTimeout)
	}
	if p.err != nil {
		return fmt.Errorf("%s (pid %d) stopped: %w: %s", p.name, p.cmd.Process.Pid, p.err, p.tail())
	}
	return nil
}

// pid is the running process's id, 0 when it is not running.
func (p *proc) pid() int {
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// cpu is the CPU time (user + system, every thread) the running process
// has used so far, from /proc/<pid>/stat; 0 when unknown.
func (p *proc) cpu() time.Duration {
	if p.cmd == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 { // utime and stime are fields 14 and 15, f[11] and f[12]
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+s) * time.Second / clockTicks
}

// readBytes is the bytes the running process (every thread) has caused
// to be read from the disk so far (/proc/<pid>/io read_bytes: page cache
// misses, mmap faults and read-ahead included); -1 when unknown.
func (p *proc) readBytes() int64 {
	if p.cmd == nil {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", p.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "read_bytes:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's
// times: 100 on every Linux architecture Go supports.
const clockTicks = 100

// tail is the last lines of the process's output, for error messages.
func (p *proc) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return "(no output: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	lines = lines[max(0, len(lines)-8):]
	return "last output: " + strings.Join(lines, " | ")
}

// freePorts returns n distinct free TCP ports on 127.0.0.1, held open
// together while they are chosen so that none is returned twice. Another
// process may still take one before the server binds it; the server then
// fails to start with a clear error.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// diskBytes is the bytes allocated (st_blocks × 512) to the files under
// dir: what the data takes on the disk, holes in preallocated or sparse
// files not counted.
func diskBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed by the server meanwhile (a merged part)
			}
			return err
		}
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += int64(st.Blocks) * 512
		}
		return nil
	})
	return n, err
}

// newClient is an HTTP client of its own (its own keep-alive connection)
// that asks for no compression, so that neither server compresses what
// the other sends plain.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2}}
}
