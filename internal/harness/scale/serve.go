//go:build linux

package scale

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tickdb/tickdb/internal/harness/child"
)

// serve is a `tickdb serve` child process: this executable (or
// Config.Binary) run as the server over the workload's database, with
// its resident memory sampled while it runs.
type serve struct {
	c        *child.Child
	ilp, web string // listener addresses
	log      *bytes.Buffer
	started  time.Time

	mu   sync.Mutex
	peak Mem // largest sample of each figure
	stop chan struct{}
	done chan struct{}
}

// Mem is a process's resident memory, from /proc/PID/status, in bytes:
// RSS (VmRSS) is anonymous memory (RssAnon: heap, stacks), file pages
// mapped (RssFile: the index files and segments, page cache shared with
// every process) and shared memory mapped (RssShmem: the live slots on
// tmpfs).
type Mem struct {
	RSS, Anon, File, Shmem int64
	HWM                    int64 // VmHWM: the peak RSS the kernel saw
}

// startServe starts serve over db with its live segments under live.
func startServe(bin, db, live string, extra []string) (*serve, error) {
	ilp, err := freeAddr()
	if err != nil {
		return nil, err
	}
	web, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--db", db, "--ilp", ilp, "--http", web, "--live-dir", live, "--log-level", "warn"}, extra...)
	s := &serve{ilp: ilp, web: web, log: &bytes.Buffer{}, stop: make(chan struct{}), done: make(chan struct{})}
	s.started = time.Now()
	s.c, err = child.Start("scale-serve", &child.Options{Binary: bin, Args: args, Stdout: syncWriter{s}, Stderr: syncWriter{s}})
	if err != nil {
		return nil, err
	}
	go s.sample()
	return s, nil
}

// syncWriter collects the child's stderr into its log.
type syncWriter struct{ s *serve }

func (w syncWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.log.Write(p)
}

// Log is what serve printed (its last 4 KiB).
func (s *serve) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.log.Bytes()
	return string(b[max(0, len(b)-4096):])
}

// freeAddr is a 127.0.0.1 address with a port free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitListening waits until the line-protocol port accepts connections.
func (s *serve) waitListening(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", s.ilp, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if s.c.Exited() {
			return fmt.Errorf("scale: serve exited: %v\n%s", s.c.ExitErr(), s.Log())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("scale: serve not listening on %s after %v: %w", s.ilp, timeout, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sample reads serve's memory every 100 ms, keeping the peaks.
func (s *serve) sample() {
	defer close(s.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if m, err := readMem(s.c.Pid); err == nil {
			s.mu.Lock()
			s.peak = maxMem(s.peak, m)
			s.mu.Unlock()
		}
		select {
		case <-s.stop:
			return
		case <-s.c.Done():
			return
		case <-t.C:
		}
	}
}

// Peak is the largest of each memory figure sampled so far, with VmHWM
// read now.
func (s *serve) Peak() Mem {
	m, _ := readMem(s.c.Pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peak = maxMem(s.peak, m)
	return s.peak
}

// Now is serve's memory now.
func (s *serve) Now() (Mem, error) { return readMem(s.c.Pid) }

// Stop sends SIGTERM and waits for serve to exit with status 0; it
// returns how long serve took.
func (s *serve) Stop(timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	if err := s.c.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	err := s.c.Wait(timeout)
	el := time.Since(t0)
	close(s.stop)
	<-s.done
	if err != nil {
		s.c.Kill()
		return el, fmt.Errorf("scale: serve after SIGTERM: %w\n%s", err, s.Log())
	}
	return el, nil
}

// Kill ends serve at once (cleanup after an error).
func (s *serve) Kill() {
	s.c.Kill()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

func maxMem(a, b Mem) Mem {
	return Mem{RSS: max(a.RSS, b.RSS), Anon: max(a.Anon, b.Anon), File: max(a.File, b.File), Shmem: max(a.Shmem, b.Shmem), HWM: max(a.HWM, b.HWM)}
}

// readMem reads /proc/PID/status.
func readMem(pid int) (Mem, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Mem{}, err
	}
	defer f.Close()
	var m Mem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.RSS
		case "RssAnon":
			dst = &m.Anon
		case "RssFile":
			dst = &m.File
		case "RssShmem":
			dst = &m.Shmem
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return Mem{}, fmt.Errorf("scale: /proc/%d/status %s: %w", pid, k, err)
		}
		*dst = kb << 10
	}
	if m.RSS == 0 {
		return m, errors.New("scale: no VmRSS")
	}
	return m, sc.Err()
}
